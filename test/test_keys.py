"""`robodata keys`, the operator's keyboard: the screen and key map with plain data, then the real
thing: a recorder node, a rig publishing, and `robodata keys` driven through a pipe and a pty."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest

from ros_robodata.record.keys_screen import (
    DISK_STATUS,
    ERROR,
    HELP,
    OK,
    QUALITY_HOLD_S,
    STALE,
    TOPIC_HOLD_S,
    WARN,
    KeysScreen,
    Request,
    action_for,
    fit,
    format_duration,
    redraw,
)
from test.processes import signal_state
from test.ros_rig import new_domain, stop_process
from test.ros_rig import ros_env as rig_env

ROOT = Path(__file__).resolve().parents[1]


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def screen(clock: FakeClock) -> KeysScreen:
    s = KeysScreen('/recorder', clock=clock)
    s.set_ready(True)
    return s


def text(screen: KeysScreen, ticking: bool = True) -> str:
    return '\n'.join(screen.render(ticking))


def recording_diag(episode_id: str, elapsed: int, *topics: tuple[str, int, str]) -> list[tuple[str, int, str]]:
    head = ('robodata recorder', OK, f'recording {episode_id} ({elapsed} s)')
    return [head, *((f'robodata recorder: {t}', level, msg) for t, level, msg in topics)]


# -- the key map -----------------------------------------------------------------------------------


def test_key_map():
    assert [action_for(k) for k in ' sfrdq'] == ['toggle', 'success', 'failure', 'recovery', 'discard', 'quit']
    assert action_for('S') == 'success' and action_for('Q') == 'quit'  # caps lock on
    assert action_for('\x03') == 'quit' and action_for('\x04') == 'quit'
    assert action_for('x') is None and action_for('\x1b') is None


def test_keys_do_nothing_until_the_recorder_answers_except_quit(clock):
    s = KeysScreen('/rec', clock=clock)
    assert 'waiting for recorder' in text(s)
    assert s.press(' ') is None and 'recorder /rec not available yet: toggle ignored' in text(s)
    assert s.press('s') is None
    assert s.press('q') == Request('quit') and s.quitting


def test_unknown_keys_say_so_and_newlines_are_ignored(screen):
    assert screen.press('x') is None and "key 'x' does nothing" in text(screen)
    screen.message = ''
    assert screen.press('\n') is None and screen.press('\r') is None and screen.message == ''


# -- one episode through service replies -----------------------------------------------------------


def test_space_starts_then_stops_and_outcome_keys_label(screen, clock):
    assert screen.press(' ') == Request('start')
    assert 'starting...' in text(screen)
    assert screen.press(' ') is None and 'still waiting for the recorder to answer start' in text(screen)
    screen.on_reply('start', True, '', 'ep-1')
    clock.t += 75
    assert 'REC  ep-1  01:15' in text(screen)
    assert screen.press('s') == Request('outcome', 'success')
    screen.on_reply('outcome', True, 'ep-1 outcome success', 'ep-1')
    assert 'REC  ep-1  01:15  outcome success' in text(screen)
    assert screen.press(' ') == Request('stop')
    assert 'stopping...' in text(screen)
    screen.on_reply('stop', True, 'ep-1 complete')
    shown = text(screen)
    assert 'idle: press space' in shown and 'REC' not in shown
    assert 'last episode: ep-1 complete, outcome success' in shown
    assert 'last outcome: success (ep-1)' in shown
    assert '> stopped ep-1 (complete)' in shown


def test_outcome_after_stop_labels_the_last_episode(screen):
    screen.on_event('start', 'ep-1', task='pick_cube')
    screen.on_event('stop', 'ep-1', status='complete', outcome='unknown')
    assert 'last episode: ep-1 complete' in text(screen)
    assert screen.press('f') == Request('outcome', 'failure')
    screen.on_reply('outcome', True, 'ep-1 outcome failure', 'ep-1')
    assert 'last episode: ep-1 complete, outcome failure' in text(screen)
    assert 'last outcome: failure (ep-1)' in text(screen)


def test_discard_and_refusals_are_shown(screen):
    assert screen.press('d') == Request('discard')
    screen.on_reply('discard', False, 'nothing to discard: no episode recorded yet')
    assert '> not discarded: nothing to discard: no episode recorded yet' in text(screen)
    screen.on_event('start', 'ep-2')
    assert screen.press('d') == Request('discard')
    screen.on_reply('discard', True, 'ep-2 discarded')
    assert 'last episode: ep-2 discarded' in text(screen) and 'REC' not in text(screen)


def test_an_unanswered_call_frees_the_key(screen):
    assert screen.press(' ') == Request('start')
    screen.on_no_answer('start', 10.2)
    assert '> start: no answer from the recorder after 10 s' in text(screen)
    assert screen.press(' ') == Request('start')


# -- episode events --------------------------------------------------------------------------------


def test_events_drive_the_screen_and_the_duration_ticks(screen, clock):
    screen.on_event('start', 'ep-3', task='pick_cube', outcome='unknown', age_s=4.0)
    assert 'REC  ep-3  pick_cube  00:04' in text(screen)
    clock.t += 3600
    assert '1:00:04' in text(screen)
    assert '1:00:04' not in text(screen, ticking=False) and 'REC  ep-3  pick_cube' in text(screen, ticking=False)
    screen.on_event('outcome', 'ep-3', outcome='recovery', status='recording')
    assert 'outcome recovery' in text(screen)
    screen.on_event('stop', 'ep-3', status='complete', outcome='recovery')
    assert 'last episode: ep-3 complete, outcome recovery' in text(screen)


def test_a_late_start_reply_does_not_revive_a_stopped_episode(screen):
    screen.press(' ')
    screen.on_event('start', 'ep-4')
    screen.on_event('stop', 'ep-4', status='complete')
    screen.on_reply('start', True, '', 'ep-4')
    assert screen.episode is None and 'idle' in text(screen)


def test_replayed_history_of_a_late_joiner_ends_in_the_current_state(screen):
    """TRANSIENT_LOCAL hands a late keys session the recorder's last events, oldest first."""
    for kind, ep, status in [('start', 'ep-5', 'recording'), ('stop', 'ep-5', 'complete'),
                             ('outcome', 'ep-5', 'complete'), ('start', 'ep-6', 'recording')]:
        screen.on_event(kind, ep, status=status, outcome='success' if kind == 'outcome' else 'unknown', age_s=30)
    shown = text(screen)
    assert 'REC  ep-6  00:30' in shown and 'last episode: ep-5 complete, outcome success' in shown


# -- diagnostics and quality -----------------------------------------------------------------------


def test_topic_warnings_show_while_recording_and_clear(screen, clock):
    screen.on_event('start', 'ep-7')
    screen.on_diagnostics(recording_diag('ep-7', 1, ('/joint_states', ERROR, 'silent for more than 1 s'),
                                         ('/wrist/wrench', WARN, '3 sample(s) lost in the last period'),
                                         ('/teleop/command', OK, '100 received')))
    shown = text(screen)
    assert '! ERROR /joint_states: silent for more than 1 s' in shown
    assert '! WARN  /wrist/wrench: 3 sample(s) lost in the last period' in shown
    assert shown.index('/joint_states') < shown.index('/wrist/wrench')  # worst first
    assert '/teleop/command' not in shown
    screen.on_diagnostics(recording_diag('ep-7', 2, ('/joint_states', OK, '500 received')))
    assert '/joint_states' not in text(screen) and '/wrist/wrench' in text(screen)
    clock.t += TOPIC_HOLD_S + 0.1  # no longer reported: the recorder moved on or went away
    assert '/wrist/wrench' not in text(screen)


def test_topic_statuses_between_episodes_are_not_warnings(screen):
    """The recorder keeps reporting the last episode's topics as silent while idle."""
    screen.on_diagnostics([('robodata recorder', OK, 'idle'),
                           ('robodata recorder: /joint_states', ERROR, 'silent for more than 1 s')])
    assert '!' not in text(screen)
    screen.on_event('start', 'ep-8')  # an idle array that overtook the START event is still idle
    screen.on_diagnostics([('robodata recorder', OK, 'idle'),
                           ('robodata recorder: /joint_states', ERROR, 'silent for more than 1 s')])
    assert '!' not in text(screen) and 'REC  ep-8' in text(screen)


def test_recorder_notices_stay_for_a_while(screen, clock):
    screen.on_diagnostics([('robodata recorder', ERROR, 'storage error while recording episode ep-9: No space')])
    screen.on_diagnostics([('robodata recorder', OK, 'idle'), ('other node', ERROR, 'not ours')])
    shown = text(screen)
    assert '! ERROR recorder: storage error while recording episode ep-9: No space' in shown
    assert 'not ours' not in shown
    clock.t += 20
    assert 'storage error' not in text(screen)


def test_diagnostics_resync_a_screen_that_missed_events(screen, clock):
    screen.on_diagnostics(recording_diag('ep-10', 42))
    assert screen.episode is None  # one message may have overtaken the START event
    screen.on_diagnostics(recording_diag('ep-10', 43))
    assert 'REC  ep-10  00:43' in text(screen)
    screen.on_diagnostics([('robodata recorder', OK, 'idle')])
    screen.on_diagnostics([('robodata recorder', OK, 'idle')])
    assert screen.episode is None and 'last episode: ep-10' in text(screen)


def test_diagnostics_correct_a_duration_from_a_foreign_clock(screen, clock):
    screen.on_event('start', 'ep-11', age_s=None)  # a simulated-time stamp: age unknown
    screen.on_diagnostics(recording_diag('ep-11', 30))
    assert 'REC  ep-11  00:30' in text(screen)
    clock.t += 1
    screen.on_diagnostics(recording_diag('ep-11', 30))  # within the rounding: no jump back
    assert '00:31' in text(screen)


def test_quality_warnings(screen, clock):
    screen.on_quality('blur', '/camera/wrist/image_raw', WARN, 'wrist camera blurred (sharpness 12 < 40)', 'ep')
    screen.on_quality('rate', '/joint_states', STALE, '')
    shown = text(screen)
    assert '! WARN  quality blur: wrist camera blurred (sharpness 12 < 40)' in shown
    assert '! STALE quality rate: rate on /joint_states' in shown
    screen.on_quality('blur', '/camera/wrist/image_raw', OK, 'sharp again')
    assert 'blur' not in text(screen)
    clock.t += QUALITY_HOLD_S + 0.1
    assert 'quality' not in text(screen)


def test_the_monitors_summary_is_one_line_under_the_episode(screen, clock):
    screen.on_event('start', 'ep-7')
    screen.on_quality('summary', '', ERROR, 'quality: 1 error(s): motion.nan on /joint_states')
    lines = screen.render()
    assert lines.index('quality: 1 error(s): motion.nan on /joint_states') == 2  # right under the REC line
    assert not any(line.startswith('!') and 'summary' in line for line in lines)
    clock.t += QUALITY_HOLD_S + 0.1  # a monitor that stopped talking is not shown as if it were current
    assert 'quality:' not in text(screen)


def test_one_silent_topic_is_one_line_whoever_reports_it_and_goes_when_it_comes_back(screen, clock):
    """The recorder's per-topic diagnostics and the quality monitor both judge silence: the operator sees one line."""
    screen.on_event('start', 'ep-13')
    screen.on_diagnostics(recording_diag('ep-13', 3, ('/camera/scene/image_raw', ERROR, 'silent for 1.4 s')))
    screen.on_quality('timing.silent', '/camera/scene/image_raw', ERROR, '/camera/scene/image_raw silent for 1.6 s')
    screen.on_quality('summary', '', ERROR, 'quality: 1 error(s): /camera/scene/image_raw silent for 1.6 s')
    warnings = [line for line in screen.render() if line.startswith('!')]
    assert len(warnings) == 1 and 'silent for 1.6 s' in warnings[0]
    clock.t += 1
    screen.on_diagnostics(recording_diag('ep-13', 4, ('/camera/scene/image_raw', OK, '12 received')))
    assert not [line for line in screen.render() if line.startswith('!')]
    screen.on_quality('summary', '', OK, 'quality OK')  # the monitor agrees at its next update
    assert not [line for line in screen.render() if line.startswith('!')]


def test_a_quality_problem_the_monitor_stops_reporting_clears_at_its_next_summary(screen, clock):
    screen.on_event('start', 'ep-14')
    screen.on_quality('image.blur', '/camera/wrist/image_raw', WARN, 'blur on /camera/wrist/image_raw')
    screen.on_quality('motion.jerk', '/joint_states', WARN, 'jerk on /joint_states')
    screen.on_quality('summary', '', WARN, 'quality: 2 warning(s): blur on /camera/wrist/image_raw')
    assert 'blur' in text(screen) and 'jerk' in text(screen)
    clock.t += 1
    screen.on_quality('motion.jerk', '/joint_states', WARN, 'jerk on /joint_states')
    screen.on_quality('summary', '', WARN, 'quality: 1 warning(s): jerk on /joint_states')
    warnings = [line for line in screen.render() if line.startswith('!')]
    assert warnings == ['! WARN  quality motion.jerk: jerk on /joint_states']  # not 10 s of a cleared blur


def test_refusals_cannot_be_read_as_an_outcome_and_a_press_in_a_burst_stays_visible(screen):
    assert screen.press('f') == Request('outcome', 'failure')
    screen.on_reply('outcome', False, 'no episode recorded yet to take an outcome', '', 'failure')
    assert '> outcome failure not set: no episode recorded yet to take an outcome' in text(screen)
    assert 'failed' not in text(screen)
    assert screen.press(' ') == Request('start')
    assert screen.press(' ') is None  # the second press of a double press, in the same burst
    screen.on_reply('start', True, '', 'ep-15')
    shown = text(screen)
    assert '> still waiting for the recorder to answer start: toggle ignored' in shown
    assert '> started ep-15' in shown
    assert screen.press(' ') == Request('stop')
    screen.on_reply('stop', False, 'episode started 0.1 s ago (a double press? the shortest is 1 s): stop again to '
                    'end it')
    assert '> not stopped: episode started 0.1 s ago (a double press?' in text(screen)
    assert 'REC  ep-15' in text(screen)


def test_many_warnings_are_summarised(screen):
    screen.on_event('start', 'ep-12')
    topics = [(f'/t{i}', ERROR, 'silent for more than 1 s') for i in range(9)]
    screen.on_diagnostics(recording_diag('ep-12', 1, *topics))
    lines = [line for line in screen.render() if line.startswith('!')]
    assert len(lines) == 7 and lines[-1] == '! ... and 3 more'


# -- text on a terminal ----------------------------------------------------------------------------


def test_the_screen_fits_an_80_column_terminal(screen):
    assert len(HELP) < 80
    assert screen.render()[-1] == HELP


def test_format_duration():
    assert [format_duration(s) for s in (0, 59.9, 61, 3599, 3600, 36061, -3)] == [
        '00:00', '00:59', '01:01', '59:59', '1:00:00', '10:01:01', '00:00']


def test_redraw_replaces_the_previous_lines_in_place():
    first = redraw(['a', 'b', 'c'], 0, 80)
    assert first == '\r\x1b[2Ka\n\r\x1b[2Kb\n\r\x1b[2Kc\n'
    second = redraw(['x' * 100], 3, 20)
    assert second.startswith('\x1b[3A\r\x1b[2K' + 'x' * 19 + '\n')
    assert second.count('\r\x1b[2K\n') == 2 and second.endswith('\x1b[2A')


def test_long_lines_wrap_onto_indented_lines_instead_of_being_cut():
    message = '> not stopped: episode started 0.1 s ago (a double press? the shortest is 1 s): stop again to end it'
    lines = fit(['REC  ep-1', message], 60)
    assert lines[0] == 'REC  ep-1' and len(lines) == 3 and all(len(line) < 60 for line in lines)
    assert ' '.join(line.strip() for line in lines[1:]) == message and lines[2].startswith('    ')


def test_core_and_cli_load_without_rclpy():
    code = ('import sys, ros_robodata.record.keys_screen, ros_robodata.cli.main as m; '
            'm.build_parser().parse_args(["keys", "--recorder", "/r"]); print("rclpy" in sys.modules)')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == 'False'


# -- real processes --------------------------------------------------------------------------------


def ros_env() -> dict[str, str]:
    return rig_env(new_domain())


def stop(proc: subprocess.Popen, sig: int = signal.SIGKILL, timeout: float = 10.0) -> None:
    stop_process(proc, sig, timeout)


class Output:
    """A child's stdout collected on a thread, so the test can wait for a line without blocking."""

    def __init__(self, stream) -> None:
        self.text = ''
        self._lock = threading.Lock()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream) -> None:
        for chunk in iter(lambda: stream.read1(4096), b''):
            with self._lock:
                self.text += chunk.decode('utf-8', 'replace')

    def wait_for(self, needle: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if needle in self.text:
                    return
            time.sleep(0.05)
        raise AssertionError(f'no {needle!r} within {timeout} s in:\n{self.text[-2000:]}')


def test_keys_drive_a_real_recorder_through_a_pipe(tmp_path):
    from ros_robodata.bag.reader import BagReader
    from ros_robodata.dataset import Dataset

    env = ros_env()
    log = open(tmp_path / 'recorder.log', 'w')  # noqa: SIM115 - closed in finally
    procs: list[subprocess.Popen] = []
    try:
        recorder = subprocess.Popen(
            [sys.executable, '-m', 'ros_robodata.nodes.recorder_node', '--ros-args', '-p',
             f'profile:={ROOT}/config/sim_cell.yaml', '-p', f'dataset:={tmp_path}/ds'],
            env=env, stdout=log, stderr=subprocess.STDOUT)
        procs.append(recorder)
        procs.append(subprocess.Popen(
            [sys.executable, str(ROOT / 'bench' / 'rig_load.py'), '--seconds', '15', '--cameras', '0',
             '--lidar-points', '0'], env=env, stdout=subprocess.DEVNULL, stderr=log))
        keys = subprocess.Popen([sys.executable, '-m', 'ros_robodata.cli.main', 'keys'], env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        procs.append(keys)
        out = Output(keys.stdout)
        out.wait_for('recorder /recorder ready', 20)
        keys.stdin.write(b' ')
        keys.stdin.flush()
        out.wait_for('REC  ', 5)
        time.sleep(2)
        keys.stdin.write(b's ')
        keys.stdin.flush()
        keys.stdin.write(b'q')
        keys.stdin.close()
        assert keys.wait(15) == 0, out.text
        stop(recorder, signal.SIGINT, 15)
        assert recorder.returncode == 0, (tmp_path / 'recorder.log').read_text()
    finally:
        for proc in procs[:1]:
            stop(proc, signal.SIGINT)
        for proc in procs[1:]:
            stop(proc)
        log.close()

    dataset = Dataset.open(tmp_path / 'ds')
    (episode_id,) = dataset.episode_ids()
    episode = dataset.episode(episode_id)
    assert (episode.outcome, episode.status) == ('success', 'complete')
    with BagReader(dataset.bag_dir(episode_id)) as bag:
        assert bag.topics['/joint_states'].count > 100
    assert f'> stopped {episode_id} (complete)' in out.text
    assert f'last outcome: success ({episode_id})' in out.text
    assert 'still recording' not in out.text


@pytest.mark.parametrize('how', ['q', 'SIGINT'])
def test_keys_on_a_terminal_use_cbreak_mode_and_restore_it(how):
    master, slave = pty.openpty()
    before = termios.tcgetattr(slave)
    keys = subprocess.Popen([sys.executable, '-m', 'ros_robodata.cli.main', 'keys', '--recorder', 'absent'],
                            env=ros_env(), stdin=slave, stdout=slave, stderr=slave)
    seen = b''
    try:
        deadline = time.monotonic() + 15
        while b'waiting for recorder' not in seen and time.monotonic() < deadline:
            if select.select([master], [], [], 0.1)[0]:
                seen += os.read(master, 4096)
        assert b'\x1b[2Krobodata keys: recorder absent (waiting for recorder...)' in seen, seen
        assert not termios.tcgetattr(slave)[3] & (termios.ICANON | termios.ECHO)  # one key at a time, no echo
        os.write(master, b' ')
        if how == 'q':
            os.write(master, b'q')
        else:
            time.sleep(0.5)
            keys.send_signal(signal.SIGINT)
        try:
            code = keys.wait(10)
        except subprocess.TimeoutExpired:
            raise AssertionError(f'keys did not exit: {signal_state(keys.pid)}') from None
        assert code == (0 if how == 'q' else 130)
        while select.select([master], [], [], 0.1)[0]:
            seen += os.read(master, 4096)
        assert b'not available yet: toggle ignored' in seen
        assert b'Traceback' not in seen
        assert termios.tcgetattr(slave) == before
    finally:
        stop(keys)
        os.close(master)
        os.close(slave)


def test_a_bad_recorder_name_is_one_line():
    done = subprocess.run([sys.executable, '-m', 'ros_robodata.cli.main', 'keys', '--recorder', 'bad name!'],
                          env=ros_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1
    assert done.stderr.startswith("robodata keys: error: parameter `recorder`: 'bad name!' is not a valid node name")
    assert len(done.stderr.strip().splitlines()) == 1


def test_the_disk_room_is_on_screen_and_a_disk_running_out_is_a_warning(screen):
    """The operator sees the free space in recording time; when it runs low it is a warning, and it clears when
    space is freed."""
    screen.on_diagnostics([('robodata recorder', OK, 'idle'),
                           (DISK_STATUS, OK, '812.0 MiB free, about 7 min of recording at 2.0 MiB/s')])
    assert 'disk: 812.0 MiB free, about 7 min of recording at 2.0 MiB/s' in text(screen) and '!' not in text(screen)
    screen.on_diagnostics([('robodata recorder', OK, 'idle'),
                           (DISK_STATUS, WARN, 'disk nearly full: 150.0 MiB free, about 75 s of recording')])
    shown = text(screen)
    assert '! WARN  recorder: disk nearly full: 150.0 MiB free, about 75 s of recording' in shown
    assert 'disk: 812.0' not in shown
    screen.on_diagnostics([('robodata recorder', OK, 'idle'), (DISK_STATUS, OK, '2.0 GiB free')])
    assert '!' not in text(screen)
