"""Bags as other tools and other rigs leave them, for the import tests.

`write_shift_log` is what an always-on logger at a rig records over a shift: joint states the whole time, the
arm standing still between demonstrations, a stretch where logging paused, markers of three kinds, a latched
URDF. `write_mcap_ros2` writes with the independent mcap_ros2 writer (not rosbags), and `write_sqlite3_by_hand`
builds a rosbag2 sqlite3 file with plain SQL, as an old or foreign tool might.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ros_robodata.bag.types import typestore
from ros_robodata.bag.writer import BagWriter, qos_profile

T0_NS = 1_750_000_000_000_000_000
JOINTS = ['shoulder', 'elbow', 'wrist']
LOG_TOPICS = {
    '/joint_states': 'sensor_msgs/msg/JointState',
    '/status': 'std_msgs/msg/String',
    '/robot_description': 'std_msgs/msg/String',
    '/robodata/episode_events': 'ros_robodata/msg/EpisodeEvent',
    '/demo_active': 'std_msgs/msg/Bool',
    '/operator_note': 'std_msgs/msg/String',
}


def stamp(ns: int) -> Any:
    return typestore().types['builtin_interfaces/msg/Time'](sec=ns // 10**9, nanosec=ns % 10**9)


def header(ns: int, frame: str = 'base_link') -> Any:
    return typestore().types['std_msgs/msg/Header'](stamp=stamp(ns), frame_id=frame)


def joint_state(ns: int, position: list[float]) -> Any:
    return typestore().types['sensor_msgs/msg/JointState'](
        header=header(ns), name=list(JOINTS), position=np.array(position, dtype=np.float64),
        velocity=np.array([], dtype=np.float64), effort=np.array([], dtype=np.float64))


@dataclass
class Demo:
    """One demonstration inside a log: the arm moves from start_s to end_s (seconds from the log's start)."""

    start_s: float
    end_s: float
    task: str = 'pick_cube'
    outcome: str = 'success'
    discarded: bool = False


@dataclass
class ShiftLog:
    path: Path
    demos: list[Demo]
    paused: tuple[float, float]  # seconds in which nothing at all was logged
    counts: dict[str, int] = field(default_factory=dict)
    times: dict[str, list[int]] = field(default_factory=dict)  # receive times per topic

    def within(self, topic: str, start_ns: int, end_ns: int) -> int:
        return sum(1 for t in self.times[topic] if start_ns <= t < end_ns)


DEMOS = [Demo(12, 40), Demo(55, 95, outcome='failure'), Demo(110, 150), Demo(170, 200, task='stack'),
         Demo(230, 270, discarded=True), Demo(340, 380), Demo(400, 460, outcome='recovery'), Demo(500, 560)]


def write_shift_log(path: Path, *, duration_s: float = 600.0, rate_hz: float = 50.0, demos: list[Demo] | None = None,
                    paused: tuple[float, float] = (300.0, 330.0), seed: int = 0) -> ShiftLog:
    """A 10-minute log: /joint_states at 50 Hz (encoder noise of 2e-5 rad at rest; a reach of up to 0.6 rad
    during each demonstration), /status at 1 Hz, a latched /robot_description, and three kinds of markers around each
    demonstration (our EpisodeEvent START/STOP/OUTCOME/DISCARD 1 s either side, a Bool, and a String note)."""
    demos = list(DEMOS if demos is None else demos)
    rng = np.random.default_rng(seed)
    types = typestore().types
    log = ShiftLog(path, demos, paused)
    messages: list[tuple[int, str, Any]] = []
    rest = [0.1, -0.8, 1.2]
    period_ns = int(1e9 / rate_hz)
    for i in range(int(duration_s * rate_hz)):
        t = T0_NS + i * period_ns
        s = (t - T0_NS) / 1e9
        if paused[0] <= s < paused[1]:
            continue
        position = [v + rng.normal(0, 2e-5) for v in rest]
        for demo in demos:
            if demo.start_s <= s < demo.end_s:
                phase = (s - demo.start_s) / (demo.end_s - demo.start_s)
                # reach out and back on the shoulder while the elbow folds and unfolds twice: some joint is always
                # moving, as in a real reach (a pause of the whole arm would be a gap of its own)
                position = [rest[0] + 0.6 * math.sin(math.pi * phase), rest[1] + 0.4 * math.sin(2 * math.pi * phase),
                            rest[2] - 0.2 * math.sin(3 * math.pi * phase)]
        messages.append((t, '/joint_states', joint_state(t, position)))
    for k in range(int(duration_s)):
        t = T0_NS + k * 1_000_000_000 + 500_000
        if not paused[0] <= k < paused[1]:
            messages.append((t, '/status', types['std_msgs/msg/String'](data=f'ok {k}')))
    messages.append((T0_NS - 1_000_000, '/robot_description', types['std_msgs/msg/String'](data='<robot name="arm"/>')))
    event = types['ros_robodata/msg/EpisodeEvent']
    for n, demo in enumerate(demos):
        start = T0_NS + int((demo.start_s - 1) * 1e9) + 300_000
        stop = T0_NS + int((demo.end_s + 1) * 1e9) + 300_000

        def marker(t: int, kind: int, status: str = '', n: int = n, demo: Demo = demo, start: int = start) -> Any:
            return event(header=header(t), event=kind, episode_id=f'rec-{n}', task=demo.task, operator_name='ana',
                         mode='teleop', outcome=demo.outcome if kind == event.OUTCOME else 'unknown', status=status,
                         data_start=header(start).stamp)

        messages.append((start, '/robodata/episode_events', marker(start, event.START, 'recording')))
        messages.append((stop, '/robodata/episode_events', marker(stop, event.STOP, 'complete')))
        messages.append((stop + 2_000_000, '/robodata/episode_events', marker(stop + 2_000_000, event.OUTCOME)))
        if demo.discarded:
            messages.append((stop + 3_000_000, '/robodata/episode_events', marker(stop + 3_000_000, event.DISCARD)))
        messages.append((start, '/demo_active', types['std_msgs/msg/Bool'](data=True)))
        messages.append((stop, '/demo_active', types['std_msgs/msg/Bool'](data=False)))
        messages.append((start, '/operator_note', types['std_msgs/msg/String'](data=demo.task)))
        messages.append((stop, '/operator_note', types['std_msgs/msg/String'](data='done')))
    messages.sort(key=lambda m: m[0])
    with BagWriter(path) as writer:
        for topic, msgtype in LOG_TOPICS.items():
            latched = topic in ('/robot_description', '/robodata/episode_events')
            writer.add_topic(topic, msgtype, qos=qos_profile(latched=latched))
        for t, topic, msg in messages:
            writer.write_message(topic, t, msg)
            log.times.setdefault(topic, []).append(t)
        log.counts = writer.counts
    return log


def write_mcap_ros2(path: Path, messages: int = 200, *, custom: bool = True) -> dict[str, int]:
    """A bare .mcap written by mcap_ros2's writer (the Foxglove stack, not rosbags): JointState at 100 Hz and,
    with `custom`, a type no ROS distribution has, defined only by the schema in the file."""
    from mcap_ros2.writer import Writer

    joint_def, _ = typestore().generate_msgdef('sensor_msgs/msg/JointState', ros_version=2)
    counts = {'/arm/joint_states': 0, '/acme/widget': 0}
    with path.open('wb') as f:
        writer = Writer(f)
        joint_schema = writer.register_msgdef('sensor_msgs/msg/JointState', joint_def)
        widget_schema = writer.register_msgdef('acme_msgs/msg/Widget', 'int32 id\nstring label\nfloat64[] readings\n')
        for i in range(messages):
            t = T0_NS + i * 10_000_000
            writer.write_message('/arm/joint_states', joint_schema, {
                'header': {'stamp': {'sec': t // 10**9, 'nanosec': t % 10**9}, 'frame_id': 'base'},
                'name': list(JOINTS), 'position': [0.01 * i, 0.0, 1.0], 'velocity': [], 'effort': []},
                log_time=t + 1_000_000, publish_time=t)
            counts['/arm/joint_states'] += 1
            if custom and i % 10 == 0:
                writer.write_message('/acme/widget', widget_schema, {'id': i, 'label': f'w{i}', 'readings': [i, 2.0]},
                                     log_time=t + 2_000_000, publish_time=t)
                counts['/acme/widget'] += 1
        writer.finish()
    return {k: v for k, v in counts.items() if v}


def write_sqlite3_by_hand(path: Path, messages: int = 300) -> dict[str, int]:
    """A rosbag2 sqlite3 file made with plain SQL and rosbags' CDR serializer (no metadata.yaml, no definitions
    stored: the tables of a 2020 `ros2 bag record`): JointState at 100 Hz and a String at 1 Hz."""
    store = typestore()
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE topics(id INTEGER PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL,
                            serialization_format TEXT NOT NULL, offered_qos_profiles TEXT NOT NULL);
        CREATE TABLE messages(id INTEGER PRIMARY KEY, topic_id INTEGER NOT NULL, timestamp INTEGER NOT NULL,
                              data BLOB NOT NULL);
        CREATE INDEX timestamp_idx ON messages (timestamp ASC);""")
    conn.execute("INSERT INTO topics VALUES (1, '/joint_states', 'sensor_msgs/msg/JointState', 'cdr', '')")
    conn.execute("INSERT INTO topics VALUES (2, '/chatter', 'std_msgs/msg/String', 'cdr', '')")
    counts = {'/joint_states': 0, '/chatter': 0}
    for i in range(messages):
        t = T0_NS + i * 10_000_000
        data = store.serialize_cdr(joint_state(t, [0.001 * i, 0.2, 0.3]), 'sensor_msgs/msg/JointState')
        conn.execute('INSERT INTO messages (topic_id, timestamp, data) VALUES (1, ?, ?)', (t, bytes(data)))
        counts['/joint_states'] += 1
        if i % 100 == 0:
            text = store.serialize_cdr(store.types['std_msgs/msg/String'](data=f'tick {i}'), 'std_msgs/msg/String')
            conn.execute('INSERT INTO messages (topic_id, timestamp, data) VALUES (2, ?, ?)', (t + 1, bytes(text)))
            counts['/chatter'] += 1
    conn.commit()
    conn.close()
    return counts


def bag_counts(path: Path) -> dict[str, int]:
    """Messages per topic by an independent reader: mcap's for MCAP files, SQL for sqlite3 files."""
    counts: dict[str, int] = {}
    for file in sorted(path.glob('*.mcap')) if path.is_dir() else [path]:
        if file.suffix != '.mcap':
            continue
        from mcap.reader import make_reader

        with file.open('rb') as f:
            for _, channel, _ in make_reader(f).iter_messages():
                counts[channel.topic] = counts.get(channel.topic, 0) + 1
    for file in sorted(path.glob('*.db3')) if path.is_dir() else [path]:
        if file.suffix != '.db3':
            continue
        conn = sqlite3.connect(f'file:{file}?immutable=1', uri=True)
        for name, count in conn.execute('SELECT t.name, COUNT(*) FROM messages m JOIN topics t ON t.id = m.topic_id '
                                        'GROUP BY t.name'):
            counts[name] = counts.get(name, 0) + count
        conn.close()
    return counts


def iter_times(path: Path, topic: str) -> Iterator[int]:
    from mcap.reader import make_reader

    for file in sorted(path.glob('*.mcap')):
        with file.open('rb') as f:
            for _, _channel, message in make_reader(f).iter_messages(topics=[topic]):
                yield message.log_time
