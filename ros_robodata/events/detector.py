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
import statistics
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ros_robodata.events.command import GripperCommandWatch
from ros_robodata.events.event import Event, Evidence, Segment
from ros_robodata.events.load import NOISE_SIGMAS, GraspLoad, WristLoad
from ros_robodata.events.noise import NoiseFloor
from ros_robodata.events.speed import POSITIONS, FingerSpeed
from ros_robodata.events.stroke import PROFILE, Stroke, StrokeWatch
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
# A command within this share of its stroke from its closed end asks for the fingers fully closed.
COMMAND_CLOSED = 0.1
QUANTUM_STEPS = 2.5  # a quantised position's jitter, in steps, that is not yet motion
QUANTUM_MAX = 0.01  # of the stroke: a coarser step than this is no reading's resolution
SECURED_SHARE = 0.75  # of the holding effort: the object is secured once the grip force built this far
REACHED = 0.01  # of the stroke: fingers within this of where they rest have reached it
RECENT_SAMPLES = 512  # the closing path kept to stamp where it reached its rest
# With neither a command channel nor an effort signal, a stop is contact once it lasted this long: an operator's
# pause in a staged close is shorter (the stamp is still where the fingers stopped; only the word comes later).
PAUSE_CONFIRM_S = 1.0
# A carried load that vanished is a slip once the fingers close on past where they held, a place once they (or the
# command) open; with neither after this long (and three gripper samples), it is a guess, said as one.
AMBIGUOUS_S = 1.0
# The fingers closing this share of the stroke past where they held (and more than three closed margins) is the
# object leaving the grip: a slip, seen by the fingers alone.
SLIP_SINK = 0.1
# An opening is a release once the fingers opened this share of the stroke past where they held, came within
# NEAR_OPEN of the open end, or stayed open LETGO_S; closing back onto the object before that was a regrip.
LETGO_SHARE = 0.3
NEAR_OPEN = 0.9
LETGO_S = 0.8
# A wrist transient this many times the contact threshold (and above what the free arm's own motion shows, and
# above COLLISION_MIN_N), while the gripper neither holds nor closes, is a collision if it is over within
# COLLISION_MAX_S: a knock, not the arm's own acceleration carrying the tool (a 1.5 kg tool at 3 m/s² reads 4.5 N
# for as long as the acceleration lasts) nor a push.
COLLISION_FACTOR = 3.0
COLLISION_MIN_N = 5.0
COLLISION_MAX_S = 0.3
# After the fingers open, the object they let go of may still brush them, and a knock rings: no collision is
# called this soon after either.
COLLISION_QUIET_S = 0.5
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
# More than this share of the gripper's readings dropped as spikes is worth a warning.
SPIKE_SHARE = 0.05
# While idle, positions moving at up to this many times the threshold feed the position noise floor.
QUIET_FACTOR = 2.0
# A gripper that travelled this share of its stroke with no event at all is worth a warning.
UNEXPLAINED_STROKE = 0.5

_IDLE, _CLOSING, _GRIPPING, _HOLDING, _EMPTY, _SLIPPED = 'idle', 'closing', 'gripping', 'holding', 'empty', 'slipped'
_LETTING_GO = 'letting_go'


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
    gripper_prior: Stroke | None = None  # what earlier episodes found of the strokes (None: the profile's)
    command_prior: Stroke | None = None

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
    slip_pending: tuple[int, Evidence, int] | None = None  # the carried load went: (when, evidence, seen) until
    # what the fingers do next says whether it slipped or was set down
    hold_x: float = math.nan  # where the grasp settled (slow creep moves it, a slip's closing on does not)
    pressed: bool = False  # the command pressed the held fingers further shut
    letgo: tuple[int, list[Evidence], bool] | None = None  # an opening under way: (onset, evidence, placed)
    left_ns: int | None = None  # when the opening fingers passed back where they met the object
    sinking_ns: int | None = None  # when the fingers began closing on past where they held
    moving: tuple[int, float, float] | None = None  # the last sample where the fingers clearly closed (t, x, v)
    stop_ns: int | None = None  # when the fingers stopped on the object, from that sample's speed
    pause_x: float = math.inf  # where a staged close paused
    fast: tuple[int, float, float] | None = None  # the last sample where they closed at twice the threshold
    stop_x: float = math.nan  # where they first stood still after closing
    stopped_since: int | None = None  # since when they stand still (no command, no effort: a pause or contact)
    press_since: int | None = None  # since when the command presses the stopped fingers further shut
    peak_v: float = 0.0  # the closing speed's peak in this stroke (stroke fractions per second; reset by a pause)
    rest_since: int | None = None  # since when the fingers stand still within this stroke
    seen_ns: int = 0  # the sample that started this attempt
    efforts: list[tuple[int, float]] = field(default_factory=list)  # (stamp, effort) while closing
    fast_pts: list[tuple[int, float]] = field(default_factory=list)  # the last samples closing at speed
    slow_pts: list[tuple[int, float]] = field(default_factory=list)  # the first samples after the stroke slowed
    knee_x: float = math.nan  # where the fingers met the object (the closing's end, before any squeeze)
    new_stroke: bool = False  # a pause ended the last cruise: the next one starts the line afresh
    recent: deque[tuple[int, float]] = field(default_factory=lambda: deque(maxlen=RECENT_SAMPLES))  # (t, x) closing


class EventDetector:
    """Feed `gripper()` and `wrench()` in stamp order (see `Segmenter` for the ordering); each returns the
    events it confirmed. `finish()` closes the episode and `timeline()` gives the subtask segments."""

    def __init__(self, settings: SegmenterSettings) -> None:
        self.settings = settings
        self.events: list[Event] = []
        self.skipped: dict[str, int] = {}
        self._marks: list[tuple[int, str]] = []  # internal moments for the timeline (gripper open again)
        self._doubts: list[str] = []  # events reported as guesses, said as warnings
        self._miss: tuple[int, list[Evidence]] | None = None  # a close on nothing, until the fingers open again
        self._parked = False  # the episode ended with the gripper closed on nothing after a release
        self._learn_closed = False  # the fingers closed on nothing: where they come to rest is the closed end
        self._uncalibrated: set[str] = set()  # channels a stroke was judged on before any rest had calibrated them
        self._first_ns: int | None = None
        self._last_ns: int | None = None
        # gripper
        self._state = _IDLE
        # (an open position of 0, as many grippers have, is a position: not "unknown")
        nominal = Stroke(settings.closed_position if settings.closed_position is not None else 0.0,
                         settings.open_position if settings.open_position is not None else 1.0, PROFILE)
        self.calibration = StrokeWatch(nominal, settings.gripper_prior)
        self._recalibrate_due = False
        used = self.calibration.stroke
        self._closed, self._stroke = used.closed, used.span
        self._g_last: tuple[int, float, float] | None = None  # stamp, x, v
        # The last gap in the gripper stream: the sample before it (stamp, x, v) and the stamp that ended it.
        self._gap: tuple[tuple[int, float, float], int] | None = None
        self._g_periods: deque[int] = deque(maxlen=50)
        self._g_period = 10_000_000.0  # their median, kept as they come (asked for many times a sample)
        self._speed = FingerSpeed()
        same_units = (settings.command_open, settings.command_closed) == (settings.open_position,
                                                                        settings.closed_position)
        self._command = (GripperCommandWatch(Stroke(settings.command_closed, settings.command_open),  # type: ignore[arg-type]
                                             settings.command_prior, shared=used if same_units else None)
                         if settings.has_command else None)
        self._x_range: tuple[float, float] | None = None  # the fingers' travel, for the no-event warning
        self.gripper_samples = 0
        self._spikes: tuple[int, float] = (0, 0.0)  # readings the segmenter's spike gate dropped, the largest jump
        self._still_ns: int | None = None  # the last gripper sample where the fingers stood still, and where
        self._still_x: float | None = None
        self._opened_ns: int | None = None  # when the fingers last opened (a release, a failed grasp reopened)
        self._x_noise = NoiseFloor()
        self._x_steps = NoiseFloor()  # the same, fed a little above the threshold: for a quantised reading's step
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
            return self._position_speed_threshold
        return max(MIN_STROKE_SPEED, NOISE_SIGMAS * self._v_noise.sigma)

    @property
    def _position_speed_threshold(self) -> float:
        """The moving threshold from the positions alone: what the message's own velocity is checked against
        (a velocity in another unit would otherwise set the threshold it is judged by)."""
        if self.settings.gripper_velocity_threshold is not None:
            return self.settings.gripper_velocity_threshold / abs(self._stroke)
        # A reading that jitters by a step or two of its quantisation (a servo's counts) makes a speed that is
        # no motion: QUANTUM_STEPS of them over the speed's span are below the threshold.
        step = max(self._x_noise.step, self._x_steps.step)
        return max(MIN_STROKE_SPEED, NOISE_SIGMAS * self._x_noise.sigma * self._speed.noise_gain,
                   QUANTUM_STEPS * min(step, QUANTUM_MAX) / self._speed.span_s)

    @property
    def closed_margin(self) -> float:
        return max(CLOSED_MARGIN, NOISE_SIGMAS * self._x_noise.sigma)

    @property
    def force_threshold(self) -> float:
        return self._wrist.threshold

    def _hold_effort(self, grasp: _Grasp) -> float | None:
        """Effort (above idle) that means the fingers are squeezing: a share of this grasp's own peak, since a
        gripper squeezes with the force its user set, not the datasheet's maximum; None when effort says nothing."""
        noise = NOISE_SIGMAS * self._e_noise.sigma
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
        self.calibration.set_noise(self._x_noise.sigma * abs(self._stroke))
        self._recalibrate_due |= self.calibration.add(r.stamp_ns, r.position,
                                                      idle=self._state in (_IDLE, _EMPTY) and self._grasp is None)
        if self._state == _IDLE:
            self._recalibrate()
        x = (r.position - self._closed) / self._stroke
        self._x_range = (min(x, self._x_range[0]), max(x, self._x_range[1])) if self._x_range else (x, x)
        if last is not None:
            period = r.stamp_ns - last[0]
            typical = self._period_ns() if self._g_periods else period
            self._g_periods.append(period)
            self._g_period = float(statistics.median(self._g_periods))
            if period > 5 * typical:  # a gap in the stream: the jump across it is no noise; the speed keeps it
                self._gap = (last, r.stamp_ns)
                self._x_steps.reset_last()
                self._x_noise.reset_last()  # (fingers that moved while unseen did move: a tracker loses its
                self._v_noise.reset_last()  # markers most while the hand closes them on the object)
        trusted = not self._speed.distrusted
        v = self._speed.update(r.stamp_ns, x, r.velocity / self._stroke, self._position_speed_threshold)
        if trusted and self._speed.distrusted:  # what was learnt of the message's speed is not this speed
            self._v_noise = NoiseFloor()
            if self._grasp is not None:
                self._grasp.peak_v, self._grasp.moving, self._grasp.fast = 0.0, None, None
        effort = abs(r.effort) if math.isfinite(r.effort) else math.nan
        out: list[Event] = []
        self._settle_slip(out, r.stamp_ns)
        self._gripper_step(out, r.stamp_ns, x, v, effort, last)
        if self._state == _IDLE and abs(v) <= QUIET_FACTOR * self.velocity_threshold:
            # A quantised reading that flickers by one count can read just over the threshold before its step is
            # known: its step is learnt from a little above it too (the median keeps motion out).
            self._x_steps.add(x)
        if self._state == _IDLE and abs(v) <= self.velocity_threshold:
            self._x_noise.add(x)
            self._v_noise.add(v)
            if self._command is not None and self._command.steady(r.stamp_ns):
                self._command.free(x)
            if math.isfinite(effort):
                self._e_noise.add(effort)
                self._e_idle = effort if not self._e_idle_set else self._e_idle + 0.05 * (effort - self._e_idle)
                self._e_idle_set = True
        if abs(v) <= self.velocity_threshold:
            self._still_ns, self._still_x = r.stamp_ns, x
        self._g_last = (r.stamp_ns, x, v)
        return out

    def _recalibrate(self) -> None:
        """Take up a new stroke (the fingers or the command rested somewhere that moved it) while no grasp is being
        judged: what was learnt in stroke fractions (noise floors, the speed's history, where the fingers last
        stood still) is re-expressed in the new fractions."""
        if self._command is not None:
            self._command.recalibrate()
        if not self._recalibrate_due:
            return
        self._recalibrate_due = False
        stroke = self.calibration.stroke
        if (stroke.closed, stroke.span) == (self._closed, self._stroke):
            return
        factor = self._stroke / stroke.span
        offset = (self._closed - stroke.closed) / stroke.span
        self._closed, self._stroke = stroke.closed, stroke.span
        if self._command is not None:
            self._command.forget_offset()
            self._command.use_stroke(stroke)
        self._x_noise.scale(factor)
        self._x_steps.scale(factor)
        self._v_noise.scale(factor)
        self._speed.rescale(factor, offset)
        if self._still_x is not None:
            self._still_x = factor * self._still_x + offset
        if self._g_last is not None:
            t, x, v = self._g_last
            self._g_last = (t, factor * x + offset, factor * v)
        if self._x_range is not None:
            low, high = self._x_range
            self._x_range = (factor * low + offset, factor * high + offset)

    def _period_ns(self) -> float:
        return self._g_period

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
            if self._state == _CLOSING and len(g.efforts) < 2000:
                g.efforts.append((t, effort))
        if g is not None and self._state == _CLOSING:
            g.recent.append((t, x))
        ev_v = Evidence('gripper.velocity', v * self._stroke, vt * abs(self._stroke) * (-1 if closing else 1))

        if self._state == _IDLE:
            # An opening that turns straight into a close (an operator retrying at once after a miss) starts a
            # stroke from where it turned, with no rest between.
            turned = self._opening_since is not None and closing and last is not None
            if self._opening_since is not None and not opening:  # the release stroke ended
                self._marks.append((t, 'opened'))
                self._opening_since, self._opened_ns = None, t
            armed = self._still >= 3 or turned
            self._still = self._still + 1 if abs(v) <= vt else 0
            if closing and x > m and armed:
                from_x = self._still_x if self._still_x is not None else (last[1] if last is not None else x)
                if turned and last is not None:
                    from_x = max(last[1], x)
                start = self._onset(t, x, v, from_x, last)
                self._grasp = _Grasp(start_ns=start, start_x=from_x, seen_ns=t,
                                     peak_effort=effort if math.isfinite(effort) else 0.0)
                if self.calibration.observed.most_open is None:
                    self._uncalibrated.add('gripper')
                if self._command is not None and self._command.calibration.observed.most_open is None:
                    self._uncalibrated.add('command')
                self._state = _CLOSING
                self._announce(out, self._grasp, t, x, ev_v)
            elif x <= m and last is None:
                self._state, self._fail_x = _EMPTY, x
            return

        if self._state == _EMPTY or self._state == _SLIPPED:
            resting = self.calibration.resting_at()
            if self._learn_closed and resting is not None and abs(v) <= vt:
                self._learn_closed = False  # closed on nothing and at rest: that is where this gripper closes to
                self._recalibrate_due |= self.calibration.closed_on_nothing(resting)
            if x > self._fail_x + m:
                self._confirm_miss(out, t)
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
                self._closed_on_nothing(out, g, at, t, x, [ev_x])
                return
            if abs(v) > vt:
                g.rest_since = None
            elif g.rest_since is None:
                g.rest_since = t
            elif t - g.rest_since >= max(PAUSE_MIN_S * 1e9, 3 * self._period_ns()):
                g.peak_v, g.new_stroke = 0.0, True  # at rest a while: a pause; what comes next is a stroke of its own
            if closing and not math.isnan(g.stop_x) and self._squeeze_building(g, effort):
                closing = False  # the grip force builds: the fingers press into the object, not closing freely
            if closing:
                g.peak_v = max(g.peak_v, -v)
            if closing and v <= -CRUISE * g.peak_v:  # at its cruising speed: the line the contact is read from
                g.fast_pts = [(t, x)] if g.new_stroke else [*g.fast_pts[-2:], (t, x)]
                g.slow_pts.clear()
                g.new_stroke = False
            elif g.fast_pts and len(g.slow_pts) < 2:  # the first samples after the stroke slowed
                g.slow_pts.append((t, x))
            if closing and v < -KNEE * g.peak_v:  # still closing at speed, not creeping on after a stop
                g.moving, g.press_since, g.stop_x, g.stopped_since = (t, x, v), None, math.nan, None
                if v < -max(2 * vt, 0.5 * g.peak_v):
                    g.fast = (t, x, v)
                return
            if math.isnan(g.stop_x):
                g.stop_x = x  # where the fingers stopped (they may creep on under the squeeze)
            if not g.announced:  # not yet a stroke: a twitch once the fingers rest again (or open), else a slow start
                rested = g.rest_since is not None and t - g.rest_since >= max(PAUSE_MIN_S * 1e9, 3 * self._period_ns())
                if rested or x > g.start_x + m or t - g.seen_ns >= max(PAUSE_MIN_S * 1e9, 3 * self._period_ns()):
                    self._to_idle()
                    self._still = 3  # still at rest: a stroke may start from here at once
                return
            if g.contact_ns is not None and x > g.stall_x - m:  # settling after the first stop: keep it
                self._state = _GRIPPING
                return
            commanded = self._command is not None and self._command.fresh(t)
            press = self._command.pressing(x, t) if commanded else None  # type: ignore[union-attr]
            if press is None and commanded and self._command.value <= COMMAND_CLOSED:  # type: ignore[union-attr]
                # Where a fully closed command sent them, and nothing held them open: closed on nothing.
                g.stopped_since = g.stopped_since if g.stopped_since is not None else t
                if t - g.stopped_since >= max(PRESS_HOLD_S * 1e9, 2 * self._period_ns()):
                    near = x + max(REACHED, 2 * self._x_noise.sigma)
                    self._closed_on_nothing(out, g, _reached(g.recent, near, g.stopped_since), t, x,
                                            [ev_x, Evidence('gripper.command', self._command.value,  # type: ignore[union-attr]
                                                            COMMAND_CLOSED)])
                return
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
            g.knee_x = stop_x
            if moving is not None:  # from the last sample where the fingers clearly moved, at the speed they had
                contact = int(min(t, max(moving[0], moving[0] + (moving[1] - stop_x) / abs(moving[2]) * 1e9)))
            knee = _knee(g.fast_pts, g.slow_pts)
            if knee is not None:  # better: where the closing's line meets the line of what came after it
                contact, g.knee_x = knee
            unseen = self._stop_in_gap(g, stop_x)
            if unseen is not None:  # the fingers stopped while unseen: the estimate comes from the gap's ends
                contact = unseen
            g.stall_ns, g.stall_x, g.stop_ns, g.moving, g.fast = t, x, contact, None, None
            touch = self._first_touch(g, contact)
            touched_first = touch is not None and touch[0] < contact
            if touched_first:  # one finger met the object and pushed it before the other arrived
                contact = touch[0]  # type: ignore[index]
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
                if touched_first:
                    confidence, wrench_ev = max(confidence, 0.9), [touch[1]]  # type: ignore[index]
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
            g.confirmed, g.ref_x, g.hold_x = True, x, x
            evidence = [ev_x]
            hold = self._hold_effort(g)
            confidence = 0.8
            secured = g.stop_ns or g.stall_ns  # without effort: when the fingers stopped on the object
            if hold is not None and math.isfinite(effort):
                evidence.append(Evidence('gripper.effort', effort - self._e_idle, hold))
                confidence = 0.95
                # Secured once the grip force built to its holding level after the fingers met the object.
                start = g.stop_ns or g.stall_ns
                secured = max(start, next((ts for ts, e in g.efforts if ts >= start
                                           and e - self._e_idle >= SECURED_SHARE * hold), g.stall_ns or start))
            self._emit(out, GRASP, secured, t, confidence, evidence)
            self._state = _HOLDING
            if self.settings.use_wrench and self._wrist.baseline is not None:
                g.load = GraspLoad(self._wrist.weight_axis(), self._wrist.threshold)
            return

        if self._state == _HOLDING:
            self._holding_step(out, g, t, x, v, effort, last)
        elif self._state == _LETTING_GO:
            self._letting_go_step(out, g, t, x, v)

    def _holding_step(self, out: list[Event], g: _Grasp, t: int, x: float, v: float, effort: float,
                      last: tuple[int, float, float] | None) -> None:
        """The grasp holds: the fingers closing on past where they held (a slip) or opening (a release, or a
        regrip), and the grip's own effort (loosened before the load went: a slip)."""
        m, vt = self.closed_margin, self.velocity_threshold
        ev_x = Evidence('gripper.opening', x, m)
        if x < g.ref_x - m:
            if g.sinking_ns is None:
                g.sinking_ns = self._onset(t, x, v, g.ref_x, last)
        else:
            g.sinking_ns = None
        sink = max(SLIP_SINK, 3 * m)
        command = self._command if self._command is not None and self._command.fresh(t) else None
        press = command.pressing(x, t) if command is not None else None
        g.pressed |= press is not None
        # With a command: the fingers closed on past the hold until they stand where the command asks, so
        # nothing holds them open any more (a follower whose leader was squeezing beyond the object).
        caught_up = g.pressed and command is not None and press is None and x < g.hold_x - m and abs(v) <= vt
        if x <= m or x < g.hold_x - sink or caught_up:  # the object left when the fingers closed on past the hold
            at = g.slip_pending[0] if g.slip_pending is not None else (g.sinking_ns or t)
            evidence = [ev_x] if x <= m else [Evidence('gripper.closed_past_hold', g.hold_x - x, m if caught_up
                                                       else sink)]
            if g.slip_pending is not None:
                evidence.append(g.slip_pending[1])
            self._fail(out, at, t, evidence, 'the fingers closed on past where they held: the object slipped out', x,
                       learn_closed=True)
            return
        if x > g.ref_x + m:
            start = self._onset(t, x, v, g.ref_x, last)
            placed = g.slip_pending is not None
            evidence = [Evidence('gripper.opening', x, g.ref_x + m),
                        Evidence('gripper.velocity', v * self._stroke, vt * abs(self._stroke))]
            g.letgo, self._state = (start, evidence, placed), _LETTING_GO
            self._letting_go_step(out, g, t, x, v)
            return
        if abs(v) <= vt:
            g.ref_x = x
            if x > g.hold_x - m:
                g.hold_x = min(g.hold_x, x) if math.isfinite(g.hold_x) else x
        hold = self._hold_effort(g)
        if hold is not None and math.isfinite(effort):
            loosened = effort - self._e_idle < hold
            if loosened and not g.loosened:
                g.loosened_ns = t
            g.loosened = loosened

    def _letting_go_step(self, out: list[Event], g: _Grasp, t: int, x: float, v: float) -> None:
        """An opening after a hold is a release once it is clearly one (opened far, near the open end, or for a
        while); closing back onto the object first was a regrip: nothing happened."""
        assert g.letgo is not None
        start, evidence, placed = g.letgo
        m = self.closed_margin
        if x <= g.ref_x + m / 2:
            g.letgo, g.left_ns, self._state = None, None, _HOLDING
            return
        squeezed = math.isfinite(g.knee_x) and g.knee_x - g.ref_x > m / 2
        if squeezed and g.left_ns is None and x >= g.knee_x and self._g_last is not None:
            t0, x0, _ = self._g_last  # the fingers leave the object where they met it: the squeeze undone
            g.left_ns = t if x == x0 else int(t0 + (t - t0) * min(1.0, max(0.0, (g.knee_x - x0) / (x - x0))))
        commanded_open = (self._command is not None and self._command.fresh(t)
                          and self._command.value + self._command.offset >= NEAR_OPEN)
        if not (x - g.ref_x >= LETGO_SHARE or x >= NEAR_OPEN or commanded_open
                or t - start >= max(LETGO_S * 1e9, 4 * self._period_ns())):
            return
        dropped = None if placed else self._load_gone_before(g, start) if g.loosened else None
        if dropped is not None and self._command is not None and self._command.opened_since(dropped[0], g.ref_x):
            dropped = None  # the operator let go first: the grip loosened because of it
        g.slip_pending = None
        if dropped is not None:  # the loosened grip had already lost the object: a slip, not a release
            self._emit(out, GRASP_FAILED, dropped[0], t, 0.8, [dropped[1], evidence[0]],
                       note='the carried load vanished before the gripper opened: the object slipped out')
        else:
            start = g.left_ns if g.left_ns is not None and g.left_ns >= start else start
            self._emit(out, RELEASE, start, t, 0.95 if placed or v > 0 else 0.8, evidence)
        self._emit(out, CONTACT_LOST, start, t, 0.9, evidence[:1])
        self._to_idle(opened_at=start)

    def _stop_in_gap(self, g: _Grasp, stop_x: float) -> int | None:
        """When the stream had a gap within this close and the fingers already stood where they stopped right
        after it (a tracker that lost its markers while the hand closed the fingers on the object), where in the
        gap they arrived: at the speed they were closing before it, or its middle when they were still at rest."""
        if self._gap is None:
            return None
        (t0, x0, v0), t1 = self._gap
        if t1 < g.seen_ns or t0 > t1:
            return None
        after = next((x for ts, x in g.recent if ts >= t1), None)
        if after is None or abs(after - stop_x) > 2 * self.closed_margin or x0 - stop_x <= self.closed_margin:
            return None
        if v0 < -self.velocity_threshold:
            return int(min(t1, t0 + (x0 - stop_x) / -v0 * 1e9))
        return (t0 + t1) // 2

    def _squeeze_building(self, g: _Grasp, effort: float) -> bool:
        """The effort stands clearly above what closing freely took (six noise sigmas): the grip force is building
        on an object."""
        if not math.isfinite(effort) or len(g.efforts) < 5:
            return False
        free = sorted(e for _, e in g.efforts[:max(5, len(g.efforts) // 2)])
        return effort - free[len(free) // 2] > max(NOISE_SIGMAS * self._e_noise.sigma, 1e-9)

    def _first_touch(self, g: _Grasp, stop_ns: int) -> tuple[int, Evidence] | None:
        """When a finger first touched the object, if before the fingers stopped: the wrist felt a push, or the
        effort rose above what closing freely took, and stayed so until the stop (at most TOUCH_S before it)."""
        since = max(g.start_ns + int(2 * self._period_ns()), stop_ns - int(TOUCH_S * 1e9))
        found: list[tuple[int, Evidence]] = []
        if self.settings.use_wrench and self._wrist.baseline is not None:
            at = self._wrist.rose(since, stop_ns)
            if at is not None:
                found.append((at, Evidence('wrench.force_change', self._wrist.peak(at, stop_ns),
                                           self._wrist.threshold)))
        at = _effort_shift([(ts, e) for ts, e in g.efforts if ts <= stop_ns], since, self._e_noise.sigma)
        if at is not None:
            found.append((at, Evidence('gripper.effort_rise', 1.0, 0.0)))
        return min(found, key=lambda item: item[0]) if found else None

    def _closed_on_nothing(self, out: list[Event], g: _Grasp, at: int, now: int, x: float,
                           evidence: list[Evidence]) -> None:
        """The fingers closed all the way on nothing: a miss, said once they open again (or at the episode's end)
        so that a gripper closed to park it after the task, and left so, is not reported as a failed grasp."""
        if g.contact_ns is not None:
            self._emit(out, CONTACT_LOST, at, now, 0.7, evidence)
        self._miss = (at, evidence)
        self._state, self._fail_x, self._learn_closed = _EMPTY, x, True

    def _confirm_miss(self, out: list[Event], now: int) -> None:
        if self._miss is not None:
            at, evidence = self._miss
            self._miss = None
            self._emit(out, GRASP_FAILED, at, now, 0.9, evidence, note='closed fully on nothing')

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
              x: float | None = None, *, contact_lost: bool = True, confidence: float = 0.9,
              learn_closed: bool = False) -> None:
        """A failed grasp; `learn_closed`: the fingers closed on past the object, so where they come to rest is
        where this gripper closes to on nothing."""
        self._emit(out, GRASP_FAILED, at, now, confidence, evidence, note=note)
        if contact_lost:
            self._emit(out, CONTACT_LOST, at, now, 0.8, evidence)
        self._state, self._learn_closed = _EMPTY, learn_closed
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
        thr = max(COLLISION_FACTOR * self._wrist.threshold, self._motion_floor, COLLISION_MIN_N)
        if not self._bump:
            self._learn_motion_floor(size)
        if size > thr:
            self._bump.append((t, size))
            return
        if len(self._bump) >= 3 and size < thr / 2 and t - self._bump[0][0] <= COLLISION_MAX_S * 1e9:
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
        """The carried load dropped below half: a slip or a place, which the fingers say next (see _holding_step
        and _settle_slip); a grip whose own effort let go before the load went (with the command, if any, still
        closed) lost the object: a slip at once."""
        assert g.load is not None
        if not g.load.telling:  # the object is too light for the wrist to tell it from none
            return
        level = g.load.level()
        if level >= 0.5 * g.load.carried or g.slip_pending is not None:
            return
        start = self._slip_start(g, t)
        evidence = Evidence('wrench.load', level, 0.5 * g.load.carried)
        let_go = (self._command is not None and g.loosened_ns is not None
                  and self._command.opened_since(g.loosened_ns - int(0.2e9), g.ref_x) is not None)
        if g.loosened and g.loosened_ns is not None and g.loosened_ns <= start and not let_go:
            effort = Evidence('gripper.effort_loosened', 1.0, 0.0)
            self._fail(out, start, t, [evidence, effort], 'the grip let go and the carried load vanished: the object '
                       'slipped out', contact_lost=False)
            self._state = _SLIPPED  # contact_lost once the object stops rubbing on the fingers, or they open
            g.slipped_ns = t
            return
        g.slip_pending = (start, evidence, t)

    def _settle_slip(self, out: list[Event], t: int) -> None:
        """A load that vanished with neither the fingers closing on nor opening (nor the command opening) for
        AMBIGUOUS_S: most likely the object fell while the grip stayed put, but nothing says it; a guess at low
        confidence, and a warning."""
        g = self._grasp
        if self._state != _HOLDING or g is None or g.slip_pending is None:
            return
        start, evidence, seen = g.slip_pending
        if g.load is not None and g.load.level() >= 0.75 * g.load.carried:
            g.slip_pending = None  # the load is back: the arm's own acceleration, not the object leaving
            return
        if self._command is not None and self._command.opened_since(start, g.ref_x) is not None:
            return  # the operator is letting go: the fingers' opening will make it a release
        if t - seen < max(AMBIGUOUS_S * 1e9, 3 * self._period_ns()):
            return
        g.slip_pending = None
        self._fail(out, start, t, [evidence], 'the carried load vanished and the fingers neither closed on nor '
                   'opened: a slip is the likelier reading, not a certain one', contact_lost=False, confidence=0.4)
        self._doubts.append(f'at {start / 1e9:.3f} the carried load vanished with no finger motion either way: '
                            'reported as a slip at low confidence (a place whose opening came late, or a gripper '
                            'that does not close on after a slip?)')
        self._state = _SLIPPED  # contact_lost once the object stops rubbing on the fingers, or they open
        g.slipped_ns = t

    # --- end --------------------------------------------------------------------------------------------------
    def finish(self) -> list[Event]:
        """The episode ended: a close on nothing still held is a miss, unless an object was released before it
        in this episode (then the gripper was closed to park it)."""
        out: list[Event] = []
        if self._miss is not None:
            if any(e.kind == RELEASE for e in self.events):
                self._miss = None
                self._parked = True
            else:
                self._confirm_miss(out, self._last_ns or self._miss[0])
        return out

    def spikes(self, dropped: int, largest: float) -> None:
        """The segmenter's spike gate dropped `dropped` gripper readings off the fingers' path (see spike.py)."""
        self._spikes = (dropped, largest)
        if dropped:
            self.skipped['gripper_off_path'] = dropped

    def inputs(self) -> list[str]:
        """What the detector read its signals from, said once per episode."""
        out = []
        if self.settings.has_gripper and self._speed.source:
            out.append(self._speed.why)
        dropped, largest = self._spikes
        if dropped:
            out.append(f'{dropped} of {dropped + self.gripper_samples} gripper readings were off the fingers\' path '
                       f'and came straight back (up to {largest:.4g} off): dropped as spikes')
        if self._command is not None:
            out.append(f'gripper command: {self._command.samples} sample(s) read')
        return out

    def warnings(self) -> list[str]:
        """What looks wrong with the input, or an event that is a guess: said instead of a silent zero or a
        confident mistake."""
        out = []
        s = self.settings
        if s.has_gripper:
            line = self.calibration.report()
            if line:
                out.append(f'gripper positions {line}')
            if self._command is not None and self._command.samples and not self._command.shared:
                line = self._command.calibration.report()
                if line:
                    out.append(f'gripper command {line}')
            out += self._unexplained_travel()
        out += self._doubts
        dropped = self._spikes[0]
        if dropped > SPIKE_SHARE * (dropped + self.gripper_samples):
            out.append(f'{dropped} of {dropped + self.gripper_samples} gripper readings jumped off the fingers\' '
                       'path and straight back: a tracker or bus that mis-reads this often makes every grip '
                       'decision less sure')
        if self._command is not None and self._command.samples == 0:
            out.append('the profile names a gripper command but no command sample was read: the grip was judged '
                       'from the fingers alone')
        return out

    def _unexplained_travel(self) -> list[str]:
        """The fingers travelled through most of their stroke and nothing came of it: why, as far as can be told."""
        if self._x_range is None:
            return []
        low, high = self._x_range
        if high - low <= UNEXPLAINED_STROKE or any(e.kind in (GRASP, RELEASE, GRASP_FAILED) for e in self.events):
            return []
        travel = f'the gripper travelled through {100 * min(1.0, high - low):.0f}% of its stroke and no grasp, ' \
                 'release or miss was found'
        lowest = self._closed + low * self._stroke
        if any(e.kind == GRASP_START for e in self.events):
            return [f'{travel}: it closed, but never stopped on anything nor reached closed; its lowest position was '
                    f'{lowest:.4g} against a closed position of {self._closed:.4g} (is closed_position right, or did '
                    'it stop within the command\'s lag?)']
        return [f'{travel}: no closing stroke was recognised (faster than the samples can follow, or slower than '
                f'{self.velocity_threshold * abs(self._stroke):.4g} a second: check '
                'segmenter.gripper_velocity_threshold)']

    def calibrations(self) -> dict[str, Any]:
        """The strokes used (and what this episode showed of them), for events.json and for pooling."""
        if not self.settings.has_gripper:
            return {}
        out: dict[str, Any] = {'gripper': {**self.calibration.stroke.to_json(),
                                           'profile': self.calibration.nominal.to_json(),
                                           'observed': self.calibration.observed.to_json()}}
        if self._command is not None:
            watch = self._command.calibration
            out['command'] = {**watch.stroke.to_json(), 'profile': watch.nominal.to_json(),
                              'observed': watch.observed.to_json()}
        if self._parked:
            out['gripper']['parked_closed_at_end'] = True
        for channel in self._uncalibrated & set(out):
            out[channel]['judged_before_calibrated'] = True
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


def _effort_shift(efforts: list[tuple[int, float]], since_ns: int, sigma: float) -> int | None:
    """Where the effort's level rose for good within the samples from `since_ns` on, against its level while the
    fingers closed freely before (Page's CUSUM: drift of one noise sigma, alarm at five): a finger pushing the
    object along before the other arrives raises the effort by a friction force that no single sample shows."""
    free = [e for ts, e in efforts if ts < since_ns]
    if len(free) < 5 or sigma <= 0:
        return None
    level = sorted(free)[len(free) // 2]
    total, began = 0.0, None
    for ts, e in efforts:
        if ts < since_ns:
            continue
        total = max(0.0, total + (e - level - sigma))
        if total == 0.0:
            began = None
        elif began is None:
            began = ts
        if total > 5 * sigma:
            return began
    return None


def _line(points: list[tuple[int, float]]) -> tuple[float, float]:
    """Least-squares (slope per ns, value at the first point's stamp) through (stamp, value) points; a single
    point is a level line."""
    t0 = points[0][0]
    if len(points) == 1:
        return 0.0, points[0][1]
    ts = [p[0] - t0 for p in points]
    xs = [p[1] for p in points]
    mt, mx = sum(ts) / len(ts), sum(xs) / len(xs)
    var = sum((a - mt) ** 2 for a in ts)
    slope = sum((a - mt) * (b - mx) for a, b in zip(ts, xs, strict=True)) / var if var else 0.0
    return slope, mx - slope * mt


def _reached(path: Iterable[tuple[int, float]], level: float, default: int) -> int:
    """When a closing path first came down to `level` (interpolated between samples): a miss is stamped where the
    fingers reach the rest they close to on nothing, not where their stroke began to slow."""
    before: tuple[int, float] | None = None
    for t, x in path:
        if x <= level:
            if before is None or before[1] <= x:
                return t
            return int(before[0] + (t - before[0]) * (before[1] - level) / (before[1] - x))
        before = (t, x)
    return default


def _knee(fast: list[tuple[int, float]], slow: list[tuple[int, float]]) -> tuple[int, float] | None:
    """Where a closing stroke met the object: the meeting point of the line through its last samples at speed
    and the line through the samples after it slowed (at 10 Hz a single sample spans the whole stop, so the
    last sample's own speed says little of when the fingers arrived). None when there are not enough samples."""
    if len(fast) < 2 or not slow:
        return None
    a1, b1 = _line(fast)
    a2, b2 = _line(slow)
    t1, t2 = fast[0][0], slow[0][0]
    if a1 >= a2:  # the closing line must be the steeper one (it falls faster than what came after)
        return None
    # a1 (t - t1) + b1 = a2 (t - t2) + b2
    at = (b2 - b1 + a1 * t1 - a2 * t2) / (a1 - a2)
    at = min(max(at, fast[-1][0]), slow[0][0])
    return int(at), a1 * (at - t1) + b1
