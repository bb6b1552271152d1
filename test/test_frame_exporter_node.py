"""The live frame exporter on real DDS: an episode announced by the recorder's events is exported while it
runs, with the same manifest format as `robodata export frames`; a discarded one leaves nothing."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import cv2
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from ros_robodata.bag.reader import BagReader
from ros_robodata.export.manifest import validate_manifest
from ros_robodata.profile import load_profile
from ros_robodata.sim.to_bag import write_sim_episode
from test.ros_rig import PROFILE, client, new_domain, ros_env, stop_process


def _wait_for(path: Path, node: subprocess.Popen, log: Path, c, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.is_file():
        assert node.poll() is None, log.read_text()
        assert time.monotonic() < deadline, f'no {path}: ' + log.read_text()
        c.spin_for(0.1)


def test_frames_are_exported_live_per_episode(tmp_path: Path) -> None:
    from geometry_msgs.msg import WrenchStamped
    from sensor_msgs.msg import Image, JointState, PointCloud2

    from ros_robodata.msg import EpisodeEvent

    profile = load_profile(PROFILE)
    bag = tmp_path / 'bag'
    write_sim_episode(bag, profile, seed=0, cameras=True, lidar=True, image_size=(96, 72), max_duration_s=5.0)
    out = tmp_path / 'frames'
    domain = new_domain()
    log = tmp_path / 'exporter.log'
    node = subprocess.Popen([sys.executable, '-m', 'ros_robodata.nodes.frame_exporter_node', '--ros-args', '-p',
                             f'profile:={PROFILE}', '-p', f'out:={out}', '-p', 'every:=0.5s', '-p', 'lidar:=true',
                             '-p', 'jpeg_quality:=60'],
                            env=ros_env(domain), stdout=log.open('w'), stderr=subprocess.STDOUT)
    try:
        with client(domain) as c:
            latched = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                                 durability=DurabilityPolicy.TRANSIENT_LOCAL)
            events = c.node.create_publisher(EpisodeEvent, '/robodata/episode_events', latched)
            qos = QoSProfile(depth=5000, reliability=ReliabilityPolicy.RELIABLE)
            kinds = {'sensor_msgs/msg/Image': Image, 'sensor_msgs/msg/PointCloud2': PointCloud2,
                     'sensor_msgs/msg/JointState': JointState, 'geometry_msgs/msg/WrenchStamped': WrenchStamped}
            with BagReader(bag) as reader:
                topics = {name: info.msgtype for name, info in reader.topics.items() if info.msgtype in kinds}
            publishers = {t: c.node.create_publisher(kinds[m], t, qos) for t, m in topics.items()}
            wanted = [profile.topics.cameras[0].topic, profile.topics.lidars[0].topic]
            c.wait_subscribed([publishers[t] for t in wanted], node, log, 'the exporter')

            def episode(episode_id: str, end: int) -> None:
                events.publish(EpisodeEvent(event=EpisodeEvent.START, episode_id=episode_id, task='pick'))
                c.spin_for(0.5)
                c.replay(bag, publishers, every=100, pause=0.01)
                c.spin_for(1.0)
                events.publish(EpisodeEvent(event=end, episode_id=episode_id, outcome='success'))

            episode('20260101-120000', EpisodeEvent.STOP)
            _wait_for(out / 'episodes' / '20260101-120000' / 'frames.json', node, log, c)
            episode('20260101-120001', EpisodeEvent.DISCARD)
            deadline = time.monotonic() + 20
            while (out / 'episodes' / '20260101-120001').exists() and time.monotonic() < deadline:
                c.spin_for(0.2)
    finally:
        assert stop_process(node) == 0, log.read_text()

    manifest = json.loads((out / 'manifest.json').read_text())
    validate_manifest(manifest)
    assert [e['episode_id'] for e in manifest['episodes']] == ['20260101-120000']
    frames = manifest['frames']
    assert 9 <= len(frames) <= 12  # one every 0.5 s over ~5 s of episode
    for frame in frames:
        for name, sensor in frame['sensors'].items():
            assert (out / sensor['file']).is_file()
            if name.startswith('camera_'):
                assert cv2.imread(str(out / sensor['file'])).shape[:2] == (72, 96)
            assert abs(sensor['offset_ms']) <= 50
    assert not (out / 'episodes' / '20260101-120001').exists()
    exported = json.loads((out / 'episodes' / '20260101-120000' / 'frames.json').read_text())
    assert exported['settings']['jpeg_quality'] == 60
