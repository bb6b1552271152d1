"""The episode recorder without ROS: exactly which messages land in which episode, and what is reported."""

from __future__ import annotations

import re
import struct
import threading
import time

import pytest

from ros_robodata.bag.reader import BagReader
from ros_robodata.dataset import Dataset
from ros_robodata.dataset.verify import verify_dataset
from ros_robodata.errors import RecorderError
from ros_robodata.profile import load_profile
from ros_robodata.record.recorder import EpisodeRecorder, RecorderSettings

PROFILE = load_profile('config/sim_cell.yaml')


class FakeClock:
    """Receive time under the test's control (the node passes ROS time the same way)."""

    def __init__(self, t_ns: int = 1_000_000_000_000) -> None:
        self.t_ns = t_ns

    def __call__(self) -> int:
        return self.t_ns


def cdr_header_msg(stamp_ns: int, seq: int) -> bytes:
    """A std_msgs/String-like CDR payload whose first bytes are a header stamp (JointState layout)."""
    sec, nsec = divmod(stamp_ns, 1_000_000_000)
    return b'\x00\x01\x00\x00' + struct.pack('<iI', sec, nsec) + struct.pack('<I', 4) + b'seq' + bytes([seq % 256])


def recorder(tmp_path, clock=None, **overrides) -> EpisodeRecorder:
    """A recorder whose episodes may be as short as a test needs (the double-press guard has its own test)."""
    overrides.setdefault('min_episode_s', 0.0)
    dataset = Dataset.create(tmp_path / 'ds', profile=PROFILE)
    settings = RecorderSettings.from_profile(PROFILE, task='pick', operator='ana', **overrides)
    rec = EpisodeRecorder(dataset, settings, clock_ns=clock or time.time_ns)
    return rec


def string_msg(text: str) -> bytes:
    data = text.encode() + b'\x00'
    return b'\x00\x01\x00\x00' + struct.pack('<I', len(data)) + data


def bag_strings(dataset: Dataset, episode_id: str, topic: str) -> list[str]:
    with BagReader(dataset.bag_dir(episode_id)) as bag:
        return [msg.data for _, msg in bag.read([topic])]


def test_pre_roll_keeps_the_seconds_before_start_and_nothing_older(tmp_path):
    clock = FakeClock()
    rec = recorder(tmp_path, clock, pre_roll_s=2.0)
    try:
        rec.add_topic('/chatter', 'std_msgs/msg/String')
        t0 = clock.t_ns
        for i in range(50):  # one message every 100 ms for 5 s before the key press
            rec.on_message('/chatter', string_msg(f'before {i}'), t0 + i * 100_000_000)
        clock.t_ns = t0 + 49 * 100_000_000 + 50_000_000
        episode = rec.start()
        rec.on_message('/chatter', string_msg('during'), clock.t_ns + 1)
        rec.stop()
        got = bag_strings(rec.dataset, episode.id, '/chatter')
    finally:
        rec.close()
    # 2 s before the press at 4.95 s: messages at 2.95 .. 4.9 s (i = 30 .. 49)
    assert got == [f'before {i}' for i in range(30, 50)] + ['during']
    saved = rec.dataset.episode(episode.id)
    assert saved.start_ns == t0 + 30 * 100_000_000 and saved.marked_start_ns == clock.t_ns


def test_back_to_back_episodes_share_no_message_and_lose_none(tmp_path):
    rec = recorder(tmp_path, pre_roll_s=0.0)
    rec.add_topic('/chatter', 'std_msgs/msg/String')
    sent: list[str] = []
    running = threading.Event()
    running.set()

    def publish():
        i = 0
        while running.is_set():
            text = f'm{i}'
            rec.on_message('/chatter', string_msg(text), time.time_ns())
            sent.append(text)
            i += 1
            if i % 50 == 0:
                time.sleep(0.001)

    thread = threading.Thread(target=publish)
    thread.start()
    episodes = []
    try:
        for _ in range(3):
            time.sleep(0.05)
            episodes.append(rec.start().id)
            time.sleep(0.1)
            rec.stop()
    finally:
        running.clear()
        thread.join()
        rec.close()
    per_episode = [bag_strings(rec.dataset, e, '/chatter') for e in episodes]
    seen = [text for texts in per_episode for text in texts]
    assert all(per_episode), 'every episode got messages'
    assert len(seen) == len(set(seen)), 'no message in two episodes'
    for texts in per_episode:  # each episode is one unbroken run of the stream: nothing lost inside
        first, last = int(texts[0][1:]), int(texts[-1][1:])
        assert texts == [f'm{i}' for i in range(first, last + 1)]


def test_latched_topic_is_repeated_into_every_episode(tmp_path):
    rec = recorder(tmp_path)
    try:
        rec.add_topic('/robot_description', 'std_msgs/msg/String', latched=True)
        rec.add_topic('/chatter', 'std_msgs/msg/String')
        rec.on_message('/robot_description', string_msg('<robot/>'), time.time_ns())
        ids = []
        for n in range(2):
            ids.append(rec.start().id)
            rec.on_message('/chatter', string_msg(f'x{n}'), time.time_ns())
            rec.stop()
    finally:
        rec.close()
    for episode_id in ids:
        assert bag_strings(rec.dataset, episode_id, '/robot_description') == ['<robot/>']
        with BagReader(rec.dataset.bag_dir(episode_id)) as bag:
            assert bag.topics['/robot_description'].latched
            first = next(iter(bag.messages()))
            assert first.topic == '/robot_description'  # the rig's fixed facts come first


def test_outcome_discard_and_commands_that_make_no_sense(tmp_path):
    rec = recorder(tmp_path)
    try:
        with pytest.raises(RecorderError, match='no episode is recording'):
            rec.stop()
        with pytest.raises(RecorderError, match='nothing to discard'):
            rec.discard()
        first = rec.start()
        with pytest.raises(RecorderError, match='is recording; stop it first'):
            rec.start()
        assert rec.set_outcome('failure').outcome == 'failure'  # during the episode
        rec.stop()
        assert rec.set_outcome('recovery', 'regrasped after slip').outcome == 'recovery'  # the last one
        with pytest.raises(RecorderError, match='not one of'):
            rec.set_outcome('great')
        second = rec.start()
        rec.discard()
    finally:
        rec.close()
    ds = rec.dataset
    one, two = ds.episode(first.id), ds.episode(second.id)
    assert (one.outcome, one.status) == ('recovery', 'complete') and 'regrasped' in one.notes
    assert two.status == 'discarded' and ds.bag_files(second.id), 'discarded episodes stay on disk'
    assert verify_dataset(ds) == []
    actions = [(e['action'], e.get('new')) for e in __import__('ros_robodata.dataset.audit', fromlist=['x'])
               .read_audit(ds.audit_path)]
    assert ('set_outcome', 'failure') in actions and ('set_outcome', 'recovery') in actions


def test_delete_discarded_removes_the_episode(tmp_path):
    rec = recorder(tmp_path, delete_discarded=True)
    try:
        kept = rec.start().id
        rec.stop()
        rec.start()
        rec.discard()
    finally:
        rec.close()
    assert rec.dataset.episode_ids() == [kept]
    assert [row.id for row in rec.dataset.list()] == [kept]


def test_max_episode_duration_auto_stops_with_a_warning(tmp_path):
    warnings: list[str] = []
    dataset = Dataset.create(tmp_path / 'ds', profile=PROFILE)
    rec = EpisodeRecorder(dataset, RecorderSettings.from_profile(PROFILE, max_episode_s=0.3),
                          on_warning=warnings.append)
    try:
        episode = rec.start()
        time.sleep(0.8)
        assert rec.recording is None
    finally:
        rec.close()
    saved = dataset.episode(episode.id)
    assert saved.status == 'complete' and 'auto-stopped' in saved.notes
    assert any('auto-stopped after max_episode_s=0.3' in w for w in warnings)


def test_a_stop_right_after_start_is_a_double_press_and_is_refused(tmp_path):
    rec = recorder(tmp_path, min_episode_s=0.5)
    try:
        episode = rec.start()
        with pytest.raises(RecorderError, match=r'double press.*stop again to end it'):
            rec.stop()
        assert rec.recording is not None and rec.recording.id == episode.id   # still recording
        time.sleep(0.6)
        stopped = rec.stop()
        assert stopped.id == episode.id
        second = rec.start()
        rec.discard()                                     # discarding a fresh episode is never refused
    finally:
        rec.close()
    assert rec.dataset.episode(episode.id).status == 'complete'
    assert rec.dataset.episode(second.id).status == 'discarded'


def test_loss_is_counted_from_header_stamp_gaps(tmp_path):
    rec = recorder(tmp_path, pre_roll_s=0.0)
    try:
        rec.add_topic('/joint_states', 'sensor_msgs/msg/JointState', expected_rate_hz=100.0)
        episode = rec.start()
        t = time.time_ns()
        period = 10_000_000
        seqs = [s for s in range(200) if not (50 <= s < 57) and s != 120]  # 7 + 1 samples never arrive
        for s in seqs:
            rec.on_message('/joint_states', cdr_header_msg(t + s * period, s), t + s * period + 1_000_000)
        rec.stop()
    finally:
        rec.close()
    saved = rec.dataset.episode(episode.id)
    assert saved.loss['topics']['/joint_states']['missing_by_stamp'] == 8
    assert saved.loss['topics']['/joint_states']['gaps'] == 2
    # where: seconds after the episode's first stamp, the last sample before each gap and the first after it
    assert saved.loss['topics']['/joint_states']['gaps_at'] == [
        {'after_s': 0.49, 'before_s': 0.57, 'missing': 7}, {'after_s': 1.19, 'before_s': 1.21, 'missing': 1}]
    assert saved.loss['total_lost'] == 8
    assert saved.topics['/joint_states']['count'] == len(seqs)
    assert saved.loss['topics']['/joint_states']['latency_ms_mean'] == pytest.approx(1.0, abs=0.01)


def test_close_while_recording_marks_the_episode_interrupted(tmp_path):
    rec = recorder(tmp_path)
    rec.add_topic('/chatter', 'std_msgs/msg/String')
    episode = rec.start()
    rec.on_message('/chatter', string_msg('hello'), time.time_ns())
    closed = rec.close('interrupted')
    assert closed is not None and closed.id == episode.id
    saved = rec.dataset.episode(episode.id)
    assert saved.status == 'interrupted'
    assert bag_strings(rec.dataset, episode.id, '/chatter') == ['hello']
    assert verify_dataset(rec.dataset) == []


DISK_FULL_SCRIPT = r'''
import json, resource, signal, sys, time
from ros_robodata.dataset import Dataset
from ros_robodata.profile import load_profile
from ros_robodata.record.recorder import EpisodeRecorder, RecorderSettings
profile = load_profile('config/sim_cell.yaml')
dataset = Dataset.create(sys.argv[1], profile=profile)
warnings = []
rec = EpisodeRecorder(dataset, RecorderSettings.from_profile(profile, compression='none', flush_interval_s=0.1,
                                                                       pre_roll_s=0.0, min_episode_s=0.0),
                      on_warning=warnings.append)
rec.add_topic('/camera/wrist/image_raw', 'sensor_msgs/msg/Image')
blob = b'\x00\x01\x00\x00' + bytes(200_000)
first = rec.start()
for _ in range(5):
    rec.on_message('/camera/wrist/image_raw', blob, time.time_ns())
rec.stop()
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)          # a write past the limit fails like a full disk
resource.setrlimit(resource.RLIMIT_FSIZE, (3_000_000, 3_000_000))
second = rec.start()
for _ in range(60):                                    # 12 MB: the disk "fills" during the episode
    rec.on_message('/camera/wrist/image_raw', blob, time.time_ns())
    time.sleep(0.005)
time.sleep(0.5)
third = rec.start()                                    # the operator can go on with the next episode
rec.stop()
rec.close()
print(json.dumps({'ids': [first.id, second.id, third.id], 'warnings': warnings}))
'''


def test_disk_full_closes_the_episode_incomplete_and_keeps_everything_before(tmp_path):
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, '-c', DISK_FULL_SCRIPT, str(tmp_path / 'ds')], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    first, second, third = result['ids']
    assert len(result['warnings']) == 1 and 'storage error' in result['warnings'][0]
    dataset = Dataset.open(tmp_path / 'ds')
    assert dataset.episode(first).status == 'complete'
    failed = dataset.episode(second)
    assert failed.status == 'incomplete' and 'storage error' in failed.notes
    assert dataset.episode(third).status == 'complete'
    problems = verify_dataset(dataset)
    assert [p.episode for p in problems] == [second]  # only the failed one: no checksums for it
    with BagReader(dataset.bag_dir(first)) as bag:
        assert bag.complete and bag.message_count == 5
    with BagReader(dataset.bag_dir(second)) as bag:  # what reached the disk is readable
        assert 0 < bag.message_count < 60
    from ros_robodata.dataset.dataset_repair import repair_episode

    report = repair_episode(dataset, second)
    assert report['messages'] > 0
    assert verify_dataset(dataset) == []


def test_intake_never_waits_for_a_stalled_writer_and_what_it_turns_away_is_counted_lost(tmp_path):
    """The node's recorder (the writer in a child process): while the child cannot run (here SIGSTOP; on a rig, a
    busy computer and its lower priority), handing a message on returns at once; once more than queue_max_bytes
    wait, further messages are turned away and show up as dropped_by_recorder in the episode's loss."""
    import os
    import signal

    from ros_robodata.record.writer_process import RecorderProcess

    dataset = Dataset.create(tmp_path / 'ds', profile=PROFILE)
    settings = RecorderSettings.from_profile(PROFILE, task='pick', operator='ana', min_episode_s=0.0,
                                             pre_roll_s=0.0, queue_max_bytes=4 << 20)
    rec = RecorderProcess(dataset.root, settings)
    frame = bytes(1 << 20)  # a camera frame's worth: the pipe holds 64 KiB
    try:
        rec.add_topic('/chatter', 'std_msgs/msg/String')
        rec.add_topic('/frames', 'std_msgs/msg/String')  # any payload: the bag stores bytes
        episode_id = rec.request_start()
        time.sleep(0.5)  # the start has reached the child
        os.kill(rec._process.pid, signal.SIGSTOP)
        try:
            handed = threading.Thread(target=lambda: [rec.on_message('/frames', string_msg('f') + frame, i)
                                                      for i in range(10)])
            handed.start()
            handed.join(5.0)
            assert not handed.is_alive(), 'handing a message on waited for the stopped writer'
        finally:
            os.kill(rec._process.pid, signal.SIGCONT)
        for i in range(5):
            rec.on_message('/chatter', string_msg(f'after {i}'), 100 + i)
        rec.request_stop()
        deadline = time.monotonic() + 20
        while dataset.episode(episode_id).status == 'recording':
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        rec.close()
    episode = Dataset.open(dataset.root).episode(episode_id)
    kept = episode.topics['/frames']['count']
    dropped = episode.loss['topics']['/frames']['dropped_by_recorder']
    assert 3 <= kept <= 4 and kept + dropped == 10  # about 4 MiB waited; the rest was turned away and counted
    assert episode.loss['total_lost'] >= dropped
    assert bag_strings(dataset, episode_id, '/chatter') == [f'after {i}' for i in range(5)]


def test_our_threads_yield_to_the_middleware_and_can_be_told_not_to(monkeypatch):
    """lower_this_thread lowers only the calling thread (the middleware's threads, made earlier, keep theirs)."""
    import os

    from ros_robodata.record import priority

    seen: dict[str, int] = {}

    def lowered(name: str) -> None:
        priority.lower_this_thread(priority.INTAKE_NICENESS)
        seen[name] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    thread = threading.Thread(target=lowered, args=('intake',))
    thread.start()
    thread.join()
    assert seen['intake'] == min(19, priority.BASE + priority.INTAKE_NICENESS)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == priority.BASE  # this thread untouched
    monkeypatch.setenv(priority.NICENESS_ENV, 'off')
    thread = threading.Thread(target=lowered, args=('off',))
    thread.start()
    thread.join()
    assert seen['off'] == priority.BASE


def test_compression_yields_while_the_writer_is_behind_and_the_episode_says_so(tmp_path):
    from ros_robodata.record import recorder as recorder_module

    rec = recorder(tmp_path, pre_roll_s=0.0, flush_interval_s=0.01)
    try:
        rec.add_topic('/chatter', 'std_msgs/msg/String')
        episode = rec.start()
        t = time.time_ns()
        for phase, backlog in enumerate((0, recorder_module.BEHIND_BYTES + 1, 0)):
            rec.upstream_backlog(backlog)  # what the node's sender tells of its outbox
            for i in range(5):
                rec.on_message('/chatter', string_msg(f'{phase} {i} ' * 40), t + phase * 10**9 + i * 10**6)
                time.sleep(0.03)  # a flush (a chunk) after each message
        rec.stop()
    finally:
        rec.close()
    saved = rec.dataset.episode(episode.id)
    assert re.search(r'(\d+) of (\d+) bag chunks stored uncompressed while the writer was behind', saved.notes)
    uncompressed, total = map(int, re.search(r'(\d+) of (\d+) bag chunks', saved.notes).groups())
    assert 0 < uncompressed < total
    assert len(bag_strings(rec.dataset, episode.id, '/chatter')) == 15


def test_the_node_recorder_answers_commands_while_its_writer_cannot_run(tmp_path):
    """A start, stop or outcome is checked and answered in the ROS process, not after the writer process has
    worked through its backlog: with the writer stopped (SIGSTOP) every command still returns, wrong ones are still
    refused there, and once the writer runs again the episodes are what the commands said."""
    import os
    import signal

    from ros_robodata.record.writer_process import RecorderProcess

    dataset = Dataset.create(tmp_path / 'ds', profile=PROFILE)
    settings = RecorderSettings.from_profile(PROFILE, task='pick', operator='ana', min_episode_s=0.0,
                                             pre_roll_s=0.0)
    rec = RecorderProcess(dataset.root, settings)
    answers: list[str] = []
    try:
        rec.add_topic('/chatter', 'std_msgs/msg/String')
        os.kill(rec._process.pid, signal.SIGSTOP)
        try:
            def operator() -> None:
                answers.append(rec.request_start())
                rec.on_message('/chatter', string_msg('in the first'), 1)
                answers.append(rec.request_outcome('success', 'clean pick'))
                answers.append(rec.request_stop())
                answers.append(rec.request_start())
                rec.on_message('/chatter', string_msg('in the second'), 2)
                answers.append(rec.request_discard())

            pressed = threading.Thread(target=operator)
            pressed.start()
            pressed.join(5.0)
            assert not pressed.is_alive(), 'a command waited for the stopped writer'
            with pytest.raises(RecorderError, match='not one of'):
                rec.request_outcome('great')
            with pytest.raises(RecorderError, match='no episode is recording'):
                rec.request_stop()
        finally:
            os.kill(rec._process.pid, signal.SIGCONT)
        first, _, _, second, _ = answers
        assert answers == [first, first, first, second, second] and first != second
        deadline = time.monotonic() + 20
        while not all((dataset.episode_dir(e) / 'episode.yaml').exists() for e in (first, second)) or \
                {dataset.episode(e).status for e in (first, second)} & {'recording'}:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        rec.close()
    reopened = Dataset.open(dataset.root)
    one, two = reopened.episode(first), reopened.episode(second)
    assert (one.status, one.outcome, one.notes) == ('complete', 'success', 'clean pick')
    assert two.status == 'discarded'
    assert bag_strings(reopened, first, '/chatter') == ['in the first']
    assert bag_strings(reopened, second, '/chatter') == ['in the second']


def test_an_episode_the_writer_process_ends_itself_frees_the_next_start(tmp_path):
    from ros_robodata.record.writer_process import RecorderProcess

    dataset = Dataset.create(tmp_path / 'ds', profile=PROFILE)
    settings = RecorderSettings.from_profile(PROFILE, min_episode_s=0.0, max_episode_s=0.3)
    rec = RecorderProcess(dataset.root, settings)
    try:
        rec.add_topic('/chatter', 'std_msgs/msg/String')
        first = rec.request_start()
        deadline = time.monotonic() + 20
        while True:  # auto-stopped by the writer; until the parent hears of it a start is refused
            rec.on_message('/chatter', string_msg('tick'), time.time_ns())  # the writer's clock is the messages'
            try:
                second = rec.request_start()
                break
            except RecorderError as err:
                assert 'is recording' in str(err) and time.monotonic() < deadline
                time.sleep(0.05)
        assert second != first
    finally:
        rec.close()
    # The writer saves the first episode's record after it freed the start (the next pre-roll is not kept
    # waiting for it); once the writer is done, the first is complete and the second closed.
    reopened = Dataset.open(dataset.root)
    assert reopened.episode(first).status == 'complete'
    assert 'auto-stopped after max_episode_s=0.3' in reopened.episode(first).notes
    assert reopened.episode(second).status in ('interrupted', 'complete')  # closed either way, never left recording
