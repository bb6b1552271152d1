"""One gripper sample through the fingers' state machine: what every state notes first (the effort's peak, the
closing path), then the step of the state the fingers are in. The fingers at rest (idle: a stroke starts) and
closed on nothing (empty, slipped: they open again) are here; closing and holding have modules of their own."""

from __future__ import annotations

import math

from ros_robodata.events.closing_step import closing_step
from ros_robodata.events.event import Event, Evidence
from ros_robodata.events.grasp_attempt import (
    CLOSING,
    EMPTY,
    GRIPPING,
    HOLDING,
    IDLE,
    LETTING_GO,
    SLIPPED,
    GraspAttempt,
)
from ros_robodata.events.gripper_track import GripperTrack, Last
from ros_robodata.events.holding_step import gripping_step, holding_step, letting_go_step
from ros_robodata.vocabulary import CONTACT_LOST


def gripper_step(track: GripperTrack, out: list[Event], t: int, x: float, v: float, effort: float,
                 last: Last | None) -> None:
    """The sample at `t` (x, v in stroke fractions; `last`: the sample before) moves the fingers' state on."""
    vt, m = track.velocity_threshold, track.closed_margin
    closing = v < -vt
    g = track.grasp
    if g is not None and math.isfinite(effort):
        g.peak_effort = max(g.peak_effort, effort)
        if track.state == CLOSING and len(g.efforts) < 2000:
            g.efforts.append((t, effort))
    if g is not None and track.state == CLOSING:
        g.recent.append((t, x))
    ev_v = Evidence('gripper.velocity', v * track.span, vt * abs(track.span) * (-1 if closing else 1))

    if track.state == IDLE:
        _idle_step(track, out, t, x, v, effort, last, vt, m, ev_v)
        return
    if track.state == EMPTY or track.state == SLIPPED:
        _empty_step(track, out, t, x, v, last, vt, m)
        return
    assert g is not None
    if track.state == CLOSING:
        closing_step(track, out, g, t, x, v, effort, last, vt, m, ev_v)
        return
    if track.state == GRIPPING:
        gripping_step(track, out, g, t, x, v, effort, vt, m, ev_v)
        return
    if track.state == HOLDING:
        holding_step(track, out, g, t, x, v, effort, last)
    elif track.state == LETTING_GO:
        letting_go_step(track, out, g, t, x, v)


def _idle_step(track: GripperTrack, out: list[Event], t: int, x: float, v: float, effort: float, last: Last | None,
               vt: float, m: float, ev_v: Evidence) -> None:
    """At rest: a stroke starts when the fingers close from rest (or turn from an opening straight into a close)
    while clear of the closed end; the first sample already closed is a gripper closed on nothing."""
    closing, opening = v < -vt, v > vt
    # An opening that turns straight into a close (an operator retrying at once after a miss) starts a
    # stroke from where it turned, with no rest between.
    turned = track.opening_since is not None and closing and last is not None
    if track.opening_since is not None and not opening:  # the release stroke ended
        track.log.marks.append((t, 'opened'))
        track.opening_since, track.opened_ns = None, t
    armed = track.still_count >= 3 or turned
    track.still_count = track.still_count + 1 if abs(v) <= vt else 0
    if closing and x > m and armed:
        from_x = track.still_x if track.still_x is not None else (last[1] if last is not None else x)
        if turned and last is not None:
            from_x = max(last[1], x)
        start = track.onset(t, x, v, from_x, last)
        track.grasp = GraspAttempt(start_ns=start, start_x=from_x, seen_ns=t,
                                   peak_effort=effort if math.isfinite(effort) else 0.0)
        if track.calibration.observed.most_open is None:
            track.uncalibrated.add('gripper')
        if not track.calibration.closed_known:
            track.closed_unseen = True
        if track.command is not None and track.command.calibration.observed.most_open is None:
            track.uncalibrated.add('command')
        track.state = CLOSING
        track.announce(out, track.grasp, t, x, ev_v)
    elif x <= m and last is None:
        track.state, track.fail_x = EMPTY, x


def _empty_step(track: GripperTrack, out: list[Event], t: int, x: float, v: float, last: Last | None, vt: float,
                m: float) -> None:
    """Closed on nothing (or after a slip): where the fingers come to rest is the closed end; opening again confirms
    a miss (and ends the contact of an object still rubbing on the fingers as it fell)."""
    resting = track.calibration.resting_at()
    if track.learn_closed and resting is not None and abs(v) <= vt:
        track.learn_closed = False  # closed on nothing and at rest: that is where this gripper closes to
        track.recalibrate_due |= track.calibration.closed_on_nothing(resting)
    if x > track.fail_x + m:
        track.confirm_miss(out, t)
        if track.state == SLIPPED:  # still rubbing on the falling object when the fingers opened
            start = track.onset(t, x, v, track.fail_x, last)
            track.log.emit(out, CONTACT_LOST, start, t, 0.8, [Evidence('gripper.opening', x, track.fail_x + m)])
        track.to_idle(opened_at=t)
