"""All checks of one episode, fed message by message (live from a node, offline from a bag), and its score.

Memory stays bounded whatever the episode's length: every check keeps counters, merged ranges and bounded
windows; the trajectory kept for comparing demonstrations is decimated to a fixed size.
"""

from __future__ import annotations

import math
import struct
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ros_robodata.bag.types import typestore
from ros_robodata.errors import RobodataError
from ros_robodata.profile import Profile
from ros_robodata.profile.schema import JOINT_STATE
from ros_robodata.quality.contact import WrenchWatch
from ros_robodata.quality.findings import ERROR, WARN, Finding, Ranges
from ros_robodata.quality.host_stall import merge_host_stalls
from ros_robodata.quality.motion import JointMotion, MotionLimits, limits_from_urdf
from ros_robodata.quality.quality_format import EpisodeMetrics, ReportJson
from ros_robodata.quality.timing import StreamTiming, SyncWatch, TimingLimits
from ros_robodata.signals import (
    GripperReading,
    JointReading,
    header_stamp_ns,
    read_gripper,
    read_joints,
    read_wrench,
    stamped_type,
    starts_with_header,
)

# What reading a damaged or unexpected message raises (our decoders' RobodataError, rosbags' and rclpy's parse
# errors, a field of the wrong shape): the message is counted as undecodable; anything else is a bug and surfaces.
UNREADABLE = (RobodataError, ValueError, TypeError, IndexError, KeyError, AttributeError, struct.error,
              UnicodeDecodeError)

_JOINTS, _WRENCH, _CAMERA, _URDF, _COMMAND = 'joints', 'wrench', 'camera', 'urdf', 'command'

# How much one finding costs the episode's score: the score is the product of (1 - penalty) over findings.
PENALTY = {ERROR: 0.3, WARN: 0.1}


def score_of(findings: list[Finding]) -> tuple[float, list[str]]:
    """The score in [0, 1] and its reasons, worst first. Each check that fired costs once, at its worst severity
    (errors 30%, warnings 10%): one host stall that made every topic late is one problem, not seven."""
    worst: dict[str, float] = {}
    for f in findings:
        worst[f.check] = max(worst.get(f.check, 0.0), PENALTY.get(f.severity, 0.0))
    score = 1.0
    for penalty in worst.values():
        score *= 1.0 - penalty
    ordered = sorted((f for f in findings if f.severity in PENALTY),
                     key=lambda f: (-PENALTY.get(f.severity, 0.0), f.check, f.topic))
    return round(score, 4), [f'{f.severity}: {f.message}' for f in ordered]  # info findings explain no loss


@dataclass
class EpisodeReport:
    """What the checks found in one episode."""

    findings: list[Finding]
    metrics: EpisodeMetrics
    start_ns: int | None
    end_ns: int | None
    trajectory: tuple[Any, Any] | None = None  # (times_ns, N x J positions), decimated; not serialized
    joint_names: list[str] = field(default_factory=list)
    motion_detail: dict[str, Any] = field(default_factory=dict)  # JointMotion.stuck_detail(); not serialized

    @property
    def score(self) -> float:
        return score_of(self.findings)[0]

    def to_json(self) -> ReportJson:
        score, reasons = score_of(self.findings)
        return {'score': score, 'reasons': reasons, 'start_ns': self.start_ns, 'end_ns': self.end_ns,
                'findings': [f.to_json(self.start_ns) for f in self.findings], 'metrics': self.metrics}


class EpisodeQuality:
    """Routes each message of the profile's topics to its checks. `images=False` skips the camera checks
    (they need the frames decoded); `image_rate_hz` is how many frames a second and camera they look at (0: every
    frame, the default, so counts and frame ranges are exact and a freeze of a few frames is seen). The frames are
    decoded and checked on a worker thread, in order, while the bag is read: OpenCV and numpy release the GIL, so
    on two cores the camera checks cost little beyond the read."""

    def __init__(self, profile: Profile, *, images: bool = True, image_rate_hz: float = 0.0) -> None:
        self.profile = profile
        q, t = profile.quality, profile.topics
        self.timing: dict[str, StreamTiming] = {}
        self._stamped: dict[str, bool] = {}
        for _, spec in profile.all_topics():
            self.timing[spec.topic] = StreamTiming(spec.topic, TimingLimits(
                rate_hz=spec.rate_hz, rate_tolerance=q.rate_tolerance, max_latency_ms=q.max_latency_ms,
                silent_after_s=q.silent_after_s, latched=spec.latched))
            known = stamped_type(spec.type)  # the typestore (~0.1 s to load) only for a type the table lacks
            self._stamped[spec.topic] = known if known is not None else starts_with_header(spec.type, typestore())
        # A rig without an arm (a capture studio, a vehicle) has no joint states: no motion or sync checks.
        self.joint_topic = t.joint_states.topic if t.joint_states is not None else None
        gripper_joint = [t.gripper.joint] if t.gripper is not None and t.gripper.topic == self.joint_topic else []
        self.motion = JointMotion(self.joint_topic, profile.robot.arm_joints or None,
                                  MotionLimits(max_idle_s=q.max_idle_s),
                                  not_stuck=gripper_joint) if self.joint_topic else None
        # A leader arm's (or any JointState) command: a joint that stays put while commanded to move is stuck.
        self._command_topic = (t.actions.topic if t.actions is not None and t.actions.type == JOINT_STATE
                               and self.motion is not None and t.actions.topic != self.joint_topic else None)
        self.wrench = WrenchWatch(t.wrench.topic, q.max_force_n) if t.wrench is not None else None
        self.gripper = t.gripper
        self._gripper_last: tuple[int, float] | None = None
        self._gripper_moving = Ranges(join_ns=100_000_000)
        self.cameras: dict[str, Any] = {}
        self.sync: dict[str, SyncWatch] = {}
        self._image_period_ns = int(1e9 / image_rate_hz) if image_rate_hz > 0 else 0
        self._last_frame: dict[str, int] = {}
        self._image_pool: ThreadPoolExecutor | None = None
        self._image_slots = threading.BoundedSemaphore(32)  # frames decoded ahead at most (memory bound)
        self._image_error: BaseException | None = None  # a check's own bug, raised at flush_images
        if images and t.cameras:
            from ros_robodata.quality.images import CameraWatch, ImageLimits  # start-up time: OpenCV (~0.17 s)

            for cam in t.cameras:
                self.cameras[cam.topic] = CameraWatch(cam.topic, cam.name, ImageLimits(blur_threshold=q.blur_threshold))
        if self.joint_topic:
            for cam in t.cameras:
                self.sync[cam.topic] = SyncWatch(cam.topic, self.joint_topic, q.max_sync_skew_ms)
        self._camera_topics = {cam.topic for cam in t.cameras}
        self._urdf_topics = {spec.topic for _, spec in profile.all_topics()
                             if spec.type == 'std_msgs/msg/String' and 'robot_description' in spec.topic}
        # What each topic's messages are read for (one lookup a message on the hot path).
        self._roles: dict[str, str] = dict.fromkeys(self._urdf_topics, _URDF)
        self._roles.update(dict.fromkeys(self._camera_topics, _CAMERA))
        if self.wrench is not None:
            self._roles[self.wrench.topic] = _WRENCH
        if self.joint_topic:
            self._roles[self.joint_topic] = _JOINTS
        if self._command_topic:
            self._roles[self._command_topic] = _COMMAND
        self._gripper_topic = self.gripper.topic if self.gripper is not None else None
        self.first_ns: int | None = None
        self.last_ns: int | None = None
        self.first_stamp_ns: int | None = None
        self.last_stamp_ns: int | None = None
        self.undecodable: dict[str, str] = {}

    def add(self, topic: str, receive_ns: int, data: bytes | memoryview, decode: Callable[[], Any]) -> list[str]:
        """One message of `topic` (CDR bytes; `decode()` gives the message object when a check needs it);
        returns the checks that fired on it. A message that cannot be read is reported once per topic
        (metrics 'undecodable'); the checks themselves run outside that guard, so a bug in one is not taken
        for bad data."""
        timing = self.timing.get(topic)
        if timing is None:
            return []
        if self.first_ns is None:
            self.first_ns = receive_ns
        self.last_ns = receive_ns
        stamp = header_stamp_ns(data) if self._stamped[topic] else None
        if stamp is not None and stamp > 0:  # one time origin for every range: the sensors' header stamps
            self.first_stamp_ns = stamp if self.first_stamp_ns is None else min(self.first_stamp_ns, stamp)
            self.last_stamp_ns = stamp if self.last_stamp_ns is None else max(self.last_stamp_ns, stamp)
        fired = timing.add(stamp, receive_ns)
        at = stamp or receive_ns
        role = self._roles.get(topic)
        if role is None and topic != self._gripper_topic:
            return fired
        try:
            gripper = (read_gripper(data, self.gripper.joint, decode)
                       if self.gripper is not None and topic == self._gripper_topic else None)
            if role in (_JOINTS, _COMMAND):
                reading: Any = read_joints(data, decode)
            elif role == _WRENCH:
                reading = read_wrench(data, decode)
            elif role == _CAMERA:
                reading = None
                self._frame(topic, at, decode, data)
            elif role == _URDF and self.motion is not None and not self.motion.joint_limits:
                reading = str(decode().data)
            else:
                reading = None
        except UNREADABLE as err:
            self.undecodable.setdefault(topic, f'{type(err).__name__}: {" ".join(str(err).split())}')
            return fired
        if gripper is not None:
            self._gripper(gripper)
        if role == _JOINTS:
            fired += self._joints(reading)
        elif role == _COMMAND:
            self.motion.command(reading.stamp_ns, reading.names, reading.position)  # type: ignore[union-attr]
        elif role == _WRENCH:
            fired += self.wrench.add(at, reading.force)  # type: ignore[union-attr]
        elif role == _CAMERA:
            if topic in self.sync and self.sync[topic].frame(at):
                fired.append('timing.sync_skew')
        elif reading is not None and self.motion is not None:  # the URDF's text
            self.motion.joint_limits = limits_from_urdf(reading)
        return fired

    def _gripper(self, reading: GripperReading) -> None:
        """When the fingers move (a stroke jolts the wrist: not a collision)."""
        assert self.gripper is not None
        if reading.position != reading.position:
            return
        stroke = abs(self.gripper.open_position - self.gripper.closed_position)
        last, self._gripper_last = self._gripper_last, (reading.stamp_ns, reading.position)
        if last is not None and reading.stamp_ns > last[0]:
            speed = abs(reading.position - last[1]) / stroke / ((reading.stamp_ns - last[0]) / 1e9)
            if speed > 0.1:  # a tenth of the stroke per second: the fingers are moving
                self._gripper_moving.add(last[0], speed, end_ns=reading.stamp_ns)

    def gripper_last(self) -> float | None:
        """The last gripper reading in the joint's own units; None without a gripper."""
        return None if self.gripper is None or self._gripper_last is None else self._gripper_last[1]

    def gripper_opening(self) -> float | None:
        """The last gripper reading as a share of the stroke (0 closed, 1 open); None without a gripper."""
        if self.gripper is None or self._gripper_last is None:
            return None
        return (self._gripper_last[1] - self.gripper.closed_position) / (
            self.gripper.open_position - self.gripper.closed_position)

    def gripper_moving_at(self, stamp: int) -> bool:
        """True when the fingers were moving within 150 ms of `stamp` (a force spike then is grasping)."""
        return any(a - 150_000_000 <= stamp <= b + 150_000_000 for a, b in self._gripper_moving.items)

    def _joints(self, reading: JointReading) -> list[str]:
        for watch in self.sync.values():
            watch.reference(reading.stamp_ns)
        assert self.motion is not None  # joint_topic is set
        return self.motion.add(reading.stamp_ns, reading.names, reading.position)

    def _frame(self, topic: str, stamp: int, decode: Callable[[], Any], data: bytes | memoryview | None = None
               ) -> None:
        """Queue the frame for the camera checks (when they look at it: image_rate_hz a second, or every one);
        `data`, its CDR bytes, lets a plain colour frame skip the generic decode."""
        if topic not in self.cameras:
            return
        last = self._last_frame.get(topic)
        if last is not None and 0 <= stamp - last < 0.9 * self._image_period_ns:  # 0.9: frames on a 1/30 s grid
            return
        self._last_frame[topic] = stamp
        if self._image_pool is None:
            self._image_pool = ThreadPoolExecutor(1, thread_name_prefix='robodata-images')
        self._image_slots.acquire()
        self._image_pool.submit(self._check_frame, topic, stamp, decode, data)

    def _check_frame(self, topic: str, stamp: int, decode: Callable[[], Any], data: bytes | memoryview | None
                     ) -> None:
        from ros_robodata.bag.image import decode_image  # start-up time: OpenCV, only where frames are checked
        from ros_robodata.quality.image_cdr import gray_from_image_cdr

        try:
            try:
                gray = gray_from_image_cdr(data) if data is not None else None
                pixels = decode_image(decode()) if gray is None else gray
            except UNREADABLE as err:
                self.undecodable.setdefault(topic, f'{type(err).__name__}: {" ".join(str(err).split())}')
                return
            self.cameras[topic].add(stamp, pixels, handed_over=gray is not None)
        except Exception as err:
            self._image_error = self._image_error or err
        finally:
            self._image_slots.release()

    def flush_images(self) -> None:
        """Wait for the queued frames' checks (a check's own bug is raised here, not taken for bad data)."""
        pool, self._image_pool = self._image_pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        error, self._image_error = self._image_error, None
        if error is not None:
            raise error

    def report(self, *, outcome: str | None = None, min_episode_s: float = 1.0,
               start_ns: int | None = None) -> EpisodeReport:
        """Findings and metrics so far; `outcome` (the operator's label) adds the completeness check of it.
        `start_ns`: the episode's time origin (bag/time_origin.py), else the earliest header stamp read."""
        self.flush_images()
        findings: list[Finding] = []
        for timing in self.timing.values():
            findings += timing.findings(self.last_ns)
        timed = sum(1 for t in self.timing.values() if t.limits.rate_hz and t.count)
        origin = start_ns if start_ns is not None else self.first_stamp_ns
        findings = merge_host_stalls(findings, timed, start_ns=origin)
        for sync in self.sync.values():
            findings += sync.findings()
        if self.motion is not None:
            findings += self.motion.findings()
        if self.wrench is not None:
            findings += self.wrench.findings(self.gripper_moving_at)
        for watch in self.cameras.values():
            findings += watch.findings()
        findings += self._completeness(outcome, min_episode_s)
        duration = (self.last_ns - self.first_ns) / 1e9 if self.first_ns is not None and self.last_ns else 0.0
        motion = self.motion
        times, rows = motion.trajectory.arrays() if motion is not None else ((), None)
        metrics: EpisodeMetrics = {
            'duration_s': round(duration, 3),
            'topics': {topic: {'count': t.count, 'rate_hz': _round(t.rate_hz()), 'expected_hz': t.limits.rate_hz,
                               'lost': t.lost, 'mean_latency_ms': _round(t.mean_latency_ms())}
                       for topic, t in self.timing.items()},
            'smoothness_ldlj': _round(motion.smoothness()) if motion is not None else None,
            'idle_s': round(motion.idle_ns / 1e9, 3) if motion is not None else None,
            'trim': motion.trim() if motion is not None else {},
            'peak_force_n': _round(self.wrench.peak_n) if self.wrench is not None else None,
            'cameras': {topic: {**{k: _round(v) for k, v in w.stats().items()}, 'frames': w.frames}  # a count
                        for topic, w in self.cameras.items()},
            'sync_skew_ms': {topic: _round(s.worst_ms) for topic, s in self.sync.items()},
        }
        if self.undecodable:
            metrics['undecodable'] = dict(self.undecodable)
        stamped = self.first_stamp_ns is not None and self.last_stamp_ns is not None
        return EpisodeReport(findings, metrics, origin if stamped and origin is not None else self.first_ns,
                             self.last_stamp_ns if stamped else self.last_ns,
                             (times, rows) if len(times) else None, list(motion.names) if motion else [],
                             motion.stuck_detail() if motion is not None else {})

    def _completeness(self, outcome: str | None, min_episode_s: float) -> list[Finding]:
        out = []
        for topic, timing in self.timing.items():
            if timing.count == 0 and timing.limits.rate_hz is not None:
                out.append(Finding('completeness.missing_topic', ERROR, topic, f'{topic}: no message at all'))
        if self.first_ns is not None and self.last_ns is not None:
            duration = (self.last_ns - self.first_ns) / 1e9
            if duration < min_episode_s:
                out.append(Finding('completeness.too_short', ERROR, '', f'the episode lasts {duration:.1f} s '
                                   f'(at least {min_episode_s:g} s expected)', duration, min_episode_s))
        else:
            out.append(Finding('completeness.empty', ERROR, '', 'the episode holds no message of the profile'))
        if outcome is not None and outcome == 'unknown':
            out.append(Finding('completeness.outcome', WARN, '', 'no outcome label (success / failure / recovery)'))
        return out


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None or not math.isfinite(value) else round(float(value), digits)
