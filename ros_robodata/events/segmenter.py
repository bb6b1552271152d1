"""The segmenter as nodes and commands use it: samples in arrival order in, events out, identical live and
offline because samples are put in stamp order before the detector sees them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ros_robodata.events.calibration import Priors
from ros_robodata.events.detector import EventDetector, SegmenterSettings
from ros_robodata.events.event import Event, SegmentResult
from ros_robodata.events.order import StampOrder
from ros_robodata.events.spike import GripperSpikeGate
from ros_robodata.profile import Profile
from ros_robodata.signals import GripperReading, WrenchReading, read_command, read_gripper, read_wrench

GRIPPER, WRENCH, COMMAND = 'gripper', 'wrench', 'command'


def settings_from_profile(profile: Profile, *, use_gripper: bool = True, use_wrench: bool = True,
                          priors: Priors | None = None) -> SegmenterSettings:
    """The detector's settings from a robot profile; `priors`: where earlier episodes found the strokes."""
    gripper, seg = profile.topics.gripper, profile.segmenter
    command = gripper.command if gripper and use_gripper else None
    return SegmenterSettings(
        open_position=gripper.open_position if gripper else None,
        closed_position=gripper.closed_position if gripper else None,
        max_effort=gripper.max_effort if gripper else None,
        command_open=command.open_position if command else None,
        command_closed=command.closed_position if command else None,
        use_gripper=use_gripper and gripper is not None,
        use_wrench=use_wrench and profile.topics.wrench is not None,
        gripper_velocity_threshold=seg.gripper_velocity_threshold,
        contact_force_threshold_n=seg.contact_force_threshold_n,
        min_event_gap_s=seg.min_event_gap_s,
        gripper_prior=priors.gripper if priors is not None else None,
        command_prior=priors.command if priors is not None and command is not None else None,
    )


# The segmenter reads a recorded episode from its first received message plus this guard: a sample stamped after
# that was received after it too (unless its clock runs ahead of the receiver's by more), so it is in the bag, and
# the live segmenter has it: both read exactly the same samples.
INPUT_GUARD_NS = 100_000_000
# A sample is judged by its header stamp (the same live and in the bag, so the boundary is exact) unless the stamp
# is on another clock than the receive time (a bag of last week replayed live): then by when it was received.
_SAME_CLOCK_NS = 5_000_000_000


def episode_input_start(data_start_ns: int | None) -> int | None:
    """Where the segmenter's input of a recorded episode starts, from the receive time of its first message
    (Episode.start_ns; EpisodeEvent.data_start live). The live segmenter starts afresh at each episode from the
    samples it kept since then and the offline pass skips what the bag holds from before, so live and offline
    events are the same, exactly (the detector's baselines would otherwise carry what came before the
    episode). None: read everything."""
    return None if not data_start_ns else data_start_ns + INPUT_GUARD_NS


def before_input_start(since_ns: int, stamp_ns: int, received_ns: int | None) -> bool:
    if received_ns is not None and abs(received_ns - stamp_ns) > _SAME_CLOCK_NS:
        return received_ns < since_ns
    return stamp_ns < since_ns


# A gripper reading off its path by less than this share of the profile's stroke is no spike worth dropping (the
# profile gives the units; a mis-read tracker marker is 5-20% of a stroke, a fast stroke's own curve near 1%).
SPIKE_FLOOR = 0.03


class Segmenter:
    """Routes messages by topic to the detector, in stamp order. `topics` maps topic -> roles (a rig may publish
    the follower's and the leader's gripper joints in one JointState). `since_ns`: samples stamped earlier are
    not read (see episode_input_start)."""

    def __init__(self, profile: Profile, *, use_gripper: bool = True, use_wrench: bool = True,
                 since_ns: int | None = None, priors: Priors | None = None) -> None:
        self.since_ns = since_ns
        self.priors = priors
        self.settings = settings_from_profile(profile, use_gripper=use_gripper, use_wrench=use_wrench, priors=priors)
        self.detector = EventDetector(self.settings)
        t = profile.topics
        self.gripper_joint = t.gripper.joint if t.gripper else ''
        self.command_joint = t.gripper.command.joint if t.gripper and t.gripper.command else None
        self.topics: dict[str, tuple[str, ...]] = {}
        if self.settings.use_gripper and t.gripper is not None:
            self._route(t.gripper.topic, GRIPPER)
            if t.gripper.command is not None:
                self._route(t.gripper.command.topic, COMMAND)
        if self.settings.use_wrench and t.wrench is not None:
            self._route(t.wrench.topic, WRENCH)
        self.joints_seen: list[str] = []  # the names in the gripper topic's JointState, when it lacks the joint
        self._order = StampOrder(self.sources)
        ends = (self.settings.open_position, self.settings.closed_position)
        span = abs(ends[0] - ends[1]) if ends[0] is not None and ends[1] is not None else 0.0
        self._spikes = GripperSpikeGate(SPIKE_FLOOR * span)

    def _route(self, topic: str, role: str) -> None:
        self.topics[topic] = (*self.topics.get(topic, ()), role)

    def topic_of(self, role: str) -> str | None:
        return next((topic for topic, roles in self.topics.items() if role in roles), None)

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(sorted({role for roles in self.topics.values() for role in roles}))

    def add_message(self, topic: str, msg: Any, received_ns: int | None = None) -> list[Event]:
        """A decoded message (rclpy or rosbags) from one of `topics`; the events it confirmed."""
        return self.add_cdr(topic, b'', lambda: msg, received_ns)

    def add_cdr(self, topic: str, data: bytes | memoryview, decode: Callable[[], Any],
                received_ns: int | None = None) -> list[Event]:
        """A message of one of `topics` as CDR bytes (from a bag), parsed directly when the layout is the plain
        one, else through `decode()`; the events it confirmed. `received_ns`: when it was received (a bag's log
        time), for `since_ns` and for a command without a header."""
        out: list[Event] = []
        for sample in self.read(topic, data, decode, received_ns):
            out += self.add(*sample, received_ns)
        return out

    def read(self, topic: str, data: bytes | memoryview, decode: Callable[[], Any], received_ns: int | None = None
             ) -> list[tuple[str, GripperReading | WrenchReading]]:
        """The role and reading of each sample one message holds (none: not one the detector reads), for `add`."""
        out: list[tuple[str, GripperReading | WrenchReading]] = []
        for role in self.topics.get(topic, ()):
            if role == WRENCH:
                out.append((WRENCH, read_wrench(data, decode)))
            elif role == GRIPPER:
                reading = read_gripper(data, self.gripper_joint, decode)
                if reading is None:
                    self._joint_missing(decode)
                else:
                    out.append((GRIPPER, reading))
            else:
                command = read_command(data, self.command_joint, decode, received_ns)
                if command is None:
                    self.detector.skip('command_joint_missing' if self.command_joint else 'command_without_stamp')
                else:
                    out.append((COMMAND, command))
        return out

    def _joint_missing(self, decode: Callable[[], Any]) -> None:
        self.detector.skip('gripper_joint_missing')
        if not self.joints_seen:
            try:
                self.joints_seen = [str(n) for n in decode().name] or ['(no joint at all)']
            except Exception:  # only for the message that names what the topic holds instead
                self.joints_seen = ['(undecodable)']

    def add(self, role: str, reading: GripperReading | WrenchReading, received_ns: int | None = None) -> list[Event]:
        if self.since_ns is not None and before_input_start(self.since_ns, reading.stamp_ns, received_ns):
            return []
        if role != GRIPPER or not isinstance(reading, GripperReading):
            return self._feed(self._order.push(role, reading.stamp_ns, reading))
        out: list[Event] = []
        for passed in self._spikes.push(reading):
            out += self._feed(self._order.push(role, passed.stamp_ns, passed))
        return out

    def finish(self) -> list[Event]:
        out: list[Event] = []
        for passed in self._spikes.flush():
            out += self._feed(self._order.push(GRIPPER, passed.stamp_ns, passed))
        self.detector.spikes(self._spikes.dropped, self._spikes.largest)
        return out + self._feed(self._order.flush()) + self.detector.finish()

    def _feed(self, ready: list[tuple[str, int, Any]]) -> list[Event]:
        out: list[Event] = []
        for role, _, reading in ready:
            if role == GRIPPER:
                out += self.detector.gripper(reading)
            elif role == WRENCH:
                out += self.detector.wrench(reading)
            else:
                out += self.detector.command(reading)
        return out

    def result(self, start_ns: int | None = None, end_ns: int | None = None) -> SegmentResult:
        """Everything found; times count from `start_ns`, by default the first header stamp read (one time
        origin: an event's t_s is its stamp's distance from it)."""
        d = self.detector
        start = start_ns if start_ns is not None else d.first_ns
        end = end_ns if end_ns is not None else d.last_ns
        calibration = d.calibrations()
        if calibration and self.priors is not None:
            calibration['prior'] = self.priors.to_json()
        return SegmentResult(events=list(d.events), timeline=d.timeline(start, end), start_ns=start, end_ns=end,
                             sources=self.sources, thresholds=d.thresholds(), skipped=dict(d.skipped),
                             inputs=d.inputs(), warnings=d.warnings(), calibration=calibration)
