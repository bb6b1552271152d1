"""The live segmenter node on real DDS gives exactly the events the offline command finds in the same bag."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from ros_robodata.bag.reader import BagReader
from ros_robodata.events.offline import segment_bag
from ros_robodata.profile import load_profile
from ros_robodata.sim.to_bag import write_sim_episode
from test.ros_rig import PROFILE, ROOT, client, new_domain, ros_env, stop_process


def _start_segmenter(domain: int, log: Path) -> subprocess.Popen:
    args = [sys.executable, '-m', 'ros_robodata.nodes.segmenter_node', '--ros-args', '-p', f'profile:={PROFILE}']
    return subprocess.Popen(args, env=ros_env(domain), stdout=log.open('w'), stderr=subprocess.STDOUT)


def test_live_segmenter_matches_offline_on_the_same_bag(tmp_path: Path) -> None:
    from geometry_msgs.msg import WrenchStamped
    from sensor_msgs.msg import JointState
    from visualization_msgs.msg import MarkerArray

    from ros_robodata.msg import EpisodeEvent, SegmentEvent

    profile = load_profile(PROFILE)
    bag = tmp_path / 'episode'
    # Seed 4 is a recovery: a slip, then a second grasp. Every kind of event happens.
    write_sim_episode(bag, profile, seed=4)
    offline = segment_bag(bag, profile)
    assert {e.kind for e in offline.events} >= {'grasp_start', 'contact', 'grasp', 'lift', 'release',
                                                'contact_lost', 'grasp_failed'}

    domain = new_domain()
    log = tmp_path / 'segmenter.log'
    node = _start_segmenter(domain, log)
    try:
        with client(domain) as c:
            received: list = []
            labels: list = []
            c.node.create_subscription(SegmentEvent, '/robodata/events', received.append, 100)
            c.node.create_subscription(MarkerArray, '/robodata/event_markers', labels.append, 100)
            qos = QoSProfile(depth=5000, reliability=ReliabilityPolicy.RELIABLE)
            publishers = {profile.topics.gripper.topic: c.node.create_publisher(JointState,
                                                                                profile.topics.gripper.topic, qos),
                          profile.topics.wrench.topic: c.node.create_publisher(WrenchStamped,
                                                                               profile.topics.wrench.topic, qos)}
            latched = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                                 durability=DurabilityPolicy.TRANSIENT_LOCAL)
            episodes = c.node.create_publisher(EpisodeEvent, '/robodata/episode_events', latched)
            c.wait_subscribed([*publishers.values(), episodes], node, log, 'the segmenter')
            start = EpisodeEvent(event=EpisodeEvent.START, episode_id='ep1', status='recording')
            episodes.publish(start)
            c.spin_for(0.3)
            # Replay the bag's bytes in its order, several times faster than real time.
            c.replay(bag, publishers)
            deadline = time.monotonic() + 20
            while len(received) < len(offline.events) and time.monotonic() < deadline:
                c.spin_for(0.1)
            # The same start heard again (a latched topic matched anew on a busy computer): not a second episode.
            episodes.publish(start)
            c.spin_for(0.5)
            episodes.publish(EpisodeEvent(event=EpisodeEvent.STOP, episode_id='ep1', status='complete'))
            c.spin_for(0.5)
    finally:
        assert stop_process(node) == 0, log.read_text()

    live = [(m.kind, m.header.stamp.sec * 10**9 + m.header.stamp.nanosec, round(m.confidence, 3),
             list(m.evidence_signals)) for m in received]
    expected = [(e.kind, e.stamp_ns, e.confidence, [ev.signal for ev in e.evidence]) for e in offline.events]
    assert live == expected
    assert {m.episode_id for m in received} == {'ep1'}
    # Wrench-based events name the sensor frame; every event got an RViz label saying what it is.
    assert all(m.header.frame_id == 'ft_sensor' for m in received if m.kind == 'lift')
    assert [a.markers[0].text.split()[0] for a in labels] == [m.kind for m in received]
    # The labels are drawn in the rig's fixed frame (RViz's Fixed Frame), which needs no TF to resolve, and fade.
    assert {a.markers[0].header.frame_id for a in labels} == {profile.robot.base_frame} == {'world'}
    assert all(a.markers[0].lifetime.sec + a.markers[0].lifetime.nanosec > 0 for a in labels)


def test_a_rig_without_a_gripper_gets_a_segmenter_that_says_so_and_keeps_running(tmp_path: Path) -> None:
    """A capture studio's session starts the segmenter too (launch files start it for every rig): it warns once
    that there is nothing to segment from and stays up, rather than bringing the session down."""
    domain = new_domain()
    log = tmp_path / 'segmenter.log'
    args = [sys.executable, '-m', 'ros_robodata.nodes.segmenter_node', '--ros-args', '-p',
            f'profile:={ROOT / "config" / "capture_studio.yaml"}']
    node = subprocess.Popen(args, env=ros_env(domain), stdout=log.open('w'), stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while 'names no gripper or wrench topic' not in log.read_text():
            assert node.poll() is None, log.read_text()
            assert time.monotonic() < deadline, 'no warning from the segmenter: ' + log.read_text()
            time.sleep(0.1)
        time.sleep(1.0)
        assert node.poll() is None, log.read_text()
    finally:
        stop_process(node)
    assert log.read_text().count('names no gripper or wrench topic') == 1


def test_a_live_segmenter_reads_a_float64_trigger_as_the_gripper_command(tmp_path: Path) -> None:
    """The command channel live (issue 13): a compliant gripper with a std_msgs/Float64 trigger and a wrist F/T,
    replayed over DDS, gives the events the offline pass finds (the trigger has no header: it is stamped when
    received, so only the kinds are compared), the collision among them."""
    import yaml
    from geometry_msgs.msg import WrenchStamped
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64

    from ros_robodata.msg import SegmentEvent
    from test.test_segment_rigs import _write_bag, rigs

    profile_path = tmp_path / 'compliant.yaml'
    profile_path.write_text(yaml.safe_dump(rigs.profile('compliant').to_dict()))
    profile = load_profile(profile_path)
    bag = tmp_path / 'episode'
    _write_bag(rigs.compliant(1, 'bump'), bag)
    offline = [e.kind for e in segment_bag(bag, profile).events]
    assert 'collision' in offline and 'release' in offline

    domain = new_domain()
    log = tmp_path / 'segmenter.log'
    args = [sys.executable, '-m', 'ros_robodata.nodes.segmenter_node', '--ros-args', '-p', f'profile:={profile_path}']
    node = subprocess.Popen(args, env=ros_env(domain), stdout=log.open('w'), stderr=subprocess.STDOUT)
    try:
        with client(domain) as c:
            received: list = []
            c.node.create_subscription(SegmentEvent, '/robodata/events', received.append, 100)
            qos = QoSProfile(depth=5000, reliability=ReliabilityPolicy.RELIABLE)
            classes = {'/gripper/joint_states': JointState, '/ft/wrench': WrenchStamped, '/gripper/trigger': Float64}
            publishers = {topic: c.node.create_publisher(cls, topic, qos) for topic, cls in classes.items()}
            c.wait_subscribed(publishers.values(), node, log, 'the segmenter')
            start = time.monotonic()
            with BagReader(bag) as reader:  # in real time, so receive times stay near the stamps
                first = None
                for message in reader.messages(list(publishers)):
                    first = first if first is not None else message.t_ns
                    ahead = (message.t_ns - first) / 1e9 - (time.monotonic() - start)
                    if ahead > 0.002:
                        c.spin_for(ahead)
                    publishers[message.topic].publish(bytes(message.data))
            deadline = time.monotonic() + 10
            while len(received) < len(offline) and time.monotonic() < deadline:
                c.spin_for(0.1)
            c.spin_for(0.5)
    finally:
        assert stop_process(node) == 0, log.read_text()
    assert [m.kind for m in received] == offline
