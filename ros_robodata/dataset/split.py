"""Long logs cut into episodes: where the windows are, and one pass that writes each window as a bag.

Deployed robots and always-on loggers record for hours; an episode is a stretch of that. Windows come from
a rule (`SplitSpec`): the arm standing still or the log falling silent (gap), fixed lengths (every), marker
messages on a topic (our EpisodeEvent, a std_msgs Bool or String), or a table of ranges. Windows are in the
bag's receive time, [start, end). Every message of a window goes into its bag; the latest message of each
latched topic (the URDF, /tf_static) from before the window is repeated at its top, as the recorder does.
"""

from __future__ import annotations

import csv
import functools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ros_robodata.bag.reader import BagReader
from ros_robodata.errors import RobodataError
from ros_robodata.profile import Profile
from ros_robodata.signals import read_joints, starts_with_header
from ros_robodata.signals.topic_stats import TopicStats
from ros_robodata.vocabulary import OUTCOMES, parse_time

if TYPE_CHECKING:
    from ros_robodata.bag.writer import BagWriter

EPISODE_EVENT = 'ros_robodata/msg/EpisodeEvent'
BOOL = 'std_msgs/msg/Bool'
STRING = 'std_msgs/msg/String'
MARKER_TYPES = (EPISODE_EVENT, BOOL, STRING)
# A String marker with one of these texts ends the running episode without starting another.
END_WORDS = ('', 'stop', 'end', 'done', 'finish', 'finished')
# An arm joint that moved less than this (rad, or m for a prismatic joint) from where it stood is standing still.
STILL_BAND = 0.005
_LATCHED_KEEP = 16


@dataclass(frozen=True)
class SplitSpec:
    """One rule for cutting a long log into episodes: kind is 'gap', 'every', 'topic' or 'ranges'.

    Args:
        kind: 'gap' (the arm still or the log silent), 'every' (fixed lengths), 'topic' (markers) or 'ranges'.
        seconds: for 'gap', how long a pause cuts; for 'every', each episode's length.
        topic: for 'topic', the marker topic (EpisodeEvent START/STOP, Bool or String).
        ranges: for 'ranges', the CSV file of start, end[, task[, outcome]] rows.
    """

    kind: str
    seconds: float = 0.0  # gap / every
    topic: str = ''
    ranges: Path | None = None

    def describe(self) -> str:
        """The rule as the `robodata import` option that asks for it, for messages and the episode's source."""
        return {'gap': f'--split-on-gap {self.seconds:g}s', 'every': f'--split-every {self.seconds:g}s',
                'topic': f'--split-on-topic {self.topic}', 'ranges': f'--ranges {self.ranges}'}[self.kind]


@dataclass(frozen=True)
class Window:
    """One episode's stretch of the log, [start_ns, end_ns), with what the rule knew about it."""

    index: int
    start_ns: int
    end_ns: int
    task: str = ''
    outcome: str = ''
    operator: str = ''
    mode: str = ''
    note: str = ''

    def to_json(self) -> dict[str, Any]:
        return {'index': self.index, 'start_ns': self.start_ns, 'end_ns': self.end_ns}

    def describe(self, origin_ns: int | None) -> str:
        origin = origin_ns or 0
        return f'{(self.start_ns - origin) / 1e9:.2f}-{(self.end_ns - origin) / 1e9:.2f} s'


def find_windows(reader: BagReader, spec: SplitSpec, profile: Profile | None) -> list[Window]:
    """The windows `spec` finds in the bag, in time order, numbered from 0."""
    if reader.start_ns is None or reader.end_ns is None:
        return []
    start, end = reader.start_ns, reader.end_ns + 1
    if spec.kind == 'every':
        step = int(spec.seconds * 1e9)
        if step <= 0:
            raise RobodataError(f'{spec.describe()}: the length must be greater than 0')
        spans = [(t, min(t + step, end)) for t in range(start, end, step)]
        return [Window(i, a, b) for i, (a, b) in enumerate(spans)]
    if spec.kind == 'ranges':
        assert spec.ranges is not None
        return read_ranges(spec.ranges, start)
    if spec.kind == 'topic':
        return _marker_windows(reader, spec.topic, end)
    if spec.kind == 'gap':
        return _activity_windows(reader, spec.seconds, profile, end)
    raise RobodataError(f'unknown split rule {spec.kind!r}')


# -- ranges ---------------------------------------------------------------------------------------------------


def read_ranges(path: Path, origin_ns: int) -> list[Window]:
    """Windows from a CSV file with rows `start, end[, task[, outcome]]` (a header row naming the columns
    is allowed); RobodataError naming the file and line for any bad row."""
    try:
        text = path.read_text(encoding='utf-8-sig')
    except (OSError, UnicodeDecodeError) as err:
        raise RobodataError(f'{path}: cannot read the ranges file: {getattr(err, "strerror", None) or err}') from None
    rows = [(n, row) for n, row in enumerate(csv.reader(text.splitlines()), 1)
            if row and any(c.strip() for c in row) and not row[0].lstrip().startswith('#')]
    if rows and rows[0][1][0].strip().lower() in ('start', 'start_s', 'begin', 'from'):
        rows = rows[1:]
    if not rows:
        raise RobodataError(f'{path}: no ranges in it (expected rows: start, end[, task[, outcome]])')
    windows: list[Window] = []
    for n, row in rows:
        where = f'{path}:{n}'
        if len(row) < 2 or len(row) > 4:
            raise RobodataError(f'{where}: expected start, end[, task[, outcome]]; got {len(row)} column(s)')
        start, end = parse_time(row[0], origin_ns, where), parse_time(row[1], origin_ns, where)
        if end <= start:
            raise RobodataError(f'{where}: the range ends ({row[1].strip()}) before it starts ({row[0].strip()})')
        task = row[2].strip() if len(row) > 2 else ''
        outcome = row[3].strip() if len(row) > 3 else ''
        if outcome and outcome not in OUTCOMES:
            raise RobodataError(f'{where}: outcome {outcome!r} is not one of {", ".join(OUTCOMES)}')
        windows.append(Window(len(windows), start, end, task=task, outcome=outcome))
    return windows


# -- markers ---------------------------------------------------------------------------------------------------


def _marker_windows(reader: BagReader, topic: str, end_ns: int) -> list[Window]:
    info = reader.topics.get(topic)
    if info is None:
        raise RobodataError(f'{reader.path}: no {topic} in this recording (it has: {", ".join(reader.topics)})')
    if info.msgtype not in MARKER_TYPES:
        raise RobodataError(f'{reader.path}: {topic} is {info.msgtype}; episodes are marked by '
                            f'{", ".join(MARKER_TYPES)}')
    spans: list[dict[str, Any]] = []
    open_span: dict[str, Any] | None = None

    def close(t_ns: int) -> None:
        nonlocal open_span
        if open_span is not None:
            open_span['end'] = t_ns
            spans.append(open_span)
            open_span = None

    for message, msg in reader.read([topic]):
        t = message.t_ns
        if info.msgtype == BOOL:
            if msg.data and open_span is None:
                open_span = {'start': t}
            elif not msg.data:
                close(t)
        elif info.msgtype == STRING:
            text = str(msg.data).strip()
            close(t)
            if text.lower() not in END_WORDS:
                open_span = {'start': t, 'note': f'marker: {text}'}
        else:  # our EpisodeEvent: START, STOP, OUTCOME, DISCARD
            if msg.event == msg.START:
                close(t)
                open_span = {'start': t, 'task': msg.task, 'operator': msg.operator_name, 'mode': msg.mode,
                             'note': f'recorded as episode {msg.episode_id}' if msg.episode_id else ''}
            elif msg.event == msg.STOP:
                close(t)
            elif msg.event == msg.OUTCOME:
                target = open_span or (spans[-1] if spans else None)
                if target is not None and msg.outcome in OUTCOMES:
                    target['outcome'] = msg.outcome
            elif msg.event == msg.DISCARD:
                if open_span is not None:
                    open_span = None
                elif spans:
                    spans.pop()
    close(end_ns)
    modes = {'teleop', 'kinesthetic', 'autonomous', 'human'}
    return [Window(i, s['start'], s['end'], task=s.get('task', ''), outcome=s.get('outcome', ''),
                   operator=s.get('operator', ''), mode=s.get('mode', '') if s.get('mode') in modes else '',
                   note=s.get('note', '')) for i, s in enumerate(x for x in spans if x['end'] > x['start'])]


# -- activity ---------------------------------------------------------------------------------------------------


def _activity_windows(reader: BagReader, gap_s: float, profile: Profile | None, end_ns: int) -> list[Window]:
    """Stretches where the arm moves, split wherever it stood still (or its joint states were silent) for
    `gap_s`, each with half a gap (at most 2 s) of the stillness around it so later steps see it at rest; a rig
    without joint states is split where the whole log fell silent for `gap_s`."""
    gap = int(gap_s * 1e9)
    if gap <= 0:
        raise RobodataError('--split-on-gap: the gap must be greater than 0')
    joint_topic = _joint_topic(reader, profile)
    arm = set(profile.robot.arm_joints) if profile is not None and profile.robot.arm_joints else None
    active: list[list[int]] = []  # [first, last] times with evidence of activity
    anchor: dict[str, float] = {}

    def activity(t: int) -> None:
        if active and t - active[-1][1] < gap:
            active[-1][1] = t
        else:
            active.append([t, t])

    for message in reader.messages([joint_topic] if joint_topic else None):
        if joint_topic is None:
            activity(message.t_ns)
            continue
        joints = read_joints(message.data, functools.partial(reader.decode, message))
        moved = False
        for name, value in zip(joints.names, joints.position, strict=False):
            if (arm is not None and name not in arm) or not math.isfinite(value):
                continue
            if name not in anchor:
                anchor[name] = value
            elif abs(value - anchor[name]) > STILL_BAND:
                anchor[name] = value
                moved = True
        if moved:
            activity(message.t_ns)
    if joint_topic is None:
        return [Window(i, a, min(b + 1, end_ns)) for i, (a, b) in enumerate(active)]
    margin = min(gap // 2, 2_000_000_000)
    start = reader.start_ns or 0
    return [Window(i, max(start, a - margin), min(end_ns, b + margin + 1)) for i, (a, b) in enumerate(active)]


def _joint_topic(reader: BagReader, profile: Profile | None) -> str | None:
    """The arm's joint states: the profile's topic, else the bag's only JointState topic."""
    if profile is not None and profile.topics.joint_states is not None:
        topic = profile.topics.joint_states.topic
        return topic if topic in reader.topics else None
    joints = [n for n, i in reader.topics.items() if i.msgtype == 'sensor_msgs/msg/JointState']
    return joints[0] if len(joints) == 1 else None


# -- writing -----------------------------------------------------------------------------------------------------


@dataclass
class WindowStats:
    """What one window's bag holds, per topic, as the recorder counts it."""

    topics: dict[str, TopicStats] = field(default_factory=dict)
    first_ns: int | None = None
    last_ns: int | None = None


def write_windows(reader: BagReader, windows: list[Window], bags: list[Path], expected_rates: dict[str, float | None],
                  *, storage: str = 'mcap', compression: str = 'zstd') -> list[WindowStats | None]:
    """Stream the bag once, writing every message into each window that holds it (windows may overlap); a
    window without a message gets no bag (None)."""
    store = reader.typestore
    topics = reader.topics
    if undefined := sorted(n for n, i in topics.items() if i.msgtype not in store.fielddefs):
        raise RobodataError(f'{reader.path}: cannot split: no definition of the type of {", ".join(undefined)} '
                            '(not in the bag, not a ROS 2 Jazzy type); import the bag whole instead')
    stamped = {n: starts_with_header(i.msgtype, store) for n, i in topics.items()}
    order = sorted(range(len(windows)), key=lambda k: windows[k].start_ns)
    from ros_robodata.bag.writer import BagWriter, qos_profile  # start-up time: rosbags' writer, when splitting

    writers: dict[int, BagWriter] = {}
    stats: dict[int, WindowStats] = {}
    latched: dict[str, list[tuple[int, bytes]]] = {}
    pending = 0  # next window (in start order) not yet opened

    def open_window(k: int, t_ns: int) -> None:
        window = windows[k]
        writer = BagWriter(bags[k], storage=storage, compression=compression).open()
        for name, info in topics.items():
            qos = info.qos[0] if info.qos else qos_profile(latched=info.latched)
            writer.add_topic(name, info.msgtype, qos=qos, store=store)
        writers[k] = writer
        stats[k] = WindowStats({n: TopicStats(n, i.msgtype, expected_rates.get(n), stamped[n], i.latched)
                                for n, i in topics.items()})
        for name, kept in latched.items():
            for _, data in kept:
                write(k, name, window.start_ns, data)

    def write(k: int, topic: str, t_ns: int, data: bytes | memoryview) -> None:
        writers[k].write(topic, t_ns, data)
        s = stats[k]
        s.topics[topic].update(t_ns, data)
        s.first_ns = t_ns if s.first_ns is None else min(s.first_ns, t_ns)
        s.last_ns = t_ns if s.last_ns is None else max(s.last_ns, t_ns)

    try:
        for message in reader.messages():
            t = message.t_ns
            while pending < len(order) and windows[order[pending]].start_ns <= t:
                k = order[pending]
                pending += 1
                if t < windows[k].end_ns:
                    open_window(k, t)
            for k in [k for k in writers if windows[k].end_ns <= t]:
                writers.pop(k).close()
            for k in writers:
                write(k, message.topic, t, message.data)
            if topics[message.topic].latched:
                kept = latched.setdefault(message.topic, [])
                data = bytes(message.data)
                if all(d != data for _, d in kept):
                    kept.append((t, data))
                    del kept[:-_LATCHED_KEEP]
        for writer in writers.values():
            writer.close()
    except BaseException:
        for writer in writers.values():
            writer.abort()
        raise
    return [stats.get(k) for k in range(len(windows))]
