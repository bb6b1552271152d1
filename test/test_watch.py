"""Fleet intake left running: recordings arriving as they really arrive, into `robodata import --watch`.

The bags are real rosbag2 recordings (test/data/rosbag2, written by rosbag2's own MCAP writer) and ours; they
arrive in bursts with pauses longer than --settle, without metadata.yaml, cut short by a killed recorder and
later whole, while the watcher is killed and restarted, while the watched folder goes away and comes back.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ros_robodata.bag.reader import BagReader
from ros_robodata.bag.writer import BagWriter
from ros_robodata.dataset import Dataset
from ros_robodata.dataset.arrivals import mcap_is_whole
from ros_robodata.dataset.audit import read_audit
from ros_robodata.dataset.importers import ImportOptions
from ros_robodata.dataset.watch import Watcher
from test.processes import without_permission_override
from test.rig_logs import T0_NS, bag_counts

ROSBAG2 = Path(__file__).resolve().parent / 'data' / 'rosbag2' / 'mcap'
TALKER = ROSBAG2 / 'talker' / 'talker.mcap'  # rosbag2_storage_mcap, 20 messages on /topic and /rosout


class Clock:
    """The watcher's time, moved by the test (a poll at +10 s without sleeping 10 s)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def later(self, seconds: float) -> float:
        self.now += seconds
        return self.now


def watcher_for(inbox: Path, dataset: Dataset, notes: list[str] | None = None, **options: Any) -> Watcher:
    say = (lambda path, text: notes.append(f'{path.name}: {text}')) if notes is not None else (lambda _p, _t: None)
    return Watcher(inbox, dataset, ImportOptions(), on_note=say, **{'settle_s': 3.0, **options})


def test_a_real_rosbag2_file_is_whole_only_once_its_footer_is_written(tmp_path):
    data = TALKER.read_bytes()
    assert mcap_is_whole(TALKER)
    for cut in (0, 100, len(data) // 2, len(data) - 9, len(data) - 1):
        (tmp_path / 'part.mcap').write_bytes(data[:cut])
        assert not mcap_is_whole(tmp_path / 'part.mcap'), cut


def test_a_bag_folder_written_in_bursts_without_metadata_is_never_taken_early(tmp_path):
    """The issue's case: `run_c/talker.mcap` unchanged for longer than --settle between bursts, metadata.yaml 5 s
    after the last byte. Taken once, whole, named after its folder."""
    inbox, clock, notes = tmp_path / 'inbox', Clock(), []
    (inbox / 'run_c').mkdir(parents=True)
    dataset = Dataset.create(tmp_path / 'ds')
    watcher = watcher_for(inbox, dataset, notes)
    data = TALKER.read_bytes()
    target = inbox / 'run_c' / 'talker.mcap'
    for burst in range(1, 5):
        target.write_bytes(data[: len(data) * burst // 5])
        for pause in (0.0, 10.0, 10.0):  # the writer pauses 20 s: longer than --settle 3 s
            assert watcher.poll(clock.later(pause)) == []
    assert dataset.episode_ids() == []
    assert any('run_c: waiting: talker.mcap has no footer yet' in note for note in notes), notes
    target.write_bytes(data)
    watcher.poll(clock.later(1))
    imported = watcher.poll(clock.later(4))
    assert [r.episodes for r in imported] == [['run_c']]
    shutil.copy(ROSBAG2 / 'talker' / 'metadata.yaml', inbox / 'run_c')  # rosbag2 writes it last
    watcher.poll(clock.later(1))
    again = watcher.poll(clock.later(4))
    assert [r.existing for r in again] == [['run_c']] and dataset.episode_ids() == ['run_c']
    assert bag_counts(dataset.bag_dir('run_c')) == bag_counts(ROSBAG2 / 'talker')


def test_a_sqlite3_bag_copied_in_pieces_waits_for_its_last_page(tmp_path):
    """A real rosbag2 sqlite3 file without metadata.yaml (an older recorder), copied with a pause longer than
    --settle: a .db3 has no footer, but its header counts its pages."""
    inbox, clock = tmp_path / 'inbox', Clock()
    (inbox / 'old_rig').mkdir(parents=True)
    dataset = Dataset.create(tmp_path / 'ds')
    watcher = watcher_for(inbox, dataset)
    data = (ROSBAG2.parent / 'sqlite3' / 'talker' / 'talker.db3').read_bytes()
    (inbox / 'old_rig' / 'talker.db3').write_bytes(data[: len(data) // 2])
    watcher.poll(clock.now)
    assert watcher.poll(clock.later(10)) == [] and dataset.episode_ids() == []
    (inbox / 'old_rig' / 'talker.db3').write_bytes(data)
    watcher.poll(clock.later(1))
    assert [r.episodes for r in watcher.poll(clock.later(4))] == [['old_rig']]
    assert bag_counts(dataset.bag_dir('old_rig')) == bag_counts(ROSBAG2.parent / 'sqlite3' / 'talker')


def test_a_split_bag_without_metadata_is_one_episode(tmp_path):
    inbox, clock = tmp_path / 'inbox', Clock()
    shutil.copytree(ROSBAG2 / 'multiple_files', inbox / 'multiple_files')
    dataset = Dataset.create(tmp_path / 'ds')
    watcher = watcher_for(inbox, dataset)
    watcher.poll(clock.now)
    assert [r.episodes for r in watcher.poll(clock.later(4))] == [['multiple_files']]
    assert bag_counts(dataset.bag_dir('multiple_files')) == bag_counts(ROSBAG2 / 'multiple_files')


def test_a_recorder_killed_midway_is_salvaged_and_replaced_when_the_whole_bag_arrives(tmp_path):
    """A recording cut short (no footer, never changing again) is taken as it is after --incomplete-after, as an
    incomplete episode; when the whole recording comes (the robot re-uploads it), it replaces that episode under
    the same id, audited, instead of becoming a second episode holding the same data."""
    inbox, clock, notes = tmp_path / 'inbox', Clock(), []
    (inbox / 'run_d').mkdir(parents=True)
    dataset = Dataset.create(tmp_path / 'ds')
    watcher = watcher_for(inbox, dataset, notes, incomplete_after_s=60.0)
    data = TALKER.read_bytes()
    (inbox / 'run_d' / 'talker.mcap').write_bytes(data[: len(data) * 3 // 4])
    watcher.poll(clock.now)
    assert watcher.poll(clock.later(30)) == []
    salvaged = watcher.poll(clock.later(31))
    assert [r.episodes for r in salvaged] == [['run_d']]
    partial = dataset.episode('run_d')
    assert partial.status == 'incomplete' and 0 < dataset.catalog.get('run_d').message_count <= 20
    assert any('taken as it is after 61 s unchanged' in note for note in notes), notes
    dataset.set_outcome('run_d', 'success', who='ana', reason='watched it live')

    shutil.copy(TALKER, inbox / 'run_d_again.mcap')  # the whole recording, uploaded again under another name
    watcher.poll(clock.later(1))
    replaced = watcher.poll(clock.later(4))
    assert [r.episodes for r in replaced] == [['run_d']] and 'replaces it, same id' in ' '.join(replaced[0].notes)
    assert dataset.episode_ids() == ['run_d']
    whole = dataset.episode('run_d')
    assert whole.status == 'complete' and whole.outcome == 'success'  # what people said about it stands
    assert bag_counts(dataset.bag_dir('run_d')) == bag_counts(ROSBAG2 / 'talker')
    entries = [e for e in read_audit(dataset.audit_path) if e['action'] == 'replace_episode']
    assert len(entries) == 1 and entries[0]['replaced_status'] == 'incomplete'
    shutil.copy(TALKER, inbox / 'third_copy.mcap')  # and a third copy is only "already imported"
    watcher.poll(clock.later(1))
    assert [r.existing for r in watcher.poll(clock.later(4))] == [['run_d']]


def test_a_different_recording_with_the_same_start_of_file_layout_is_not_a_replacement(tmp_path):
    """Two recordings of one rig share their MCAP header and schemas: only the first chunk's bytes tell them
    apart, so a partial episode is replaced only by a recording whose first bytes are all the same."""
    inbox, clock = tmp_path / 'inbox', Clock()
    inbox.mkdir()
    dataset = Dataset.create(tmp_path / 'ds')
    watcher = watcher_for(inbox, dataset, incomplete_after_s=10.0)
    first, second = _our_bag(tmp_path / 'a', offset=0), _our_bag(tmp_path / 'b', offset=1)
    (inbox / 'a.mcap').write_bytes(first.read_bytes()[: first.stat().st_size // 2])
    watcher.poll(clock.now)
    watcher.poll(clock.later(11))
    assert dataset.episode('a').status == 'incomplete'
    shutil.copy(second, inbox / 'b.mcap')
    watcher.poll(clock.later(1))
    watcher.poll(clock.later(4))
    assert dataset.episode_ids() == ['a', 'b']


def _our_bag(folder: Path, offset: int) -> Path:
    from test.rig_logs import joint_state

    with BagWriter(folder) as writer:
        writer.add_topic('/joint_states', 'sensor_msgs/msg/JointState')
        for i in range(3000):
            t = T0_NS + offset * 3_000_000 + i * 2_000_000
            writer.write_message('/joint_states', t, joint_state(t, [0.001 * i, 0.0, 0.0]))
    return next(folder.glob('*.mcap'))


def test_the_watched_folder_going_away_and_back_is_said_and_survived(tmp_path):
    inbox, clock, notes = tmp_path / 'inbox', Clock(), []
    inbox.mkdir()
    dataset = Dataset.create(tmp_path / 'ds')
    watcher = watcher_for(inbox, dataset, notes)
    inbox.rename(tmp_path / 'unmounted')
    assert watcher.poll(clock.now) == [] and watcher.poll(clock.later(5)) == []
    (tmp_path / 'unmounted').rename(inbox)
    shutil.copytree(ROSBAG2 / 'talker', inbox / 'talker')
    watcher.poll(clock.later(1))
    assert [r.episodes for r in watcher.poll(clock.later(1))] == [['talker']]
    assert notes == ['inbox: the watched folder is gone (an unmounted share?): waiting for it to come back',
                     'inbox: the watched folder is back: watching it again']


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith('{')]


def _wait_for(what: Any, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not what():
        if time.monotonic() > deadline:
            raise AssertionError('still waiting')
        time.sleep(0.05)


def test_the_command_line_watcher_reports_json_lines_and_retries_what_it_cannot_read(tmp_path):
    """--json gives one event per line for a supervisor; a folder it may not read is one note (not a crash) and
    its bag is imported once it can be read; SIGTERM stops it with a `stopped` event."""
    inbox = tmp_path / 'inbox'
    shutil.copytree(ROSBAG2 / 'talker', inbox / 'good' / 'talker')
    shutil.copytree(ROSBAG2 / 'convert_b', inbox / 'locked' / 'convert_b')
    (inbox / 'locked').chmod(0o000)
    out = tmp_path / 'events.jsonl'
    with out.open('w') as sink:
        process = subprocess.Popen(
            [sys.executable, '-m', 'ros_robodata.cli.main', 'import', '--watch', str(inbox), '--dataset',
             str(tmp_path / 'ds'), '--interval', '200ms', '--settle', '300ms', '--json'],
            stdout=sink, stderr=subprocess.PIPE, text=True, preexec_fn=without_permission_override())
    try:
        _wait_for(lambda: any(e['event'] == 'imported' for e in _events(out)))
        _wait_for(lambda: any(e['event'] == 'note' and 'cannot read' in e['note'] for e in _events(out)))
        (inbox / 'locked').chmod(0o755)
        _wait_for(lambda: sum(e['event'] == 'imported' for e in _events(out)) == 2)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    finally:
        (inbox / 'locked').chmod(0o755)
        process.kill()
    events = _events(out)
    assert process.returncode == 0 and err == '', err  # nothing failed: no error line
    assert events[0]['event'] == 'watching' and events[-1] == {'event': 'stopped', 'imported': 2,
                                                               'seconds': events[-1]['seconds']}
    notes = [e for e in events if e['event'] == 'note']
    assert len(notes) == 1 and notes[0]['path'] == str(inbox / 'locked'), notes  # said once, not every scan
    assert sorted(e['episodes'][0] for e in events if e['event'] == 'imported') == ['convert_b', 'talker']
    assert len(out.read_text().splitlines()) == len(events)  # every line is one event


def _big_bag(folder: Path) -> dict[str, int]:
    """A bag large enough (about 120 MB) that importing it takes a moment to kill."""
    with BagWriter(folder, compression='none') as writer:
        writer.add_topic('/camera/image/compressed', 'sensor_msgs/msg/CompressedImage')
        from ros_robodata.bag.types import typestore

        store = typestore()
        image = store.types['sensor_msgs/msg/CompressedImage']
        header = store.types['std_msgs/msg/Header']
        stamp = store.types['builtin_interfaces/msg/Time']
        payload = os.urandom(600_000)
        import numpy as np

        for i in range(200):
            t = T0_NS + i * 33_000_000
            writer.write_message('/camera/image/compressed', t, image(
                header(stamp(t // 10**9, t % 10**9), 'camera'), 'jpeg', np.frombuffer(payload, dtype=np.uint8)))
    return {'/camera/image/compressed': 200}


def test_a_watcher_killed_mid_import_and_restarted_imports_once_and_leaves_nothing_half_made(tmp_path):
    inbox = tmp_path / 'inbox'
    inbox.mkdir()
    counts = _big_bag(tmp_path / 'shift_7')
    dataset_root = tmp_path / 'ds'
    command = [sys.executable, '-m', 'ros_robodata.cli.main', 'import', '--watch', str(inbox), '--dataset',
               str(dataset_root), '--interval', '100ms', '--settle', '200ms', '--json']
    first = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: (dataset_root / 'dataset.yaml').exists())
        shutil.copytree(tmp_path / 'shift_7', inbox / 'shift_7')
        _wait_for(lambda: any((dataset_root / 'episodes').glob('.*.importing')), seconds=60)
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=30)
    finally:
        first.kill()
    assert not (dataset_root / 'episodes' / 'shift_7' / 'episode.yaml').exists()  # killed before it was whole
    out = tmp_path / 'restart.jsonl'
    with out.open('w') as sink:
        second = subprocess.Popen(command, stdout=sink, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: any(e['event'] == 'imported' for e in _events(out)))
        second.send_signal(signal.SIGTERM)
        second.communicate(timeout=30)
    finally:
        second.kill()
    dataset = Dataset.open(dataset_root)
    assert dataset.episode_ids() == ['shift_7']
    assert bag_counts(dataset.bag_dir('shift_7')) == counts
    assert not [p for p in (dataset_root / 'episodes').iterdir() if p.name.startswith('.') and p.is_dir()]
    with BagReader(dataset.bag_dir('shift_7')) as bag:
        assert bag.complete


def test_watch_options_that_make_no_sense_are_one_line(tmp_path, capsys):
    from ros_robodata.cli.main import main

    (tmp_path / 'inbox').mkdir()
    base = ['import', '--watch', str(tmp_path / 'inbox'), '--dataset', str(tmp_path / 'ds')]
    assert main([*base, '--settle', '30s', '--incomplete-after', '10s']) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ['robodata import: error: --incomplete-after 10s: shorter than --settle 30s: a finished recording '
                   'would be taken as unfinished']
    assert main([*base, '--incomplete-after', 'soon']) == 1
    assert capsys.readouterr().err.startswith('robodata import: error: --incomplete-after')
    assert not (tmp_path / 'ds').exists()
