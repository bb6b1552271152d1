"""The gripper's fingers as the detector knows them: each sample taken in (position and speed in stroke fractions,
effort), the thresholds learnt from their noise and stroke, and the transitions every step of the state machine
shares (a miss, a failed grasp, back to idle). The steps themselves are gripper_step.py, closing_step.py and
holding_step.py; this module keeps the state they act on."""

from __future__ import annotations

import math
import statistics
from collections import deque

from ros_robodata.events.command import GripperCommandWatch
from ros_robodata.events.event import Event, Evidence
from ros_robodata.events.event_log import EventLog
from ros_robodata.events.grasp_attempt import EMPTY, IDLE, GraspAttempt
from ros_robodata.events.load import NOISE_SIGMAS
from ros_robodata.events.noise import NoiseFloor
from ros_robodata.events.segmenter_settings import SegmenterSettings
from ros_robodata.events.speed import POSITIONS, FingerSpeed
from ros_robodata.events.stroke import PROFILE, Stroke, StrokeWatch
from ros_robodata.events.wrench_track import WrenchTrack
from ros_robodata.signals.samples import GripperReading
from ros_robodata.vocabulary import CONTACT_LOST, GRASP_FAILED, GRASP_START, RELEASE

# Slowest gripper motion that counts as deliberate: a tenth of the stroke per second.
MIN_STROKE_SPEED = 0.1
# Within this share of the stroke from closed, the fingers closed on nothing.
CLOSED_MARGIN = 0.05
# Holding effort: this share of max_effort (or of the stroke's peak effort when max_effort is unknown).
HOLD_EFFORT_SHARE = 0.25
QUANTUM_STEPS = 2.5  # a quantised position's jitter, in steps, that is not yet motion
QUANTUM_MAX = 0.01  # of the stroke: a coarser step than this is no reading's resolution
# While idle, positions moving at up to this many times the threshold feed the position noise floor.
QUIET_FACTOR = 2.0

Last = tuple[int, float, float]  # the sample before: stamp, x, v


class GripperTrack:
    """The fingers' state (`state`, the attempt under way in `grasp`) and what was learnt of them."""

    def __init__(self, settings: SegmenterSettings, log: EventLog, wrench: WrenchTrack) -> None:
        self.settings = settings
        self.log = log
        self.wrench = wrench  # what the wrist says, for the steps' judgements
        self.miss: tuple[int, list[Evidence]] | None = None  # a close on nothing, until the fingers open again
        self.parked = False  # the episode ended with the gripper closed on nothing after a release
        self.learn_closed = False  # the fingers closed on nothing: where they come to rest is the closed end
        self.uncalibrated: set[str] = set()  # channels a stroke was judged on before any rest had calibrated them
        self.closed_unseen = False  # a stroke was judged on the profile's closed position, before any close on nothing
        self.state = IDLE
        # (an open position of 0, as many grippers have, is a position: not "unknown")
        nominal = Stroke(settings.closed_position if settings.closed_position is not None else 0.0,
                         settings.open_position if settings.open_position is not None else 1.0, PROFILE)
        self.calibration = StrokeWatch(nominal, settings.gripper_prior)
        self.recalibrate_due = False
        used = self.calibration.stroke
        self.closed, self.span = used.closed, used.span
        self.last: Last | None = None
        # The last gaps in the stream: the sample before each (stamp, x, v) and the stamp that ended it. A tracker
        # that lost its markers while the hand closed the fingers loses them again while the hand squeezes on.
        self.gaps: deque[tuple[Last, int]] = deque(maxlen=8)
        self.periods: deque[int] = deque(maxlen=50)
        self.period_ns = 10_000_000.0  # their median, kept as they come (asked for many times a sample)
        self.speed = FingerSpeed()
        same_units = (settings.command_open, settings.command_closed) == (settings.open_position,
                                                                        settings.closed_position)
        self.command = (GripperCommandWatch(Stroke(settings.command_closed, settings.command_open),  # type: ignore[arg-type]
                                            settings.command_prior, shared=used if same_units else None)
                        if settings.has_command else None)
        self.x_range: tuple[float, float] | None = None  # the fingers' travel, for the no-event warning
        self.samples = 0
        self.spikes: tuple[int, float] = (0, 0.0)  # readings the segmenter's spike gate dropped, the largest jump
        self.still_ns: int | None = None  # the last sample where the fingers stood still, and where
        self.still_x: float | None = None
        self.opened_ns: int | None = None  # when the fingers last opened (a release, a failed grasp reopened)
        self.x_noise = NoiseFloor()
        self.x_steps = NoiseFloor()  # the same, fed a little above the threshold: for a quantised reading's step
        self.v_noise = NoiseFloor()
        self.e_noise = NoiseFloor()
        self.e_idle = 0.0
        self.e_idle_set = False
        self.grasp: GraspAttempt | None = None
        self.opening_since: int | None = None
        self.still_count = 0  # consecutive still samples: a stroke starts from rest
        self.fail_x = 0.0

    # --- thresholds -----------------------------------------------------------------------------------------------
    @property
    def velocity_threshold(self) -> float:
        """Stroke fractions per second that count as the fingers moving."""
        if self.settings.gripper_velocity_threshold is not None:
            return self.settings.gripper_velocity_threshold / abs(self.span)
        if self.speed.source == POSITIONS:  # differenced positions: their noise over the span the speed spans
            return self.position_speed_threshold
        return max(MIN_STROKE_SPEED, NOISE_SIGMAS * self.v_noise.sigma)

    @property
    def position_speed_threshold(self) -> float:
        """The moving threshold from the positions alone: what the message's own velocity is checked against
        (a velocity in another unit would otherwise set the threshold it is judged by)."""
        if self.settings.gripper_velocity_threshold is not None:
            return self.settings.gripper_velocity_threshold / abs(self.span)
        # A reading that jitters by a step or two of its quantisation (a servo's counts) makes a speed that is
        # no motion: QUANTUM_STEPS of them over the speed's span are below the threshold.
        step = max(self.x_noise.step, self.x_steps.step)
        return max(MIN_STROKE_SPEED, NOISE_SIGMAS * self.x_noise.sigma * self.speed.noise_gain,
                   QUANTUM_STEPS * min(step, QUANTUM_MAX) / self.speed.span_s)

    @property
    def closed_margin(self) -> float:
        return max(CLOSED_MARGIN, NOISE_SIGMAS * self.x_noise.sigma)

    def hold_effort(self, grasp: GraspAttempt) -> float | None:
        """Effort (above idle) that means the fingers are squeezing: a share of this grasp's own peak, since a
        gripper squeezes with the force its user set, not the datasheet's maximum; None when effort says nothing."""
        noise = NOISE_SIGMAS * self.e_noise.sigma
        peak = grasp.peak_effort - self.e_idle
        if peak <= noise or peak <= 0:
            return None
        return max(HOLD_EFFORT_SHARE * peak, noise)

    def squeezing(self, g: GraspAttempt, effort: float) -> bool:
        """The effort signal says the fingers squeeze something (None of that when effort is not reported)."""
        hold = self.hold_effort(g)
        return hold is not None and math.isfinite(effort) and effort - self.e_idle >= hold

    def squeeze_building(self, g: GraspAttempt, effort: float) -> bool:
        """The effort stands clearly above what closing freely took (six noise sigmas): the grip force is building
        on an object."""
        if not math.isfinite(effort) or len(g.efforts) < 5:
            return False
        free = sorted(e for _, e in g.efforts[:max(5, len(g.efforts) // 2)])
        return effort - free[len(free) // 2] > max(NOISE_SIGMAS * self.e_noise.sigma, 1e-9)

    # --- each sample ------------------------------------------------------------------------------------------------
    def take(self, r: GripperReading) -> tuple[float, float, float, Last | None] | None:
        """The sample in stroke fractions, (x, v, effort, the sample before), with the stroke, the stream's period
        and the speed brought up to date; None for a sample skipped (counted)."""
        if not math.isfinite(r.position):
            self.log.skip('gripper_not_finite')
            return None
        last = self.last
        if last is not None and r.stamp_ns <= last[0]:
            self.log.skip('gripper_stamp_not_increasing')
            return None
        self.log.seen(r.stamp_ns)
        self.samples += 1
        self.calibration.set_noise(self.x_noise.sigma * abs(self.span))
        self.recalibrate_due |= self.calibration.add(r.stamp_ns, r.position,
                                                     idle=self.state in (IDLE, EMPTY) and self.grasp is None)
        if self.state == IDLE:
            self.recalibrate()
        x = (r.position - self.closed) / self.span
        self.x_range = (min(x, self.x_range[0]), max(x, self.x_range[1])) if self.x_range else (x, x)
        if last is not None:
            self._note_period(r.stamp_ns, last)
        trusted = not self.speed.distrusted
        v = self.speed.update(r.stamp_ns, x, r.velocity / self.span, self.position_speed_threshold)
        if trusted and self.speed.distrusted:  # what was learnt of the message's speed is not this speed
            self.v_noise = NoiseFloor()
            if self.grasp is not None:
                self.grasp.peak_v, self.grasp.moving, self.grasp.fast = 0.0, None, None
        effort = abs(r.effort) if math.isfinite(r.effort) else math.nan
        return x, v, effort, last

    def _note_period(self, t: int, last: Last) -> None:
        """The stream's typical period; a gap in it (five of them) is remembered, and the jump across it taught to
        no noise floor."""
        period = t - last[0]
        typical = self.period_ns if self.periods else period
        self.periods.append(period)
        self.period_ns = float(statistics.median(self.periods))
        if period > 5 * typical:  # a gap in the stream: the jump across it is no noise; the speed keeps it
            self.gaps.append((last, t))
            self.x_steps.reset_last()
            self.x_noise.reset_last()  # (fingers that moved while unseen did move: a tracker loses its
            self.v_noise.reset_last()  # markers most while the hand closes them on the object)

    def learn(self, t: int, x: float, v: float, effort: float) -> None:
        """After the step: while idle and still, the sample teaches the noise floors (and the command's offset,
        the idle effort); where the fingers last stood still; the sample becomes the one before."""
        if self.state == IDLE and abs(v) <= QUIET_FACTOR * self.velocity_threshold:
            # A quantised reading that flickers by one count can read just over the threshold before its step is
            # known: its step is learnt from a little above it too (the median keeps motion out).
            self.x_steps.add(x)
        if self.state == IDLE and abs(v) <= self.velocity_threshold:
            self.x_noise.add(x)
            self.v_noise.add(v)
            if self.command is not None and self.command.steady(t):
                self.command.free(x)
            if math.isfinite(effort):
                self.e_noise.add(effort)
                self.e_idle = effort if not self.e_idle_set else self.e_idle + 0.05 * (effort - self.e_idle)
                self.e_idle_set = True
        if abs(v) <= self.velocity_threshold:
            self.still_ns, self.still_x = t, x
        self.last = (t, x, v)

    def recalibrate(self) -> None:
        """Take up a new stroke (the fingers or the command rested somewhere that moved it) while no grasp is being
        judged: what was learnt in stroke fractions (noise floors, the speed's history, where the fingers last
        stood still) is re-expressed in the new fractions."""
        if self.command is not None:
            self.command.recalibrate()
        if not self.recalibrate_due:
            return
        self.recalibrate_due = False
        stroke = self.calibration.stroke
        if (stroke.closed, stroke.span) == (self.closed, self.span):
            return
        factor = self.span / stroke.span
        offset = (self.closed - stroke.closed) / stroke.span
        self.closed, self.span = stroke.closed, stroke.span
        if self.command is not None:
            self.command.forget_offset()
            self.command.use_stroke(stroke)
        self.x_noise.scale(factor)
        self.x_steps.scale(factor)
        self.v_noise.scale(factor)
        self.speed.rescale(factor, offset)
        if self.still_x is not None:
            self.still_x = factor * self.still_x + offset
        if self.last is not None:
            t, x, v = self.last
            self.last = (t, factor * x + offset, factor * v)
        if self.x_range is not None:
            low, high = self.x_range
            self.x_range = (factor * low + offset, factor * high + offset)

    def onset(self, t_ns: int, x: float, v: float, from_x: float, last: Last | None) -> int:
        """When a stroke seen at (t, x) moving at v began from from_x: back along the speed (a stroke speeds up,
        so this errs late), never before the last sample where the fingers stood still."""
        if last is None or v == 0:
            return t_ns
        back = abs(x - from_x) / abs(v)
        still = self.still_ns if self.still_ns is not None and self.still_ns < t_ns else last[0]
        return int(max(still, t_ns - back * 1e9))

    # --- transitions the steps share --------------------------------------------------------------------------------
    def announce(self, out: list[Event], g: GraspAttempt, t: int, x: float, evidence: Evidence) -> None:
        """grasp_start, once the fingers travelled a closed-margin's worth (so a twitch is not a stroke)."""
        if not g.announced and g.start_x - x >= self.closed_margin:
            g.announced = True
            self.log.emit(out, GRASP_START, g.start_ns, t, 0.9, [evidence])

    def closed_on_nothing(self, out: list[Event], g: GraspAttempt, at: int, now: int, x: float,
                          evidence: list[Evidence]) -> None:
        """The fingers closed all the way on nothing: a miss, said once they open again (or at the episode's end)
        so that a gripper closed to park it after the task, and left so, is not reported as a failed grasp."""
        if g.contact_ns is not None:
            self.log.emit(out, CONTACT_LOST, at, now, 0.7, evidence)
        self.miss = (at, evidence)
        self.state, self.fail_x, self.learn_closed = EMPTY, x, True

    def confirm_miss(self, out: list[Event], now: int) -> None:
        if self.miss is not None:
            at, evidence = self.miss
            self.miss = None
            self.log.emit(out, GRASP_FAILED, at, now, 0.9, evidence, note='closed fully on nothing')

    def to_idle(self, opened_at: int | None = None) -> None:
        """The attempt is over; `opened_at`: the fingers started opening then (a release, a reopened miss)."""
        self.state, self.grasp, self.still_count = IDLE, None, 0
        if opened_at is not None:
            self.opening_since = self.opened_ns = opened_at

    def fail(self, out: list[Event], at: int, now: int, evidence: list[Evidence], note: str,
             x: float | None = None, *, contact_lost: bool = True, confidence: float = 0.9,
             learn_closed: bool = False) -> None:
        """A failed grasp; `learn_closed`: the fingers closed on past the object, so where they come to rest is
        where this gripper closes to on nothing."""
        self.log.emit(out, GRASP_FAILED, at, now, confidence, evidence, note=note)
        if contact_lost:
            self.log.emit(out, CONTACT_LOST, at, now, 0.8, evidence)
        self.state, self.learn_closed = EMPTY, learn_closed
        self.fail_x = x if x is not None else (self.last[1] if self.last is not None else 0.0)

    def finish(self) -> list[Event]:
        """The episode ended: a close on nothing still held is a miss, unless an object was released before it
        in this episode (then the gripper was closed to park it)."""
        out: list[Event] = []
        if self.miss is not None:
            if any(e.kind == RELEASE for e in self.log.events):
                self.miss = None
                self.parked = True
            else:
                self.confirm_miss(out, self.log.last_ns or self.miss[0])
        return out
