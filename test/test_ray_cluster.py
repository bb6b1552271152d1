"""`--ray` on a real Ray cluster of this machine: a head (`ray start --head`) and a second worker node, both with
one CPU, token authentication on, every file of theirs in a temporary folder. The demo dataset is scored locally
and on the cluster; what a user compares is what these tests compare: the sidecars byte for byte, the catalog's
rows, what a rerun does, what a killed worker leaves."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ros_robodata.dataset.dataset import Dataset
from test.ray_nodes import RayNodes, free_port


@pytest.fixture(scope='module')
def ray_nodes() -> Iterator[RayNodes]:
    """Two Ray nodes on this machine, stopped afterwards."""
    nodes = RayNodes(nodes=2, cpus=1)
    try:
        yield nodes
    finally:
        nodes.stop()


@pytest.fixture
def ray_cluster(ray_nodes: RayNodes) -> tuple[str, dict[str, str]]:
    """(address, environment for the driver)."""
    return ray_nodes.address, ray_nodes.env


@pytest.fixture
def demo_copies(demo_run, tmp_path):
    """copy(name) -> a fresh copy of the demo's dataset (2 recorded episodes, unscored)."""
    run, out = demo_run
    assert run.returncode == 0, run.stderr

    def copy(name: str) -> Path:
        target = tmp_path / name
        shutil.copytree(out / 'dataset', target, symlinks=True)
        for sidecar in list(target.rglob('quality.json')) + list(target.glob('quality_summary.json')):
            sidecar.unlink()
        return target

    return copy


def _robodata(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, '-m', 'ros_robodata.cli.main', *args], capture_output=True, text=True,
                          env=env, timeout=600)


def _outputs(root: Path) -> dict[str, bytes]:
    """Every JSON sidecar the commands write, by path inside the dataset."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob('*.json'))}


def _score_rows(root: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(root / 'catalog.sqlite') as db:
        columns = [r[1] for r in db.execute('PRAGMA table_info(episodes)')]
        wanted = [c for c in columns if c in ('id', 'score') or c.startswith('score')]
        return sorted(db.execute(f'SELECT {", ".join(wanted)} FROM episodes').fetchall())


def test_score_on_the_cluster_writes_what_a_local_run_writes_and_a_rerun_submits_nothing(ray_cluster, demo_copies):
    address, env = ray_cluster
    local, remote = demo_copies('local'), demo_copies('remote')
    assert _robodata('score', str(local)).returncode == 0

    first = _robodata('score', str(remote), '--ray', address, '--json', env=env)
    assert first.returncode == 0, first.stderr
    assert _outputs(remote) == _outputs(local)
    assert _score_rows(remote) == _score_rows(local)
    episodes = len(Dataset.open(remote).episode_ids())
    cluster = json.loads(first.stdout)['cluster']
    assert cluster['run'] == episodes and cluster['cached'] == 0 and cluster['failed'] == 0
    assert sum(node['episodes'] for node in cluster['nodes'].values()) == episodes

    stamps = {p: p.stat().st_mtime_ns for p in remote.rglob('*.json')}
    again = _robodata('score', str(remote), '--ray', address, '--json', env=env)
    assert again.returncode == 0, again.stderr
    cluster = json.loads(again.stdout)['cluster']
    assert (cluster['run'], cluster['cached']) == (0, episodes)  # nothing was submitted
    assert {p: p.stat().st_mtime_ns for p in remote.rglob('*.json')} == stamps  # nothing was rewritten
    assert _score_rows(remote) == _score_rows(local)  # no row added or duplicated


def _kill_running_tasks(nodes: RayNodes, process: subprocess.Popen[str], kills: int) -> list[int]:
    """SIGKILL the cluster's worker processes running a robodata task, `kills` different ones at most, while
    `process` runs; the pids killed."""
    killed: list[int] = []
    while process.poll() is None and len(killed) < kills:
        for pid in nodes.task_pids():
            if pid not in killed:
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                except ProcessLookupError:
                    pass
                break
        time.sleep(0.01)
    return killed


def test_a_worker_killed_mid_episode_is_retried_and_the_result_is_whole(ray_nodes, ray_cluster, demo_copies):
    address, env = ray_cluster
    local, remote = demo_copies('local'), demo_copies('remote')
    assert _robodata('score', str(local)).returncode == 0
    env = {**env, 'XDG_CACHE_HOME': str(remote.parent / 'fresh_cache')}  # nothing kept from another test
    process = subprocess.Popen([sys.executable, '-m', 'ros_robodata.cli.main', 'score', str(remote), '--ray',
                                address, '--json'], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env)
    killed = _kill_running_tasks(ray_nodes, process, kills=1)
    out, err = process.communicate(timeout=600)
    assert killed, 'no task was seen running: nothing was killed'
    assert process.returncode == 0, err
    assert out.strip(), err[-3000:]
    assert json.loads(out)['cluster']['failed'] == 0, (out[-2000:], err[-2000:])
    assert _outputs(remote) == _outputs(local)
    assert _score_rows(remote) == _score_rows(local)


def test_an_episode_whose_worker_dies_twice_is_reported_and_the_rest_finish(ray_nodes, ray_cluster, demo_copies):
    address, env = ray_cluster
    remote = demo_copies('remote')
    first, second = sorted(Dataset.open(remote).episode_ids())
    env = {**env, 'XDG_CACHE_HOME': str(remote.parent / 'fresh_cache')}
    process = subprocess.Popen([sys.executable, '-m', 'ros_robodata.cli.main', 'score', str(remote), '--ray',
                                address, '--where', f'id = {first}'], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env)
    killed = _kill_running_tasks(ray_nodes, process, kills=2)
    _, err = process.communicate(timeout=600)
    assert len(killed) == 2, f'the task was seen running {len(killed)} time(s), not twice'
    assert process.returncode == 3, err  # finished, with an episode that failed
    assert f'{first}: its Ray worker died 2 times' in err
    assert not (remote / 'episodes' / first / 'quality.json').exists()

    rest = _robodata('score', str(remote), '--ray', address, '--json', env=env)
    assert rest.returncode == 0, rest.stderr
    assert (remote / 'episodes' / first / 'quality.json').is_file()
    assert (remote / 'episodes' / second / 'quality.json').is_file()


def test_without_ray_installed_the_error_says_how_to_install_it(make_demo_dataset, tmp_path):
    dataset = make_demo_dataset(1)
    blocker = tmp_path / 'no_ray'
    blocker.mkdir()
    (blocker / 'ray.py').write_text("raise ImportError('No module named ray')\n")
    env = {**os.environ, 'PYTHONPATH': f'{blocker}{os.pathsep}{os.environ.get("PYTHONPATH", "")}'}
    run = _robodata('score', str(dataset.root), '--ray', env=env)
    assert run.returncode == 1
    assert run.stderr.strip().splitlines() == [
        "robodata score: error: --ray needs Ray, which is not installed here: pip install 'ros_robodata[ray]' "
        '(or pip install ray)']
    assert not (dataset.root / 'quality_summary.json').exists()


def test_no_cluster_at_the_address_is_one_line(make_demo_dataset):
    dataset = make_demo_dataset(1)
    run = _robodata('score', str(dataset.root), '--ray', f'127.0.0.1:{free_port()}')
    assert run.returncode == 1
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('robodata score: error: --ray 127.0.0.1:')
    assert 'no Ray cluster answers there' in lines[0]


def test_ctrl_c_cancels_the_tasks_and_writes_nothing_half(ray_nodes, ray_cluster, demo_copies):
    address, env = ray_cluster
    remote = demo_copies('remote')
    before = _outputs(remote)
    rows = _score_rows(remote)
    env = {**env, 'XDG_CACHE_HOME': str(remote.parent / 'fresh_cache')}
    process = subprocess.Popen([sys.executable, '-m', 'ros_robodata.cli.main', 'score', str(remote), '--ray',
                                address], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    seen = False
    while process.poll() is None and not seen:  # stopped while an episode is being scored on the cluster
        seen = bool(ray_nodes.task_pids())
        time.sleep(0.01)
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=120)
    assert seen, 'no task was seen running'
    assert process.returncode == 130
    assert _outputs(remote) == before  # no quality.json, no summary: nothing half-written
    assert _score_rows(remote) == rows
    assert not list(remote.rglob('*.tmp'))
    deadline = time.monotonic() + 30  # and the cluster is left with nothing of ours running
    while time.monotonic() < deadline:
        if not ray_nodes.task_pids():
            break
        time.sleep(0.2)
    else:
        raise AssertionError('a robodata task still runs on the cluster 30 s after Ctrl-C')


def test_export_frames_on_the_cluster_writes_the_files_a_local_export_writes(ray_cluster, demo_copies, tmp_path):
    address, env = ray_cluster
    dataset = demo_copies('dataset')
    local, remote = tmp_path / 'frames_local', tmp_path / 'frames_remote'
    assert _robodata('export', 'frames', str(dataset), '--out', str(local)).returncode == 0
    run = _robodata('export', 'frames', str(dataset), '--out', str(remote), '--ray', address, '--json', env=env)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)['cluster']['run'] == len(Dataset.open(dataset).episode_ids())
    written = {str(p.relative_to(local)): p.read_bytes() for p in sorted(local.rglob('*')) if p.is_file()}
    assert written and {str(p.relative_to(remote)): p.read_bytes()
                        for p in sorted(remote.rglob('*')) if p.is_file()} == written


def test_segment_on_the_cluster_writes_the_events_a_local_run_writes(ray_cluster, demo_copies):
    address, env = ray_cluster
    local, remote = demo_copies('local'), demo_copies('remote')
    for dataset in (local, remote):
        for events in dataset.rglob('events.json'):
            events.unlink()
    assert _robodata('segment', str(local)).returncode == 0
    run = _robodata('segment', str(remote), '--ray', address, '--json', env=env)
    assert run.returncode == 0, run.stderr
    episodes = len(Dataset.open(remote).episode_ids())
    assert json.loads(run.stdout)['cluster']['run'] >= episodes  # once each, and again for any that needed the pool
    written = _outputs(local)
    assert len([name for name in written if name.endswith('events.json')]) == episodes
    assert _outputs(remote) == written


def test_select_reads_the_trajectories_on_the_cluster_and_picks_the_same_queue(ray_cluster, demo_copies):
    address, env = ray_cluster
    local, remote = demo_copies('local'), demo_copies('remote')
    for dataset in (local, remote):
        assert _robodata('score', str(dataset)).returncode == 0
    here = _robodata('select', str(local), '--budget', '1', '--json')
    there = _robodata('select', str(remote), '--budget', '1', '--json', '--ray', address, env=env)
    assert here.returncode == 0 and there.returncode == 0, there.stderr
    queue_here, queue_there = json.loads(here.stdout), json.loads(there.stdout)
    assert queue_here['picked'] == 1
    assert queue_there['queue'] == queue_here['queue'] and queue_there['excluded'] == queue_here['excluded']
    cached = (remote / 'review' / 'embeddings.json').read_bytes()
    assert cached == (local / 'review' / 'embeddings.json').read_bytes()  # the same vectors, kept the same way


def test_import_converts_a_lerobot_datasets_episodes_on_the_cluster_as_a_local_import_does(ray_cluster, tmp_path):
    address, env = ray_cluster
    reachy = Path(__file__).resolve().parent / 'data' / 'lerobot' / 'reachy2_apple_storage'
    here = _robodata('import', str(reachy), '--dataset', str(tmp_path / 'here'), '--json')
    there = _robodata('import', str(reachy), '--dataset', str(tmp_path / 'there'), '--json', '--ray', address,
                      env=env)
    assert here.returncode == 0 and there.returncode == 0, there.stderr
    local, remote = Dataset.open(tmp_path / 'here'), Dataset.open(tmp_path / 'there')
    assert remote.episode_ids() == local.episode_ids() and len(local.episode_ids()) == 3

    def record(dataset: Dataset, episode_id: str) -> dict[str, object]:
        fields = dict(vars(dataset.episode(episode_id)))
        fields['source'] = {k: v for k, v in fields['source'].items() if k != 'imported'}  # when it was imported
        return fields

    for episode_id in local.episode_ids():
        assert record(remote, episode_id) == record(local, episode_id)  # bag_sha256 included: the same bytes
    assert not list((tmp_path / 'there' / 'episodes').glob('.*'))  # no staging folder left
    again = _robodata('import', str(reachy), '--dataset', str(tmp_path / 'there'), '--json', '--ray', address,
                      env=env)
    assert again.returncode == 0, again.stderr
    assert Dataset.open(tmp_path / 'there').episode_ids() == local.episode_ids()  # a rerun imports nothing twice
