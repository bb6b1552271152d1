"""The offline checks on arrays (score_bag's batch path) find what the streaming checks find, one message at a
time, on the same bags: simulated episodes with faults injected, and a leader arm's bag with a stuck joint."""

from __future__ import annotations

import json
import math
from itertools import groupby, pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ros_robodata.bag.types import typestore
from ros_robodata.bag.writer import BagWriter
from ros_robodata.profile import load_profile
from ros_robodata.quality.batch_motion import MotionRun, feed_motion
from ros_robodata.quality.episode_checks import EpisodeReport
from ros_robodata.quality.findings import Finding
from ros_robodata.quality.image_cdr import gray_from_image_cdr
from ros_robodata.quality.images import full_gray
from ros_robodata.quality.motion import JointMotion
from ros_robodata.quality.scoring import score_bag
from ros_robodata.sim.faults import Fault
from ros_robodata.sim.to_bag import write_sim_episode
from test.profiles import PROFILE

START = 1_700_000_000_000_000_000
SAMPLE_NS = 2_000_000  # one joint-state period of the sim cell (500 Hz): "the same time, within a sample"

# Each episode carries several faults at once, so one bag exercises the paths where the array checks hand a
# sample back to the streaming check (a clock jump, a spike, NaN) next to the plain ones.
EPISODES = {
    'clock_spike_nan_silent_drop': (0, [Fault('joint_states', 'clock_jump', 3.0, 3.5),
                                        Fault('wrench', 'spike', 4.6, 4.62), Fault('joint_states', 'nan', 5.0, 5.1),
                                        Fault('wrench', 'silent', 6.0, 7.5),
                                        Fault('gripper', 'drop', 1.5, 2.5, fraction=0.5)]),
    'frozen_dark_repeat': (3, [Fault('camera/scene', 'freeze', 2.0, 2.0 + 5.5 / 30),
                               Fault('camera/wrist', 'dark', 2.0, 2.5),
                               Fault('joint_states', 'repeat', 2.0, 3.0, fraction=0.3)]),
    'blur_drop_joints_silent_gripper': (2, [Fault('camera/wrist', 'blur', 1.0, 2.0),
                                            Fault('joint_states', 'drop', 2.5, 3.0, fraction=0.3),
                                            Fault('gripper', 'silent', 3.5, 5.0)]),
    'clean': (1, []),
}


def _key(finding: Finding) -> tuple[str, str, str, int, int]:
    return finding.check, finding.topic, finding.severity, finding.count, len(finding.ranges)


def _assert_same(streamed: EpisodeReport, batched: EpisodeReport) -> None:
    assert sorted(map(_key, streamed.findings)) == sorted(map(_key, batched.findings))
    for a, b in zip(sorted(streamed.findings, key=_key), sorted(batched.findings, key=_key), strict=True):
        for (a0, a1), (b0, b1) in zip(a.ranges, b.ranges, strict=True):
            assert abs(a0 - b0) <= SAMPLE_NS and abs(a1 - b1) <= SAMPLE_NS, (a.check, a.ranges, b.ranges)
        assert a.message == b.message
        assert a.value == pytest.approx(b.value, nan_ok=True) and a.threshold == pytest.approx(b.threshold,
                                                                                               nan_ok=True)
    assert _plain(streamed.metrics) == pytest.approx(_plain(batched.metrics), nan_ok=True)
    assert (streamed.start_ns, streamed.end_ns) == (batched.start_ns, batched.end_ns)
    assert streamed.motion_detail == batched.motion_detail
    assert streamed.joint_names == batched.joint_names
    if streamed.trajectory is None:
        assert batched.trajectory is None
    else:
        assert batched.trajectory is not None
        assert np.array_equal(streamed.trajectory[0], batched.trajectory[0])
        assert np.array_equal(streamed.trajectory[1], batched.trajectory[1], equal_nan=True)


def _plain(value: Any) -> Any:
    """Metrics as flat (key path -> number or text) for an approximate comparison."""
    out: dict[str, Any] = {}

    def walk(prefix: str, item: Any) -> None:
        if isinstance(item, dict):
            for key, sub in item.items():
                walk(f'{prefix}/{key}', sub)
        else:
            out[prefix] = float('nan') if item is None else item

    walk('', value)
    return out


@pytest.fixture(scope='module')
def sim_bags(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp('vectorized')
    profile = load_profile(PROFILE)
    bags = {}
    for name, (seed, faults) in EPISODES.items():
        bags[name] = root / name
        write_sim_episode(bags[name], profile, seed=seed, max_duration_s=8.0, cameras=True, lidar=True,
                          image_size=(64, 48), faults=faults, start_ns=START)
    return bags


@pytest.mark.parametrize('name', list(EPISODES))
def test_the_batch_path_finds_what_the_streaming_checks_find(sim_bags: dict[str, Path], name: str) -> None:
    profile = load_profile(PROFILE)
    streamed = score_bag(sim_bags[name], profile, batch=False).report
    batched = score_bag(sim_bags[name], profile).report
    _assert_same(streamed, batched)
    if name != 'clean':  # the faults are there to be found, on both paths
        assert streamed.findings


def test_every_sim_fault_is_found_by_the_batch_path(sim_bags: dict[str, Path]) -> None:
    found = {f.check for f in score_bag(sim_bags['clock_spike_nan_silent_drop'], load_profile(PROFILE)).report.findings}
    assert {'timing.clock_jump', 'contact.force_spike', 'motion.nan', 'timing.silent', 'timing.gap'} <= found
    found = {f.check for f in score_bag(sim_bags['frozen_dark_repeat'], load_profile(PROFILE)).report.findings}
    assert {'image.frozen', 'image.dark', 'timing.repeated_sample'} <= found


def test_without_the_camera_checks_too(sim_bags: dict[str, Path]) -> None:
    profile = load_profile(PROFILE)
    bag = sim_bags['clock_spike_nan_silent_drop']
    _assert_same(score_bag(bag, profile, images=False, batch=False).report,
                 score_bag(bag, profile, images=False).report)


@pytest.mark.parametrize('encoding', ['rgb8', 'bgr8', 'rgba8', 'bgra8'])
def test_a_colour_frame_read_from_its_bytes_is_the_gray_the_checks_make(encoding: str) -> None:
    from ros_robodata.bag.image import decode_image

    store = typestore()
    rng = np.random.default_rng(1)
    channels = 4 if 'a' in encoding[3:] else 3
    pixels = rng.integers(0, 256, (6, 5, channels), dtype=np.uint8)
    padded = np.zeros((6, 5 * channels + 3), dtype=np.uint8)  # row padding: step > width * channels
    padded[:, :5 * channels] = pixels.reshape(6, -1)
    Image = store.types['sensor_msgs/msg/Image']
    Header, Time = store.types['std_msgs/msg/Header'], store.types['builtin_interfaces/msg/Time']
    msg = Image(Header(Time(1, 2), 'cam'), 6, 5, encoding, 0, 5 * channels + 3, padded.ravel())
    data = store.serialize_cdr(msg, 'sensor_msgs/msg/Image')
    assert np.array_equal(gray_from_image_cdr(data), full_gray(decode_image(msg)))
    mono = Image(Header(Time(1, 2), 'cam'), 6, 5, 'mono8', 0, 5, pixels[:, :, 0].ravel())
    assert gray_from_image_cdr(store.serialize_cdr(mono, 'sensor_msgs/msg/Image')) is None  # stretched: generic


LEADER_PROFILE = """
robot: {name: leader_arm, arm_joints: [a, b, c]}
topics:
  joint_states: {topic: /joint_states, type: sensor_msgs/msg/JointState, rate_hz: 200}
  actions: {topic: /leader/joint_states, type: sensor_msgs/msg/JointState, rate_hz: 100}
  wrench: {topic: /wrist/wrench, type: geometry_msgs/msg/WrenchStamped, rate_hz: 200}
  extra:
    - {topic: /robot_description, type: std_msgs/msg/String, latched: true}
"""
URDF = ('<robot name="r"><joint name="a" type="revolute"><limit lower="-1" upper="1"/></joint>'
        '<joint name="b" type="revolute"><limit lower="-2" upper="2"/></joint></robot>')


def _leader_bag(path: Path, still: tuple[float, float] | None = None) -> None:
    """12 s of a 3-joint arm following its leader: joint c's encoder dies from 4 to 8 s while its command moves,
    joint a passes its URDF limit at 9 s, a NaN sample at 10 s, a wrench that spikes; names change order once.
    `still`: instead, the whole arm (and its leader) stands still over that span (s), longer than a chunk."""
    store = typestore()
    types = store.types
    Header, Time = types['std_msgs/msg/Header'], types['builtin_interfaces/msg/Time']
    JointState, String = types['sensor_msgs/msg/JointState'], types['std_msgs/msg/String']
    Wrench, WrenchStamped = types['geometry_msgs/msg/Wrench'], types['geometry_msgs/msg/WrenchStamped']
    Vector3 = types['geometry_msgs/msg/Vector3']
    rng = np.random.default_rng(7)

    def header(t_ns: int) -> Any:
        return Header(Time(t_ns // 1_000_000_000, t_ns % 1_000_000_000), 'base')

    def pose(t: float) -> list[float]:
        return [0.8 * math.sin(t / 1.5), 0.5 * math.sin(t / 2.0 + 1), 0.3 * math.sin(t / 1.2)]

    messages: list[tuple[int, str, str, Any]] = [(START, '/robot_description', 'std_msgs/msg/String', String(URDF))]
    for k in range(2400):  # 200 Hz
        t = k / 200
        stamp = START + k * 5_000_000
        if still is not None:
            t = min(max(t, still[0]), t - (still[1] - still[0])) if t >= still[1] else min(t, still[0])
        q = pose(t)
        if still is None and 4.0 <= t < 8.0:
            q[2] = pose(4.0)[2]  # dead encoder: the same value while the leader moves it
        if still is None and 9.0 <= t < 9.2:
            q[0] = 1.3
        if still is None and k == 2000:
            q[1] = float('nan')
        names = ['a', 'b', 'c']
        if still is None and t >= 11.0:  # the driver changed its order
            names, q = ['c', 'a', 'b'], [q[2], q[0], q[1]]
        messages.append((stamp + 1_000_000, '/joint_states', 'sensor_msgs/msg/JointState',
                         JointState(header(stamp), names, np.array(q), np.zeros(0), np.zeros(0))))
        force = [5 + rng.normal(0, 0.2), rng.normal(0, 0.2), 10 + rng.normal(0, 0.2)]
        if k in (700, 1500):
            force[0] += 60
        messages.append((stamp + 1_500_000, '/wrist/wrench', 'geometry_msgs/msg/WrenchStamped',
                         WrenchStamped(header(stamp), Wrench(Vector3(*force), Vector3(0.0, 0.0, 0.0)))))
        if k % 2 == 0:
            messages.append((stamp + 1_200_000, '/leader/joint_states', 'sensor_msgs/msg/JointState',
                             JointState(header(stamp), ['a', 'b', 'c'], np.array(pose(t + 0.01)), np.zeros(0),
                                        np.zeros(0))))
    messages.sort(key=lambda m: m[0])
    with BagWriter(path) as writer:
        for topic, msgtype in {(m[1], m[2]) for m in messages}:
            writer.add_topic(topic, msgtype)
        for t_ns, topic, msgtype, msg in messages:
            writer.write(topic, t_ns, store.serialize_cdr(msg, msgtype))


def test_a_leader_arm_bag_with_a_dead_encoder_limits_and_a_new_joint_order(tmp_path: Path) -> None:
    (tmp_path / 'leader.yaml').write_text(LEADER_PROFILE)
    profile = load_profile(tmp_path / 'leader.yaml')
    bag = tmp_path / 'leader'
    _leader_bag(bag)
    streamed = score_bag(bag, profile, batch=False).report
    batched = score_bag(bag, profile).report
    _assert_same(streamed, batched)
    found = {f.check for f in streamed.findings}
    assert {'motion.stuck_joint', 'motion.joint_limit', 'motion.nan', 'contact.force_spike'} <= found


def test_an_arm_standing_still_for_longer_than_a_chunk(tmp_path: Path) -> None:
    (tmp_path / 'leader.yaml').write_text(LEADER_PROFILE)
    profile = load_profile(tmp_path / 'leader.yaml')
    bag = tmp_path / 'still'
    _leader_bag(bag, still=(1.5, 11.0))
    streamed = score_bag(bag, profile, batch=False).report
    _assert_same(streamed, score_bag(bag, profile).report)
    assert 'motion.idle' in {f.check for f in streamed.findings}


def _hand_and_leader(seed: int) -> tuple[list[Any], list[Any]]:
    """20 s of a 5-joint hand at 100 Hz whose joints mostly hold their speed exactly (dyadic steps on exact 10 ms
    stamps, so the typical speed change stays 0 for a long while, as on a real humanoid's hand), with a spike in
    that stretch, then noisy motion (the typical change known), then exact steps again; joint f3 held still from 6
    to 10 s while its leader moves. The leader: two layouts (its own order, and a second device naming two joints),
    a NaN now and then, a repeated name once. Each as (seq, names, stamps, positions) rows in sequence order."""
    rng = np.random.default_rng(seed)
    names = ('f0', 'f1', 'f2', 'f3', 'f4')
    joints, leader = [], []
    q = np.zeros(5)
    seq = 0
    for k in range(2000):
        stamp = START + k * 10_000_000
        t = k / 100
        if 8.0 <= t < 12.0:
            q = q + rng.normal(0, 1e-3, 5)
        else:
            q = q + np.array([2.0 ** -10, -(2.0 ** -11), 0.0, 2.0 ** -9, 2.0 ** -12]) * (1 if (k // 150) % 2 else -1)
        if k in (20, 300):
            q[k // 150] += 0.2  # spikes while the typical change is unknown (the first in the stream's settling)
        row = q.copy()
        if 6.0 <= t < 10.0:
            row[3] = 0.25
        joints.append((seq, names, stamp, row))
        seq += 1
        if k % 2 == 0:
            command = [float(v) + 0.01 * math.sin(t) for v in row]
            command[3] = 0.25 + 0.3 * math.sin(t)
            if k % 97 == 0:
                command[2] = math.nan
            leader.append((seq, ('f3', 'f0', 'f1', 'f2', 'f4'), stamp + 1, [command[3], *command[:3], command[4]]))
            seq += 1
        if k % 5 == 0:
            layout = ('f1', 'f4', 'f1') if k == 500 else ('f1', 'f4')
            leader.append((seq, layout, stamp + 2, [0.1 * t, -0.1 * t, 0.3][:len(layout)]))
            seq += 1
    return joints, leader


def _runs(rows: list[Any]) -> list[MotionRun]:
    """Rows as runs of one layout each, in order."""
    out: list[MotionRun] = []
    for names, group in groupby(rows, key=lambda row: row[1]):
        part = list(group)
        out.append(MotionRun(np.array([r[0] for r in part], dtype=np.int64), names,
                             np.array([r[2] for r in part], dtype=np.int64),
                             np.array([r[3] for r in part], dtype=float)))
    return out


@pytest.mark.parametrize('flushes', [1, 3])
def test_held_speeds_and_a_leader_of_two_layouts_give_the_streaming_findings(flushes: int) -> None:
    joints, leader = _hand_and_leader(3)
    streamed, batched = JointMotion('/hand', None), JointMotion('/hand', None)
    commanded = {row[0] for row in leader}
    for row in sorted(joints + leader, key=lambda row: row[0]):
        if row[0] in commanded:
            streamed.command(row[2], row[1], row[3])
        else:
            streamed.add(row[2], row[1], row[3])
    last = max(row[0] for row in joints + leader) + 1
    cuts = [last * i // flushes for i in range(flushes + 1)]
    for lo, hi in pairwise(cuts):
        feed_motion(batched, _runs([r for r in joints if lo <= r[0] < hi]),
                    _runs([r for r in leader if lo <= r[0] < hi]))
    found = [(f.check, f.severity, f.message, f.ranges) for f in streamed.findings()]
    assert found == [(f.check, f.severity, f.message, f.ranges) for f in batched.findings()]
    assert {'motion.velocity_jump', 'motion.stuck_joint'} <= {check for check, *_ in found}
    assert json.dumps(streamed.stuck_detail()) == json.dumps(batched.stuck_detail())  # the order of keys too
    assert streamed._commands == batched._commands
    assert list(streamed._command_layouts) == list(batched._command_layouts)
    assert streamed.trajectory.times == batched.trajectory.times
