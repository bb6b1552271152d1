"""A LeRobot dataset where it lies, as a data engineer checks it: `robodata score` and `robodata segment` on the
folder itself find what they find on an imported copy of it (the same checks, episodes, severities and events),
name the LeRobot episode index, and leave the folder byte-for-byte as it was."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from ros_robodata.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
REACHY_PROFILE = ROOT / 'bench' / 'profiles' / 'reachy2_apple_storage.yaml'  # names its gripper


def _contents(root: Path) -> dict[str, str]:
    """Every file under `root` and its SHA-256 (folders too, so one added shows)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else 'dir'
            for p in sorted(root.rglob('*'))}


def _run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    capsys.readouterr()
    assert main([*argv, '--json']) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def _as_in_place(text: str) -> str:
    """An imported episode's name (reachy2_apple_storage-000002) as the folder's own (episode 2)."""
    return re.sub(r'reachy2_apple_storage-0*(\d+)', r'episode \1', text)


def test_score_in_place_finds_what_the_imported_copy_finds(reachy_folder: Path, reachy_imported: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    before = _contents(reachy_folder)
    in_place = _run_json(capsys, 'score', str(reachy_folder))
    assert _contents(reachy_folder) == before  # nothing written into the folder
    copy = json.loads(_as_in_place(json.dumps(_run_json(capsys, 'score', str(reachy_imported)))))
    assert sorted(in_place['episodes']) == ['episode 0', 'episode 1', 'episode 2'] == sorted(copy['episodes'])
    assert in_place['failed'] == {} == copy['failed']
    for name, scored in in_place['episodes'].items():
        frames = [f.pop('frames', None) for f in scored['findings']]  # only the folder's findings say frames
        assert scored['findings'] == copy['episodes'][name]['findings'], name
        assert frames == [[[round(a * 30), round(b * 30)] for a, b in f['ranges_s']] for f in scored['findings']]
        assert scored['score'] == copy['episodes'][name]['score'], name
        assert scored['task'] == copy['episodes'][name]['task'] != ''
    assert in_place['summary']['checks'] == copy['summary']['checks']
    assert in_place['summary']['warnings'] == copy['summary']['warnings']
    assert any(f['check'] == 'completeness.outcome' for f in in_place['episodes']['episode 0']['findings'])


def test_a_findings_frames_are_the_folders_frame_indices(reachy_folder: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    scored = _run_json(capsys, 'score', str(reachy_folder))['episodes']
    said = [(name, f['frames'][0][0], f['ranges_s'][0][0]) for name, episode in scored.items()
            for f in episode['findings'] if f.get('frames')]
    assert said  # a speed jump in two of the three episodes
    rows = pq.read_table(reachy_folder / 'data' / 'chunk-000' / 'file-000.parquet',
                         columns=['episode_index', 'frame_index', 'timestamp']).to_pylist()
    for name, frame, t_s in said:
        (row,) = [r for r in rows if f'episode {r["episode_index"]}' == name and r['frame_index'] == frame]
        assert abs(row['timestamp'] - t_s) < 0.5 / 30, (name, frame, t_s)


def test_segment_in_place_finds_the_imported_copys_events(reachy_folder: Path, reachy_imported: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    before = _contents(reachy_folder)
    in_place = _run_json(capsys, 'segment', str(reachy_folder), '--profile', str(REACHY_PROFILE))
    assert _contents(reachy_folder) == before
    copy = _run_json(capsys, 'segment', str(reachy_imported), '--profile', str(REACHY_PROFILE))
    assert sorted(in_place['episodes']) == ['episode 0', 'episode 1', 'episode 2']
    events = {name: [(e['kind'], e['t_s']) for e in result['events']] for name, result in in_place['episodes'].items()}
    assert any(events.values())  # the gripper closes in these demonstrations
    assert events == {_as_in_place(name): [(e['kind'], e['t_s']) for e in result['events']]
                      for name, result in copy['episodes'].items()}


def test_the_table_names_episodes_by_their_lerobot_index(reachy_folder: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(['score', str(reachy_folder)]) == 0
    out = capsys.readouterr().out
    assert 'episode 0' in out and 'episode 2' in out and '3 episode(s) scored' in out


def test_a_filter_of_catalog_labels_is_one_clear_message(reachy_folder: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(['score', str(reachy_folder), '--task', 'x']) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == (f'robodata score: error: {reachy_folder}: --task, --outcome, --status, --where and --since pick '
                    'episodes of a dataset; a LeRobot dataset read in place has none (run `robodata import '
                    f'{reachy_folder} --dataset D` to pick among its episodes)')


def test_a_profile_that_reads_none_of_its_topics_is_refused(reachy_folder: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(['score', str(reachy_folder), '--profile', str(ROOT / 'config' / 'sim_cell.yaml')]) == 1
    err = capsys.readouterr().err
    assert 'names none of the topics a LeRobot import writes' in err, err


@pytest.fixture(scope='module')
def filmed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A LeRobot folder with videos (our own export of two simulated 4 s episodes, both cameras; the wrist camera
    blurs 1.5-2.5 s into the second)."""
    from ros_robodata.dataset import Dataset
    from ros_robodata.dataset.episode import Episode
    from ros_robodata.profile import load_profile
    from ros_robodata.sim.faults import parse_fault
    from ros_robodata.sim.to_bag import write_sim_episode

    profile = load_profile(ROOT / 'config' / 'sim_cell.yaml')
    ds = Dataset.create(tmp_path_factory.mktemp('sim') / 'ds', profile=profile)
    for seed in (0, 1):
        faults = [parse_fault('camera/wrist:blur:1.5:2.5')] if seed else None
        write_sim_episode(ds.bag_dir(f'20260101-12000{seed}'), profile, seed=seed, cameras=True, image_size=(96, 72),
                          max_duration_s=4.0, faults=faults)
        ds.add_episode(Episode(id=f'20260101-12000{seed}', task='pick_cube', status='complete', outcome='success'))
    out = tmp_path_factory.mktemp('export') / 'filmed'
    assert main(['export', 'lerobot', str(ds.root), '--out', str(out)]) == 0
    return out


@pytest.mark.parametrize('images', [True, False])
def test_camera_checks_in_place_find_what_the_imported_copy_finds(filmed: Path, images: bool, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    flags = [] if images else ['--no-images']
    before = _contents(filmed)
    in_place = _run_json(capsys, 'score', str(filmed), *flags)
    assert _contents(filmed) == before
    assert main(['import', str(filmed), '--dataset', str(tmp_path / 'ds')]) == 0
    copy = _run_json(capsys, 'score', str(tmp_path / 'ds'), *flags)
    copied = {re.sub(r'^filmed-0*(\d+)$', r'episode \1', name): s for name, s in copy['episodes'].items()}
    assert sorted(in_place['episodes']) == ['episode 0', 'episode 1'] == sorted(copied)
    for name, scored in in_place['episodes'].items():
        for f in scored['findings']:
            f.pop('frames', None)
        assert scored['findings'] == copied[name]['findings'], name
    blurred = [f for f in in_place['episodes']['episode 1']['findings'] if f['check'].startswith('image.')]
    assert bool(blurred) == images  # the camera checks ran on the video's frames (and not without images)


def test_segment_without_a_gripper_in_the_folders_profile_says_how_to_name_it(
        reachy_folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The Reachy 2's info.json names none of its state's 19 dimensions; the G1's names its hands' fingers. Neither
    # says where a gripper opens, so segment finds nothing, and says what would let it.
    unnamed = _run_json(capsys, 'segment', str(reachy_folder))
    assert unnamed['episodes'] == {}
    assert 'names none of its 19 state dimensions' in unnamed['nothing_to_do']
    assert '--profile FILE naming it (topics: gripper: topic /observation/state' in unnamed['nothing_to_do']
    hands = _run_json(capsys, 'segment', str(ROOT / 'test' / 'data' / 'lerobot' / 'g1_inspire_3ep'))
    assert 'its state names kLeftHandPinky' in hands['nothing_to_do']
    assert '(a gripper or a hand?)' in hands['nothing_to_do']
