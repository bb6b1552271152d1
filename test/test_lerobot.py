"""LeRobot both ways, as a data engineer checks it: `robodata export lerobot` writes a curated v3.0 training set whose
frames sit on LeRobot's time grid and whose values are the bags' own; `robodata import` turns a public LeRobot
dataset (and our own export) back into standard episodes every command reads."""

from __future__ import annotations

import json
import shutil
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

from ros_robodata.cli.main import main
from ros_robodata.export.lerobot.policy import Candidate, Policy, select
from ros_robodata.profile import load_profile
from ros_robodata.sim.faults import parse_fault
from ros_robodata.sim.to_bag import write_sim_episode

ROOT = Path(__file__).resolve().parent.parent
PROFILE = ROOT / 'config' / 'sim_cell.yaml'
REACHY = ROOT / 'test' / 'data' / 'lerobot' / 'reachy2_apple_storage'
SIZE = (96, 72)
OUTCOMES = {0: 'success', 1: 'success', 2: 'recovery', 3: 'failure'}
BLUR = (1.5, 2.5)  # seconds into episode 1: the wrist camera blurs, the quality checks flag it


def _episode_id(seed: int) -> str:
    return f'20260101-12000{seed}'


@pytest.fixture(scope='module')
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Four simulated 4 s episodes (two successes, a recovery, a failure), both cameras, segmented and scored."""
    from ros_robodata.dataset import Dataset
    from ros_robodata.dataset.episode import Episode

    profile = load_profile(PROFILE)
    ds = Dataset.create(tmp_path_factory.mktemp('lerobot') / 'ds', profile=profile)
    for seed, outcome in OUTCOMES.items():
        faults = [parse_fault(f'camera/wrist:blur:{BLUR[0]}:{BLUR[1]}')] if seed == 1 else None
        write_sim_episode(ds.bag_dir(_episode_id(seed)), profile, seed=seed, cameras=True, image_size=SIZE,
                          max_duration_s=4.0, faults=faults)
        ds.add_episode(Episode(id=_episode_id(seed), task='pick_cube', status='complete', outcome=outcome,
                               operator='ana'))
    assert main(['segment', str(ds.root)]) == 0
    assert main(['score', str(ds.root)]) == 0
    return ds


@pytest.fixture(scope='module')
def export(dataset: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp('out') / 'lerobot'
    assert main(['export', 'lerobot', str(dataset.root), '--out', str(out), '--split', 'train:0.67,val:0.33']) == 0
    return out


def _info(root: Path) -> dict[str, Any]:
    return json.loads((root / 'meta' / 'info.json').read_text())


def _data(root: Path) -> dict[str, Any]:
    return pq.read_table(sorted((root / 'data').rglob('*.parquet'))).to_pydict()


def _episodes(root: Path) -> list[dict[str, Any]]:
    return pq.read_table(sorted((root / 'meta' / 'episodes').rglob('*.parquet'))).to_pylist()


def _contents(root: Path) -> dict[Path, bytes]:
    """Every file under `root` and its bytes: what a command that only reads it must leave as it was (but
    copies.jsonl, where an export notes what it copied, so that `robodata retire` can reach the copy)."""
    return {p: p.read_bytes() for p in sorted(root.rglob('*')) if p.is_file() and p.name != 'copies.jsonl'}


def _decode(path: Path) -> list[tuple[float, np.ndarray]]:
    with av.open(str(path)) as container:
        return [(float(f.pts * Fraction(f.time_base)), f.to_ndarray(format='rgb24'))
                for f in container.decode(video=0)]


def _bag_joints(dataset: Any, episode_id: str) -> tuple[np.ndarray, list[list[float]], list[str]]:
    from ros_robodata.bag.reader import BagReader

    stamps, rows, names = [], [], []
    with BagReader(dataset.bag_dir(episode_id)) as reader:
        for m in reader.messages(['/joint_states']):
            msg = reader.decode(m)
            stamps.append(msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec)
            rows.append(list(msg.position))
            names = list(msg.name)
    return np.asarray(stamps), rows, names


def test_export_is_a_v3_dataset_of_the_chosen_episodes(export: Path) -> None:
    info = _info(export)
    assert info['codebase_version'] == 'v3.0' and info['fps'] == 30 and info['robot_type'] == 'sim_cell_arm'
    features = info['features']
    assert features['observation.state']['shape'] == [7]  # six arm joints and the finger joint
    assert features['observation.state']['names'][-1] == 'finger_joint'
    assert features['action']['shape'] == [6]  # the teleop twist
    assert info['ros_robodata']['action_topic'] == '/teleop/command'
    for camera in ('wrist', 'scene'):
        assert features[f'observation.images.{camera}']['shape'] == [SIZE[1], SIZE[0], 3]
    episodes = _episodes(export)
    sources = [e['source_episode_id'] for e in episodes]
    assert sorted(sources) == [_episode_id(s) for s in (0, 1, 2)]  # the failure is left out by default
    assert info['total_episodes'] == 3 and info['total_frames'] == sum(e['length'] for e in episodes)
    splits = {name: range(*map(int, span.split(':'))) for name, span in info['splits'].items()}
    assert sorted(i for r in splits.values() for i in r) == [0, 1, 2]
    assert all(e['episode_index'] in splits[e['split']] for e in episodes)
    card = (export / 'README.md').read_text()
    assert 'outcome failure (the policy keeps success, recovery)' in card
    assert info['ros_robodata']['profile_sha256'] in card


def test_frames_sit_on_the_fps_grid_and_videos_hold_every_episode(export: Path) -> None:
    data = _data(export)
    episodes = _episodes(export)
    for e in episodes:
        rows = [i for i, k in enumerate(data['episode_index']) if k == e['episode_index']]
        assert len(rows) == e['length']
        stamps = np.asarray([data['timestamp'][i] for i in rows])
        assert np.abs(stamps - np.arange(len(rows)) / 30).max() < 1e-4  # LeRobot's tolerance
        assert [data['index'][i] for i in rows] == list(range(e['dataset_from_index'], e['dataset_to_index']))
        assert e['max_offset_ms'] <= 1000 / 60 + 1  # every picked sample within half a frame of its tick
    for camera in ('wrist', 'scene'):
        video = export / 'videos' / f'observation.images.{camera}' / 'chunk-000' / 'file-000.mp4'
        times = [t for t, _ in _decode(video)]
        assert len(times) == len(data['index'])  # several episodes, one file
        for e in episodes:
            start = e[f'videos/observation.images.{camera}/from_timestamp']
            wanted = start + np.arange(e['length']) / 30
            decoded = np.asarray([t for t in times if start - 1e-4 <= t < start + e['length'] / 30 - 1e-4])
            assert np.abs(decoded - wanted).max() < 1e-4


def test_state_is_the_bags_sample_nearest_each_frame(dataset: Any, export: Path) -> None:
    data = _data(export)
    for e in _episodes(export):
        stamps, rows, names = _bag_joints(dataset, e['source_episode_id'])
        arm = names  # the sim's /joint_states holds the six arm joints; the finger comes from the gripper topic
        first = e['dataset_from_index']
        for k in (0, e['length'] // 2, e['length'] - 1):
            tick = e['source_start_ns'] + round(k * 1e9 / 30)
            nearest = int(np.argmin(np.abs(stamps - tick)))
            assert abs(stamps[nearest] - tick) <= 1_000_000  # joint states at 500 Hz
            state = data['observation.state'][first + k]
            assert state[:len(arm)] == pytest.approx(np.float32(rows[nearest]).tolist(), abs=0)


def test_stats_are_lerobots_over_the_exported_frames(export: Path) -> None:
    stats = json.loads((export / 'meta' / 'stats.json').read_text())
    data = _data(export)
    state = np.asarray(data['observation.state'], dtype=np.float64)
    got = stats['observation.state']
    assert got['count'] == [len(state)]
    assert got['mean'] == pytest.approx(state.mean(axis=0).tolist(), abs=1e-9)
    assert got['std'] == pytest.approx(state.std(axis=0).tolist(), abs=1e-6)
    assert got['min'] == pytest.approx(state.min(axis=0).tolist()) and got['max'] == pytest.approx(
        state.max(axis=0).tolist())
    assert set(got) == {'min', 'max', 'mean', 'std', 'count', 'q01', 'q10', 'q50', 'q90', 'q99'}
    image = stats['observation.images.wrist']
    assert np.asarray(image['mean']).shape == (3, 1, 1) and 0 < np.asarray(image['mean']).min() <= 1
    episode_stats = _episodes(export)[0]['stats/observation.state/mean']
    assert len(episode_stats) == 7


def test_flagged_windows_are_cut_and_labels_ride_along(dataset: Any, tmp_path: Path) -> None:
    quality = json.loads((dataset.episode_dir(_episode_id(1)) / 'quality.json').read_text())
    flagged = [r for f in quality['findings'] for r in f['ranges_ns'] if f['topic'] == '/camera/wrist/image_raw']
    assert flagged, 'the blur planted in episode 1 is flagged by the quality checks'
    out = tmp_path / 'cut'
    assert main(['export', 'lerobot', str(dataset.root), '--out', str(out), '--exclude-flagged']) == 0
    parts = [e for e in _episodes(out) if e['source_episode_id'] == _episode_id(1)]
    assert len(parts) >= 2  # cut at the blurred window: no frame of it, no fake continuity across it
    data = _data(out)
    assert not any(data['quality.flagged'])
    for e in parts:
        ticks = e['source_start_ns'] + np.round(np.arange(e['length']) * 1e9 / 30)
        for start, end in flagged:
            assert not np.any((ticks >= start) & (ticks <= end))
    subtasks = set(data['subtask'])
    assert {'reach', 'grasp'} <= subtasks
    assert any('grasp' in e for e in data['event'])


def test_policy_min_score_and_recovery_ratio(dataset: Any, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / 'few'
    assert main(['export', 'lerobot', str(dataset.root), '--out', str(out), '--recovery-ratio', '0.5:0.8']) == 0
    said = capsys.readouterr().out
    assert 'record about 1 more recovery' in said  # 1 of 3 kept are recoveries, 2 would be half
    scores = {_episode_id(s): json.loads((dataset.episode_dir(_episode_id(s)) / 'quality.json').read_text())['score']
              for s in OUTCOMES}
    floor = sorted(scores[_episode_id(s)] for s in (0, 1, 2))[1]
    out = tmp_path / 'scored'
    assert main(['export', 'lerobot', str(dataset.root), '--out', str(out), '--min-score', str(floor)]) == 0
    kept = {e['source_episode_id'] for e in _episodes(out)}
    assert kept == {e for e in scores if scores[e] >= floor and OUTCOMES[int(e[-1])] != 'failure'}
    assert all(e['score'] >= floor for e in _episodes(out))


def test_recovery_cap_and_split_are_deterministic() -> None:
    pool = [Candidate(f'ep{i:02d}', 'recovery' if i % 2 else 'success', 'complete', 0.9) for i in range(20)]
    capped = select(pool, Policy(recovery_ratio=(0.0, 0.2), split=(('train', 0.8), ('val', 0.2))))
    kept = [c for c in pool if c.episode_id in capped.kept]
    assert sum(c.outcome == 'recovery' for c in kept) == 2  # 2 of 12 is under 20 %, 3 of 13 over
    assert sum(1 for s in capped.split_of.values() if s == 'val') == round(0.2 * len(kept))
    again = select(list(reversed(pool)), Policy(recovery_ratio=(0.0, 0.2), split=(('train', 0.8), ('val', 0.2))))
    assert again.split_of == capped.split_of and again.kept == capped.kept
    rejected = select([Candidate('x', 'success', 'rejected', 1.0), Candidate('y', 'success', 'approved', 1.0)],
                      Policy())
    assert rejected.kept == ['y'] and 'rejected' in rejected.left_out['x']


def test_an_export_never_writes_over_anything(dataset: Any, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / 'taken'
    out.mkdir()
    (out / 'mine.txt').write_text('keep me')
    assert main(['export', 'lerobot', str(dataset.root), '--out', str(out)]) == 1
    assert 'not empty' in capsys.readouterr().err and (out / 'mine.txt').read_text() == 'keep me'
    assert main(['export', 'lerobot', str(dataset.root), '--out', str(tmp_path / 'x'), '--split', 'train:0.5']) == 1
    assert 'add up to 1' in capsys.readouterr().err and not (tmp_path / 'x').exists()
    assert main(['export', 'lerobot', str(dataset.root), '--out', str(tmp_path / 'y'), '--outcomes', 'failure',
                 '--min-score', '0.99']) == 1
    assert 'no episode passes the policy' in capsys.readouterr().err
    assert not list(tmp_path.glob('.*.partial'))


def test_import_of_a_public_lerobot_v3_dataset(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    target = tmp_path / 'reachy'
    assert main(['import', str(REACHY), '--dataset', str(target)]) == 0
    from ros_robodata.bag.reader import BagReader
    from ros_robodata.dataset import Dataset

    ds = Dataset.open(target)
    source = pq.read_table(REACHY / 'data' / 'chunk-000' / 'file-000.parquet').to_pydict()
    assert len(ds.episode_ids()) == 3
    for k, episode_id in enumerate(ds.episode_ids()):
        episode = ds.episode(episode_id)
        assert episode.task == 'place the apple in the plate'
        rows = [i for i, e in enumerate(source['episode_index']) if e == k]
        with BagReader(ds.bag_dir(episode_id)) as reader:
            states = [reader.decode(m) for m in reader.messages(['/observation/state'])]
        assert len(states) == len(rows)
        t0 = states[0].header.stamp.sec * 10**9 + states[0].header.stamp.nanosec
        for j in (0, len(rows) - 1):
            msg = states[j]
            assert list(msg.position) == pytest.approx(source['observation.state'][rows[j]], abs=0)
            stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec - t0
            assert stamp / 1e9 == pytest.approx(source['timestamp'][rows[j]] - source['timestamp'][rows[0]], abs=1e-6)
    assert 'observation.image: in meta/info.json, but no video file here' in capsys.readouterr().out
    profile = yaml.safe_load((target / 'dataset.yaml').read_text())['robot_profile']['content']
    assert profile['robot']['name'] == 'reachy2' and profile['topics']['cameras'] == []
    assert profile['topics']['joint_states']['rate_hz'] == 30
    # the checks run on it; the segmenter with a profile that names the gripper (index 15, the VR trigger its command)
    assert main(['score', str(target)]) == 0
    findings = json.loads((ds.episode_dir(ds.episode_ids()[0]) / 'quality.json').read_text())['findings']
    assert 'completeness.missing_topic' not in json.dumps(findings)
    gripper = tmp_path / 'reachy.yaml'
    gripper.write_text(yaml.safe_dump({
        'robot': {'name': 'reachy2'},
        'topics': {'joint_states': {'topic': '/observation/state', 'type': 'sensor_msgs/msg/JointState',
                                    'rate_hz': 30},
                   'actions': {'topic': '/action', 'type': 'sensor_msgs/msg/JointState', 'rate_hz': 30},
                   'gripper': {'topic': '/observation/state', 'type': 'sensor_msgs/msg/JointState', 'rate_hz': 30,
                               'joint': 'joint_15', 'open_position': 2.269, 'closed_position': -0.087,
                               'command': {'topic': '/action', 'joint': 'joint_15', 'open_position': 2.269,
                                           'closed_position': -0.087}}}}))
    capsys.readouterr()
    assert main(['segment', str(target / 'episodes' / ds.episode_ids()[0] / 'bag'), '--profile', str(gripper),
                 '--json']) == 0
    kinds = [e['kind'] for e in json.loads(capsys.readouterr().out)['events']]
    assert 'grasp' in kinds and 'release' in kinds  # the apple is picked and placed


def test_round_trip_of_our_own_export(dataset: Any, export: Path, tmp_path: Path) -> None:
    back = tmp_path / 'back'
    assert main(['import', str(export), '--dataset', str(back), '--raw-images']) == 0
    assert main(['import', str(export), '--dataset', str(back)]) == 0  # again: nothing imported twice
    from ros_robodata.bag.image import decode_image
    from ros_robodata.bag.reader import BagReader
    from ros_robodata.dataset import Dataset

    ds = Dataset.open(back)
    data = _data(export)
    video = {t: rgb for t, rgb in _decode(export / 'videos' / 'observation.images.wrist' / 'chunk-000' /
                                         'file-000.mp4')}
    episodes = _episodes(export)
    assert len(ds.episode_ids()) == len(episodes)
    for e, episode_id in zip(episodes, ds.episode_ids(), strict=True):
        episode = ds.episode(episode_id)
        assert episode.outcome == dataset.episode(e['source_episode_id']).outcome
        assert episode.source['lerobot']['source_episode_id'] == e['source_episode_id']
        first = e['dataset_from_index']
        with BagReader(ds.bag_dir(episode_id)) as reader:
            states = [reader.decode(m) for m in reader.messages(['/observation/state'])]
            actions = [reader.decode(m) for m in reader.messages(['/action'])]
            frames = [reader.decode(m) for m in reader.messages(['/camera/wrist/image_raw'])]
        assert len(states) == len(actions) == len(frames) == e['length']
        for k in range(e['length']):
            assert list(states[k].position) == data['observation.state'][first + k]
            assert list(actions[k].position) == data['action'][first + k]
        for k in (0, e['length'] - 1):
            stamp = frames[k].header.stamp.sec * 10**9 + frames[k].header.stamp.nanosec
            assert stamp == e['source_start_ns'] + round(k * 1e9 / 30)  # the original ticks
            t = e['videos/observation.images.wrist/from_timestamp'] + k / 30
            decoded = next(rgb for tv, rgb in video.items() if abs(tv - t) < 1e-4)
            assert np.array_equal(decode_image(frames[k], 'rgb'), decoded)


def test_bad_lerobot_input_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    broken = tmp_path / 'broken'
    shutil.copytree(REACHY, broken)
    pointer = broken / 'data' / 'chunk-000' / 'file-000.parquet'
    pointer.write_text('version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 1\n')
    before = _contents(broken)
    assert main(['import', str(broken), '--dataset', str(tmp_path / 'd')]) == 1
    err = capsys.readouterr().err
    (line,) = err.strip().splitlines()
    assert line.startswith(f'robodata import: error: {pointer}: ') and 'Git LFS pointer' in line, err
    assert _contents(broken) == before and not (tmp_path / 'd').exists()
    (broken / 'meta' / 'info.json').write_text('{"codebase_version": "v3.0", "fps": 30, "features": {}}')
    assert main(['import', str(broken), '--dataset', str(tmp_path / 'd')]) == 1
    assert 'no observation.state feature' in capsys.readouterr().err
    assert main(['info', str(REACHY)]) == 1  # score, segment and report read it in place; others ask for an import
    assert 'a LeRobot dataset, not a rosbag2 bag' in capsys.readouterr().err


def test_trim_idle_and_the_next_state_as_action(dataset: Any, tmp_path: Path) -> None:
    copy = tmp_path / 'ds'
    shutil.copytree(dataset.root, copy)
    quality_path = copy / 'episodes' / _episode_id(0) / 'quality.json'
    quality = json.loads(quality_path.read_text())
    quality['metrics']['trim'] = {'start_s': 0.5, 'end_s': 3.0}  # what score writes when the arm waited
    quality_path.write_text(json.dumps(quality))
    out = tmp_path / 'trimmed'
    assert main(['export', 'lerobot', str(copy), '--out', str(out), '--trim-idle', '--action-topic', 'none']) == 0
    info = _info(out)
    assert info['ros_robodata']['action_source'] == 'next_state'
    assert info['features']['action']['names'] == info['features']['observation.state']['names']
    episode = next(e for e in _episodes(out) if e['source_episode_id'] == _episode_id(0))
    assert episode['source_start_ns'] >= quality['start_ns'] + 0.5e9
    last = episode['source_start_ns'] + (episode['length'] - 1) * 1e9 / 30
    assert last <= quality['start_ns'] + 3.0e9 and episode['length'] >= 2.5 * 30 - 2
    data = _data(out)
    rows = range(episode['dataset_from_index'], episode['dataset_to_index'])
    states = [data['observation.state'][i] for i in rows]
    actions = [data['action'][i] for i in rows]
    assert actions[:-1] == states[1:]  # each action is the state one frame later


def test_import_of_a_lerobot_v21_dataset(tmp_path: Path) -> None:
    """The layout LeRobot used before v3.0: one parquet file per episode, tasks and episodes as JSON lines."""
    old = tmp_path / 'v21'
    (old / 'data' / 'chunk-000').mkdir(parents=True)
    (old / 'meta').mkdir()
    table = pq.read_table(REACHY / 'data' / 'chunk-000' / 'file-000.parquet')
    episodes = table.column('episode_index').to_pylist()
    for k in sorted(set(episodes)):
        rows = [i for i, e in enumerate(episodes) if e == k]
        pq.write_table(table.take(rows), old / 'data' / 'chunk-000' / f'episode_{k:06d}.parquet')
    info = json.loads((REACHY / 'meta' / 'info.json').read_text())
    info.update(codebase_version='v2.1', data_path='data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet')
    (old / 'meta' / 'info.json').write_text(json.dumps(info))
    (old / 'meta' / 'tasks.jsonl').write_text('{"task_index": 0, "task": "place the apple in the plate"}\n')
    target = tmp_path / 'imported'
    assert main(['import', str(old), '--dataset', str(target)]) == 0
    from ros_robodata.dataset import Dataset

    ds = Dataset.open(target)
    assert [ds.episode(e).source['lerobot']['codebase_version'] for e in ds.episode_ids()] == ['v2.1'] * 3
    counts = [ds.episode(e).topics['/observation/state']['count'] for e in ds.episode_ids()]
    assert counts == [episodes.count(k) for k in sorted(set(episodes))]
    assert {ds.episode(e).task for e in ds.episode_ids()} == {'place the apple in the plate'}


@pytest.mark.parametrize('damage', ['episodes_meta', 'ragged_state', 'info_not_json', 'tasks'])
def test_a_malformed_lerobot_dataset_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                           damage: str) -> None:
    broken = tmp_path / 'broken'
    shutil.copytree(REACHY, broken)
    if damage == 'episodes_meta':
        path = broken / 'meta' / 'episodes' / 'chunk-000' / 'file-000.parquet'
        path.write_bytes(path.read_bytes()[:1000])  # truncated
    elif damage == 'ragged_state':
        table = pq.read_table(broken / 'data' / 'chunk-000' / 'file-000.parquet').to_pydict()
        table['observation.state'][5] = table['observation.state'][5][:3]
        import pyarrow as pa

        pq.write_table(pa.table(table), broken / 'data' / 'chunk-000' / 'file-000.parquet')
    elif damage == 'info_not_json':
        (broken / 'meta' / 'info.json').write_text('{"codebase_version": "v3.0", ')
    else:
        (broken / 'meta' / 'tasks.parquet').write_bytes(b'PAR1 not really')
    before = _contents(broken)
    code = main(['import', str(broken), '--dataset', str(tmp_path / 'd')])
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1 and err.startswith('robodata import: error: '), err
    assert _contents(broken) == before and not (tmp_path / 'd').exists()  # refused: nothing read changed, none made
    assert str(broken) in err
    assert {'episodes_meta': 'not readable', 'ragged_state': 'not a well-formed LeRobot dataset',
            'info_not_json': 'not readable JSON', 'tasks': 'not readable'}[damage] in err


def test_damaged_sidecars_fail_their_episode_in_one_line(dataset: Any, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture) -> None:
    copy = tmp_path / 'ds'
    shutil.copytree(dataset.root, copy)
    (copy / 'episodes' / _episode_id(0) / 'events.json').write_text('{"timeline": [{"name": 3}], "events": [7]}')
    quality_path = copy / 'episodes' / _episode_id(2) / 'quality.json'
    quality = json.loads(quality_path.read_text())
    quality['metrics']['trim'] = {'start_s': 'soon'}
    quality_path.write_text(json.dumps(quality))
    out = tmp_path / 'out'
    before = _contents(copy)
    assert main(['export', 'lerobot', str(copy), '--out', str(out), '--trim-idle']) == 3  # finished, one failed
    err = capsys.readouterr().err
    (line,) = err.strip().splitlines()  # the failed episode, its file and the way out
    assert line.startswith(f'robodata export: {_episode_id(2)}: {quality_path}: trim points are not numbers'), err
    assert line.endswith('run robodata score again') and _contents(copy) == before, err
    kept = {e['source_episode_id']: e for e in _episodes(out)}
    assert set(kept) == {_episode_id(0), _episode_id(1)}  # unreadable labels: the episode goes without them
    assert f'`{_episode_id(2)}`: failed' in (out / 'README.md').read_text()
    # the dataset knows where its data went, and only the episodes that went there
    (copied,) = [c for c in map(json.loads, (copy / 'copies.jsonl').read_text().splitlines())
                 if c['path'] == str(out.resolve())]
    assert copied['kind'] == 'lerobot'
    assert copied['episodes'] == [_episode_id(0), _episode_id(1)] and copied['parts'] == []


def test_a_sidecar_nested_too_deep_fails_its_episode_in_one_line(dataset: Any, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture) -> None:
    """RecursionError reading an events.json nested 100,000 deep (the exporter read sidecars with plain json.loads,
    without the limits of a file a user may have edited): that episode fails in one line, the others go out."""
    copy = tmp_path / 'ds'
    shutil.copytree(dataset.root, copy)
    events_path = copy / 'episodes' / _episode_id(1) / 'events.json'
    events_path.write_text('{"deep": ' + '[' * 100_000 + ']' * 100_000 + '}')
    before = _contents(copy)
    out = tmp_path / 'out'
    assert main(['export', 'lerobot', str(copy), '--out', str(out)]) == 3  # finished, one failed
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == (f'robodata export: {_episode_id(1)}: {events_path}: unreadable: nested too deep to be a file of '
                    'this kind')
    assert {e['source_episode_id'] for e in _episodes(out)} == {_episode_id(0), _episode_id(2)}
    assert _contents(copy) == before


def test_files_roll_over_past_their_size_limit(dataset: Any, tmp_path: Path) -> None:
    out = tmp_path / 'small_files'
    assert main(['export', 'lerobot', str(dataset.root), '--out', str(out), '--data-file-mb', '0.001',
                 '--video-file-mb', '0.001']) == 0
    episodes = _episodes(out)
    videos = sorted((out / 'videos' / 'observation.images.wrist' / 'chunk-000').glob('*.mp4'))
    assert len(videos) == len(episodes) == 3 and len(sorted((out / 'data' / 'chunk-000').glob('*.parquet'))) == 3
    for e in episodes:  # each episode in its own file now, starting at its file's beginning
        assert e['videos/observation.images.wrist/file_index'] == e['data/file_index'] == e['episode_index']
        assert e['videos/observation.images.wrist/from_timestamp'] == 0
    back = tmp_path / 'back'
    assert main(['import', str(out), '--dataset', str(back)]) == 0
    from ros_robodata.dataset import Dataset

    ds = Dataset.open(back)
    counts = [ds.episode(i).topics['/camera/wrist/image_raw/compressed']['count'] for i in ds.episode_ids()]
    assert counts == [e['length'] for e in episodes]


def test_where_picks_the_episodes_exported(dataset: Any, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / 'out'
    assert main(['export', 'lerobot', str(dataset.root), '--out', str(out), '--outcomes',
                 'success,recovery,failure,unknown', '--where', f"id in ({_episode_id(0)}, {_episode_id(2)})"]) == 0
    assert {e['source_episode_id'] for e in _episodes(out)} == {_episode_id(0), _episode_id(2)}
    assert main(['export', 'lerobot', str(dataset.root), '--out', str(tmp_path / 'o2'), '--where', 'scroe < 1']) == 1
    assert "no field 'scroe' (did you mean score?)" in capsys.readouterr().err
