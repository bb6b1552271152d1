"""Storage faults on a real file system: a small tmpfs the test mounts (this machine and CI run as root), not a
mocked errno. A command that meets a full disk says so in one line, leaves no temporary behind and changes no
file that was there."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ros_robodata.cli.main import main
from ros_robodata.dataset import Dataset, Episode
from ros_robodata.profile import load_profile
from ros_robodata.sim.to_bag import write_sim_episode
from test.profiles import PROFILE


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 24 MiB tmpfs, as a user's data disk that can fill up."""
    mount = tmp_path / 'disk'
    mount.mkdir()
    done = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=24m', 'tmpfs', str(mount)], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        reason = f'cannot mount a small file system here ({done.stderr.strip() or done.returncode})'
        if os.geteuid() == 0:  # root can mount a tmpfs (as this project's CI does): a failure is a failure
            pytest.fail(reason)
        pytest.skip(f'{reason}: the storage tests mount a tmpfs and need to run as root')
    try:
        yield mount
    finally:
        subprocess.run(['umount', '-l', str(mount)], check=False)


def _hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob('*')) if p.is_file()}


def _unchanged(before: dict[str, str], after: dict[str, str], *, may_add: tuple[str, ...] = ()) -> bool:
    """Every file that was there holds the same bytes, and nothing was added but `may_add` (SQLite's own side
    files, the import lock: no temporaries, no half-written copies)."""
    added = set(after) - set(before)
    return {k: after.get(k) for k in before} == before and all(a.endswith(may_add) for a in added) if may_add \
        else after == before


def _fill(disk: Path, leave_bytes: int) -> Path:
    """A file that takes the disk's free space down to `leave_bytes`."""
    filler = disk / 'filler'
    free = shutil.disk_usage(disk).free
    with filler.open('wb') as f:
        f.write(b'\0' * max(0, free - leave_bytes))
    return filler


def test_repair_on_a_disk_without_room_says_what_it_needs_and_changes_nothing(
        small_disk: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The episode the recorder closed when the disk filled: `robodata repair` on that disk (too little room for
    the rewrite) says how much it needs and what is free, leaves no half-written copy (which would keep the disk
    full for the next episode) and changes no file; with room again, the same repair makes the bag whole."""
    profile = load_profile(PROFILE)
    dataset = Dataset.create(small_disk / 'ds', profile=profile)
    truth = write_sim_episode(dataset.bag_dir('cut'), profile, seed=1, cameras=True, image_size=(160, 120),
                              max_duration_s=4.0)
    dataset.add_episode(Episode(id='cut', task='pick_cube', status='recording', start_ns=truth['start_ns']))
    (mcap,) = dataset.bag_dir('cut').glob('*.mcap')
    size = mcap.stat().st_size
    assert size > 2 << 20
    with mcap.open('r+b') as f:
        f.truncate(size * 3 // 4)
    (dataset.bag_dir('cut') / 'metadata.yaml').unlink()  # as a recorder killed mid-episode leaves it
    filler = _fill(small_disk, leave_bytes=size // 4)
    before = _hashes(dataset.root)

    code = main(['repair', str(dataset.root)])
    out, err = capsys.readouterr()
    assert err.strip().splitlines() == ['robodata repair: 1 not repairable: cut (the reasons are on stdout)']
    line = next(line for line in out.splitlines() if line.startswith('cut'))
    assert code != 0 and 'needs about' in line and 'MiB free on that disk' in line, out
    assert 'nothing was changed' in line
    assert not list(small_disk.rglob('*.repairing')) and _hashes(dataset.root) == before

    filler.unlink()
    assert main(['repair', str(dataset.root)]) == 0
    episode = Dataset.open(dataset.root).episode('cut')
    assert episode.status == 'incomplete' and sum(int(t['count']) for t in episode.topics.values()) > 0
    assert (dataset.bag_dir('cut') / 'damaged' / mcap.name).stat().st_size == size * 3 // 4


def test_a_full_disk_still_lets_you_read_the_dataset_and_a_change_says_why_not(
        small_disk: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Commands that only read (list, info, report --out on another disk) work on a dataset whose disk is full:
    the catalog is read as it is, without the WAL's side files. A change says the disk is full, in one line, and
    changes nothing."""
    profile = load_profile(PROFILE)
    dataset = Dataset.create(small_disk / 'ds', profile=profile)
    for n, seed in enumerate((1, 2)):
        truth = write_sim_episode(dataset.bag_dir(f'ep{n}'), profile, seed=seed, max_duration_s=4.0)
        dataset.add_episode(Episode(id=f'ep{n}', task='pick_cube', status='complete', outcome='success',
                                    start_ns=truth['start_ns']))
        dataset.record_checksums(f'ep{n}')
    assert main(['score', str(dataset.root)]) == 0
    capsys.readouterr()
    for side in small_disk.glob('ds/catalog.sqlite-*'):
        side.unlink(missing_ok=True)  # as after the last writer closed
    _fill(small_disk, leave_bytes=0)
    before = _hashes(dataset.root)

    assert main(['list', str(dataset.root)]) == 0
    assert 'ep0' in capsys.readouterr().out
    assert main(['report', str(dataset.root), '--out', str(tmp_path / 'report.html')]) == 0
    assert (tmp_path / 'report.html').is_file()
    capsys.readouterr()
    assert main(['set', str(dataset.episode_dir('ep0')), '--outcome', 'failure']) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and 'disk' in err and 'full' in err, err
    assert _unchanged(before, _hashes(dataset.root))  # not even the WAL's side files (a fuzz case found them left)
    assert not [p for p in small_disk.rglob('*') if p.name.startswith('.') and p.name.endswith('.tmp')]


def test_the_recorder_writes_the_episode_a_full_disk_closed_once_there_is_room(small_disk: Path) -> None:
    """The disk fills during an episode so completely that not even its episode.yaml can be written: once space
    is back the recorder writes it by itself (incomplete, not `recording`), and the next episode is complete."""
    import time

    from ros_robodata.record.recorder import EpisodeRecorder, RecorderSettings

    profile = load_profile(PROFILE)
    dataset = Dataset.create(small_disk / 'ds', profile=profile)
    warnings: list[str] = []
    rec = EpisodeRecorder(dataset, RecorderSettings.from_profile(profile, compression='none', flush_interval_s=0.1,
                                                                 pre_roll_s=0.0, min_episode_s=0.0),
                          on_warning=warnings.append)
    rec.add_topic('/camera/wrist/image_raw', 'sensor_msgs/msg/Image')
    blob = b'\x00\x01\x00\x00' + bytes(200_000)
    try:
        first = rec.start()
        filler = _fill(small_disk, leave_bytes=0)
        deadline = time.monotonic() + 20
        while not any('storage error' in w for w in warnings):
            assert time.monotonic() < deadline, warnings
            rec.on_message('/camera/wrist/image_raw', blob, time.time_ns())
            time.sleep(0.01)
        time.sleep(0.5)
        assert Dataset.open(dataset.root).episode(first.id).status == 'recording'  # nothing could be written
        assert any('written as soon as the disk has room again' in w for w in warnings), warnings
        filler.unlink()
        deadline = time.monotonic() + 10
        while Dataset.open(dataset.root).episode(first.id).status == 'recording':
            assert time.monotonic() < deadline, warnings
            time.sleep(0.2)
        assert Dataset.open(dataset.root).episode(first.id).status == 'incomplete'
        second = rec.start()
        rec.on_message('/camera/wrist/image_raw', blob, time.time_ns())
        rec.stop()
    finally:
        rec.close()
    assert Dataset.open(dataset.root).episode(second.id).status == 'complete'


def test_the_recorder_says_how_long_the_disk_lasts_at_the_rigs_own_write_rate(small_disk: Path) -> None:
    """Before anything is recorded only the free space is known; once a camera has been written for a few seconds
    the room is told in recording time, and with less than `recording.disk_warn_s` of it left it is a warning."""
    import time

    from ros_robodata.record.recorder import EpisodeRecorder, RecorderSettings

    profile = load_profile(PROFILE)
    dataset = Dataset.create(small_disk / 'ds', profile=profile)
    settings = RecorderSettings.from_profile(profile, compression='none', flush_interval_s=0.1, pre_roll_s=0.0,
                                             min_episode_s=0.0)
    assert settings.disk_warn_s == 120.0  # the profile's default: two minutes
    rec = EpisodeRecorder(dataset, settings)
    rec.add_topic('/camera/wrist/image_raw', 'sensor_msgs/msg/Image')
    blob = b'\x00\x01\x00\x00' + bytes(100_000)
    try:
        time.sleep(1.2)
        idle = rec.status()
        assert idle is not None and idle['disk']['level'] == 0 and idle['disk']['rate_bps'] is None
        assert idle['disk']['message'].endswith('MiB free'), idle['disk']
        rec.start()
        end = time.monotonic() + 5.5
        while time.monotonic() < end:  # 1 MB/s: the 24 MiB disk holds well under two minutes of it
            rec.on_message('/camera/wrist/image_raw', blob, time.time_ns())
            time.sleep(0.1)
        status = rec.status()
        rec.stop()
        time.sleep(1.2)
        after = rec.status()
    finally:
        rec.close()
    disk = status['disk']
    assert disk['level'] == 1 and disk['message'].startswith('disk nearly full:'), disk
    assert 0.6e6 < disk['rate_bps'] < 1.2e6, disk
    assert 'of recording at' in disk['message'] and disk['seconds_left'] < 120
    assert after['disk']['rate_bps'] == disk['rate_bps']  # kept between episodes: the warning holds while idle
    assert after['disk']['level'] == 1


def test_an_import_into_a_full_disk_is_one_line_and_leaves_nothing(small_disk: Path, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A bag bigger than the room left on the dataset's disk: refused before anything is written, with the space
    it needs and the space free; the dataset as it was (its earlier episode untouched), no staging folder."""
    profile = load_profile(PROFILE)
    source = tmp_path / 'incoming' / 'take_1'
    write_sim_episode(source, profile, seed=1, cameras=True, image_size=(160, 120), max_duration_s=4.0)
    dataset = Dataset.create(small_disk / 'ds', profile=profile)
    truth = write_sim_episode(dataset.bag_dir('ep0'), profile, seed=2, max_duration_s=2.0)
    dataset.add_episode(Episode(id='ep0', task='pick_cube', status='complete', start_ns=truth['start_ns']))
    dataset.record_checksums('ep0')
    _fill(small_disk, leave_bytes=1 << 20)
    before = _hashes(dataset.root)
    code = main(['import', str(source), '--dataset', str(dataset.root)])
    captured = capsys.readouterr()
    assert code == 1 and len(captured.err.splitlines()) == 1, captured
    assert 'needs about' in captured.err and 'MiB is free' in captured.err and 'nothing of it was imported' \
        in captured.err
    assert _unchanged(before, _hashes(dataset.root), may_add=('.import.lock',))
    assert Dataset.open(dataset.root).episode_ids() == ['ep0']
    assert not [p for p in dataset.root.rglob('*') if p.name.endswith(('.importing', '.tmp'))]


# --- every command, on a full disk and on a read-only mount --------------------------------------------------------

@pytest.fixture(scope='module')
def scored_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two short camera episodes, segmented and scored: what every later command reads."""
    profile = load_profile(PROFILE)
    root = tmp_path_factory.mktemp('scored') / 'ds'
    dataset = Dataset.create(root, profile=profile)
    for n, seed in enumerate((1, 6)):
        truth = write_sim_episode(dataset.bag_dir(f'ep{n}'), profile, seed=seed, cameras=True,
                                  image_size=(160, 120), max_duration_s=3.0)
        dataset.add_episode(Episode(id=f'ep{n}', task='pick_cube', status='complete', outcome='success',
                                    start_ns=truth['start_ns']))
        dataset.record_checksums(f'ep{n}')
    assert main(['segment', str(root)]) == 0 and main(['score', str(root), '--no-images']) == 0
    for side in root.glob('catalog.sqlite-*'):
        side.unlink()
    return root


# (command arguments with DS for the dataset, ELSEWHERE for a folder on another disk, SAME for one on the full
# disk; whether it only reads the dataset and writes elsewhere, so it must still work)
COMMANDS = {
    'list': (['list', 'DS'], True),
    'info': (['info', 'DS'], True),
    'verify': (['verify', 'DS'], True),
    'report --out elsewhere': (['report', 'DS', '--out', 'ELSEWHERE/report.html'], True),
    'export lerobot --out elsewhere': (['export', 'lerobot', 'DS', '--out', 'ELSEWHERE/lerobot'], True),
    'export frames --out elsewhere': (['export', 'frames', 'DS', '--out', 'ELSEWHERE/frames', '--every', '1s'], True),
    'segment': (['segment', 'DS'], False),  # ep0's events.json removed first: it must be written
    'score': (['score', 'DS', '--no-images'], False),
    'report into the dataset': (['report', 'DS', '--force'], False),
    'select': (['select', 'DS', '--budget', '1'], False),
    'set': (['set', 'DS/episodes/ep0', '--outcome', 'failure'], False),
    'catalog rebuild': (['catalog', 'rebuild', 'DS'], False),
    'export frames onto the disk': (['export', 'frames', 'DS', '--out', 'SAME/frames', '--every', '1s'], False),
    'export lerobot onto the disk': (['export', 'lerobot', 'DS', '--out', 'SAME/lerobot'], False),
    'export label studio tasks onto the disk': (['export', 'frames', 'DS', '--out', 'SAME/ls', '--every', '1s',
                                                 '--tasks', 'label_studio'], False),
    'import': (['import', 'SOURCE', '--dataset', 'DS'], False),
}


@pytest.mark.parametrize('fault', ['full', 'read-only'])
@pytest.mark.parametrize('command', sorted(COMMANDS))
def test_every_command_on_a_full_or_read_only_disk_is_one_line_and_changes_nothing(
        small_disk: Path, scored_dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        fault: str, command: str) -> None:
    """A command that only reads the dataset (and writes elsewhere) works; one that must write to the disk ends
    in one line on stderr naming the disk's state, and no file that was there changes, nothing is left behind."""
    args, reads_only = COMMANDS[command]
    root = small_disk / 'ds'
    shutil.copytree(scored_dataset, root)
    if command == 'segment':  # a rerun with nothing new writes nothing (and may well succeed): give it work
        (root / 'episodes' / 'ep0' / 'events.json').unlink()
    source = tmp_path / 'incoming' / 'take_1'
    if 'SOURCE' in args:
        write_sim_episode(source, load_profile(PROFILE), seed=3, max_duration_s=2.0)
    elsewhere = tmp_path / 'out'
    elsewhere.mkdir()
    if fault == 'full':
        _fill(small_disk, leave_bytes=0)
    else:
        subprocess.run(['mount', '-o', 'remount,ro', str(small_disk)], check=True)
    before = _hashes(small_disk)
    argv = [str(root) if a == 'DS' else str(root / a[3:]) if a.startswith('DS/')
            else str(elsewhere / a[10:]) if a.startswith('ELSEWHERE/') else str(small_disk / a[5:])
            if a.startswith('SAME/') else str(source) if a == 'SOURCE' else a for a in args]
    code = main(argv)
    said = capsys.readouterr()
    errors = [line for line in said.err.splitlines() if line.strip()]
    if not reads_only and fault == 'full' and args[:2] == ['export', 'frames']:
        # frames are written episode by episode: each stops on the full disk, named; done but not all of it (3)
        assert code == 3 and [line.split(': ')[1] for line in errors] == ['ep0', 'ep1'], said.err
        assert all(line.startswith('robodata export: ep') and line.endswith(': cannot write: the disk is full')
                   for line in errors), said.err
    elif not reads_only:  # refused before it changes anything, or stopped at its first write: one line
        assert code == 1 and said.out == '' and len(errors) == 1, said
        assert errors[0].startswith(f'robodata {args[0]}: error: '), said.err
    if reads_only:
        assert code == 0, said
    else:
        errors = [line for line in said.err.splitlines() if line.strip()]
        assert code != 0 and errors, said
        assert any(word in said.err for word in ('full', 'read-only', 'no space')), said.err
        assert len(errors) <= 2, said.err  # the one line (and the dataset-level summary where the command has one)
    after = _hashes(small_disk)
    assert {k: after.get(k) for k in before} == before, 'a file that was there changed'
    added = [k for k in set(after) - set(before) if not k.endswith(('catalog.sqlite-wal', 'catalog.sqlite-shm'))]
    assert not added, added


@pytest.mark.parametrize('command', ['export frames onto the disk', 'export lerobot onto the disk',
                                     'export label studio tasks onto the disk',
                                     'report into the dataset', 'score', 'segment', 'import', 'select', 'set',
                                     'catalog rebuild'])
def test_a_disk_that_fills_during_a_command_is_one_line_and_leaves_nothing(
        small_disk: Path, scored_dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        command: str) -> None:
    """Room for the command to start and not to finish (32 KiB: a few frames, part of a video or of a report): it
    stops in one line naming the full disk, removes what it had begun, and no file that was there changes. (The
    sidecars of segment and score are small enough to fit: those may finish.)"""
    args, _ = COMMANDS[command]
    root = small_disk / 'ds'
    shutil.copytree(scored_dataset, root)
    for name in ('events.json', 'quality.json'):  # so that segment and score have everything to write again
        for path in (root / 'episodes').glob(f'*/{name}'):
            if command.split()[0] in ('segment', 'score'):
                path.unlink()
    source = tmp_path / 'incoming' / 'take_1'
    if 'SOURCE' in args:
        write_sim_episode(source, load_profile(PROFILE), seed=3, max_duration_s=2.0)
    _fill(small_disk, leave_bytes=32 << 10)
    before = _hashes(small_disk)
    argv = [str(root) if a == 'DS' else str(root / a[3:]) if a.startswith('DS/') else str(small_disk / a[5:])
            if a.startswith('SAME/') else str(source) if a == 'SOURCE' else a for a in args]
    code = main(argv)
    said = capsys.readouterr()
    lines = [line for line in said.err.splitlines() if line.strip()]
    after = _hashes(small_disk)
    if command == 'segment':  # it fitted: its events.json files are a few KiB
        assert code == 0 and lines == [], said
        assert all((root / 'episodes' / e / 'events.json').is_file() for e in ('ep0', 'ep1'))
        return
    if args[:2] == ['export', 'frames']:  # each episode stops on the full disk, named: done but not all of it (3)
        assert code == 3 and [line.split(': ')[1] for line in lines] == ['ep0', 'ep1'], said.err
        assert all(line.startswith('robodata export: ep') and line.endswith(': cannot write: the disk is full')
                   for line in lines), said.err
    else:  # refused (too little room for what it must write: score, select, set, catalog rebuild, import) or stopped
        assert code == 1 and len(lines) == 1 and lines[0].startswith(f'robodata {args[0]}: error: '), said.err
    assert code != 0, said
    errors = [line for line in said.err.splitlines() if line.strip()]
    assert errors and len(errors) <= 2 and ('full' in said.err or 'MiB is free' in said.err), said.err
    assert {k: after.get(k) for k in before} == before, 'a file that was there changed'
    added = sorted(k for k in set(after) - set(before)
                   if not k.endswith(('catalog.sqlite-wal', 'catalog.sqlite-shm', 'events.json', 'quality.json')))
    assert not added, added


def test_exporting_again_onto_a_disk_that_fills_keeps_the_earlier_export(
        small_disk: Path, scored_dataset: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Frames exported once, then again with other settings onto a disk with too little room for them: the run
    ends in one line and the first export is as it was (frames.json and every frame), so its labeling tasks still
    point at real files; with room the new settings replace it whole and no staging folder is left."""
    out = small_disk / 'frames'
    assert main(['export', 'frames', str(scored_dataset), '--out', str(out), '--every', '1s']) == 0
    capsys.readouterr()
    before = _hashes(out)
    assert any(k.endswith('frames.json') for k in before) and any(k.endswith('.jpg') for k in before)
    filler = _fill(small_disk, leave_bytes=32 << 10)
    code = main(['export', 'frames', str(scored_dataset), '--out', str(out), '--every', '0.2s'])
    said = capsys.readouterr()
    assert code != 0 and 'full' in said.err, said
    assert _hashes(out) == before  # nothing of the earlier export changed, nothing half-written beside it
    filler.unlink()
    assert main(['export', 'frames', str(scored_dataset), '--out', str(out), '--every', '0.2s']) == 0
    docs = [json.loads(p.read_text()) for p in out.glob('episodes/*/frames.json')]
    assert len(docs) == 2 and all(len(d['frames']) > 5 for d in docs)
    assert all((out / sensor['file']).is_file() for d in docs for f in d['frames'] for sensor in f['sensors'].values()
               if isinstance(sensor, dict) and 'file' in sensor)
    assert not (out / '.staging').exists() and not list(out.glob('episodes/.*'))
