"""The grasp/contact/release detector: fed one sample at a time, in stamp order, the same live and offline.

Signals and what they tell:
- gripper (finger joint): closing starts (grasp_start); the fingers stop short of closed (contact), stay there
  with holding effort (grasp), close fully on nothing (grasp_failed), open again (release, contact_lost);
- wrist wrench: the load changes when the object leaves its support (lift) or falls out of a loosened grip
  (grasp_failed, a slip); with no gripper signal, a load above the noise is contact.

Thresholds are in units of the signal itself: the gripper's stroke (0 closed, 1 open, from the profile) and
the measured noise floor of each signal. The few fixed constants below are physical plausibility floors, not
fits to any rig; the profile's segmenter section overrides the derived thresholds.

Why one module: the gripper and the wrench read each other's state at every sample (a contact is confirmed by
the load, a slip is told from a release by which came first), so the detector is one state machine; the wrist
load (load.py), noise floors (noise.py) and stamp ordering (order.py) are already their own modules.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from ros_robodata.events.command import GripperCommandWatch
from ros_robodata.events.event import Event, Evidence, Segment
from ros_robodata.events.load import NOISE_SIGMAS, GraspLoad, WristLoad
from ros_robodata.events.noise import NoiseFloor
from ros_robodata.events.speed import POSITIONS, FingerSpeed
from ros_robodata.signals.samples import GripperReading, WrenchReading
from ros_robodata.vocabulary import (
    COLLISION,
    CONTACT,
    CONTACT_LOST,
    GRASP,
    GRASP_FAILED,
    GRASP_START,
    LIFT,
    RELEASE,
)

# Slowest gripper motion that counts as deliberate: a tenth of the stroke per second.
MIN_STROKE_SPEED = 0.1
# Within this share of the stroke from closed, the fingers closed on nothing.
CLOSED_MARGIN = 0.05
# The fingers must stay put this long after stopping before a grasp is called secured.
SETTLE_S = 0.05
# Holding effort: this share of max_effort (or of the stroke's peak effort when max_effort is unknown).
HOLD_EFFORT_SHARE = 0.25
# The command must press the stopped fingers further shut this long to mean a block: a follower gripper starts
# after its leader by its control lag (about 0.1 s on a low-cost arm).
PRESS_HOLD_S = 0.15
# With neither a command channel nor an effort signal, a stop is contact once it lasted this long: an operator's
# pause in a staged close is shorter (the stamp is still where the fingers stopped; only the word comes later).
PAUSE_CONFIRM_S = 1.0
# A carried load that vanishes this long or less before the fingers (or the command) open is a place: the table
# took the object's weight first. A slip is only called once this long has passed with the grip still closed.
PLACE_WINDOW_S = 0.25
# A wrist transient this many times the contact threshold (and above what the free arm's own motion shows), while
# the gripper neither holds nor closes, is a collision.
COLLISION_FACTOR = 3.0
# After the fingers open, the object they let go of may still brush them, and a knock rings: no collision is
# called this soon after either.
COLLISION_QUIET_S = 0.5
# A gripper that travelled this share of its stroke with no event at all is worth a warning.
UNEXPLAINED_STROKE = 0.5

_IDLE, _CLOSING, _GRIPPING, _HOLDING, _EMPTY, _SLIPPED = 'idle', 'closing', 'gripping', 'holding', 'empty', 'slipped'


@dataclass(frozen=True)
class SegmenterSettings:
    """What the detector knows about the rig (from the profile) and which signals it may use."""

    open_position: float | None = None
    closed_position: float | None = None
    max_effort: float | None = None
    use_gripper: bool = True
    use_wrench: bool = True
    gripper_velocity_threshold: float | None = None  # position units per second
    contact_force_threshold_n: float | None = None
    min_event_gap_s: float = 0.1
    command_open: float | None = None  # the gripper command's open and closed values (None: no command channel)
    command_closed: float | None = None

    @property
    def has_gripper(self) -> bool:
        return self.use_gripper and self.open_position is not None and self.closed_position is not None

    @property
    def has_command(self) -> bool:
        return self.has_gripper and self.command_open is not None and self.command_closed is not None


@dataclass
class _Grasp:
    """The current grasp attempt, from the start of closing to the opening."""

    start_ns: int
    start_x: float = 1.0
    announced: bool = False
    contact_ns: int | None = None
    stall_ns: int | None = None
    stall_x: float = math.nan
    ref_x: float = math.nan
    confirmed: bool = False
    loosened: bool = False
    loosened_ns: int | None = None  # when the holding effort went (a slip starts there)
    peak_effort: float = 0.0
    load: GraspLoad | None = None  # the wrist's view of this grasp, from its confirmation on
    slipped_ns: int | None = None
    quiet_from: int | None = None
    slip_pending: tuple[int, Evidence, int] | None = None  # (slip start, evidence, when seen) until it is sure
    sinking_ns: int | None = None  # when the fingers began closing on past where they held
    moving: tuple[int, float, float] | None = None  # the last sample where the fingers clearly closed (t, x, v)
    stop_ns: int | None = None  # when the fingers stopped on the object, from that sample's speed
    pause_x: float = math.inf  # where a staged close paused
    fast: tuple[int, float, float] | None = None  # the last sample where they closed at twice the threshold
    stop_x: float = math.nan  # where they first stood still after closing
    stopped_since: int | None = None  # since when they stand still (no command, no effort: a pause or contact)
    press_since: int | None = None  # since when the command presses the stopped fingers further shut


class EventDetector:
    """Feed `gripper()` and `wrench()` in stamp order (see `Segmenter` for the ordering); each returns the
    events it confirmed. `finish()` closes the episode and `timeline()` gives the subtask segments."""

    def __init__(self, settings: SegmenterSettings) -> None:
        self.settings = settings
        self.events: list[Event] = []
        self.skipped: dict[str, int] = {}
        self._marks: list[tuple[int, str]] = []  # internal moments for the timeline (gripper open again)
        self._first_ns: int | None = None
        self._last_ns: int | None = None
        # gripper
        self._state = _IDLE
        # (an open position of 0, as many grippers have, is a position: not "unknown")
        self._closed = settings.closed_position if settings.closed_position is not None else 0.0
        self._stroke = (settings.open_position if settings.open_position is not None else 1.0) - self._closed
        self._g_last: tuple[int, float, float] | None = None  # stamp, x, v
        self._g_periods: deque[int] = deque(maxlen=50)
        self._speed = FingerSpeed()
        self._command = (GripperCommandWatch(settings.command_open, settings.command_closed)  # type: ignore[arg-type]
                         if settings.has_command else None)
        self._x_range: tuple[float, float] | None = None  # the fingers' travel, for the no-event warning
        self.gripper_samples = 0
        self._still_ns: int | None = None  # the last gripper sample where the fingers stood still, and where
        self._still_x: float | None = None
        self._opened_ns: int | None = None  # when the fingers last opened (a release, a failed grasp reopened)
        self._x_noise = NoiseFloor()
        self._v_noise = NoiseFloor()
        self._e_noise = NoiseFloor()
        self._e_idle = 0.0
        self._e_idle_set = False
        self._grasp: _Grasp | None = None
        self._opening_since: int | None = None
        self._still = 0  # consecutive still samples: a stroke starts from rest
        self._fail_x = 0.0
        # wrench
        self._wrist = WristLoad(settings.contact_force_threshold_n)
        self._w_last_ns: int | None = None
        self._w_contact = False
        self._free_loads: deque[float] = deque(maxlen=2500)  # |load| while free: what motion alone does
        self._free_seen = 0
        self._motion_floor = 0.0
        self._w_run: list[int] = []
        self._w_frame = ''
        self._bump: list[tuple[int, float]] = []  # the wrist transient under way while free
        self._bumped_ns: int | None = None  # when the last collision ended

    # --- thresholds -------------------------------------------------------------------------------------------
    @property
    def velocity_threshold(self) -> float:
        """Stroke fractions per second that count as the fingers moving."""
        if self.settings.gripper_velocity_threshold is not None:
            return self.settings.gripper_velocity_threshold / abs(self._stroke)
        if self._speed.source == POSITIONS:  # differenced positions: their noise over the span the speed spans
            return max(MIN_STROKE_SPEED, NOISE_SIGMAS * math.sqrt(2) * self._x_noise.sigma / self._speed.span_s)
        return max(MIN_STROKE_SPEED, NOISE_SIGMAS * self._v_noise.sigma)

    @property
    def closed_margin(self) -> float:
        return max(CLOSED_MARGIN, NOISE_SIGMAS * self._x_noise.sigma)

    @property
    def force_threshold(self) -> float:
        return self._wrist.threshold

    def _hold_effort(self, grasp: _Grasp) -> float | None:
        """Effort (above idle) that means the fingers are squeezing; None when effort says nothing."""
        noise = NOISE_SIGMAS * self._e_noise.sigma
        if self.settings.max_effort is not None:
            return max(HOLD_EFFORT_SHARE * self.settings.max_effort, noise)
        peak = grasp.peak_effort - self._e_idle
        if peak <= noise or peak <= 0:
            return None
        return max(HOLD_EFFORT_SHARE * peak, noise)

    def thresholds(self) -> dict[str, float]:
        out: dict[str, float] = {}
        if self.settings.has_gripper:
            out['gripper_velocity_stroke_per_s'] = self.velocity_threshold
            out['gripper_velocity'] = self.velocity_threshold * abs(self._stroke)
            out['gripper_closed_margin_stroke'] = self.closed_margin
        if self.settings.use_wrench:
            out['contact_force_n'] = self.force_threshold
        return out

    # --- output -----------------------------------------------------------------------------------------------
    def _emit(self, out: list[Event], kind: str, stamp_ns: int, now_ns: int, confidence: float,
              evidence: list[Evidence], note: str = '', frame_id: str = '') -> None:
        gap_ns = int(self.settings.min_event_gap_s * 1e9)
        for e in reversed(self.events):
            if e.kind == kind and abs(stamp_ns - e.stamp_ns) < gap_ns:
                return
            if stamp_ns - e.stamp_ns > gap_ns:
                break
        event = Event(kind, stamp_ns, round(confidence, 3), tuple(evidence), now_ns, frame_id, note)
        self.events.append(event)
        out.append(event)

    def _seen(self, stamp_ns: int) -> None:
        if self._first_ns is None or stamp_ns < self._first_ns:
            self._first_ns = stamp_ns
        if self._last_ns is None or stamp_ns > self._last_ns:
            self._last_ns = stamp_ns

    def skip(self, why: str) -> list[Event]:
        self.skipped[why] = self.skipped.get(why, 0) + 1
        return []

    # --- gripper ----------------------------------------------------------------------------------------------
    def gripper(self, r: GripperReading) -> list[Event]:
        if not self.settings.has_gripper:
            return []
        if not math.isfinite(r.position):
            return self.skip('gripper_not_finite')
        last = self._g_last
        if last is not None and r.stamp_ns <= last[0]:
            return self.skip('gripper_stamp_not_increasing')
        self._seen(r.stamp_ns)
        self.gripper_samples += 1
        x = (r.position - self._closed) / self._stroke
        self._x_range = (min(x, self._x_range[0]), max(x, self._x_range[1])) if self._x_range else (x, x)
        if last is not None:
            period = r.stamp_ns - last[0]
            typical = self._period_ns() if self._g_periods else period
            self._g_periods.append(period)
            if period > 5 * typical:  # a gap in the stream: the jump across it is not motion we saw
                self._x_noise.reset_last()
                self._v_noise.reset_last()
                self._speed.gap()
        trusted = not self._speed.distrusted
        v = self._speed.update(r.stamp_ns, x, r.velocity / self._stroke, self.velocity_threshold)
        if trusted and self._speed.distrusted:  # what the noise floor learnt of the message's speed is not this
            self._v_noise = NoiseFloor()
        effort = abs(r.effort) if math.isfinite(r.effort) else math.nan
        out: list[Event] = []
        self._settle_slip(out, r.stamp_ns)
        self._gripper_step(out, r.stamp_ns, x, v, effort, last)
        if self._state == _IDLE and abs(v) <= self.velocity_threshold:
            self._x_noise.add(x)
            self._v_noise.add(v)
            if self._command is not None and self._command.fresh(r.stamp_ns):
                self._command.free(x)
            if math.isfinite(effort):
                self._e_noise.add(effort)
                self._e_idle = effort if not self._e_idle_set else self._e_idle + 0.05 * (effort - self._e_idle)
                self._e_idle_set = True
        if abs(v) <= self.velocity_threshold:
            self._still_ns, self._still_x = r.stamp_ns, x
        self._g_last = (r.stamp_ns, x, v)
        return out

    def _period_ns(self) -> float:
        return float(np.median(self._g_periods)) if self._g_periods else 10_000_000.0

    def _onset(self, t_ns: int, x: float, v: float, from_x: float, last: tuple[int, float, float] | None) -> int:
        """When a stroke seen at (t, x) moving at v began from from_x: back along the speed (a stroke speeds up,
        so this errs late), never before the last sample where the fingers stood still."""
        if last is None or v == 0:
            return t_ns
        back = abs(x - from_x) / abs(v)
        still = self._still_ns if self._still_ns is not None and self._still_ns < t_ns else last[0]
        return int(max(still, t_ns - back * 1e9))

    def _gripper_step(self, out: list[Event], t: int, x: float, v: float, effort: float,
                      last: tuple[int, float, float] | None) -> None:
        vt, m = self.velocity_threshold, self.closed_margin
        closing, opening = v < -vt, v > vt
        g = self._grasp
        if g is not None and math.isfinite(effort):
            g.peak_effort = max(g.peak_effort, effort)
        ev_v = Evidence('gripper.velocity', v * self._stroke, vt * abs(self._stroke) * (-1 if closing else 1))

        if self._state == _IDLE:
            if self._opening_since is not None and not opening:  # the release stroke ended
                self._marks.append((t, 'opened'))
                self._opening_since, self._opened_ns = None, t
            armed = self._still >= 3
            self._still = self._still + 1 if abs(v) <= vt else 0
            if closing and x > m and armed:
                from_x = self._still_x if self._still_x is not None else (last[1] if last is not None else x)
                start = self._onset(t, x, v, from_x, last)
                self._grasp = _Grasp(start_ns=start, start_x=from_x,
                                     peak_effort=effort if math.isfinite(effort) else 0.0)
                self._state = _CLOSING
                self._announce(out, self._grasp, t, x, ev_v)
            elif x <= m and last is None:
                self._state, self._fail_x = _EMPTY, x
            return

        if self._state == _EMPTY or self._state == _SLIPPED:
            if x > self._fail_x + m:
                if self._state == _SLIPPED:  # still rubbing on the falling object when the fingers opened
                    start = self._onset(t, x, v, self._fail_x, last)
                    self._emit(out, CONTACT_LOST, start, t, 0.8, [Evidence('gripper.opening', x, self._fail_x + m)])
                self._to_idle(opened_at=t)
            return

        assert g is not None
        ev_x = Evidence('gripper.opening', x, m)
        if self._state == _CLOSING:
            self._announce(out, g, t, x, ev_v)
            if x <= m:
                at = t
                if last is not None and last[1] > x:  # where the stroke crossed the closed margin
                    at = int(last[0] + (t - last[0]) * (last[1] - m) / (last[1] - x))
                self._emit(out, GRASP_FAILED, at, t, 0.9, [ev_x], note='closed fully on nothing')
                if g.contact_ns is not None:
                    self._emit(out, CONTACT_LOST, at, t, 0.7, [ev_x])
                self._state, self._fail_x = _EMPTY, x
                return
            if closing:
                g.moving, g.press_since, g.stop_x, g.stopped_since = (t, x, v), None, math.nan, None
                if v < -2 * vt:
                    g.fast = (t, x, v)
                return
            if math.isnan(g.stop_x):
                g.stop_x = x  # where the fingers stopped (they may creep on under the squeeze)
            if not g.announced:  # a twitch of the fingers, not a stroke
                self._to_idle()
                return
            if g.contact_ns is not None and x > g.stall_x - m:  # settling after the first stop: keep it
                self._state = _GRIPPING
                return
            commanded = self._command is not None and self._command.fresh(t)
            press = self._command.pressing(x, t) if commanded else None  # type: ignore[union-attr]
            if press is not None:  # a follower answers its leader late: the press must outlast that lag
                g.press_since = g.press_since if g.press_since is not None else t
                if t - g.press_since < PRESS_HOLD_S * 1e9:
                    return
            elif commanded or (self._command is None and not self._squeezing(g, effort) and not self._wrench_agrees(
                    g.moving[0] if g.moving is not None else t, t)[1]):
                # A stop that may be a pause in a staged close: the command stands where the fingers are, or
                # nothing but their position speaks (then a stop lasting longer than such pauses is contact). The
                # fingers opening past where they paused is the operator letting go: no grasp after all.
                g.press_since, g.pause_x = None, min(g.pause_x, x)
                g.stopped_since = g.stopped_since if g.stopped_since is not None else t
                if x > g.pause_x + m:
                    self._to_idle(opened_at=t)
                    return
                if commanded or t - g.stopped_since < PAUSE_CONFIRM_S * 1e9:
                    return
            # The fingers stopped short of closed: they met something. Contact happened where the stroke, at
            # the speed it last had, reached the place the fingers stopped.
            contact = t
            moving = g.moving if g.moving is not None else (last if last is not None and last[2] < -vt else None)
            if g.fast is not None and moving is not None and moving[0] - g.fast[0] <= 2 * self._period_ns():
                moving = g.fast  # a decelerating last sample says little of where the stroke would have arrived
            stop_x = x if math.isnan(g.stop_x) else g.stop_x
            if moving is not None:  # from the last sample where the fingers clearly moved, at the speed they had
                contact = int(min(t, max(moving[0], moving[0] + (moving[1] - stop_x) / abs(moving[2]) * 1e9)))
            g.stall_ns, g.stall_x, g.stop_ns, g.moving, g.fast = t, x, contact, None, None
            hold = self._hold_effort(g)
            evidence = [ev_x, Evidence('gripper.velocity', v * self._stroke, -vt * abs(self._stroke))]
            if press is not None and self._command is not None:
                evidence.append(Evidence('gripper.command_gap', press, self._command.margin))
            if hold is not None and math.isfinite(effort):
                evidence.append(Evidence('gripper.effort', effort - self._e_idle, hold))
                if effort - self._e_idle < hold:  # stopped without squeezing: the operator let go of the key
                    self._to_idle()
                    return
            if g.contact_ns is None:
                g.contact_ns = contact
                confidence, wrench_ev = self._wrench_agrees(contact, t)
                self._emit(out, CONTACT, contact, t, confidence, evidence + wrench_ev)
            self._state = _GRIPPING
            return

        if self._state == _GRIPPING:
            if x <= m:
                self._fail(out, t, t, [ev_x], 'closed through the object', x)
                return
            if closing and x < g.stall_x - m:
                self._state = _CLOSING
                return
            assert g.stall_ns is not None
            if t - g.stall_ns < SETTLE_S * 1e9:
                return
            if opening and x > g.stall_x + 2 * m:  # opened again before it ever settled: a touch, not a grasp
                self._emit(out, CONTACT_LOST, t, t, 0.7, [ev_v])
                self._to_idle(opened_at=t)
                return
            g.confirmed, g.ref_x = True, x
            evidence = [ev_x]
            hold = self._hold_effort(g)
            confidence = 0.8
            secured = g.stop_ns or g.stall_ns  # without effort: when the fingers stopped on the object
            if hold is not None and math.isfinite(effort):
                evidence.append(Evidence('gripper.effort', effort - self._e_idle, hold))
                confidence = 0.95
                secured = g.stall_ns  # with it: when the stop was seen, the grip force built by then
            self._emit(out, GRASP, secured, t, confidence, evidence)
            self._state = _HOLDING
            if self.settings.use_wrench and self._wrist.baseline is not None:
                g.load = GraspLoad(self._wrist.weight_axis(), self._wrist.threshold)
            return

        if self._state == _HOLDING:
            if x <= m:  # the object left when the fingers began to close on past where they held it
                self._fail(out, g.sinking_ns or t, t, [ev_x], 'fingers closed: the object slipped out', x)
                return
            if x < g.ref_x - m:
                if g.sinking_ns is None:
                    g.sinking_ns = self._onset(t, x, v, g.ref_x, last)
            else:
                g.sinking_ns = None
            if x > g.ref_x + m:
                start = self._onset(t, x, v, g.ref_x, last)
                ev_open = Evidence('gripper.opening', x, g.ref_x + m)
                dropped = self._load_gone_before(g, start) if g.loosened else None
                if dropped is not None and self._placed(g, start):
                    dropped = None
                g.slip_pending = None
                if dropped is not None:  # the loosened grip had already lost the object: a slip, not a release
                    self._emit(out, GRASP_FAILED, dropped[0], t, 0.8, [dropped[1], ev_open],
                               note='the carried load vanished before the gripper opened: the object slipped out')
                else:
                    self._emit(out, RELEASE, start, t, 0.95 if opening else 0.8, [ev_open, ev_v])
                self._emit(out, CONTACT_LOST, start, t, 0.9, [ev_open])
                self._to_idle(opened_at=start)
                return
            if abs(v) <= vt:
                g.ref_x = x
            hold = self._hold_effort(g)
            if hold is not None and math.isfinite(effort):
                loosened = effort - self._e_idle < hold
                if loosened and not g.loosened:
                    g.loosened_ns = t
                g.loosened = loosened

    def _to_idle(self, opened_at: int | None = None) -> None:
        """The attempt is over; `opened_at`: the fingers started opening then (a release, a reopened miss)."""
        self._state, self._grasp, self._still = _IDLE, None, 0
        if opened_at is not None:
            self._opening_since = self._opened_ns = opened_at

    def _squeezing(self, g: _Grasp, effort: float) -> bool:
        """The effort signal says the fingers squeeze something (None of that when effort is not reported)."""
        hold = self._hold_effort(g)
        return hold is not None and math.isfinite(effort) and effort - self._e_idle >= hold

    def _announce(self, out: list[Event], g: _Grasp, t: int, x: float, evidence: Evidence) -> None:
        """grasp_start, once the fingers travelled a closed-margin's worth (so a twitch is not a stroke)."""
        if not g.announced and g.start_x - x >= self.closed_margin:
            g.announced = True
            self._emit(out, GRASP_START, g.start_ns, t, 0.9, [evidence])

    def _fail(self, out: list[Event], at: int, now: int, evidence: list[Evidence], note: str,
              x: float | None = None, *, contact_lost: bool = True) -> None:
        self._emit(out, GRASP_FAILED, at, now, 0.9, evidence, note=note)
        if contact_lost:
            self._emit(out, CONTACT_LOST, at, now, 0.8, evidence)
        self._state = _EMPTY
        self._fail_x = x if x is not None else (self._g_last[1] if self._g_last is not None else 0.0)

    def command(self, r: GripperReading) -> list[Event]:
        """The operator's gripper command (position in the command's own units): read by the gripper's steps."""
        if self._command is not None:
            self._command.add(r.stamp_ns, r.position)
        return []

    # --- wrench -----------------------------------------------------------------------------------------------
    def _wrench_agrees(self, since_ns: int, now_ns: int) -> tuple[float, list[Evidence]]:
        """Confidence of a gripper contact, raised when the wrist felt it too (within 50 ms before, or since)."""
        if not self.settings.use_wrench or self._wrist.baseline is None:
            return 0.85, []
        peak = self._wrist.peak(since_ns - 50_000_000, now_ns)
        thr = self._wrist.threshold
        if peak > thr:
            return 0.97, [Evidence('wrench.force_change', peak, thr)]
        return 0.8, []

    def wrench(self, r: WrenchReading) -> list[Event]:
        if not self.settings.use_wrench:
            return []
        f = r.force
        if not (math.isfinite(f[0]) and math.isfinite(f[1]) and math.isfinite(f[2])):
            return self.skip('wrench_not_finite')
        if self._w_last_ns is not None and r.stamp_ns <= self._w_last_ns:
            return self.skip('wrench_stamp_not_increasing')
        self._w_last_ns = r.stamp_ns
        self._w_frame = r.frame_id
        self._seen(r.stamp_ns)
        holding = self._state in (_GRIPPING, _HOLDING, _CLOSING)
        # The baseline and noise floor learn from the free wrist; a wrench-only rig's baseline follows slowly
        # even in contact, so one taken during a knock does not stick.
        reading = self._wrist.add(r.stamp_ns, f, free=not (holding or self._w_contact),
                                  follow=not (self.settings.has_gripper and holding))
        if reading is None:
            return []
        load, size = reading
        out: list[Event] = []
        self._settle_slip(out, r.stamp_ns)
        if not self.settings.has_gripper:
            self._wrench_contact(out, r.stamp_ns, size)
        else:
            self._watch_bump(out, r.stamp_ns, size)
        g = self._grasp
        if self._state == _HOLDING and g is not None and g.load is not None:
            lift = g.load.add(r.stamp_ns, load, size)
            if lift is not None:
                along = g.load.axis is not None
                evidence = Evidence('wrench.load_along_weight' if along else 'wrench.load_step', lift[1],
                                    g.load.edge_threshold if along else 2 * g.load.threshold)
                self._emit(out, LIFT, lift[0], r.stamp_ns, 0.85, [evidence], frame_id=self._w_frame)
            elif g.load.lifted:
                self._watch_slip(out, g, r.stamp_ns)
        elif self._state == _SLIPPED and g is not None and g.load is not None:
            # The falling object rubs on the fingers in bursts: contact is lost once the load has stayed at
            # none, steadily, for 0.1 s.
            g.load.add(r.stamp_ns, load, size)
            quiet_since = g.load.quiet_since()
            if quiet_since is None or quiet_since < (g.slipped_ns or 0):
                g.quiet_from = None
            elif g.quiet_from is None:
                g.quiet_from = quiet_since
            elif r.stamp_ns - g.quiet_from >= 150_000_000:
                self._emit(out, CONTACT_LOST, g.quiet_from, r.stamp_ns, 0.7,
                           [Evidence('wrench.load', g.load.level(), g.load.edge_threshold)], frame_id=self._w_frame)
                self._state = _EMPTY
        return out

    def _learn_motion_floor(self, size: float) -> None:
        """What the free wrist reads from the arm's own motion: 1.5x the 99th percentile of its recent loads,
        recomputed every 100 samples (a percentile a sample would cost the live node more than the rest)."""
        self._free_loads.append(size)
        self._free_seen += 1
        if self._free_seen % 100 == 0:
            self._motion_floor = 1.5 * float(np.percentile(self._free_loads, 99))

    def _wrench_contact(self, out: list[Event], t: int, size: float) -> None:
        """Wrench-only rigs: contact while the load stands above the noise (3 samples), lost below half of it.

        Without a gripper to say when a grasp is on, the arm's own accelerations must not read as contact: the
        threshold also stays above what the free wrist showed lately."""
        if not self._w_contact:
            self._learn_motion_floor(size)
        thr = self._wrist.threshold
        if self.settings.contact_force_threshold_n is None:
            thr = max(thr, self._motion_floor)
        beyond = size > thr if not self._w_contact else size < thr / 2
        if not beyond:
            self._w_run.clear()
            return
        self._w_run.append(t)
        needed = 3 if not self._w_contact else 10
        if len(self._w_run) < needed:
            return
        at = self._w_run[0]
        self._w_run.clear()
        self._w_contact = not self._w_contact
        kind = CONTACT if self._w_contact else CONTACT_LOST
        self._emit(out, kind, at, t, 0.8, [Evidence('wrench.force_change', size, thr if self._w_contact
                                                    else thr / 2)], frame_id=self._w_frame)

    def _watch_bump(self, out: list[Event], t: int, size: float) -> None:
        """Collision: a wrist transient well above the noise and above what the free arm's own motion shows,
        while the gripper neither holds nor closes (nor just let go of something)."""
        quiet_ns = COLLISION_QUIET_S * 1e9  # after an opening, and after a knock (it rings)
        free = self._state in (_IDLE, _EMPTY) and not (
            self._opened_ns is not None and t - self._opened_ns < quiet_ns) and not (
            self._bumped_ns is not None and t - self._bumped_ns < quiet_ns)
        if not free:
            self._bump.clear()
            return
        thr = max(COLLISION_FACTOR * self._wrist.threshold, self._motion_floor)
        if not self._bump:
            self._learn_motion_floor(size)
        if size > thr:
            self._bump.append((t, size))
            return
        if len(self._bump) >= 3 and size < thr / 2:
            peak = max(v for _, v in self._bump)
            self._emit(out, COLLISION, self._bump[0][0], t, 0.8, [Evidence('wrench.peak_force', peak, thr)],
                       note=f'a {peak:.1f} N knock while not holding', frame_id=self._w_frame)
            self._bumped_ns = t
        if size < thr / 2 or len(self._bump) < 3:
            self._bump.clear()

    def _load_gone_before(self, g: _Grasp, before_ns: int) -> tuple[int, Evidence] | None:
        """When the carried load had already dropped below three quarters before the gripper opened: the time
        it was last carried, with the evidence; None when the object was still carried (or nothing says)."""
        if g.load is None or not g.load.telling:
            return None
        level = g.load.level_before(before_ns)
        if level is None or level >= 0.75 * g.load.carried:
            return None
        return self._slip_start(g, before_ns), Evidence('wrench.load', level, 0.75 * g.load.carried)

    @staticmethod
    def _slip_start(g: _Grasp, default: int) -> int:
        """A loosened grip lets go at once; else the load was last carried at the window's middle."""
        assert g.load is not None
        return g.loosened_ns or g.load.carrying_ns or default

    def _watch_slip(self, out: list[Event], g: _Grasp, t: int) -> None:
        """Slip: the carried load drops below half while the fingers stay closed and the grip was loosened (or,
        with no effort signal, drops within 0.1 s)."""
        assert g.load is not None
        if not g.load.telling:  # the object is too light for the wrist to tell it from none
            return
        level = g.load.level()
        if level >= 0.5 * g.load.carried:
            return
        effort_known = self._hold_effort(g) is not None
        carried_until = g.load.carrying_ns
        abrupt = carried_until is not None and t - carried_until < 100_000_000
        if not (g.loosened or (not effort_known and abrupt)):
            return
        evidence = Evidence('wrench.load', level, 0.5 * g.load.carried)
        if g.loosened and effort_known and self._command is None:
            # The fingers' own effort said the grip let go before the load went: a slip, whatever comes next.
            self._fail(out, self._slip_start(g, t), t, [evidence], 'the carried load vanished: the object slipped '
                       'out', contact_lost=False)
            self._state = _SLIPPED  # contact_lost once the object stops rubbing on the fingers, or they open
            g.slipped_ns = t
        elif g.slip_pending is None:  # a slip, unless the fingers or the command open soon: then it was set down
            g.slip_pending = (self._slip_start(g, t), evidence, t)

    def _placed(self, g: _Grasp, open_ns: int) -> bool:
        """The load left the grip just before the fingers opened (the table took it: a place), or the operator
        had commanded them open by then."""
        if g.slip_pending is not None:
            return True  # the fingers opened within the window of the load's vanishing
        gone = g.load.carrying_ns if g.load is not None else None
        if self._command is None or gone is None:
            return False
        opened = self._command.opened_since(gone - int(PLACE_WINDOW_S * 1e9), g.ref_x)
        return opened is not None and opened <= open_ns

    def _settle_slip(self, out: list[Event], t: int) -> None:
        """A load that vanished while the grip stayed closed becomes a slip once PLACE_WINDOW_S passed with
        neither the fingers nor the command opening."""
        g = self._grasp
        if self._state != _HOLDING or g is None or g.slip_pending is None:
            return
        start, evidence, seen = g.slip_pending
        if self._command is not None and self._command.opened_since(start, g.ref_x) is not None:
            return  # the operator is letting go: the fingers' opening will make it a release
        if t - seen < PLACE_WINDOW_S * 1e9:
            return
        g.slip_pending = None
        self._fail(out, start, t, [evidence], 'the carried load vanished: the object slipped out',
                   contact_lost=False)
        self._state = _SLIPPED  # contact_lost once the object stops rubbing on the fingers, or they open
        g.slipped_ns = t

    # --- end --------------------------------------------------------------------------------------------------
    def finish(self) -> list[Event]:
        """The episode ended; nothing is pending that could still become an event."""
        return []

    def inputs(self) -> list[str]:
        """What the detector read its signals from, said once per episode."""
        out = []
        if self.settings.has_gripper and self._speed.source:
            out.append(self._speed.why)
        if self._command is not None:
            out.append(f'gripper command: {self._command.samples} sample(s) read')
        return out

    def warnings(self) -> list[str]:
        """What looks wrong with the input, not with the episode: said instead of a silent zero."""
        out = []
        s = self.settings
        if s.has_gripper and self._x_range is not None:
            low, high = self._x_range
            gripper_kinds = (GRASP_START, CONTACT, GRASP, RELEASE, GRASP_FAILED)
            if high - low > UNEXPLAINED_STROKE and not any(e.kind in gripper_kinds for e in self.events):
                out.append(f'the gripper moved through {100 * min(1.0, high - low):.0f}% of its stroke and no event '
                           'was found: check segmenter.gripper_velocity_threshold against how fast the fingers move, '
                           'and the gripper\'s open/closed positions against the data')
            if high > 1.5 or low < -0.5:
                at = [round(s.closed_position + v * self._stroke, 4) for v in (low, high)]  # type: ignore[operator]
                out.append(f'gripper positions run from {at[0]:g} to {at[1]:g}, far outside the profile\'s open '
                           f'{s.open_position:g} / closed {s.closed_position:g}: another unit or another joint?')
        if self._command is not None and self._command.samples == 0:
            out.append('the profile names a gripper command but no command sample was read: the grip was judged '
                       'from the fingers alone')
        return out

    def timeline(self, start_ns: int | None = None, end_ns: int | None = None) -> list[Segment]:
        """Subtasks between the events: reach, grasp, transport, release, retreat (one set per attempt)."""
        start = start_ns if start_ns is not None else self._first_ns
        end = end_ns if end_ns is not None else self._last_ns
        if start is None or end is None:
            return []
        marks = sorted([(e.stamp_ns, e.kind) for e in self.events] + self._marks)
        segments: list[Segment] = []
        phase, since, attempt = 'reach', start, 1

        def close(at: int, next_phase: str) -> None:
            nonlocal phase, since
            if at > since:
                segments.append(Segment(phase, since, at, attempt))
            phase, since = next_phase, max(since, at)

        failed = False  # after a failed grasp, the reopened gripper starts the next attempt's reach
        for at, kind in marks:
            if kind == GRASP_START and phase in ('reach', 'retreat'):
                if phase == 'retreat':
                    close(at, 'reach')
                    attempt += 1
                close(at, 'grasp')
                failed = False
            elif kind == LIFT and phase == 'grasp':
                close(at, 'transport')
            elif kind == RELEASE and phase in ('grasp', 'transport'):
                close(at, 'release')
            elif kind == 'opened' and phase == 'release':
                close(at, 'retreat')
            elif kind == 'opened' and phase == 'retreat' and failed:
                close(at, 'reach')
                attempt, failed = attempt + 1, False
            elif kind == GRASP_FAILED and phase in ('grasp', 'transport'):
                close(at, 'retreat')
                failed = True
        close(end, phase)
        return segments
