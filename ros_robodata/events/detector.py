"""The grasp/contact/release detector: fed one sample at a time, in stamp order, the same live and offline.

Signals and what they tell:
- gripper (finger joint): closing starts (grasp_start); the fingers stop short of closed (contact), stay there
  with holding effort (grasp), close fully on nothing (grasp_failed), open again (release, contact_lost);
- wrist wrench: the load changes when the object leaves its support (lift) or falls out of a loosened grip
  (grasp_failed, a slip); with no gripper signal, a load above the noise is contact.

Thresholds are in units of the signal itself: the gripper's stroke (0 closed, 1 open, from the profile) and
the measured noise floor of each signal. The few fixed constants in the modules below are physical plausibility
floors, not fits to any rig; the profile's segmenter section overrides the derived thresholds.

This is the front: it routes each sample to its track and says what the episode showed. The gripper and the wrist
read each other's state at every sample (a contact is confirmed by the load, a slip is told from a release by
which came first), so the tracks share one log and see each other through narrow calls:
- gripper_track.py: the fingers' state and what was learnt of them; gripper_step.py, closing_step.py and
  holding_step.py: the state machine's steps (closing_path.py: where a stroke met the object);
- wrench_track.py: the wrist on its own (contact without a gripper, knocks) and what it tells the gripper;
- fusion.py: lifts and slips, which need both; grasp_attempt.py: one attempt's state; event_log.py: the events;
- subtasks.py: the timeline. The wrist load (load.py), noise floors (noise.py) and stamp ordering (order.py) are
  their own modules too.
"""

from __future__ import annotations

from typing import Any

from ros_robodata.events.event import Event, Segment
from ros_robodata.events.event_log import EventLog
from ros_robodata.events.fusion import Fusion
from ros_robodata.events.grasp_attempt import CLOSING, EMPTY, GRIPPING, HOLDING, IDLE
from ros_robodata.events.gripper_step import gripper_step
from ros_robodata.events.gripper_track import GripperTrack
from ros_robodata.events.segmenter_settings import SegmenterSettings
from ros_robodata.events.stroke import StrokeWatch
from ros_robodata.events.subtasks import subtask_timeline
from ros_robodata.events.wrench_track import WrenchTrack
from ros_robodata.signals.samples import GripperReading, WrenchReading
from ros_robodata.vocabulary import GRASP, GRASP_FAILED, GRASP_START, RELEASE

__all__ = ['EventDetector', 'SegmenterSettings']

# More than this share of the gripper's readings dropped as spikes is worth a warning.
SPIKE_SHARE = 0.05
# A gripper that travelled this share of its stroke with no event at all is worth a warning.
UNEXPLAINED_STROKE = 0.5


class EventDetector:
    """Feed `gripper()` and `wrench()` in stamp order (see `Segmenter` for the ordering); each returns the
    events it confirmed. `finish()` closes the episode and `timeline()` gives the subtask segments."""

    def __init__(self, settings: SegmenterSettings) -> None:
        self.settings = settings
        self.log = EventLog(settings.min_event_gap_s)
        self.wrench_track = WrenchTrack(settings, self.log)
        self.fingers = GripperTrack(settings, self.log, self.wrench_track)
        self.fusion = Fusion(self.fingers, self.wrench_track, self.log)

    # --- what it found so far ---------------------------------------------------------------------------------
    @property
    def events(self) -> list[Event]:
        return self.log.events

    @property
    def skipped(self) -> dict[str, int]:
        """Samples not used, by why."""
        return self.log.skipped

    @property
    def first_ns(self) -> int | None:
        """The first and last stamps of any usable sample: the episode's span as the detector saw it."""
        return self.log.first_ns

    @property
    def last_ns(self) -> int | None:
        return self.log.last_ns

    @property
    def calibration(self) -> StrokeWatch:
        """Where the gripper's stroke was found to lie."""
        return self.fingers.calibration

    @property
    def gripper_samples(self) -> int:
        return self.fingers.samples

    # --- thresholds -------------------------------------------------------------------------------------------
    @property
    def velocity_threshold(self) -> float:
        """Stroke fractions per second that count as the fingers moving."""
        return self.fingers.velocity_threshold

    @property
    def closed_margin(self) -> float:
        return self.fingers.closed_margin

    @property
    def force_threshold(self) -> float:
        return self.wrench_track.threshold

    def thresholds(self) -> dict[str, float]:
        out: dict[str, float] = {}
        if self.settings.has_gripper:
            out['gripper_velocity_stroke_per_s'] = self.velocity_threshold
            out['gripper_velocity'] = self.velocity_threshold * abs(self.fingers.span)
            out['gripper_closed_margin_stroke'] = self.closed_margin
        if self.settings.use_wrench:
            out['contact_force_n'] = self.force_threshold
        return out

    # --- samples ----------------------------------------------------------------------------------------------
    def gripper(self, r: GripperReading) -> list[Event]:
        if not self.settings.has_gripper:
            return []
        sample = self.fingers.take(r)
        if sample is None:
            return []
        x, v, effort, last = sample
        out: list[Event] = []
        self.fusion.settle_slip(out, r.stamp_ns)
        gripper_step(self.fingers, out, r.stamp_ns, x, v, effort, last)
        self.fingers.learn(r.stamp_ns, x, v, effort)
        return out

    def wrench(self, r: WrenchReading) -> list[Event]:
        if not self.settings.use_wrench:
            return []
        fingers = self.fingers
        reading = self.wrench_track.take(r, holding=fingers.state in (GRIPPING, HOLDING, CLOSING))
        if reading is None:
            return []
        load, size = reading
        out: list[Event] = []
        self.fusion.settle_slip(out, r.stamp_ns)
        if not self.settings.has_gripper:
            self.wrench_track.wrench_only_contact(out, r.stamp_ns, size)
        else:
            self.wrench_track.watch_bump(out, r.stamp_ns, size, idle=fingers.state in (IDLE, EMPTY),
                                         opened_ns=fingers.opened_ns)
        self.fusion.carried_load(out, r.stamp_ns, load, size)
        return out

    def command(self, r: GripperReading) -> list[Event]:
        """The operator's gripper command (position in the command's own units): read by the gripper's steps."""
        if self.fingers.command is not None:
            self.fingers.command.add(r.stamp_ns, r.position)
        return []

    def skip(self, why: str) -> list[Event]:
        return self.log.skip(why)

    def spikes(self, dropped: int, largest: float) -> None:
        """The segmenter's spike gate dropped `dropped` gripper readings off the fingers' path (see spike.py)."""
        self.fingers.spikes = (dropped, largest)
        if dropped:
            self.skipped['gripper_off_path'] = dropped

    def finish(self) -> list[Event]:
        """The episode ended: a close on nothing still held is a miss, unless an object was released before it
        in this episode (then the gripper was closed to park it)."""
        return self.fingers.finish()

    # --- what the episode showed ------------------------------------------------------------------------------
    def inputs(self) -> list[str]:
        """What the detector read its signals from, said once per episode."""
        out = []
        fingers = self.fingers
        if self.settings.has_gripper and fingers.speed.source:
            out.append(fingers.speed.why)
        dropped, largest = fingers.spikes
        if dropped:
            out.append(f'{dropped} of {dropped + self.gripper_samples} gripper readings were off the fingers\' path '
                       f'and came straight back (up to {largest:.4g} off): dropped as spikes')
        if fingers.command is not None:
            out.append(f'gripper command: {fingers.command.samples} sample(s) read')
        return out

    def warnings(self) -> list[str]:
        """What looks wrong with the input, or an event that is a guess: said instead of a silent zero or a
        confident mistake."""
        out = []
        s = self.settings
        command = self.fingers.command
        if s.has_gripper:
            line = self.calibration.report()
            if line:
                out.append(f'gripper positions {line}')
            if command is not None and command.samples and not command.shared:
                line = command.calibration.report()
                if line:
                    out.append(f'gripper command {line}')
            out += self._unexplained_travel()
        out += self.log.doubts
        dropped = self.fingers.spikes[0]
        if dropped > SPIKE_SHARE * (dropped + self.gripper_samples):
            out.append(f'{dropped} of {dropped + self.gripper_samples} gripper readings jumped off the fingers\' '
                       'path and straight back: a tracker or bus that mis-reads this often makes every grip '
                       'decision less sure')
        if command is not None and command.samples == 0:
            out.append('the profile names a gripper command but no command sample was read: the grip was judged '
                       'from the fingers alone')
        return out

    def _unexplained_travel(self) -> list[str]:
        """The fingers travelled through most of their stroke and nothing came of it: why, as far as can be told."""
        fingers = self.fingers
        if fingers.x_range is None:
            return []
        low, high = fingers.x_range
        if high - low <= UNEXPLAINED_STROKE or any(e.kind in (GRASP, RELEASE, GRASP_FAILED) for e in self.events):
            return []
        travel = f'the gripper travelled through {100 * min(1.0, high - low):.0f}% of its stroke and no grasp, ' \
                 'release or miss was found'
        lowest = fingers.closed + low * fingers.span
        if any(e.kind == GRASP_START for e in self.events):
            return [f'{travel}: it closed, but never stopped on anything nor reached closed; its lowest position was '
                    f'{lowest:.4g} against a closed position of {fingers.closed:.4g} (is closed_position right, or '
                    'did it stop within the command\'s lag?)']
        return [f'{travel}: no closing stroke was recognised (faster than the samples can follow, or slower than '
                f'{self.velocity_threshold * abs(fingers.span):.4g} a second: check '
                'segmenter.gripper_velocity_threshold)']

    def calibrations(self) -> dict[str, Any]:
        """The strokes used (and what this episode showed of them), for events.json and for pooling."""
        if not self.settings.has_gripper:
            return {}
        out: dict[str, Any] = {'gripper': {**self.calibration.stroke.to_json(),
                                           'profile': self.calibration.nominal.to_json(),
                                           'observed': self.calibration.observed.to_json()}}
        if self.fingers.command is not None:
            watch = self.fingers.command.calibration
            out['command'] = {**watch.stroke.to_json(), 'profile': watch.nominal.to_json(),
                              'observed': watch.observed.to_json()}
        if self.fingers.parked:
            out['gripper']['parked_closed_at_end'] = True
        if self.fingers.closed_unseen:
            out['gripper']['closed_judged_from_profile'] = True
        for channel in self.fingers.uncalibrated & set(out):
            out[channel]['judged_before_calibrated'] = True
        return out

    def timeline(self, start_ns: int | None = None, end_ns: int | None = None) -> list[Segment]:
        """Subtasks between the events: reach, grasp, transport, release, retreat (one set per attempt)."""
        start = start_ns if start_ns is not None else self.first_ns
        end = end_ns if end_ns is not None else self.last_ns
        if start is None or end is None:
            return []
        return subtask_timeline(self.events, self.log.marks, start, end)
