"""The signals and frames a report shows, read from a bag in one pass: min/max envelopes of the arm, gripper and
wrist force, and thumbnails of the camera frames at flagged moments, so memory stays bounded whatever the length."""

from __future__ import annotations

import base64
import math
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from ros_robodata.bag.image import decode_image
from ros_robodata.bag.reader import BagMessage, BagReader
from ros_robodata.dataset.lerobot_ref import LeRobotRef
from ros_robodata.errors import RobodataError
from ros_robodata.profile import Profile
from ros_robodata.report.scores import ScoredEpisode
from ros_robodata.signals import header_stamp_ns, read_gripper, read_joints, read_wrench

BUCKETS = 1500  # envelope buckets per signal: a min and a max each, so 3000 points a line at most
THUMB_WIDTH = 240  # px; frames are shrunk to this width, never enlarged
MAX_RANGES_PER_FINDING = 3  # thumbnails per camera finding
MAX_FLAGGED_FRAMES = 24  # thumbnails of flagged moments per episode, whatever the number of findings

# Where an episode's messages are: its bag, or one episode of a LeRobot folder read in place (no bag written).
EpisodeSource = Path | LeRobotRef


def open_source(source: EpisodeSource) -> BagReader:
    """A reader of the episode's messages: its bag, or a LeRobot episode read as its import's bag would be.

    Raises:
        RobodataError: the bag or the LeRobot folder cannot be read.
    """
    if isinstance(source, LeRobotRef):
        from ros_robodata.dataset.lerobot_episode_source import open_episode  # start-up time: PyAV, pyarrow

        return open_episode(source)
    return BagReader(source)


class Envelope:
    """Min and max of a signal in fixed time buckets over the episode: memory is fixed by the bucket count
    whatever the episode's length, and a one-sample spike survives (an average or every-nth sample would not).
    NaN and Inf are left out (their findings are shaded instead); samples stamped far outside the episode
    (a clock jump) are dropped, not piled onto its edges."""

    def __init__(self, start_ns: int, end_ns: int, buckets: int, width: int, block: int = 4096) -> None:
        self.start_ns = start_ns
        self.span_ns = max(1, end_ns - start_ns)
        self.buckets = max(1, buckets)
        self.lo = np.full((self.buckets, width), np.inf)
        self.hi = np.full((self.buckets, width), -np.inf)
        self._t = np.empty(block, np.int64)
        self._v = np.empty((block, width))
        self._n = 0

    def add(self, stamp_ns: int, values: Iterable[float]) -> None:
        if self._n == len(self._t):
            self._flush()
        self._t[self._n] = stamp_ns
        self._v[self._n] = list(values)
        self._n += 1

    def _flush(self) -> None:
        if not self._n:
            return
        rel = (self._t[:self._n] - self.start_ns) / self.span_ns
        slack = 1e9 / self.span_ns  # stamps lead the receive times the episode is bounded by: keep a second
        keep = (rel > -slack) & (rel < 1 + slack)
        index = np.clip((rel[keep] * self.buckets).astype(np.int64), 0, self.buckets - 1)
        values = self._v[:self._n][keep]
        values = np.where(np.isfinite(values), values, np.nan)  # fmin/fmax skip NaN
        np.fmin.at(self.lo, index, values)
        np.fmax.at(self.hi, index, values)
        self._n = 0

    def lines(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per channel (seconds, values): a zig-zag through each bucket's min and max, broken where the
        signal has no sample for a while so a silence does not look like a straight ramp."""
        self._flush()
        width_s = self.span_ns / self.buckets / 1e9
        max_gap = max(4, math.ceil(0.25 / width_s))
        out = []
        for channel in range(self.lo.shape[1]):
            filled = np.flatnonzero(np.isfinite(self.lo[:, channel]))
            if not len(filled):
                out.append((np.empty(0), np.empty(0)))
                continue
            x = np.repeat((filled + 0.5) * width_s, 2)
            y = np.column_stack([self.lo[filled, channel], self.hi[filled, channel]]).ravel()
            breaks = np.flatnonzero(np.diff(filled) > max_gap)
            if len(breaks):
                at = (breaks + 1) * 2
                x = np.insert(x, at, np.nan)
                y = np.insert(y, at, np.nan)
            out.append((x, y))
        return out


@dataclass
class Thumbnail:
    """One camera frame shown in the report, or why it could not be."""

    camera: str
    t_s: float
    caption: str
    severity: str = ''  # error | warn for a flagged moment, '' for context
    uri: str = ''
    problem: str = ''


@dataclass
class _Target:
    topic: str
    stamp_ns: int
    thumb: Thumbnail


class FramePicker:
    """The frame stamped nearest each wanted moment, decoded once. Frames stream past in time order, so the
    choice is between the last frame before the moment and the first one after it: one frame per camera is
    held, never the stream."""

    def __init__(self, targets: Iterable[_Target]) -> None:
        self._pending: dict[str, deque[_Target]] = {}
        for target in sorted(targets, key=lambda t: t.stamp_ns):
            self._pending.setdefault(target.topic, deque()).append(target)
        self._last: dict[str, tuple[int, BagMessage]] = {}

    @property
    def topics(self) -> set[str]:
        return set(self._pending)

    def frame(self, message: BagMessage, stamp_ns: int, decode: Callable[[BagMessage], Any]) -> None:
        pending = self._pending.get(message.topic)
        while pending and pending[0].stamp_ns <= stamp_ns:
            target = pending.popleft()
            last = self._last.get(message.topic)
            if last is not None and target.stamp_ns - last[0] < stamp_ns - target.stamp_ns:
                _fill(target.thumb, last[1], decode)
            else:
                _fill(target.thumb, message, decode)
        self._last[message.topic] = (stamp_ns, message)

    def finish(self, decode: Callable[[BagMessage], Any]) -> None:
        """Moments after the last frame get the last frame; a camera with no frame says so."""
        for topic, pending in self._pending.items():
            last = self._last.get(topic)
            for target in pending:
                if last is None:
                    target.thumb.problem = f'no frame of {topic} in the bag'
                else:
                    _fill(target.thumb, last[1], decode)
            pending.clear()


def _fill(thumb: Thumbnail, message: BagMessage, decode: Callable[[BagMessage], Any]) -> None:
    try:
        thumb.uri = jpeg_uri(decode_image(decode(message), color='bgr'))
    except RobodataError as err:
        thumb.problem = ' '.join(str(err).split())


def jpeg_uri(bgr: np.ndarray, width: int = THUMB_WIDTH) -> str:
    """A frame as a data: URI of a small JPEG, so the page carries its own pictures."""
    height, wide = bgr.shape[:2]
    if wide > width:
        bgr = cv2.resize(bgr, (width, max(1, round(height * width / wide))), interpolation=cv2.INTER_AREA)
    ok, encoded = cv2.imencode('.jpg', np.ascontiguousarray(bgr), [cv2.IMWRITE_JPEG_QUALITY, 80])
    if not ok:
        raise RobodataError('image: JPEG encoding failed')
    return 'data:image/jpeg;base64,' + base64.b64encode(encoded.tobytes()).decode('ascii')


@dataclass
class EpisodeSignals:
    """What one pass over a bag gave the report."""

    joint_names: list[str] = field(default_factory=list)
    joints: Envelope | None = None
    gripper: Envelope | None = None
    force: Envelope | None = None
    flagged: list[Thumbnail] = field(default_factory=list)
    context: list[Thumbnail] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _frame_targets(ep: ScoredEpisode, profile: Profile) -> tuple[list[_Target], list[_Target]]:
    """(flagged, context): the middle of up to 3 ranges of every finding on a camera topic, and one frame per
    camera at the first grasp (mid-episode when there was none) so a reviewer sees what the robot saw. A camera
    marked `pii` shows no picture: a report is shared as one file, and people's faces are not exported without
    their flag (the findings on it are still listed)."""
    cameras = {c.topic: c.name for c in profile.topics.cameras if not c.pii}
    flagged: list[_Target] = []
    for f in ep.findings:
        if f.get('topic') not in cameras:
            continue
        for a, b in (f.get('ranges_ns') or [])[:MAX_RANGES_PER_FINDING]:
            if len(flagged) >= MAX_FLAGGED_FRAMES:
                break
            middle = (int(a) + int(b)) // 2
            t_s = ep.seconds(middle)
            flagged.append(_Target(f['topic'], middle, Thumbnail(
                cameras[f['topic']], t_s, f'{f.get("check", "")} at {t_s:.2f} s', str(f.get('severity', '')))))
    grasp = next((e for e in ep.events if e.get('kind') == 'grasp' and isinstance(e.get('t_ns'), int)), None)
    if grasp is not None:
        moment, label = int(grasp['t_ns']), 'grasp'
    elif ep.start_ns is not None and ep.end_ns is not None:
        moment, label = (ep.start_ns + ep.end_ns) // 2, 'mid-episode'
    else:
        return flagged, []
    t_s = ep.seconds(moment)
    context = [_Target(topic, moment, Thumbnail(name, t_s, f'{name} at {label} ({t_s:.2f} s)'))
               for topic, name in cameras.items()]
    return flagged, context


def read_signals(source: EpisodeSource, ep: ScoredEpisode, profile: Profile) -> EpisodeSignals:
    """One streaming pass over the episode's bag (or LeRobot episode): envelopes of the arm joints, the gripper
    opening and the wrist force, and the frames the report shows. Header stamps are used throughout, as the
    findings' ranges are."""
    out = EpisodeSignals()
    t = profile.topics
    flagged, context = _frame_targets(ep, profile)
    out.flagged = [target.thumb for target in flagged]
    out.context = [target.thumb for target in context]
    if private := [c.name for c in t.cameras if c.pii]:
        out.notes.append(f'no picture of camera {", ".join(private)}: marked pii in the robot profile (it films '
                         'people)')
    with open_source(source) as reader:
        available = reader.topics
        start = ep.start_ns if ep.start_ns is not None else reader.start_ns
        end = ep.end_ns if ep.end_ns is not None else reader.end_ns
        if start is None or end is None:
            out.notes.append('the bag holds no message')
            return out
        picker = FramePicker([x for x in flagged + context if x.topic in available])
        for target in flagged + context:
            if target.topic not in available:
                target.thumb.problem = f'no {target.topic} topic in the bag'

        def buckets(topic: str) -> int:
            return min(BUCKETS, max(1, available[topic].count // 2))

        joint_topic = t.joint_states.topic if t.joint_states and t.joint_states.topic in available else None
        gripper = t.gripper if t.gripper is not None and t.gripper.topic in available else None
        wrench_topic = t.wrench.topic if t.wrench is not None and t.wrench.topic in available else None
        if gripper is not None:
            out.gripper = Envelope(start, end, buckets(gripper.topic), 1)
        if wrench_topic is not None:
            out.force = Envelope(start, end, buckets(wrench_topic), 1)
        columns: dict[tuple[str, ...], list[int]] = {}
        topics = {x for x in (joint_topic, gripper.topic if gripper else None, wrench_topic) if x} | picker.topics
        for message in reader.messages(sorted(topics)):
            topic = message.topic
            decode = lambda m=message: reader.decode(m)  # noqa: E731 - one closure, three readers
            if topic == joint_topic:
                joints = read_joints(message.data, decode)
                names = joints.names
                if out.joints is None:
                    skip = gripper.joint if gripper is not None and gripper.topic == joint_topic else None
                    out.joint_names = list(profile.robot.arm_joints) or [n for n in names if n != skip]
                    out.joints = Envelope(start, end, buckets(topic), max(1, len(out.joint_names)))
                key = tuple(names)
                if key not in columns:
                    columns[key] = [names.index(n) if n in names else -1 for n in out.joint_names]
                out.joints.add(joints.stamp_ns or message.t_ns,
                               [joints.position[i] if 0 <= i < len(joints.position) else math.nan
                                for i in columns[key]])
            if gripper is not None and topic == gripper.topic and out.gripper is not None:
                reading = read_gripper(message.data, gripper.joint, decode)
                if reading is not None:
                    stroke = gripper.open_position - gripper.closed_position
                    out.gripper.add(reading.stamp_ns or message.t_ns,
                                    [(reading.position - gripper.closed_position) / stroke])
            if topic == wrench_topic and out.force is not None:
                wrench = read_wrench(message.data, decode)
                out.force.add(wrench.stamp_ns or message.t_ns, [math.hypot(*(float(v) for v in wrench.force))])
            if topic in picker.topics:
                picker.frame(message, header_stamp_ns(message.data) or message.t_ns, reader.decode)
        picker.finish(reader.decode)
        out.notes += reader.notes
    return out
