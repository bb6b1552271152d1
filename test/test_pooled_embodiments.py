"""Pooling embodiments, as a team that fine-tunes on its own rig plus public data checks it: our simulated cell
merged with a real public LeRobot dataset (Reachy 2, vendored under test/data) gives one dataset whose episodes each
keep their own robot profile, whose commands read each episode with its own (a run over both robots gives each
robot's episodes what a run over that robot's alone gives), and whose pooled export (`export lerobot --pool`) is one
LeRobot dataset per robot plus mixture.json, or with `--unify pad` one padded dataset with masks."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from ros_robodata.cli.main import main
from ros_robodata.dataset import Dataset
from ros_robodata.dataset.embodiments import embodiments, profile_of
from ros_robodata.dataset.episode import Episode
from ros_robodata.profile import load_profile
from ros_robodata.sim.to_bag import write_sim_episode

ROOT = Path(__file__).resolve().parent.parent
PROFILE = ROOT / 'config' / 'sim_cell.yaml'
REACHY = ROOT / 'test' / 'data' / 'lerobot' / 'reachy2_apple_storage'
SIM_ID = '20260101-120001'
sys.path.insert(0, str(ROOT / 'tools'))


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope='module')
def pooled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two simulated episodes (with cameras) of our cell, merged with the three real Reachy 2 episodes."""
    root = tmp_path_factory.mktemp('pooled')
    assert main(['import', str(REACHY), '--dataset', str(root / 'public')]) == 0
    public = Dataset.open(root / 'public')
    profile = load_profile(PROFILE)
    sim = Dataset.create(root / 'rig_a', profile=profile)
    for seed, episode_id in enumerate((public.episode_ids()[0], SIM_ID)):  # an id both hold: renamed in the merge
        write_sim_episode(sim.bag_dir(episode_id), profile, seed=seed, cameras=True, image_size=(96, 72),
                          max_duration_s=3.0)
        sim.add_episode(Episode(id=episode_id, task='pick_cube', status='complete', outcome='success'))
        sim.record_checksums(episode_id)
    assert main(['merge', str(sim.root), str(public.root), '--into', str(root / 'pool')]) == 0
    return root / 'pool'


def test_a_merge_of_two_robots_keeps_each_episodes_profile(pooled: Path) -> None:
    ds = Dataset.open(pooled)
    info = yaml.safe_load((pooled / 'dataset.yaml').read_text())
    assert [(e['name'], e['file']) for e in info['embodiments']] == [
        ('sim_cell_arm', 'profiles/sim_cell_arm.yaml'), ('reachy2', 'profiles/reachy2.yaml')]
    for entry in info['embodiments']:  # each a plain profile file, as --profile reads it
        assert load_profile(pooled / entry['file']).sha256 == entry['sha256']
    robots = {i: profile_of(ds, ds.episode(i)).robot.name for i in ds.episode_ids()}
    assert sorted(robots.values()) == ['reachy2'] * 3 + ['sim_cell_arm'] * 2
    merge = json.loads((pooled / 'merge.json').read_text())
    renamed = [m for m in merge['episodes'] if m['episode'] != m['new_id']]
    assert len(renamed) == 1 and renamed[0]['robot'] == 'reachy2' and renamed[0]['new_id'].endswith('-2')
    for m in merge['episodes']:  # provenance per episode
        assert ds.episode(m['new_id']).copied_from[-1]['dataset'] == m['dataset']
    assert [e.name for e in embodiments(ds)] == ['sim_cell_arm', 'reachy2']


def test_the_dataset_tools_accept_a_dataset_of_two_robots(pooled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for args in (['verify', str(pooled)], ['info', str(pooled)], ['catalog', 'rebuild', str(pooled)],
                 ['repair', str(pooled)], ['list', str(pooled), '--where', 'robot = reachy2']):
        code, out, err = _run(args, capsys)
        assert code == 0, (args, out, err)
    assert out.count('reachy2') >= 3


def _copy(pooled: Path, to: Path) -> Path:
    """A copy of the pool whose episodes of both robots share one task, so that anything comparing episodes of a
    task with each other (consistency, smoothness against peers) would compare two robots if it could."""
    shutil.copytree(pooled, to)
    ds = Dataset.open(to)
    task = next(ds.episode(i).task for i in ds.episode_ids() if ds.episode(i).robot == 'reachy2')
    assert main(['set', str(to), '--where', 'robot = sim_cell_arm', '--task', task, '--why', 'one task']) == 0
    return to


def _sidecars(root: Path, name: str) -> dict[str, bytes]:
    return {folder.name: (folder / name).read_bytes() for folder in sorted((root / 'episodes').iterdir())
            if (folder / name).is_file()}


@pytest.fixture(scope='module')
def scored(pooled: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the pool scored in one run of both robots, in two processes; the pool scored robot by robot)."""
    base = tmp_path_factory.mktemp('scored')
    mixed, per_robot = _copy(pooled, base / 'mixed'), _copy(pooled, base / 'per_robot')
    assert main(['score', str(mixed), '--workers', '2']) == 0
    for robot in ('sim_cell_arm', 'reachy2'):
        assert main(['score', str(per_robot), '--where', f'robot = {robot}']) == 0
    return mixed, per_robot


def test_a_mixed_run_scores_each_robots_episodes_with_its_own_profile_as_per_robot_runs_do(
        scored: tuple[Path, Path]) -> None:
    mixed, per_robot = scored
    for name in ('quality.json', 'events.json'):  # the same bytes, episode by episode
        assert _sidecars(mixed, name) == _sidecars(per_robot, name)
    assert len(_sidecars(mixed, 'quality.json')) == 5
    ds = Dataset.open(mixed)
    for episode_id in ds.episode_ids():  # each read with its own topics (the simulated bags hold no LiDAR)
        doc = json.loads((ds.episode_dir(episode_id) / 'quality.json').read_text())
        missing = {f['topic'] for f in doc['findings'] if f['check'] == 'completeness.missing_topic'}
        assert missing == ({'/lidar/points'} if ds.episode(episode_id).robot == 'sim_cell_arm' else set())
    reachy = [i for i in ds.episode_ids() if ds.episode(i).robot == 'reachy2']
    consistency = [json.loads((ds.episode_dir(i) / 'quality.json').read_text())['consistency'] for i in reachy]
    # among its own robot's demonstrations of the task (with the other robot's joints none would be shared)
    assert all(c is not None and c['medoid'] in reachy for c in consistency), consistency
    summary = json.loads((mixed / 'quality_summary.json').read_text())
    assert summary['episodes'] == 5 and summary['outcomes'] == {'success': 2, 'failure': 0, 'recovery': 0, 'unknown': 3}
    assert {r: s['episodes'] for r, s in summary['robots'].items()} == {'sim_cell_arm': 2, 'reachy2': 3}
    assert summary['robots']['reachy2'] == json.loads((per_robot / 'quality_summary.json').read_text())
    assert summary['checks']['completeness.missing_topic'] == 2
    assert all(line.startswith(('sim_cell_arm: ', 'reachy2: ')) for line in summary['warnings'] + summary['skipped'])


def test_a_mixed_run_on_a_ray_cluster_writes_what_per_robot_runs_write(scored: tuple[Path, Path], pooled: Path,
                                                                       tmp_path: Path) -> None:
    _, per_robot = scored
    on_ray = _copy(pooled, tmp_path / 'ray')
    assert main(['score', str(on_ray), '--ray', 'local', '--workers', '2']) == 0
    for name in ('quality.json', 'events.json'):
        assert _sidecars(on_ray, name) == _sidecars(per_robot, name)
    segmented, alone = _copy(pooled, tmp_path / 'segmented'), _copy(pooled, tmp_path / 'alone')
    assert main(['segment', str(segmented), '--ray', 'local', '--workers', '2']) == 0
    for robot in ('sim_cell_arm', 'reachy2'):
        assert main(['segment', str(alone), '--where', f'robot = {robot}']) == 0
    assert _sidecars(segmented, 'events.json') == _sidecars(alone, 'events.json') != {}


def test_an_episode_alone_and_an_explicit_profile_read_with_one_profile(
        pooled: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = Dataset.open(_copy(pooled, tmp_path / 'pool'))
    one = next(i for i in ds.episode_ids() if ds.episode(i).robot == 'reachy2')  # an episode: its own profile
    code, _, err = _run(['score', str(ds.episode_dir(one))], capsys)
    assert code == 0, err
    findings = json.loads((ds.episode_dir(one) / 'quality.json').read_text())['findings']
    assert not [f for f in findings if f['check'] == 'completeness.missing_topic']
    code, _, err = _run(['score', str(ds.root), '--profile', str(ds.root / 'profiles' / 'sim_cell_arm.yaml')],
                        capsys)  # --profile: one profile for every episode, as before
    assert code == 0, err
    doc = json.loads((ds.episode_dir(one) / 'quality.json').read_text())
    assert '/joint_states' in {f['topic'] for f in doc['findings'] if f['check'] == 'completeness.missing_topic'}
    assert 'robots' not in json.loads((ds.root / 'quality_summary.json').read_text())


def test_a_mixed_segment_run_segments_each_robot_as_per_robot_runs_do(pooled: Path, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    mixed, per_robot = _copy(pooled, tmp_path / 'mixed'), _copy(pooled, tmp_path / 'per_robot')
    code, out, err = _run(['segment', str(mixed)], capsys)
    assert code == 0, err
    assert 'reachy2: nothing to segment: the profile' in out and 'sim_cell_arm: strokes pooled over the 2' in out
    for robot in ('sim_cell_arm', 'reachy2'):
        code, _, err = _run(['segment', str(per_robot), '--where', f'robot = {robot}'], capsys)
        assert code == 0, err
    events = _sidecars(mixed, 'events.json')
    ds = Dataset.open(mixed)
    assert sorted(events) == sorted(i for i in ds.episode_ids() if ds.episode(i).robot == 'sim_cell_arm')
    assert events == _sidecars(per_robot, 'events.json')
    code, out, _ = _run(['segment', str(mixed), '--json'], capsys)
    answer = json.loads(out)
    assert sorted(answer['episodes']) == sorted(events) and list(answer['nothing_to_do']) == ['reachy2']


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob('*')) if p.is_file()}


def test_export_frames_of_two_robots_writes_one_export_per_robot(pooled: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / 'frames'
    code, printed, err = _run(['export', 'frames', str(pooled), '--out', str(out), '--tasks', 'none'], capsys)
    assert code == 0, err
    assert 'reachy2: the profile names no camera: its 3 episode(s) not exported' in printed
    assert sorted(p.name for p in out.iterdir()) == ['sim_cell_arm']
    alone = tmp_path / 'alone' / 'sim_cell_arm'
    code, _, err = _run(['export', 'frames', str(pooled), '--where', 'robot = sim_cell_arm', '--out', str(alone),
                         '--tasks', 'none'], capsys)
    assert code == 0, err
    assert _tree(out / 'sim_cell_arm') == _tree(alone)  # what the robot's own run writes, byte for byte
    manifest = json.loads((out / 'sim_cell_arm' / 'manifest.json').read_text())
    assert len(manifest['episodes']) == 2 and manifest['frames']
    code, printed, err = _run(['export', 'frames', str(pooled), '--out', str(out), '--json'], capsys)
    assert code == 0, err  # again: the episodes already current, the task files written in the robot's folder
    answer = json.loads(printed)
    assert len(answer['already_current']) == 2 and list(answer['robots']) == ['sim_cell_arm']
    assert answer['left_out'] == {'reachy2': 'the profile names no camera: its 3 episode(s) not exported'}
    assert all(Path(p).is_relative_to(out / 'sim_cell_arm') for paths in answer['task_files'].values() for p in paths)
    code, _, err = _run(['export', 'frames', str(pooled), '--out', str(tmp_path / 'x'), '--cameras', 'nose'],
                        capsys)
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert "sim_cell_arm: --cameras: unknown camera 'nose'" in err and '--where "robot = sim_cell_arm"' in err
    assert not (tmp_path / 'x').exists()


def test_select_reads_each_robots_trajectories_and_measures_diversity_within_a_robot(
        scored: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mixed = shutil.copytree(scored[0], tmp_path / 'pool')
    no_lidar = load_profile(PROFILE).to_dict()  # the simulated bags hold no LiDAR: scored without, they are usable
    no_lidar['topics']['lidars'] = []
    (tmp_path / 'no_lidar.yaml').write_text(yaml.safe_dump(no_lidar))
    code, _, err = _run(['score', str(mixed), '--where', 'robot = sim_cell_arm', '--profile',
                         str(tmp_path / 'no_lidar.yaml')], capsys)
    assert code == 0, err
    code, out, err = _run(['select', str(mixed), '--budget', '100%', '--dry-run', '--json'], capsys)
    assert code == 0, err
    queue = json.loads(out)
    vectors = json.loads((mixed / 'review' / 'embeddings.json').read_text())['episodes'] \
        if (mixed / 'review' / 'embeddings.json').is_file() else {}
    assert not vectors  # a dry run writes nothing
    code, out, err = _run(['select', str(mixed), '--budget', '100%'], capsys)
    assert code == 0, err
    vectors = json.loads((mixed / 'review' / 'embeddings.json').read_text())['episodes']
    ds = Dataset.open(mixed)
    sizes = {ds.episode(i).robot: len(v['vector']) for i, v in vectors.items()}
    assert len(vectors) == 5 and set(sizes) == {'sim_cell_arm', 'reachy2'}  # every robot's read with its joints
    assert all(len(v['vector']) > 0 for v in vectors.values()) and sizes['sim_cell_arm'] != sizes['reachy2']
    picked = json.loads((mixed / 'review' / 'queue.json').read_text())['queue']
    firsts = [e['reasons'] for e in picked if any(r.startswith('the first pick of ') for r in e['reasons'])]
    assert len(firsts) == 2, picked  # the first pick of each robot: no distance between two robots' trajectories
    assert len(queue['queue']) == len(picked)


def _policy(path: Path, **criteria: Any) -> Path:
    path.write_text(yaml.safe_dump({'name': path.stem, 'min_score': 0.0, 'no_error_findings': False,
                                    'outcomes': ['success', 'unknown'], **criteria}))
    return path


def test_approve_and_release_read_each_episodes_profile(scored: tuple[Path, Path], tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    _, per_robot = scored
    ds = Dataset.open(per_robot)
    reachy = sorted(i for i in ds.episode_ids() if ds.episode(i).robot == 'reachy2')
    code, out, err = _run(['approve', str(per_robot), '--policy', str(_policy(tmp_path / 'grasps.yaml',
                           required_events=['grasp'])), '--dry-run', '--json'], capsys)
    assert code == 0, err
    said = json.dumps(json.loads(out))
    assert 'the robot profile names no gripper or wrench' in said  # reachy2's: no events to be found
    assert 'no grasp event' in said  # the simulated ones': segmented (while scored), no grasp in three seconds
    code, _, err = _run(['approve', str(per_robot), '--policy', str(_policy(tmp_path / 'all.yaml'))], capsys)
    assert code == 0, err
    code, _, err = _run(['release', 'create', str(per_robot), 'both'], capsys)
    assert code == 0, err
    code, _, err = _run(['release', 'create', str(per_robot), 'reachy', '--where', 'robot = reachy2'], capsys)
    assert code == 0, err
    shas = {e.name: e.sha256 for e in embodiments(ds)}
    both = json.loads((per_robot / 'releases' / 'both' / 'manifest.json').read_text())
    assert both['profile_sha256'] is None and both['profiles'] == dict(sorted(shas.items()))
    for episode_id, entry in both['episodes'].items():
        assert entry['profile_sha256'] == shas[ds.episode(episode_id).robot]
    alone = json.loads((per_robot / 'releases' / 'reachy' / 'manifest.json').read_text())
    assert sorted(alone['episodes']) == reachy
    assert alone['profile_sha256'] == shas['reachy2'] and alone['profiles'] == {'reachy2': shas['reachy2']}
    code, _, err = _run(['release', 'verify', str(per_robot), 'both'], capsys)
    assert code == 0, err


def test_review_media_of_two_robots_each_with_its_profile(pooled: Path, tmp_path: Path) -> None:
    from ros_robodata.labeling.taxonomy import load_taxonomy
    from ros_robodata.review.label_studio.tasks import frame_tasks, timeline_tasks

    ds = Dataset.open(pooled)
    sim = sorted(i for i in ds.episode_ids() if ds.episode(i).robot == 'sim_cell_arm')
    specs, skipped = timeline_tasks(ds, ds.episode_ids(), media_dir=tmp_path / 'media', document_root=tmp_path,
                                    every_ns=500_000_000, taxonomy=load_taxonomy(ROOT / 'config' / 'taxonomy.yaml'))
    assert sorted(s['episode'] for s in specs) == sim
    assert skipped == {i: 'reachy2: its robot profile has no camera' for i in ds.episode_ids() if i not in sim}
    frames = frame_tasks(ds, ds.episode_ids(), media_dir=tmp_path / 'media', document_root=tmp_path,
                         every_ns=1_000_000_000)
    assert frames and {s['episode'] for s in frames} == set(sim)


def test_a_plain_export_of_two_robots_is_refused_naming_pool(pooled: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(['export', 'lerobot', str(pooled), '--out', str(tmp_path / 'x'), '--outcomes',
                         'success,unknown'], capsys)
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert '--pool' in err and '--where "robot = reachy2"' in err
    assert not (tmp_path / 'x').exists()
    code, _, err = _run(['export', 'lerobot', str(pooled), '--out', str(tmp_path / 'sim'), '--where',
                         'robot = sim_cell_arm'], capsys)
    assert code == 0, err
    info = json.loads((tmp_path / 'sim' / 'meta' / 'info.json').read_text())
    assert info['robot_type'] == 'sim_cell_arm' and info['total_episodes'] == 2


def _stats(root: Path) -> dict[str, Any]:
    return json.loads((root / 'meta' / 'stats.json').read_text())


@pytest.fixture(scope='module')
def pool_export(pooled: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp('mix') / 'mix'
    assert main(['export', 'lerobot', str(pooled), '--out', str(out), '--pool', '--outcomes', 'success,unknown',
                 '--weights', 'sim_cell_arm=0.7,reachy2=0.3']) == 0
    return out


def test_a_pooled_export_is_one_dataset_per_robot_and_a_mixture(pooled: Path, pool_export: Path) -> None:
    mixture = json.loads((pool_export / 'mixture.json').read_text())
    assert sorted(p.name for p in pool_export.iterdir()) == ['mixture.json', 'reachy2', 'sim_cell_arm']
    sources = {s['name']: s for s in mixture['sources']}
    assert mixture['weighting'] == 'given'
    assert sources['sim_cell_arm']['weight'] == pytest.approx(0.7)
    assert sources['reachy2']['weight'] == pytest.approx(0.3)
    for name, source in sources.items():
        info = json.loads((pool_export / source['path'] / 'meta' / 'info.json').read_text())
        assert info['robot_type'] == source['robot_type'] == name == source['embodiment']
        assert info['features']['observation.state']['names'] == source['state_names']
        assert source['stats']['observation.state'] == {
            k: v for k, v in _stats(pool_export / name)['observation.state'].items()
            if k in ('mean', 'std', 'min', 'max', 'q01', 'q99')}
    assert sources['reachy2']['episodes'] == 3 and len(sources['reachy2']['state_names']) == 19
    assert sources['sim_cell_arm']['episodes'] == 2 and sources['sim_cell_arm']['from_datasets'] == ['rig_a']
    assert sources['reachy2']['from_datasets'] == ['public']
    assert len(sources['sim_cell_arm']['state_names']) != 19
    assert (pool_export / 'sim_cell_arm' / 'videos').is_dir() and not (pool_export / 'reachy2' / 'videos').exists()


def test_default_weights_follow_episodes_or_hours(pooled: Path, tmp_path: Path) -> None:
    for weighting in ('episodes', 'hours'):
        out = tmp_path / weighting
        args = ['export', 'lerobot', str(pooled), '--out', str(out), '--pool', '--outcomes', 'success,unknown',
                '--cameras', '']
        assert main(args + ([] if weighting == 'episodes' else ['--weights', 'hours'])) == 0
        mixture = json.loads((out / 'mixture.json').read_text())
        assert mixture['weighting'] == weighting
        total = sum(s[weighting] for s in mixture['sources'])
        for source in mixture['sources']:
            assert source['weight'] == pytest.approx(source[weighting] / total)
            assert source['hours'] == pytest.approx(source['frames'] / source['fps'] / 3600)


def test_weights_naming_an_unknown_robot_are_refused(pooled: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(['export', 'lerobot', str(pooled), '--out', str(tmp_path / 'x'), '--pool',
                         '--weights', 'rig_b=1'], capsys)
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert 'no source rig_b' in err and 'no weight for reachy2, sim_cell_arm' in err
    assert not (tmp_path / 'x').exists() and not list(tmp_path.glob('.x*'))


@pytest.fixture(scope='module')
def padded(pooled: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp('pad') / 'padded'
    assert main(['export', 'lerobot', str(pooled), '--out', str(out), '--unify', 'pad', '--outcomes',
                 'success,unknown']) == 0
    return out


def test_unify_pad_pads_to_the_widest_robot_with_a_mask(padded: Path, pool_export: Path) -> None:
    out = padded
    info = json.loads((out / 'meta' / 'info.json').read_text())
    table = pq.read_table(out / 'data' / 'chunk-000' / 'file-000.parquet').to_pydict()
    robots = info['ros_robodata']['embodiments']
    assert [r['name'] for r in robots] == ['sim_cell_arm', 'reachy2']
    width = max(len(r['state_names']) for r in robots)
    assert info['features']['observation.state']['shape'] == [width] == [19]
    assert info['total_frames'] == len(table['index']) and table['index'] == list(range(len(table['index'])))
    for robot in robots:  # each robot's frames: its own export's values, then zeros; the mask says which
        own = pq.read_table(pool_export / robot['name'] / 'data' / 'chunk-000' / 'file-000.parquet').to_pydict()
        rows = [i for i, e in enumerate(table['embodiment']) if e == robot['index']]
        n, m = len(robot['state_names']), len(robot['action_names'])
        assert len(rows) == len(own['index'])
        for k in (0, len(rows) // 2, len(rows) - 1):
            state, action = table['observation.state'][rows[k]], table['action'][rows[k]]
            assert state[:n] == own['observation.state'][k] and state[n:] == [0.0] * (width - n)
            assert action[:m] == own['action'][k] and action[m:] == [0.0] * (len(action) - m)
            assert table['observation.state_mask'][rows[k]] == [1.0] * n + [0.0] * (width - n)
            assert table['action_mask'][rows[k]] == [1.0] * m + [0.0] * (len(action) - m)
    card = (out / 'README.md').read_text()
    assert '| 1 | reachy2 | 0: ' in card and 'then zeros' in card
    assert json.loads((out / 'mixture.json').read_text())['unify'] == 'pad'
    episodes = pq.read_table(out / 'meta' / 'episodes' / 'chunk-000' / 'file-000.parquet').to_pylist()
    assert [e['episode_index'] for e in episodes] == list(range(len(episodes)))
    assert {e['embodiment'] for e in episodes} == {'sim_cell_arm', 'reachy2'}


@pytest.fixture(scope='module')
def lerobot_python() -> Path:
    from lerobot_venv import ensure

    return ensure()


def _probe(lerobot_python: Path, root: Path, out: Path) -> dict[str, Any]:
    """LeRobot's own LeRobotDataset on `root`: its frame count, features, and three frames drawn."""
    total = json.loads((root / 'meta' / 'info.json').read_text())['total_frames']
    run = subprocess.run([str(lerobot_python), str(ROOT / 'test' / 'lerobot_probe.py'), str(root), str(out),
                          '0', str(total // 2), str(total - 1)], capture_output=True, text=True, timeout=600,
                         check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    report: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    return report


def test_lerobot_loads_each_robots_dataset(lerobot_python: Path, pool_export: Path, tmp_path: Path) -> None:
    mixture = json.loads((pool_export / 'mixture.json').read_text())
    for source in mixture['sources']:
        root = pool_export / source['path']
        report = _probe(lerobot_python, root, tmp_path)
        assert report['num_frames'] == source['frames'] and report['fps'] == source['fps']
        assert report['features']['observation.state'] == [len(source['state_names'])]
        assert report['features']['action'] == [len(source['action_names'])]
        data = pq.read_table(root / 'data' / 'chunk-000' / 'file-000.parquet').to_pydict()
        last = report['items'][-1]
        assert last['observation.state'] == pytest.approx(data['observation.state'][-1])
        assert sorted(report['stats_keys']['observation.state']) == sorted(_stats(root)['observation.state'])


def test_lerobot_loads_the_padded_dataset(lerobot_python: Path, padded: Path, tmp_path: Path) -> None:
    report = _probe(lerobot_python, padded, tmp_path)
    info = json.loads((padded / 'meta' / 'info.json').read_text())
    assert report['num_frames'] == info['total_frames'] and report['num_episodes'] == 5
    assert report['features']['observation.state_mask'] == [19] and report['features']['embodiment'] == [1]
    first, last = report['items'][0], report['items'][-1]
    assert first['embodiment'] == 0 and last['embodiment'] == 1
    assert last['observation.state_mask'] == [1.0] * 19
    assert sum(first['observation.state_mask']) == len(info['ros_robodata']['embodiments'][0]['state_names'])


def test_check_loads_every_dataset_written_and_passes_the_gates(lerobot_python: Path, pooled: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv('ROBODATA_LEROBOT_PYTHON', str(lerobot_python))
    out = tmp_path / 'mix'
    code, printed, err = _run(['export', 'lerobot', str(pooled), '--out', str(out), '--pool', '--outcomes',
                               'success,unknown', '--check'], capsys)
    assert code == 0, err
    gates = 'fps, timestamps on the grid, no NaN, stats present, LeRobotDataset batch: ok'
    assert f'check {out / "sim_cell_arm"}: {gates}' in printed and f'check {out / "reachy2"}: {gates}' in printed
    assert 'observation.state [8, 19]' in printed


def test_check_names_the_gate_episode_and_frame_that_fail(lerobot_python: Path, pool_export: Path,
                                                          tmp_path: Path) -> None:
    from ros_robodata.export.lerobot.lerobot_check import check_lerobot_dataset

    root = tmp_path / 'damaged'
    shutil.copytree(pool_export / 'reachy2', root)
    file = root / 'data' / 'chunk-000' / 'file-000.parquet'
    table = pq.read_table(file)
    data = table.to_pydict()
    data['observation.state'][5] = [float('nan')] * 19  # episode 0, frame 5
    data['timestamp'][7] += 0.01  # episode 0, frame 7: off the grid
    pq.write_table(pa.Table.from_pydict(data, schema=table.schema), file)
    stats = _stats(root)
    del stats['action']
    (root / 'meta' / 'stats.json').write_text(json.dumps(stats))

    check = check_lerobot_dataset(root, fps=30, python=lerobot_python)

    assert not check.ok and check.problems['fps'] == ''
    assert check.problems['no NaN'] == 'observation.state: 1 frame(s) with NaN or infinity, first episode 0 frame 5'
    assert check.problems['timestamps on the grid'].startswith('1 frame(s) off the 1/30 s grid')
    assert 'first episode 0 frame 7' in check.problems['timestamps on the grid']
    assert check.problems['stats present'] == 'no mean/std/min/max for action'
    assert check_lerobot_dataset(pool_export / 'reachy2', fps=25, python=lerobot_python).problems['fps'] == (
        'meta/info.json fps is 30, the export asked for 25')


def test_pool_options_that_cannot_work_are_refused_before_anything_is_written(
        pooled: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / 'x'
    code, _, err = _run(['export', 'lerobot', str(pooled), '--out', str(out), '--weights', 'hours'], capsys)
    assert code == 1
    assert err.strip() == 'robodata export: error: --weights: weighs the sources of a pooled export: add --pool'
    code, _, err = _run(['export', 'lerobot', str(pooled), '--out', str(out), '--pool', '--weights', 'reachy2=x'],
                        capsys)
    assert code == 1 and "--weights: 'reachy2=x' is not NAME=WEIGHT" in err
    monkeypatch.setenv('ROBODATA_LEROBOT_PYTHON', str(tmp_path / 'no-python'))
    monkeypatch.setattr('ros_robodata.export.lerobot.lerobot_check.VENV_PYTHON', tmp_path / 'no-venv' / 'python')
    code, _, err = _run(['export', 'lerobot', str(pooled), '--out', str(out), '--pool', '--check'], capsys)
    assert code == 1 and 'no Python with lerobot was found' in err and len(err.strip().splitlines()) == 1
    assert not out.exists() and not list(tmp_path.glob('.x*'))


def test_an_episode_of_another_robot_is_not_copied_into_a_dataset_of_one(pooled: Path, tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    ds = Dataset.open(pooled)
    by_robot = {profile_of(ds, ds.episode(i)).robot.name: i for i in ds.episode_ids()}
    sim_only = Dataset.create(tmp_path / 'sim_only', profile=load_profile(PROFILE))  # the pool's first robot
    code, out, err = _run(['episodes', 'copy', str(pooled), '--episode', by_robot['reachy2'],
                           by_robot['sim_cell_arm'], '--into', str(sim_only.root)], capsys)
    assert code == 3, (out, err)
    assert f'{by_robot["reachy2"]}: not copied: recorded with robot reachy2' in err
    assert Dataset.open(sim_only.root).episode_ids() == [by_robot['sim_cell_arm']]
