"""`robodata demo` end to end on real rclpy: the recorder, segmenter and monitor in one process, the sim cell in
another, two episodes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from ros_robodata.bag.reader import BagReader
from ros_robodata.dataset import Dataset
from ros_robodata.profile import load_profile
from test.ros_rig import PROFILE, new_domain, ros_env


def robodata(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', 'ros_robodata.cli.main', *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_demo_records_every_sim_topic_at_its_rate(demo_run):
    run, out = demo_run
    assert run.returncode == 0, run.stderr[-3000:]
    assert 'dataset:' in run.stdout and 'issues found' in run.stdout and 'report:' in run.stdout
    report = (out / 'dataset' / 'report.html').read_text()
    assert report.startswith('<!DOCTYPE html>') and 'http://' not in report and 'https://' not in report
    assert run.stdout.count('grasp, lift, release') == 2  # seeds 0 and 1 are clean successes

    dataset = Dataset.open(out / 'dataset')
    episodes = [dataset.episode(i) for i in dataset.episode_ids()]
    assert len(episodes) == 2
    profile = load_profile(PROFILE)
    rates = {spec.topic: spec.rate_hz for _, spec in profile.all_topics()}
    for episode in episodes:
        assert episode.status == 'complete'
        truth_file = dataset.episode_dir(episode.id) / 'ground_truth.json'
        assert truth_file.is_file()
        truth = json.loads(truth_file.read_text())
        assert episode.outcome == truth['outcome'] != 'unknown'
        assert truth['episode_id'] == episode.id
        start, stop = episode.marked_start_ns, episode.marked_stop_ns
        assert start is not None and stop is not None and stop > start
        window_s = (stop - start) / 1e9
        acted_s = truth['duration_s'] - truth['begun_s']  # the script ran from its start key to its end
        assert abs(window_s - acted_s) < 1.0, (window_s, acted_s)
        with BagReader(dataset.bag_dir(episode.id)) as bag:
            assert bag.complete
            assert set(rates) <= {name for name, info in bag.topics.items() if info.count}
            counts = dict.fromkeys(rates, 0)
            for message in bag.messages(list(rates), start, stop):  # the marked window: no pre-roll
                counts[message.topic] += 1
        for topic, rate in rates.items():
            if rate is None:  # latched /robot_description, and the segmenter's events
                continue
            measured = counts[topic] / window_s
            assert abs(measured - rate) <= 0.05 * rate, f'{episode.id} {topic}: {measured:.1f} Hz, expected {rate:g}'
        # The live segmenter's events are in the bag, and the offline pass wrote events.json; both put the
        # grasp where the physics says the object was secured.
        with BagReader(dataset.bag_dir(episode.id)) as bag:
            live = [m for _, m in bag.read(['/robodata/events'])]
        secured_ns = truth['start_ns'] + round(truth['secured_s'] * 1e9)
        live_grasps = [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for m in live if m.kind == 'grasp']
        assert len(live_grasps) == 1 and abs(live_grasps[0] - secured_ns) < 50_000_000
        assert {m.episode_id for m in live} == {episode.id}
        quality = json.loads((dataset.episode_dir(episode.id) / 'quality.json').read_text())
        assert quality['success']['success'] is True and not quality['success']['disagrees']
        assert episode.id in report
        offline = json.loads((dataset.episode_dir(episode.id) / 'events.json').read_text())
        # One time origin: a grasp at 5.47 s in events.json is at 5.47 s in quality.json's verdict and ranges.
        assert offline['start_ns'] == quality['start_ns']
        assert all(e['t_s'] == round((e['t_ns'] - quality['start_ns']) / 1e9, 4) for e in offline['events'])
        grasps = [e['t_ns'] for e in offline['events'] if e['kind'] == 'grasp']
        assert len(grasps) == 1 and abs(grasps[0] - secured_ns) < 50_000_000
        # Live equals offline, exactly: every event, kind and stamp to the nanosecond.
        assert [(m.kind, m.header.stamp.sec * 10**9 + m.header.stamp.nanosec) for m in live] == \
            [(e['kind'], e['t_ns']) for e in offline['events']]
    verify = robodata('verify', str(out / 'dataset'))
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_demo_fault_injection_shows_up_in_the_scores(tmp_path):
    out = tmp_path / 'demo'
    run = robodata('demo', '--episodes', '1', '--seed', '3', '--out', str(out), '--image-size', '160x120',
                   '--fault', 'wrench:spike:5.5:5.52', '--fault', 'camera/wrist:blur:2:3', env=ros_env(new_domain()))
    assert run.returncode == 0, run.stderr[-3000:]
    dataset = Dataset.open(out / 'dataset')
    (episode_id,) = dataset.episode_ids()
    quality = json.loads((dataset.episode_dir(episode_id) / 'quality.json').read_text())
    checks = {(f['check'], f['topic']) for f in quality['findings']}
    assert ('contact.force_limit', '/wrist/wrench') in checks
    assert ('image.blur', '/camera/wrist/image_raw') in checks
    truth = json.loads((dataset.episode_dir(episode_id) / 'ground_truth.json').read_text())
    assert [f['kind'] for f in truth['faults']] == ['spike', 'blur'] and all(f['affected'] for f in truth['faults'])


def test_sim_cell_can_publish_its_time_on_clock(tmp_path):
    from rosgraph_msgs.msg import Clock

    from test.ros_rig import client, stop_process

    domain = new_domain()
    node = subprocess.Popen([sys.executable, '-m', 'ros_robodata.nodes.sim_cell_node', '--ros-args', '-p',
                             f'profile:={PROFILE}', '-p', 'episodes:=1', '-p', 'publish_clock:=true', '-p',
                             'image_width:=32', '-p', 'image_height:=24'], env=ros_env(domain),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        with client(domain) as c:
            ticks: list = []
            c.node.create_subscription(Clock, '/clock', ticks.append, 100)
            for _ in range(100):
                c.spin_for(0.1)
                if len(ticks) > 50:
                    break
    finally:
        stop_process(node)
    times = [t.clock.sec * 10**9 + t.clock.nanosec for t in ticks]
    assert len(times) > 50 and times == sorted(times) and times[-1] > times[0]


def _children(pid: int) -> set[int]:
    """The processes whose parent is `pid` now (from /proc)."""
    found = set()
    for stat in Path('/proc').glob('[0-9]*/stat'):
        try:
            fields = stat.read_text().rsplit(')', 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def test_ctrl_c_during_the_demo_closes_the_episode_and_leaves_no_cell_running(tmp_path):
    """The cell publishes from a process of its own, as drivers do: Ctrl-C stops it too, after the episode is
    closed as interrupted."""
    from test.ros_rig import stop_process

    out = tmp_path / 'demo'
    log = tmp_path / 'demo.log'
    with log.open('w') as err:
        demo = subprocess.Popen([sys.executable, '-m', 'ros_robodata.cli.main', 'demo', '--episodes', '2', '--out',
                                 str(out), '--image-size', '160x120'], stdout=subprocess.DEVNULL, stderr=err,
                                env=ros_env(new_domain()))
    children: set[int] = set()
    deadline = time.monotonic() + 120
    while 'start: status recording' not in log.read_text() and time.monotonic() < deadline and demo.poll() is None:
        children |= _children(demo.pid)
        time.sleep(0.2)
    children |= _children(demo.pid)
    assert 'start: status recording' in log.read_text(), log.read_text()[-3000:]
    assert len(children) >= 2, children  # the episode writer and the cell
    assert stop_process(demo) == 130, log.read_text()[-3000:]  # the exit status of a command stopped by Ctrl-C
    text = log.read_text()
    assert 'robodata demo: interrupted' in text and 'closed as interrupted' in text, text[-3000:]
    dataset = Dataset.open(out / 'dataset')
    assert [dataset.episode(i).status for i in dataset.episode_ids()] == ['interrupted']
    time.sleep(1.0)
    left = [pid for pid in children if Path(f'/proc/{pid}').exists()
            and (Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0] != 'Z')]
    assert left == [], [Path(f'/proc/{pid}/cmdline').read_bytes() for pid in left]
