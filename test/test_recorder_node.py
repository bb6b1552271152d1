"""The recorder node on real DDS: services, episode events, Ctrl-C and SIGKILL mid-episode."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
from std_srvs.srv import Trigger

from ros_robodata.bag.reader import BagReader
from ros_robodata.dataset import Dataset
from ros_robodata.dataset.verify import verify_dataset
from ros_robodata.srv import SetOutcome, StartEpisode
from test.ros_rig import client, new_domain, rig_published, start_recorder, start_rig, stop_process

RECORDED = {'/joint_states', '/wrist/wrench', '/gripper/joint_states', '/teleop/command', '/camera/wrist/image_raw',
            '/lidar/points', '/robot_description'}


def robodata(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', 'ros_robodata.cli.main', *args], capture_output=True, text=True,
                          timeout=120)


def test_services_drive_episodes_and_every_topic_is_recorded(tmp_path):
    domain = new_domain()
    recorder = start_recorder(domain, tmp_path / 'ds', log=tmp_path / 'recorder.log')
    rig = start_rig(domain, 9)
    try:
        with client(domain) as c:
            c.call(Trigger, '/recorder/stop_episode')  # waits until the recorder is up
            c.spin_for(2.5)  # rig streaming, recorder in pre-roll
            started = c.call(StartEpisode, '/recorder/start_episode', StartEpisode.Request(mode='kinesthetic'))
            assert started.success, started.message
            c.spin_for(2.0)
            assert c.call(SetOutcome, '/recorder/set_outcome', SetOutcome.Request(outcome='success')).success
            stopped = c.call(Trigger, '/recorder/stop_episode')
            assert stopped.success and stopped.message == f'{started.episode_id} complete'
            again = c.call(Trigger, '/recorder/stop_episode')
            assert not again.success and 'no episode is recording' in again.message
            second = c.call(StartEpisode, '/recorder/start_episode')
            c.spin_for(1.0)
            assert c.call(Trigger, '/recorder/discard_episode').success
            c.spin_for(1.0)
            events = [(e.event, e.episode_id, e.status, e.outcome) for e in c.events]
        published = rig_published(rig)
    finally:
        stop_process(rig)
        assert stop_process(recorder) == 0
    first, discarded = started.episode_id, second.episode_id
    assert events == [(0, first, 'recording', 'unknown'), (2, first, 'recording', 'success'),
                      (1, first, 'complete', 'success'), (0, discarded, 'recording', 'unknown'),
                      (3, discarded, 'discarded', 'unknown')]
    dataset = Dataset.open(tmp_path / 'ds')
    episode = dataset.episode(first)
    assert (episode.task, episode.operator, episode.mode) == ('pick_cube', 'tester', 'kinesthetic')
    assert (episode.status, episode.outcome) == ('complete', 'success')
    assert dataset.episode(discarded).status == 'discarded'
    assert verify_dataset(dataset) == []
    with BagReader(dataset.bag_dir(first)) as bag:
        assert bag.complete
        counts = {name: info.count for name, info in bag.topics.items() if info.count}
        assert set(counts) == RECORDED
        assert bag.start_ns < episode.marked_start_ns, 'the pre-roll is in the bag'
    assert {t: v['count'] for t, v in episode.topics.items() if v['count']} == counts
    for topic, count in counts.items():
        assert count <= published.get(topic, 1)
    # about 2 s of pre-roll + 2 s of episode at 500 Hz, and nothing lost on the way
    assert 1500 < counts['/joint_states'] < 2300
    assert episode.loss['total_lost'] == 0, episode.loss
    # every recorded topic decodes in the independent mcap reader
    mcap_file = next(dataset.bag_dir(first).glob('*.mcap'))
    decoded: dict[str, int] = {}
    with mcap_file.open('rb') as f:
        for _, channel, _, message in make_reader(f, decoder_factories=[DecoderFactory()]).iter_decoded_messages():
            decoded[channel.topic] = decoded.get(channel.topic, 0) + 1
            assert message is not None
    assert decoded == counts


def test_ctrl_c_mid_episode_closes_it_as_interrupted(tmp_path):
    domain = new_domain()
    recorder = start_recorder(domain, tmp_path / 'ds')
    rig = start_rig(domain, 8)
    try:
        with client(domain) as c:
            episode_id = c.call(StartEpisode, '/recorder/start_episode').episode_id
            c.spin_for(1.5)
        assert stop_process(recorder, signal.SIGINT) == 0
    finally:
        stop_process(rig)
        stop_process(recorder, signal.SIGKILL)
    dataset = Dataset.open(tmp_path / 'ds')
    assert dataset.episode(episode_id).status == 'interrupted'
    info = robodata('info', str(dataset.episode_dir(episode_id)), '--json')
    assert info.returncode == 0 and '"complete": true' in info.stdout
    assert robodata('verify', str(tmp_path / 'ds')).returncode == 0


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f'/proc/{pid}/task').iterdir():
        with contextlib.suppress(OSError):
            found += [int(c) for c in (task / 'children').read_text().split()]
    return found


def niceness(pid: int) -> int:
    return int(Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[16])


def test_sigkill_of_the_ros_process_alone_still_closes_the_episode(tmp_path):
    domain = new_domain()
    recorder = start_recorder(domain, tmp_path / 'ds')
    rig = start_rig(domain, 8)
    try:
        with client(domain) as c:
            episode_id = c.call(StartEpisode, '/recorder/start_episode').episode_id
            c.spin_for(1.5)
        # Intake comes first on a busy computer: the writer process runs below the ROS process.
        assert niceness(recorder.pid) + 5 in [niceness(child) for child in children(recorder.pid)]
        recorder.kill()  # the writer process sees its input end and closes the episode
        recorder.wait(10)
        dataset = Dataset.open(tmp_path / 'ds')
        deadline = time.monotonic() + 30
        while dataset.episode(episode_id).status == 'recording' and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        stop_process(rig)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(recorder.pid, signal.SIGKILL)
    assert dataset.episode(episode_id).status == 'interrupted'
    with BagReader(dataset.bag_dir(episode_id)) as bag:
        assert bag.complete and bag.topics['/joint_states'].count > 300
    assert robodata('verify', str(tmp_path / 'ds')).returncode == 0


def test_power_loss_mid_episode_keeps_what_was_flushed_and_repair_recovers_it(tmp_path):
    domain = new_domain()
    recorder = start_recorder(domain, tmp_path / 'ds')
    rig = start_rig(domain, 10)
    try:
        with client(domain) as c:
            episode_id = c.call(StartEpisode, '/recorder/start_episode').episode_id
            c.spin_for(3.0)  # flushes at least every second
        os.killpg(recorder.pid, signal.SIGKILL)  # the ROS process and its writer at once
        recorder.wait(10)
    finally:
        stop_process(rig)
    dataset = Dataset.open(tmp_path / 'ds')
    episode_dir = dataset.episode_dir(episode_id)
    assert dataset.episode(episode_id).status == 'recording'  # nobody closed it
    info = robodata('info', str(episode_dir), '--json')
    assert info.returncode == 0, info.stderr
    assert '"complete": false' in info.stdout and 'truncated' in info.stdout
    with BagReader(dataset.bag_dir(episode_id)) as bag:
        readable = {name: t.count for name, t in bag.topics.items() if t.count}
    assert readable.get('/joint_states', 0) > 500, 'at least a second of data survived the kill'
    repaired = robodata('repair', str(episode_dir))
    assert repaired.returncode == 0, repaired.stderr
    assert 'recording -> incomplete' in repaired.stdout
    episode = Dataset.open(tmp_path / 'ds').episode(episode_id)
    assert episode.status == 'incomplete'
    assert {t: v['count'] for t, v in episode.topics.items() if v['count']} == readable
    with BagReader(dataset.bag_dir(episode_id)) as bag:
        assert bag.complete
    assert robodata('verify', str(tmp_path / 'ds')).returncode == 0


def test_robodata_record_runs_the_same_node_and_keeps_text_parameters_text(tmp_path):
    from test.ros_rig import PROFILE, ros_env

    domain = new_domain()
    recorder = subprocess.Popen(
        [sys.executable, '-m', 'ros_robodata.cli.main', 'record', '--profile', str(PROFILE), '--dataset',
         str(tmp_path / 'ds'), '--task', '007', '--operator', 'ana', '--mode', 'kinesthetic', '--min-episode-s', '0'],
        env=ros_env(domain), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        with client(domain) as c:
            episode_id = c.call(StartEpisode, '/recorder/start_episode').episode_id
            assert c.call(Trigger, '/recorder/stop_episode').success
        assert stop_process(recorder, signal.SIGINT) == 0
    finally:
        stop_process(recorder, signal.SIGKILL)
    episode = Dataset.open(tmp_path / 'ds').episode(episode_id)
    assert (episode.task, episode.operator, episode.mode, episode.status) == ('007', 'ana', 'kinesthetic', 'complete')


def test_a_broken_profile_is_one_line_and_a_non_zero_exit(tmp_path):
    bad = tmp_path / 'bad.yaml'
    bad.write_text('robot: {name: x}\ntopics:\n'
                   '  joint_states: {topic: /js, type: sensor_msgs/msg/JointState, rte_hz: 5}\n')
    done = robodata('record', '--profile', str(bad), '--dataset', str(tmp_path / 'ds'))
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1 and 'rte_hz' in lines[0] and 'Traceback' not in done.stderr
    assert not (tmp_path / 'ds').exists()
