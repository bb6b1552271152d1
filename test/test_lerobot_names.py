"""`robodata import` keeps a LeRobot dataset's joint names in every form public `meta/info.json` files write them
(issue 27): a nested list (a humanoid's), a flat list, `{"motors": [...]}`, one label for a whole vector."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ros_robodata.bag.reader import BagReader
from ros_robodata.cli.main import main
from ros_robodata.dataset import Dataset
from ros_robodata.dataset.lerobot_features import feature_names

INFO = Path(__file__).resolve().parent / 'data' / 'lerobot_info'


def _info(name: str) -> dict[str, Any]:
    return json.loads((INFO / name).read_text())


@pytest.mark.parametrize('file, feature, first, last', [
    ('g1_inspire_nested.json', 'observation.state', 'kLeftShoulderPitch', 'kRightHandThumbRotation'),
    ('so100_flat.json', 'action', 'shoulder_pan.pos', 'gripper.pos'),
    ('v20_motors.json', 'observation.state', 'motor_0', 'motor_18'),
    ('v20_motors.json', 'action', 'motor_0', 'motor_39'),
    ('panda_one_label.json', 'observation.state', 'state_0', 'state_7'),
])
def test_each_form_of_names_in_real_info_files_names_every_value(file: str, feature: str, first: str,
                                                                 last: str) -> None:
    spec = _info(file)['features'][feature]
    names = feature_names(spec['names'], spec['shape'][0])
    assert names is not None and len(names) == spec['shape'][0] == len(set(names))
    assert (names[0], names[-1]) == (first, last)


def test_names_that_do_not_fit_the_width_are_refused_and_a_repeated_name_gets_its_index() -> None:
    assert feature_names(['a', 'b'], 3) is None and feature_names(None, 2) is None
    assert feature_names({'left': ['a', 'b'], 'right': ['c']}, 3) == ['a', 'b', 'c']
    assert feature_names({'motors': ['x', 'gripper', 'gripper']}, 3) == ['x', 'gripper', 'gripper_1']


def _v21_dataset(root: Path, info: dict[str, Any], frames: int = 30, step_back_at: int | None = None,
                 keys: tuple[str, str] = ('observation.state', 'action')) -> None:
    """A LeRobot v2.1 folder with `info`'s features (no videos): one episode of smooth joint motion, its state and
    action under `keys`; its clock steps back 0.5 s at frame `step_back_at`."""
    width = info['features'][keys[0]]['shape'][0]
    (root / 'data' / 'chunk-000').mkdir(parents=True)
    (root / 'meta').mkdir()
    t = np.arange(frames) / info['fps']
    if step_back_at is not None:
        t[step_back_at:] -= 0.5
    state = np.sin(np.outer(t, np.linspace(0.5, 1.5, width))).astype(np.float32)
    table = pa.table({
        keys[0]: pa.array(state.tolist(), type=pa.list_(pa.float32())),
        keys[1]: pa.array(np.roll(state, -1, axis=0).tolist(), type=pa.list_(pa.float32())),
        'timestamp': pa.array(t.astype(np.float32)), 'frame_index': pa.array(np.arange(frames)),
        'episode_index': pa.array(np.zeros(frames, dtype=np.int64)), 'index': pa.array(np.arange(frames)),
        'task_index': pa.array(np.zeros(frames, dtype=np.int64))})
    pq.write_table(table, root / 'data' / 'chunk-000' / 'episode_000000.parquet')
    features = {k: v for k, v in info['features'].items() if v.get('dtype') != 'video'}
    (root / 'meta' / 'info.json').write_text(json.dumps({**info, 'features': features, 'total_episodes': 1,
                                                         'total_frames': frames, 'total_videos': 0}))
    (root / 'meta' / 'tasks.jsonl').write_text('{"task_index": 0, "task": "pick the bottle"}\n')


def test_a_humanoids_nested_names_reach_the_bags_joint_states(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    info = _info('g1_inspire_nested.json')
    _v21_dataset(tmp_path / 'g1', info)
    assert main(['import', str(tmp_path / 'g1'), '--dataset', str(tmp_path / 'ds')]) == 0
    assert 'joint_N' not in capsys.readouterr().out
    ds = Dataset.open(tmp_path / 'ds')
    (episode_id,) = ds.episode_ids()
    with BagReader(ds.bag_dir(episode_id)) as reader:
        first = next(iter(reader.read(['/observation/state'])))[1]
    assert list(first.name) == info['features']['observation.state']['names'][0]


def test_names_that_name_nothing_are_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    info = _info('so100_flat.json')
    info['features']['observation.state']['names'] = ['shoulder_pan.pos', 'gripper.pos']  # 2 names for 6 values
    info.update(codebase_version='v2.1', data_path='data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet')
    _v21_dataset(tmp_path / 'so100', info)
    assert main(['import', str(tmp_path / 'so100'), '--dataset', str(tmp_path / 'ds')]) == 0
    said = capsys.readouterr()
    assert 'observation.state: its names in meta/info.json do not name each of its values' in said.out + said.err


def test_a_dataset_that_calls_its_vectors_state_and_actions_imports_and_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Converted public sets (a dexterous bimanual one held back for issue 27) name the features `state` and
    `actions`: read as the joint states and the commands, with the joint names, and said once; a set with no
    joint vector under any known name is refused naming the vectors it has."""
    info = _info('so100_flat.json')
    info.update(codebase_version='v2.1', data_path='data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet')
    features = info['features']
    features['state'], features['actions'] = features.pop('observation.state'), features.pop('action')
    _v21_dataset(tmp_path / 'converted', info, keys=('state', 'actions'))
    assert main(['import', str(tmp_path / 'converted'), '--dataset', str(tmp_path / 'ds')]) == 0
    said = capsys.readouterr().out
    assert 'state (not observation.state) read as the joint states' in said
    assert 'actions (not action) read as the commands' in said
    ds = Dataset.open(tmp_path / 'ds')
    (episode_id,) = ds.episode_ids()
    with BagReader(ds.bag_dir(episode_id)) as reader:
        state = next(iter(reader.read(['/observation/state'])))[1]
        action = next(iter(reader.read(['/action'])))[1]
    assert list(state.name) == list(action.name) == features['state']['names']

    features['joints'] = features.pop('state')
    _v21_dataset(tmp_path / 'odd', info, keys=('joints', 'actions'))
    assert main(['import', str(tmp_path / 'odd'), '--dataset', str(tmp_path / 'ds2')]) != 0
    err = capsys.readouterr().err
    assert 'no observation.state feature' in err and 'its numeric vectors are' in err and 'joints' in err


def test_an_imported_episode_without_an_outcome_is_one_dataset_line_not_a_warning_each(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Public datasets carry no outcome labels: a fact of the source, said once for the dataset; an episode
    recorded here without one is still warned about, as its recorder should have set it."""
    info = _info('so100_flat.json')
    info.update(codebase_version='v2.1', data_path='data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet')
    _v21_dataset(tmp_path / 'so100', info, frames=90)
    assert main(['import', str(tmp_path / 'so100'), '--dataset', str(tmp_path / 'ds')]) == 0
    assert main(['score', str(tmp_path / 'ds')]) == 0
    ds = Dataset.open(tmp_path / 'ds')
    (episode_id,) = ds.episode_ids()
    quality = json.loads((ds.episode_dir(episode_id) / 'quality.json').read_text())
    outcome = [f for f in quality['findings'] if f['check'] == 'completeness.outcome']
    assert [f['severity'] for f in outcome] == ['info'] and 'imported from a lerobot recording' in outcome[0]['message']
    summary = json.loads((tmp_path / 'ds' / 'quality_summary.json').read_text())
    assert any(w.startswith('1 of 1 imported episode(s) carry no outcome label') for w in summary['warnings'])


def test_an_episode_recorded_here_without_an_outcome_is_still_warned_about(tmp_path: Path) -> None:
    from ros_robodata.dataset.episode import Episode
    from ros_robodata.profile import load_profile
    from ros_robodata.sim.to_bag import write_sim_episode
    from test.profiles import PROFILE

    profile = load_profile(PROFILE)
    ds = Dataset.create(tmp_path / 'ds', profile=profile)
    truth = write_sim_episode(ds.bag_dir('ep1'), profile, seed=0, max_duration_s=3.0)
    ds.add_episode(Episode(id='ep1', task='pick_cube', status='complete', outcome='unknown',
                           start_ns=truth['start_ns']))
    assert main(['score', str(ds.root), '--no-images']) == 0
    quality = json.loads((ds.episode_dir('ep1') / 'quality.json').read_text())
    assert [f['severity'] for f in quality['findings'] if f['check'] == 'completeness.outcome'] == ['warn']


def test_a_clock_that_stepped_back_in_a_public_dataset_is_said_not_re_sorted(tmp_path: Path) -> None:
    """The frames stay in their recorded order; the stamps' step back shows against the arrival clock."""
    info = _info('so100_flat.json')
    info.update(codebase_version='v2.1', data_path='data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet')
    _v21_dataset(tmp_path / 'so100', info, frames=150, step_back_at=90)
    assert main(['import', str(tmp_path / 'so100'), '--dataset', str(tmp_path / 'ds')]) == 0
    ds = Dataset.open(tmp_path / 'ds')
    (episode_id,) = ds.episode_ids()
    with BagReader(ds.bag_dir(episode_id)) as reader:
        stamps = [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for _, m in reader.read(['/observation/state'])]
    steps = np.diff(stamps)
    assert len(stamps) == 150 and (steps < 0).sum() == 1 and steps[89] < -0.4e9  # in frame order, one step back
    assert main(['score', str(ds.root)]) == 0
    quality = json.loads((ds.episode_dir(episode_id) / 'quality.json').read_text())
    jumps = [f for f in quality['findings'] if f['check'] == 'timing.clock_jump' and f['topic'] == '/observation/state']
    assert jumps and jumps[0]['severity'] == 'error' and '0.500 s' in jumps[0]['message']
