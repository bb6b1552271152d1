"""The fingers on the object: settling after the stop (a grasp once they stay put; a touch if they open first),
holding (closing on past the hold is a slip, opening a release or a regrip), and letting go (a release once the
opening is clearly one; a slip when the loosened grip had lost the load before)."""

from __future__ import annotations

import math

from ros_robodata.events.closing_step import PRESS_HOLD_S
from ros_robodata.events.event import Event, Evidence
from ros_robodata.events.grasp_attempt import CLOSING, HOLDING, LETTING_GO, GraspAttempt
from ros_robodata.events.gripper_track import GripperTrack, Last
from ros_robodata.vocabulary import CONTACT_LOST, GRASP, GRASP_FAILED, RELEASE

# The fingers must stay put this long after stopping before a grasp is called secured.
SETTLE_S = 0.05
SECURED_SHARE = 0.75  # of the holding effort: the object is secured once the grip force built this far
# The fingers closing this share of the stroke past where they held (and more than three closed margins) is the
# object leaving the grip: a slip, seen by the fingers alone.
SLIP_SINK = 0.1
# An opening is a release once the fingers opened this share of the stroke past where they held, came within
# NEAR_OPEN of the open end, or stayed open LETGO_S; closing back onto the object before that was a regrip.
LETGO_SHARE = 0.3
NEAR_OPEN = 0.9
LETGO_S = 0.8


def gripping_step(track: GripperTrack, out: list[Event], g: GraspAttempt, t: int, x: float, v: float, effort: float,
                  vt: float, m: float, ev_v: Evidence) -> None:
    """Stopped on the object: closing through it fails the grasp, closing on is the close going on, opening before
    it settled a touch; once settled, the grasp is secured (where the grip force built, with effort) and held."""
    closing, opening = v < -vt, v > vt
    ev_x = Evidence('gripper.opening', x, m)
    if x <= m:
        track.fail(out, t, t, [ev_x], 'closed through the object', x)
        return
    if closing and x < g.stall_x - m:
        track.state = CLOSING
        return
    assert g.stall_ns is not None
    if t - g.stall_ns < SETTLE_S * 1e9:
        return
    if opening and x > g.stall_x + 2 * m:  # opened again before it ever settled: a touch, not a grasp
        track.log.emit(out, CONTACT_LOST, t, t, 0.7, [ev_v])
        track.to_idle(opened_at=t)
        return
    g.confirmed, g.ref_x, g.hold_x, g.secured_x = True, x, x, x
    evidence = [ev_x]
    hold = track.hold_effort(g)
    confidence = 0.8
    secured = g.stop_ns or g.stall_ns  # without effort: when the fingers stopped on the object
    if hold is not None and math.isfinite(effort):
        evidence.append(Evidence('gripper.effort', effort - track.e_idle, hold))
        confidence = 0.95
        # Secured once the grip force built to its holding level after the fingers met the object.
        start = g.stop_ns or g.stall_ns
        secured = max(start, next((ts for ts, e in g.efforts if ts >= start
                                   and e - track.e_idle >= SECURED_SHARE * hold), g.stall_ns or start))
    track.log.emit(out, GRASP, secured, t, confidence, evidence)
    track.state = HOLDING
    load = track.wrench.grasp_load()
    if load is not None:
        g.load = load


def holding_step(track: GripperTrack, out: list[Event], g: GraspAttempt, t: int, x: float, v: float, effort: float,
                 last: Last | None) -> None:
    """The grasp holds: the fingers closing on past where they held (a slip) or opening (a release, or a
    regrip), and the grip's own effort (loosened before the load went: a slip)."""
    m, vt = track.closed_margin, track.velocity_threshold
    ev_x = Evidence('gripper.opening', x, m)
    if x < g.ref_x - m:
        if g.sinking_ns is None:
            g.sinking_ns = track.onset(t, x, v, g.ref_x, last)
    else:
        g.sinking_ns = None
    sink = max(SLIP_SINK, 3 * m)
    command = track.command if track.command is not None and track.command.fresh(t) else None
    press = command.pressing(x, t) if command is not None else None
    g.pressed |= press is not None
    # With a command: the fingers closed on past the hold until they stand where the command asks, so
    # nothing holds them open any more (a follower whose leader was squeezing beyond the object).
    caught_up = g.pressed and command is not None and press is None and x < g.hold_x - m and abs(v) <= vt
    if x > m:
        g.closed_since = None
    closed = x <= m and (command is None or x < g.hold_x - m or _crept_shut(g, t, press, command.asks_open(x)))
    if closed or x < g.hold_x - sink or caught_up:  # the object left when the fingers closed on past the hold
        at = g.slip_pending[0] if g.slip_pending is not None else (g.sinking_ns or g.closed_since or t)
        evidence = [ev_x] if x <= m else [Evidence('gripper.closed_past_hold', g.hold_x - x, m if caught_up
                                                   else sink)]
        if g.slip_pending is not None:
            evidence.append(g.slip_pending[1])
        track.fail(out, at, t, evidence, 'the fingers closed on past where they held: the object slipped out', x,
                   learn_closed=True)
        return
    base = _opening_base(g, m)
    if x > base + m:
        start = track.onset(t, x, v, base, last)
        gap = track.gaps[-1] if track.gaps else None
        g.letgo_after_gap = [(t, x)] if gap is not None and gap[1] == t and last is not None else None
        placed = g.slip_pending is not None
        evidence = [Evidence('gripper.opening', x, g.ref_x + m),
                    Evidence('gripper.velocity', v * track.span, vt * abs(track.span))]
        g.letgo, track.state = (start, evidence, placed), LETTING_GO
        letting_go_step(track, out, g, t, x, v)
        return
    if abs(v) <= vt:
        g.ref_x = x
        if x > g.hold_x - m:
            g.hold_x = min(g.hold_x, x) if math.isfinite(g.hold_x) else x
            if math.isfinite(g.secured_x):
                g.hold_x = max(g.hold_x, g.secured_x - m)
    hold = track.hold_effort(g)
    if hold is not None and math.isfinite(effort):
        loosened = effort - track.e_idle < hold
        if loosened and not g.loosened:
            g.loosened_ns = t
        g.loosened = loosened


def letting_go_step(track: GripperTrack, out: list[Event], g: GraspAttempt, t: int, x: float, v: float) -> None:
    """An opening after a hold is a release once it is clearly one (opened far, near the open end, or for a
    while); closing back onto the object first was a regrip: nothing happened."""
    assert g.letgo is not None
    start, evidence, placed = g.letgo
    m = track.closed_margin
    if x <= g.ref_x + m / 2:
        g.letgo, g.left_ns, track.state = None, None, HOLDING
        return
    squeezed = math.isfinite(g.knee_x) and g.knee_x - g.ref_x > m / 2
    if squeezed and g.left_ns is None and x >= g.knee_x and track.last is not None:
        t0, x0, _ = track.last  # the fingers leave the object where they met it: the squeeze undone
        g.left_ns = t if x == x0 else int(t0 + (t - t0) * min(1.0, max(0.0, (g.knee_x - x0) / (x - x0))))
    if g.letgo_after_gap is not None and len(g.letgo_after_gap) < 2:
        if g.letgo_after_gap[0][0] == t:
            return  # first seen after a gap: the next sample's speed dates it
        g.letgo_after_gap.append((t, x))
        start = _opened_in_gap(track, g, start)
        g.letgo = (start, evidence, placed)
    commanded_open = (track.command is not None and track.command.fresh(t)
                      and track.command.value + track.command.offset >= NEAR_OPEN)
    if not (x - g.ref_x >= LETGO_SHARE or x >= NEAR_OPEN or commanded_open
            or t - start >= max(LETGO_S * 1e9, 4 * track.period_ns)):
        return
    dropped = None if placed else g.load_gone_before(start) if g.loosened else None
    if dropped is not None and track.command is not None and track.command.opened_since(dropped[0], g.ref_x):
        dropped = None  # the operator let go first: the grip loosened because of it
    g.slip_pending = None
    if dropped is not None:  # the loosened grip had already lost the object: a slip, not a release
        track.log.emit(out, GRASP_FAILED, dropped[0], t, 0.8, [dropped[1], evidence[0]],
                       note='the carried load vanished before the gripper opened: the object slipped out')
    else:
        start = g.left_ns if g.left_ns is not None and g.left_ns >= start else start
        track.log.emit(out, RELEASE, start, t, 0.95 if placed or v > 0 else 0.8, evidence)
    track.log.emit(out, CONTACT_LOST, start, t, 0.9, evidence[:1])
    track.to_idle(opened_at=start)


def _crept_shut(g: GraspAttempt, t: int, press: float | None, asks_open: bool) -> bool:
    """Fingers that crept into the closed margin without closing on past the hold, with a command: a thin object
    still holds them open while the command presses them shut (a one-count creep is no slip); the operator lets go
    once it asks them open (a release when they follow); a slip once it did neither for PRESS_HOLD_S (a command on
    its way open crosses between the two within that)."""
    if press is not None or asks_open:
        g.closed_since = None
        return False
    g.closed_since = g.closed_since if g.closed_since is not None else t
    return t - g.closed_since >= PRESS_HOLD_S * 1e9


def _opening_base(g: GraspAttempt, m: float) -> float:
    """Where an opening is measured from: where the grasp held, however slowly the fingers open (a hand releasing
    a trigger gently opens under a noisy tracker's moving threshold, and a reference that followed them never saw
    it)."""
    return min(g.ref_x, g.hold_x + m) if math.isfinite(g.hold_x) else g.ref_x


def _opened_in_gap(track: GripperTrack, g: GraspAttempt, start: int) -> int:
    """Where in a gap of the stream an opening first seen after it began: back from the first sample after the gap
    at the speed of the two samples after it, when that speed is higher than the jump across the gap says (the
    fingers opened late in the gap), and never before the gap began."""
    assert g.letgo_after_gap is not None
    (t1, x1), (t2, x2) = g.letgo_after_gap[:2]
    if t2 <= t1 or x2 <= x1:
        return start
    (t0, _, _), _ = track.gaps[-1]
    speed = (x2 - x1) / ((t2 - t1) / 1e9)
    back = int(t1 - (x1 - _opening_base(g, track.closed_margin)) / speed * 1e9)
    return max(start, min(t1, max(t0, back)))
