"""The fingers closing: on nothing (a miss, once they reach the closed end or where a fully closed command sent
them), or onto an object (contact, stamped where the stroke met it, once the stop is told from a pause in a staged
close). The stroke's shape (its peak speed, the line it cruised along, where it slowed) says where it met the
object."""

from __future__ import annotations

import math

from ros_robodata.events.closing_path import effort_shift, knee, reached
from ros_robodata.events.event import Event, Evidence
from ros_robodata.events.grasp_attempt import GRIPPING, GraspAttempt
from ros_robodata.events.gripper_track import GripperTrack, Last
from ros_robodata.vocabulary import CONTACT

# The command must press the stopped fingers further shut this long to mean a block: a follower gripper starts
# after its leader by its control lag (about 0.1 s on a low-cost arm).
PRESS_HOLD_S = 0.15
# A command within this share of its stroke from its closed end asks for the fingers fully closed.
COMMAND_CLOSED = 0.1
REACHED = 0.01  # of the stroke: fingers within this of where they rest have reached it
# With neither a command channel nor an effort signal, a stop is contact once it lasted this long: an operator's
# pause in a staged close is shorter (the stamp is still where the fingers stopped; only the word comes later).
PAUSE_CONFIRM_S = 1.0
# A closing stroke has stopped on something when its speed falls under this share of its own peak speed, even
# while the fingers still creep on (an adaptive gripper wrapping, a soft object or pad compressing).
KNEE = 0.25
# A closing stroke cruises at this share of its peak speed or more; where it fell below is where it met the object.
CRUISE = 0.8
# Standing still this long (and three samples) within a close is a pause, after which closing on is a new stroke.
PAUSE_MIN_S = 0.15
# A finger pushing the object before the other arrives (an off-centre object) is looked for this long before the
# fingers stopped.
TOUCH_S = 0.3


def closing_step(track: GripperTrack, out: list[Event], g: GraspAttempt, t: int, x: float, v: float, effort: float,
                 last: Last | None, vt: float, m: float, ev_v: Evidence) -> None:
    """One sample of a close (`vt`, `m`: the moving threshold and closed margin of this sample; `ev_v`: its
    speed as evidence)."""
    ev_x = Evidence('gripper.opening', x, m)
    track.announce(out, g, t, x, ev_v)
    if x <= m:
        at = t
        if last is not None and last[1] > x:  # where the stroke crossed the closed margin
            at = int(last[0] + (t - last[0]) * (last[1] - m) / (last[1] - x))
        track.closed_on_nothing(out, g, at, t, x, [ev_x])
        return
    _note_rest(track, g, t, v, vt)
    if _closing_at_speed(track, g, t, x, v, effort, vt):
        return
    if math.isnan(g.stop_x):
        g.stop_x = x  # where the fingers stopped (they may creep on under the squeeze)
    if not g.announced:  # not yet a stroke: a twitch once the fingers rest again (or open), else a slow start
        rested = g.rest_since is not None and t - g.rest_since >= max(PAUSE_MIN_S * 1e9, 3 * track.period_ns)
        if rested or x > g.start_x + m or t - g.seen_ns >= max(PAUSE_MIN_S * 1e9, 3 * track.period_ns):
            track.to_idle()
            track.still_count = 3  # still at rest: a stroke may start from here at once
        return
    if g.contact_ns is not None and x > g.stall_x - m:  # settling after the first stop: keep it
        track.state = GRIPPING
        return
    waiting, press = _stop_undecided(track, out, g, t, x, effort, m, ev_x)
    if waiting:
        return
    contact = _contact_stamp(track, g, t, x, vt, last)
    _confirm_contact(track, out, g, t, v, effort, vt, press, contact, ev_x)


def _note_rest(track: GripperTrack, g: GraspAttempt, t: int, v: float, vt: float) -> None:
    """The fingers at rest a while within the close: a pause, and what comes next is a stroke of its own."""
    if abs(v) > vt:
        g.rest_since = None
    elif g.rest_since is None:
        g.rest_since = t
    elif t - g.rest_since >= max(PAUSE_MIN_S * 1e9, 3 * track.period_ns):
        g.peak_v, g.new_stroke = 0.0, True  # at rest a while: a pause; what comes next is a stroke of its own


def _closing_at_speed(track: GripperTrack, g: GraspAttempt, t: int, x: float, v: float, effort: float,
                      vt: float) -> bool:
    """Follow the stroke's shape (peak speed, the samples at cruising speed and the first after it slowed);
    True while it still closes at speed, not creeping on after a stop nor pressing into the object."""
    closing = v < -vt
    if closing and not math.isnan(g.stop_x) and track.squeeze_building(g, effort):
        closing = False  # the grip force builds: the fingers press into the object, not closing freely
    if closing:
        g.peak_v = max(g.peak_v, -v)
    if closing and v <= -CRUISE * g.peak_v:  # at its cruising speed: the line the contact is read from
        g.fast_pts = [(t, x)] if g.new_stroke else [*g.fast_pts[-2:], (t, x)]
        g.slow_pts.clear()
        g.new_stroke, g.slowed_gradually = False, False
    elif g.fast_pts and len(g.slow_pts) < 2:  # the first samples after the stroke slowed
        g.slow_pts.append((t, x))
        # Still closing at speed after its cruise while its leader was still closing, and no force to say where it
        # touched: a follower slowing with its leader, so where its cruise line meets what came after is no
        # contact; the last sample that clearly moved says more. (A gripper slowing on its own as it wraps the
        # object, its trigger long shut, keeps the knee; so does one whose effort dates the touch.)
        command = track.command
        leading = command is not None and command.fresh(t) and command.closing_speed() > vt and math.isnan(effort)
        g.slowed_gradually |= len(g.slow_pts) == 1 and closing and v < -KNEE * g.peak_v and leading
    if closing and v < -KNEE * g.peak_v:  # still closing at speed, not creeping on after a stop
        g.moving, g.press_since, g.stop_x, g.stopped_since = (t, x, v), None, math.nan, None
        if v < -max(2 * vt, 0.5 * g.peak_v):
            g.fast = (t, x, v)
        return True
    return False


def _stop_undecided(track: GripperTrack, out: list[Event], g: GraspAttempt, t: int, x: float, effort: float,
                    m: float, ev_x: Evidence) -> tuple[bool, float | None]:
    """Whether the stop is still to be told from a pause, a press not yet outlasting the follower's lag, or a
    close on nothing the command asked for (True: wait, or already decided otherwise); with the command's press
    on the fingers (None: it presses nothing)."""
    commanded = track.command is not None and track.command.fresh(t)
    press = track.command.pressing(x, t) if commanded else None  # type: ignore[union-attr]
    if press is None and commanded and track.command.value <= COMMAND_CLOSED:  # type: ignore[union-attr]
        # Where a fully closed command sent them, and nothing held them open: closed on nothing.
        g.stopped_since = g.stopped_since if g.stopped_since is not None else t
        if t - g.stopped_since >= max(PRESS_HOLD_S * 1e9, 2 * track.period_ns):
            near = x + max(REACHED, 2 * track.x_noise.sigma)
            track.closed_on_nothing(out, g, reached(g.recent, near, g.stopped_since), t, x,
                                    [ev_x, Evidence('gripper.command', track.command.value,  # type: ignore[union-attr]
                                                    COMMAND_CLOSED)])
        return True, press
    if press is not None:  # a follower answers its leader late: the press must outlast that lag
        g.press_since = g.press_since if g.press_since is not None else t
        if t - g.press_since < PRESS_HOLD_S * 1e9:
            return True, press
    elif commanded or (track.command is None and not track.squeezing(g, effort) and not track.wrench.agrees(
            g.moving[0] if g.moving is not None else t, t)[1]):
        # A stop that may be a pause in a staged close: the command stands where the fingers are, or
        # nothing but their position speaks (then a stop lasting longer than such pauses is contact). The
        # fingers opening past where they paused is the operator letting go: no grasp after all.
        g.press_since, g.pause_x = None, min(g.pause_x, x)
        g.stopped_since = g.stopped_since if g.stopped_since is not None else t
        if x > g.pause_x + m:
            track.to_idle(opened_at=t)
            return True, press
        if commanded or t - g.stopped_since < PAUSE_CONFIRM_S * 1e9:
            return True, press
    return False, press


def _contact_stamp(track: GripperTrack, g: GraspAttempt, t: int, x: float, vt: float, last: Last | None) -> int:
    """The fingers stopped short of closed: they met something. Contact happened where the stroke, at the speed
    it last had, reached the place the fingers stopped (better: where the lines before and after the knee meet;
    within a gap of the stream, from the gap's ends). The stop is noted on the attempt."""
    contact = t if g.stopped_since is None else g.stopped_since  # a stop told from a pause: where it began
    moving = g.moving if g.moving is not None else (last if last is not None and last[2] < -vt else None)
    if g.fast is not None and moving is not None and moving[0] - g.fast[0] <= 2 * track.period_ns:
        moving = g.fast  # a decelerating last sample says little of where the stroke would have arrived
    stop_x = x if math.isnan(g.stop_x) else g.stop_x
    g.knee_x = stop_x
    if moving is not None:  # from the last sample where the fingers clearly moved, at the speed they had
        contact = int(min(t, max(moving[0], moving[0] + (moving[1] - stop_x) / abs(moving[2]) * 1e9)))
    met = None if g.slowed_gradually and moving is not None else knee(g.fast_pts, g.slow_pts)
    if met is not None:  # better: where the closing's line meets the line of what came after it
        contact, g.knee_x = met
    unseen = _stop_in_gap(track, g, stop_x)
    if unseen is not None:  # the fingers stopped while unseen: the estimate comes from the gap's ends
        contact = unseen
    g.stall_ns, g.stall_x, g.stop_ns, g.moving, g.fast = t, x, contact, None, None
    return contact


def _confirm_contact(track: GripperTrack, out: list[Event], g: GraspAttempt, t: int, v: float, effort: float,
                     vt: float, press: float | None, contact: int, ev_x: Evidence) -> None:
    """Contact at `contact` (or where a finger first touched, if one pushed the object before the other arrived),
    with what said so; a stop without the grip squeezing is the operator letting go of the key instead."""
    touch = _first_touch(track, g, contact)
    touched_first = touch is not None and touch[0] < contact
    if touched_first:  # one finger met the object and pushed it before the other arrived
        contact = touch[0]  # type: ignore[index]
    hold = track.hold_effort(g)
    evidence = [ev_x, Evidence('gripper.velocity', v * track.span, -vt * abs(track.span))]
    if press is not None and track.command is not None:
        evidence.append(Evidence('gripper.command_gap', press, track.command.margin))
    if hold is not None and math.isfinite(effort):
        evidence.append(Evidence('gripper.effort', effort - track.e_idle, hold))
        if effort - track.e_idle < hold:  # stopped without squeezing: the operator let go of the key
            track.to_idle()
            return
    if g.contact_ns is None:
        g.contact_ns = contact
        confidence, wrench_ev = track.wrench.agrees(contact, t)
        if touched_first:
            confidence, wrench_ev = max(confidence, 0.9), [touch[1]]  # type: ignore[index]
        track.log.emit(out, CONTACT, contact, t, confidence, evidence + wrench_ev)
    track.state = GRIPPING


def _stop_in_gap(track: GripperTrack, g: GraspAttempt, stop_x: float) -> int | None:
    """When the stream had a gap within this close across which the fingers arrived where they stopped (a tracker
    that lost its markers while the hand closed the fingers on the object; later gaps while it squeezed on do
    not count), where in the gap they arrived: at the speed they were closing before it, or its middle when they
    were still at rest."""
    for (t0, x0, v0), t1 in reversed(track.gaps):
        if t1 < g.seen_ns or t0 > t1:
            return None
        after = next((x for ts, x in g.recent if ts >= t1), None)
        if after is None or abs(after - stop_x) > track.closed_margin or x0 - stop_x <= track.closed_margin:
            continue
        # The speed before the gap, when it was already a close (a noisy tracker's moving threshold is several of
        # its speed's sigmas; a third of it is still clear of the noise): at that speed to where they stopped.
        if v0 < -track.velocity_threshold / 3:
            return int(min(t1, t0 + (x0 - stop_x) / -v0 * 1e9))
        return (t0 + t1) // 2
    return None


def _first_touch(track: GripperTrack, g: GraspAttempt, stop_ns: int) -> tuple[int, Evidence] | None:
    """When a finger first touched the object, if before the fingers stopped: the wrist felt a push, or the
    effort rose above what closing freely took, and stayed so until the stop (at most TOUCH_S before it)."""
    since = max(g.start_ns + int(2 * track.period_ns), stop_ns - int(TOUCH_S * 1e9))
    found: list[tuple[int, Evidence]] = []
    pushed = track.wrench.pushed(since, stop_ns)
    if pushed is not None:
        found.append(pushed)
    at = effort_shift([(ts, e) for ts, e in g.efforts if ts <= stop_ns], since, track.e_noise.sigma)
    if at is not None:
        found.append((at, Evidence('gripper.effort_rise', 1.0, 0.0)))
    return min(found, key=lambda item: item[0]) if found else None
