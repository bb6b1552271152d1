"""One episode put on LeRobot's frame grid: every stream read by its header stamps, and for each tick of the grid
(`fps`, from the first moment every stream has data) the nearest state, action and camera frame.

LeRobot assumes frame k of an episode is at exactly k / fps and checks it to 1e-4 s; a rig's streams are neither
on that grid nor on one another's. So timestamps are the grid itself, and each value is the real sample whose
stamp is nearest to its tick: never an interpolated state the robot was not in. How far each pick lay from its tick
is kept (`offset_ms`), so a dropped camera frame is visible, not hidden.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ros_robodata.bag.reader import BagReader
from ros_robodata.errors import ExportError
from ros_robodata.profile import JOINT_STATE, Profile
from ros_robodata.signals.cdr import header_stamp_ns
from ros_robodata.signals.read import read_joints

NEXT_STATE = 'next_state'
_VECTOR_FIELDS = {
    'geometry_msgs/msg/TwistStamped': ('twist', ('linear.x', 'linear.y', 'linear.z', 'angular.x', 'angular.y',
                                                 'angular.z')),
    'geometry_msgs/msg/Twist': ('', ('linear.x', 'linear.y', 'linear.z', 'angular.x', 'angular.y', 'angular.z')),
    'geometry_msgs/msg/PoseStamped': ('pose', ('position.x', 'position.y', 'position.z', 'orientation.x',
                                               'orientation.y', 'orientation.z', 'orientation.w')),
}
_ARRAYS = ('std_msgs/msg/Float64MultiArray', 'std_msgs/msg/Float32MultiArray')
ACTION_TYPES = (JOINT_STATE, *_VECTOR_FIELDS, *_ARRAYS)  # what an action can be read from


@dataclass
class Stream:
    """One stream's samples in stamp order: stamps (ns) and values (rows), with the names of the columns."""

    stamps: np.ndarray
    values: np.ndarray
    names: list[str]


@dataclass
class EpisodeGrid:
    """An episode on the grid: tick times (ns, header clock), state and action rows, and for each camera the index
    (in the bag's order of that camera's messages) of the frame nearest each tick."""

    ticks: np.ndarray
    state: np.ndarray
    action: np.ndarray
    state_names: list[str]
    action_names: list[str]
    action_source: str
    camera_picks: dict[str, np.ndarray] = field(default_factory=dict)
    offset_ms: dict[str, float] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ticks)


def _field(msg: Any, path: str) -> float:
    for part in path.split('.'):
        msg = getattr(msg, part)
    return float(msg)


class _Vectors:
    """Collects one topic's numbers as its messages come: a JointState's positions (the `wanted` joints in that order,
    or all), a twist or pose, or a Float64/Float32MultiArray (stamped by receive time: it has no header)."""

    def __init__(self, where: Path, topic: str, msgtype: str, wanted: list[str] | None = None) -> None:
        if msgtype not in ACTION_TYPES:
            raise ExportError(f'{where}: {topic} is {msgtype}: an action is read from a JointState, a twist, a pose or '
                              'a Float64/Float32MultiArray (use --action-topic, or none for the next state)')
        self.where, self.topic, self.msgtype = where, topic, msgtype
        self.names: list[str] = list(wanted or [])
        self.stamps: list[int] = []
        self.rows: list[list[float]] = []

    def add(self, reader: BagReader, message: Any) -> None:
        msgtype = self.msgtype
        if msgtype == JOINT_STATE:
            joints = read_joints(message.data, lambda: reader.decode(message))
            if not self.names:
                self.names = list(joints.names)
            where = {n: i for i, n in enumerate(joints.names)}
            if any(n not in where for n in self.names):
                return  # a message carrying other joints (a second arm on the same topic)
            self.stamps.append(joints.stamp_ns)
            self.rows.append([joints.position[where[n]] for n in self.names])
        elif msgtype in _VECTOR_FIELDS:
            msg = reader.decode(message)
            inner, paths = _VECTOR_FIELDS[msgtype]
            self.names = list(paths)
            stamp = header_stamp_ns(message.data) if msgtype.endswith('Stamped') else None
            self.stamps.append(stamp if stamp is not None else message.t_ns)
            self.rows.append([_field(getattr(msg, inner) if inner else msg, p) for p in paths])
        else:
            data = list(reader.decode(message).data)
            self.names = self.names or [f'{self.topic.strip("/").replace("/", ".")}[{i}]' for i in range(len(data))]
            if len(data) == len(self.names):
                self.stamps.append(message.t_ns)
                self.rows.append(data)

    def stream(self) -> Stream:
        if not self.rows:
            joints = f' with joints {", ".join(self.names)}' if self.names else ''
            raise ExportError(f'{self.where}: no usable message on {self.topic}{joints}')
        t = np.asarray(self.stamps, dtype=np.int64)
        order = np.argsort(t, kind='stable')
        return Stream(t[order], np.asarray(self.rows, dtype=np.float64)[order], self.names)


class _Stamps:
    """A camera's header stamps in the bag's order (no pixel decoded)."""

    def __init__(self) -> None:
        self.stamps: list[int] = []

    def add(self, reader: BagReader, message: Any) -> None:
        stamp = header_stamp_ns(message.data)
        self.stamps.append(stamp if stamp is not None else message.t_ns)


def _append(state: Stream, extra: Stream) -> Stream:
    """The state with another stream's single column appended, sample nearest each state sample."""
    picks = nearest(extra.stamps, state.stamps)
    return Stream(state.stamps, np.column_stack([state.values, extra.values[picks]]), [*state.names, *extra.names])


def nearest(stamps: np.ndarray, ticks: np.ndarray) -> np.ndarray:
    """Index into sorted `stamps` of the sample nearest each tick."""
    right = np.clip(np.searchsorted(stamps, ticks), 0, len(stamps) - 1)
    left = np.clip(right - 1, 0, len(stamps) - 1)
    return np.where(np.abs(stamps[left] - ticks) <= np.abs(stamps[right] - ticks), left, right)


def grid_episode(bag: Path, profile: Profile, fps: float, cameras: list[str], *, action_topic: str | None,
                 window_ns: tuple[int | None, int | None] = (None, None)) -> EpisodeGrid:
    """Put one episode's bag on the grid. `cameras` are profile camera names; `action_topic` the stream the action
    comes from (None: the next state); `window_ns` bounds the grid (trim points)."""
    topics = profile.topics
    if topics.joint_states is None:
        raise ExportError(f'{profile.source}: no joint_states topic: a LeRobot export needs the robot\'s state')
    with BagReader(bag) as reader:
        have = reader.topics
        need = [topics.joint_states.topic] + [c.topic for c in topics.cameras if c.name in cameras]
        if action_topic:
            need.append(action_topic)
        if missing := [t for t in need if t not in have]:
            raise ExportError(f'{bag}: no {", ".join(missing)} in this bag (it has: {", ".join(have) or "none"})')
        gripper = topics.gripper
        arm = list(profile.robot.arm_joints) or None
        extra = None  # the gripper's joint, appended to the arm's when they are apart
        if gripper is not None and gripper.topic in have and (arm is None or gripper.joint not in arm):
            if gripper.topic != topics.joint_states.topic:
                extra = (gripper.topic, gripper.joint)
            elif arm is not None:
                arm = [*arm, gripper.joint]
        collectors: dict[str, Any] = {topics.joint_states.topic: _Vectors(bag, topics.joint_states.topic,
                                                                          JOINT_STATE, arm)}
        if extra is not None:
            collectors[extra[0]] = _Vectors(bag, extra[0], JOINT_STATE, [extra[1]])
        if action_topic:
            collectors[action_topic] = _Vectors(bag, action_topic, have[action_topic].msgtype)
        camera_topics = {c.topic: c.name for c in topics.cameras if c.name in cameras}
        for topic in camera_topics:
            collectors[topic] = _Stamps()
        for message in reader.messages(list(collectors)):  # one pass: every chunk decompressed once
            collectors[message.topic].add(reader, message)
    state = collectors[topics.joint_states.topic].stream()
    if extra is not None:
        state = _append(state, collectors[extra[0]].stream())
    action = collectors[action_topic].stream() if action_topic else None
    frames = {name: np.asarray(collectors[topic].stamps, dtype=np.int64) for topic, name in camera_topics.items()}
    for name, stamps in frames.items():
        if len(stamps) == 0:
            raise ExportError(f'{bag}: camera {name} has no frame')
    starts = [state.stamps[0]] + [s.min() for s in frames.values()] + ([action.stamps[0]] if action else [])
    ends = [state.stamps[-1]] + [s.max() for s in frames.values()] + ([action.stamps[-1]] if action else [])
    start, end = max(starts), min(ends)
    if window_ns[0] is not None:
        start = max(start, window_ns[0])
    if window_ns[1] is not None:
        end = min(end, window_ns[1])
    period = 1e9 / fps
    count = int(np.floor((end - start) / period + 1e-9)) + 1 if end >= start else 0
    # the next state needs one more tick after the last
    ticks = start + np.round(np.arange(count) * period).astype(np.int64)
    if action is None and count:
        ticks = ticks[:-1]
        after = start + np.round(np.arange(1, count) * period).astype(np.int64)
    state_rows = state.values[nearest(state.stamps, ticks)] if len(ticks) else np.zeros((0, len(state.names)))
    source: str | None  # the action's topic (there is one when there is an action)
    if action is None:
        action_rows = state.values[nearest(state.stamps, after)] if len(ticks) else state_rows
        action_names, source = list(state.names), NEXT_STATE
    else:
        action_rows = action.values[nearest(action.stamps, ticks)]
        action_names, source = action.names, action_topic
    grid = EpisodeGrid(ticks, state_rows.astype(np.float32), action_rows.astype(np.float32), state.names,
                       action_names, source or NEXT_STATE)
    offsets = {'state': _worst(state.stamps, ticks)}
    for name, stamps in frames.items():
        order = np.argsort(stamps, kind='stable')
        picks = nearest(stamps[order], ticks)
        grid.camera_picks[name] = order[picks]
        offsets[f'camera/{name}'] = _worst(stamps[order], ticks)
    grid.offset_ms = {k: round(v / 1e6, 3) for k, v in offsets.items()}
    return grid


def _worst(stamps: np.ndarray, ticks: np.ndarray) -> float:
    if not len(ticks):
        return 0.0
    return float(np.abs(stamps[nearest(stamps, ticks)] - ticks).max())
