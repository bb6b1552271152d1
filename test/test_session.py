"""`robodata session` on real DDS: the recorder and the segmenter in one process; the live events land in the bag."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_srvs.srv import Trigger

from ros_robodata.bag.reader import BagReader
from ros_robodata.cli.main import main
from ros_robodata.dataset import Dataset
from ros_robodata.events.offline import segment_bag
from ros_robodata.profile import load_profile
from ros_robodata.sim.to_bag import write_sim_episode
from ros_robodata.srv import StartEpisode
from test.ros_rig import PROFILE, client, new_domain, ros_env, stop_process


def test_session_records_the_live_segment_events_into_the_episode(tmp_path: Path) -> None:
    from geometry_msgs.msg import WrenchStamped
    from sensor_msgs.msg import JointState

    profile = load_profile(PROFILE)
    replay = tmp_path / 'replay'
    write_sim_episode(replay, profile, seed=0)
    expected = [e.kind for e in segment_bag(replay, profile).events]

    domain = new_domain()
    log = tmp_path / 'session.log'
    args = [sys.executable, '-m', 'ros_robodata.cli.main', 'session', '--profile', str(PROFILE),
            '--dataset', str(tmp_path / 'ds'), '--task', 'pick_cube']
    session = subprocess.Popen(args, env=ros_env(domain), stdout=log.open('w'), stderr=subprocess.STDOUT,
                               start_new_session=True)
    try:
        with client(domain) as c:
            qos = QoSProfile(depth=5000, reliability=ReliabilityPolicy.RELIABLE)
            publishers = {spec.topic: c.node.create_publisher(kind, spec.topic, qos)
                          for spec, kind in ((profile.topics.gripper, JointState),
                                             (profile.topics.wrench, WrenchStamped))}
            # Recorder and segmenter both subscribe to each.
            c.wait_subscribed(publishers.values(), session, log, 'the session', subscribers=2)
            episodes = []
            for _ in range(2):  # the second episode starts from the stroke the first one showed
                episode_id = c.call(StartEpisode, '/recorder/start_episode').episode_id
                episodes.append(episode_id)
                c.replay(replay, publishers)
                c.spin_for(2.0)
                assert c.call(Trigger, '/recorder/stop_episode').success
                deadline = time.monotonic() + 20
                while sum(e.event == e.STOP for e in c.events) < len(episodes) and time.monotonic() < deadline:
                    c.spin_for(0.1)
    finally:
        assert stop_process(session) == 0, log.read_text()

    dataset = Dataset.open(tmp_path / 'ds')
    live: dict[str, list[tuple[str, int]]] = {}
    for episode_id in episodes:
        assert dataset.episode(episode_id).status == 'complete'
        with BagReader(dataset.bag_dir(episode_id)) as bag:
            recorded = [decoded for _, decoded in bag.read(['/robodata/events'])]
        assert [(d.kind, d.episode_id) for d in recorded] == [(kind, episode_id) for kind in expected]
        live[episode_id] = [(d.kind, d.header.stamp.sec * 10**9 + d.header.stamp.nanosec) for d in recorded]
    # Each episode says which stroke the live segmenter started it from: the first the profile's, the second
    # what the first showed; `robodata segment` starts from the same and finds the same events, to the ns.
    first, second = (json.loads((dataset.episode_dir(e) / 'segmenter_prior.json').read_text()) for e in episodes)
    assert first['prior'] == {} and first['pooled_episodes'] == 0
    assert second['prior']['gripper']['source'] == 'session' and second['pooled_episodes'] == 1
    assert main(['segment', str(dataset.root)]) == 0
    for episode_id in episodes:
        doc = json.loads((dataset.episode_dir(episode_id) / 'events.json').read_text())
        assert [(e['kind'], e['t_ns']) for e in doc['events']] == live[episode_id]
        assert doc['calibration']['prior_from'] == 'live'


def test_an_unknown_executor_is_one_line_naming_the_variable(tmp_path: Path) -> None:
    env = {**ros_env(new_domain()), 'ROBODATA_EXECUTOR': 'fastest'}
    done = subprocess.run([sys.executable, '-m', 'ros_robodata.cli.main', 'record', '--profile', str(PROFILE),
                           '--dataset', str(tmp_path / 'ds'), '--task', 'pick_cube'], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines[-1] == "robodata record: error: ROBODATA_EXECUTOR='fastest': expected one of events, single, multi", \
        lines
    assert not (tmp_path / 'ds' / 'episodes').exists() or not any((tmp_path / 'ds' / 'episodes').iterdir())


def test_a_session_on_the_single_threaded_executor_records_an_episode(tmp_path: Path) -> None:
    domain = new_domain()
    env = {**ros_env(domain), 'ROBODATA_EXECUTOR': 'single'}
    session = subprocess.Popen([sys.executable, '-m', 'ros_robodata.cli.main', 'session', '--profile',
                                str(PROFILE), '--dataset', str(tmp_path / 'ds'), '--task', 'pick_cube'], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        with client(domain) as c:
            started = c.call(StartEpisode, '/recorder/start_episode', StartEpisode.Request())
            assert started.success, started.message
            time.sleep(1.5)  # past recording.min_episode_s: a stop sooner is refused as a double press
            stopped = c.call(Trigger, '/recorder/stop_episode', Trigger.Request())
            assert stopped.success, stopped.message
    finally:
        stop_process(session)
    assert session.returncode == 0
    assert Dataset.open(tmp_path / 'ds').episode(started.episode_id).status == 'complete'
