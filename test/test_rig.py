"""A day at the simulated rig, on real DDS: `robodata sim` acting out episodes, `robodata session` recording them,
and what an operator sees meanwhile (the keys screen, /diagnostics). No alarm when nothing is wrong, exactly one
when one camera goes silent, every episode whole, and live events equal to offline ones."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_srvs.srv import Trigger

from ros_robodata.bag.reader import BagReader
from ros_robodata.dataset import Dataset
from ros_robodata.msg import EpisodeEvent, QualityStatus
from ros_robodata.record.keys_screen import QUALITY_HOLD_S, KeysScreen
from ros_robodata.srv import StartEpisode
from test.ros_rig import PROFILE, Client, client, new_domain, ros_env, stop_process

_KINDS = {EpisodeEvent.START: 'start', EpisodeEvent.STOP: 'stop', EpisodeEvent.OUTCOME: 'outcome',
          EpisodeEvent.DISCARD: 'discard'}
SMALL_IMAGES = ['--image-size', '64x48']  # two cores run the sim, the session and this test


def robodata(args: list[str], domain: int, log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, '-m', 'ros_robodata.cli.main', *args], env=ros_env(domain),
                            stdout=log.open('w'), stderr=subprocess.STDOUT, start_new_session=True)


class Operator:
    """What `robodata keys` shows, fed from the same topics (its screen logic is KeysScreen), and every problem
    /diagnostics reported."""

    def __init__(self, c: Client) -> None:
        self.screen = KeysScreen('/recorder')
        self.screen.set_ready(True)
        self.problems: list[tuple[float, str, str]] = []  # (time, status name, message) of non-OK diagnostics
        self.t0 = time.monotonic()
        any_publisher = QoSProfile(depth=100, reliability=ReliabilityPolicy.BEST_EFFORT)
        c.node.create_subscription(DiagnosticArray, '/diagnostics', self._diagnostics, any_publisher)
        c.node.create_subscription(QualityStatus, '/robodata/quality', self._quality, any_publisher)
        c.node.create_subscription(EpisodeEvent, '/robodata/episode_events', self._event, 10)

    def _diagnostics(self, msg: DiagnosticArray) -> None:
        statuses = [(s.name, s.level[0] if isinstance(s.level, bytes) else int(s.level), s.message) for s in msg.status]
        self.problems += [(time.monotonic() - self.t0, name, text) for name, level, text in statuses if level]
        self.screen.on_diagnostics(statuses)

    def _quality(self, msg: QualityStatus) -> None:
        self.screen.on_quality(msg.check, msg.topic, int(msg.level), msg.message, msg.episode_id)

    def _event(self, msg: EpisodeEvent) -> None:
        self.screen.on_event(_KINDS[msg.event], msg.episode_id, task=msg.task, status=msg.status,
                             outcome=msg.outcome)

    def warnings(self) -> list[str]:
        return self.screen.warning_lines(limit=100)  # every one, not only those that fit on the screen


def watch(c: Client, operator: Operator, seconds: float) -> list[tuple[float, list[str]]]:
    """The keys screen's warning lines every 0.25 s for `seconds`."""
    seen = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        c.spin_for(0.25)
        seen.append((time.monotonic() - operator.t0, operator.warnings()))
    return seen


CELL_PACE = 'robodata sim: pace'


def explained_by_the_cell(problems: list[tuple[float, str, str]]) -> list[tuple[float, str, str]]:
    """The problems that are not a latency the cell itself caused: on a busy computer the sim falls behind real time
    and sends its messages late, says so on /diagnostics, and the monitor is right to see them late then (a
    warning holds a few seconds after it last fired, and is published once a second)."""
    behind = [t for t, name, _ in problems if name == CELL_PACE]
    return [(t, name, text) for t, name, text in problems if name != CELL_PACE
            and not ('latency' in text and any(b - 1.5 <= t <= b + 6.0 for b in behind))]


def screen_unexplained(seen: list[tuple[float, list[str]]], problems: list[tuple[float, str, str]]
                       ) -> list[tuple[float, list[str]]]:
    """The keys screen's warning lines over time, less latency the cell caused by falling behind."""
    pace = [p for p in problems if p[1] == CELL_PACE]
    return [(t, [line for line in lines if explained_by_the_cell([(t, '', line), *pace])]) for t, lines in seen]


def cell_fell_behind_during(log: str, begin_wall: float, end_wall: float) -> bool:
    """Whether the sim was behind real time at some moment between these wall-clock times, by its own log: a
    stretch runs from its 'falling behind real time' line to its 'back to real time after S s' line (or on, when
    it has not come back); the lines carry their wall times."""
    stretches: list[list[float]] = []
    for line in log.splitlines():
        if 'falling behind real time' in line:
            stretches.append([float(line.split('[')[2].split(']')[0]), float('inf')])
        elif 'back to real time after' in line and stretches:
            stretches[-1][1] = float(line.split('[')[2].split(']')[0])
    return any(start - 1.5 <= end_wall and begin_wall <= stop for start, stop in stretches)


def clean_exit(proc: subprocess.Popen, log: Path) -> str:
    assert stop_process(proc) == 0, log.read_text()[-3000:]
    text = log.read_text()
    for bad in ('Traceback', 'FATAL', 'Failed to publish', 'context is invalid'):
        assert bad not in text, text[-3000:]
    return text


def test_a_minute_at_the_simulated_rig_raises_no_alarm_and_every_episode_is_whole(tmp_path):
    domain = new_domain()
    dataset = tmp_path / 'ds'
    session = robodata(['session', '--profile', str(PROFILE), '--dataset', str(dataset), '--task', 'pick'],
                       domain, tmp_path / 'session.log')
    sim = None
    try:
        with client(domain) as c:
            operator = Operator(c)
            c.spin_for(2.0)
            sim = robodata(['sim', *SMALL_IMAGES], domain, tmp_path / 'sim.log')
            seen = watch(c, operator, 60.0)
            disk_line = operator.screen.disk_line  # the dataset disk's room at the rig's measured write rate
            running_until = time.monotonic() - operator.t0  # then the rig stops: its topics do go silent
            sim_log = clean_exit(sim, tmp_path / 'sim.log')
    finally:
        if sim is not None:
            stop_process(sim)
        session_log = clean_exit(session, tmp_path / 'session.log')
    try:
        import tf2_msgs  # noqa: F401 - an apt ROS: the cell publishes its frames
    except ImportError:  # the PyPI wheels: the cell says which fixed frame RViz needs instead
        assert "set RViz's Fixed Frame to 'world'" in sim_log

    assert [p for p in explained_by_the_cell(operator.problems) if p[0] < running_until] == [], \
        operator.problems[:10]
    shown = [line for _, lines in screen_unexplained(seen, operator.problems) for line in lines]
    assert shown == [], sorted(set(shown))
    assert disk_line.startswith('disk: ') and ' free, about ' in disk_line and ' of recording at ' in disk_line, \
        disk_line
    data = Dataset.open(dataset)
    episodes = [data.episode(i) for i in data.episode_ids()]
    complete = [e for e in episodes if e.status == 'complete']
    assert len(complete) >= 4, [(e.id, e.status) for e in episodes]
    assert {e.outcome for e in complete} >= {'success', 'failure'}  # labelled by the scripted operator
    for episode in episodes:
        # One timeline across episodes: nothing lost, no gap in any stream's stamps (the pre-roll included).
        assert episode.loss['total_lost'] == 0, (episode.id, episode.loss)
    if not cell_fell_behind_during(sim_log, 0.0, float('inf')):
        assert 'quality score 1.00' in session_log
    else:  # late and silent streams are what a cell behind real time sends; nothing else may be found
        scored = [line.split('quality score ', 1)[1] for line in session_log.splitlines() if 'quality score' in line]
        # The reasons are joined by '; ' and each starts with its level; a reason may hold '; ' itself (a host stall's
        # time ranges), so only a '; ' before a level starts the next one.
        reasons = [line.split(': ', 1)[1] for line in scored if ': ' in line]
        findings = [f for text in reasons for f in re.split(r'; (?=(?:warn|error): )', text)]
        assert scored and all(f == 'no problem found' or 'latency' in f or 'late' in f or 'silent' in f
                              for f in findings), scored
    done = subprocess.run([sys.executable, '-m', 'ros_robodata.cli.main', 'segment', str(dataset)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for episode in complete:  # live equals offline, exactly
        with BagReader(data.bag_dir(episode.id)) as bag:
            live = [(m.kind, m.header.stamp.sec * 10**9 + m.header.stamp.nanosec)
                    for _, m in bag.read(['/robodata/events'])]
        offline = json.loads((data.episode_dir(episode.id) / 'events.json').read_text())['events']
        assert live == [(e['kind'], e['t_ns']) for e in offline] and live, episode.id


def test_one_silent_camera_is_one_problem_once_and_clears(tmp_path):
    domain = new_domain()
    session = robodata(['session', '--profile', str(PROFILE), '--dataset', str(tmp_path / 'ds')], domain,
                       tmp_path / 'session.log')
    sim = None
    try:
        with client(domain) as c:
            operator = Operator(c)
            c.spin_for(2.0)
            sim = robodata(['sim', *SMALL_IMAGES, '--episodes', '1', '--fault', 'camera/scene:silent:3:6'], domain,
                           tmp_path / 'sim.log')
            seen = watch(c, operator, 16.0)
            assert sim.wait(30) == 0, (tmp_path / 'sim.log').read_text()
    finally:
        if sim is not None:
            stop_process(sim)
        clean_exit(session, tmp_path / 'session.log')

    # /diagnostics: the recorder and the monitor both say it, about that camera only, and only that it is silent.
    problems = explained_by_the_cell(operator.problems)
    assert problems, 'the silent camera was never reported'
    assert {name.split(' ')[-1].split(': ')[-1] for _, name, _ in problems if ':' in name} == \
        {'/camera/scene/image_raw'}
    other = [p for p in problems if 'silent' not in p[2] and 'error(s)' not in p[2]]
    assert other == [], other
    # The keys screen: one line while it lasts, about that camera, and nothing once it is back.
    seen = screen_unexplained(seen, operator.problems)
    shown = [(t, lines) for t, lines in seen if lines]
    assert shown and all(len(lines) == 1 and '/camera/scene/image_raw' in lines[0] and 'silent' in lines[0]
                         for _, lines in shown), shown
    first, last = shown[0][0], shown[-1][0]
    assert [t for t, lines in seen if first <= t <= last and not lines] == []  # one stretch, not flickering
    assert seen[-1][1] == [] and seen[-1][0] - last > 2.0  # cleared when the camera came back
    assert last - first < 4.5  # the 3 s silence, less the second before it counts, plus a report period or two


@pytest.mark.parametrize('state', ['idle', 'recording', 'stopping'])
def test_ctrl_c_of_a_session_in_any_state_ends_clean_and_says_how_the_episode_ended(tmp_path, state):
    """Ctrl-C while data flows: no traceback, exit status 0, and the episode's last word on
    /robodata/episode_events (latched) is what `robodata keys` then shows."""
    domain = new_domain()
    dataset = tmp_path / 'ds'
    session = robodata(['session', '--profile', str(PROFILE), '--dataset', str(dataset)], domain,
                       tmp_path / 'session.log')
    sim = robodata(['sim', *SMALL_IMAGES, '--no-recorder'], domain, tmp_path / 'sim.log')
    episode_id = ''
    try:
        with client(domain) as c:
            operator = Operator(c)
            c.spin_for(3.0)
            if state != 'idle':
                episode_id = c.call(StartEpisode, '/recorder/start_episode').episode_id
                c.spin_for(1.5)
            if state == 'stopping':
                assert c.call(Trigger, '/recorder/stop_episode').success
            clean_exit(session, tmp_path / 'session.log')
            c.spin_for(1.0)
            stops = [e for e in c.events if e.event == e.STOP]
            screen = '\n'.join(operator.screen.render())
    finally:
        stop_process(session)
        stop_process(sim)
    if state == 'idle':
        assert stops == [] and not Dataset.open(dataset).episode_ids()
        return
    expected = 'interrupted' if state == 'recording' else 'complete'
    assert [(e.episode_id, e.status) for e in stops] == [(episode_id, expected)]
    assert Dataset.open(dataset).episode(episode_id).status == expected
    assert f'last episode: {episode_id} {expected}' in screen and 'REC' not in screen


def test_an_operator_at_the_keys_of_the_simulated_rig(tmp_path):
    """`robodata keys` on a terminal, driven like a person with the cell waiting for the start key: an episode
    labelled and stopped, a double press refused, a discard while recording; the screen as the person sees it."""
    import pyte

    domain = new_domain()
    dataset = tmp_path / 'ds'
    session = robodata(['session', '--profile', str(PROFILE), '--dataset', str(dataset), '--task', 'pick'], domain,
                       tmp_path / 'session.log')
    sim = robodata(['sim', *SMALL_IMAGES, '--start', 'key'], domain, tmp_path / 'sim.log')
    terminal = pyte.Screen(80, 24)
    stream = pyte.ByteStream(terminal)
    master, slave = pty.openpty()
    keys = subprocess.Popen([sys.executable, '-m', 'ros_robodata.cli.main', 'keys'], env=ros_env(domain),
                            stdin=slave, stdout=slave, stderr=slave, start_new_session=True)

    def screen() -> str:
        while select.select([master], [], [], 0.05)[0]:
            stream.feed(os.read(master, 65536))
        return '\n'.join(line.rstrip() for line in terminal.display)

    def wait_for(text: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            shown = screen()
            if text in shown:
                return shown
            time.sleep(0.1)
        raise AssertionError(f'{text!r} never on the screen:\n{screen()}')

    def log_says(text: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while text not in (tmp_path / 'sim.log').read_text():
            assert time.monotonic() < deadline, (tmp_path / 'sim.log').read_text()
            time.sleep(0.2)
            screen()

    try:
        wait_for('recorder /recorder ready', 30)
        log_says('ready: press space', 30)
        os.write(master, b' ')
        shown = wait_for('REC  ', 10)
        assert 'REC  2' in shown  # the episode id (a date)
        wait_for('pick', 10)  # and the task, once the recorder's START event is here (the REC line can come first)
        log_says('label it (s/f/r) and stop it (space)', 60)  # the cell acted the episode out
        os.write(master, b's')
        wait_for('outcome success', 10)
        os.write(master, b' ')
        shown = wait_for('complete, outcome success', 10)
        assert 'REC' not in shown
        first = Dataset.open(dataset).episode_ids()[0]
        log_says('scene 2 (seed 1) ready', 30)
        os.write(master, b'  ')  # a double press in one burst: the second is ignored, and says so
        wait_for('> started ', 10)
        assert 'toggle ignored' in screen()
        os.write(master, b' ')  # again right after the start: refused by the recorder, visibly
        shown = wait_for('not stopped: ', 10)
        assert 'double press' in shown and 'REC  ' in shown
        time.sleep(1.0)
        since = time.time() - QUALITY_HOLD_S - 1.0  # what the screen shows can date from this long ago
        os.write(master, b'd')
        shown = wait_for('discarded', 10)
        # No warning on the screen, unless the cell itself fell behind real time then and its messages were late.
        # ('! ... and N more' counts the warnings that did not fit: not a warning of its own)
        warned = [line for line in shown.splitlines() if line.startswith('!') and not line.startswith('! ...')]
        if warned and all('latency' in line for line in warned):
            assert cell_fell_behind_during((tmp_path / 'sim.log').read_text(), since, time.time()), shown
        else:
            assert warned == [], shown
        os.write(master, b'q')
        assert keys.wait(15) == 0
    finally:
        stop_process(keys)
        os.close(master)
        os.close(slave)
        stop_process(sim)
        clean_exit(session, tmp_path / 'session.log')

    data = Dataset.open(dataset)
    episodes = [data.episode(i) for i in data.episode_ids()]
    assert [(e.id, e.status, e.outcome) for e in episodes][:1] == [(first, 'complete', 'success')]
    assert [e.status for e in episodes] == ['complete', 'discarded']
    audit = [json.loads(line) for line in data.audit_path.read_text().splitlines()]
    assert any(a['action'] == 'set_status' and a.get('new') == 'discarded' and a['episode'] == episodes[1].id
               for a in audit)
