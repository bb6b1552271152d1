"""`robodata score` on a Ray cluster against the local run, in the same run of this bench (issue 37).

Data: real teleop episodes (bench/real_data/g1_inspire: 100 episodes of a humanoid with two dexterous hands, a
LeRobot v2.1 dataset, see bench/real_data/SOURCES.md) imported twice and merged: --copies x 100 episodes.

Runs, each on a fresh copy of the unscored dataset and an empty result cache, every one the whole command as a
user runs it (`robodata score DATASET --json`):
- local: --workers 1 and --workers 2 (processes of this machine);
- Ray: a real cluster of this machine started with `ray start` (token authentication on): 1 worker (a head with
  one CPU) and 2 workers (the head and a second node, one CPU each), `--ray ADDRESS`;
- a rerun of the 2-worker Ray run (everything is in the result cache: nothing is submitted).

Printed: wall seconds and episodes/s per run; the per-episode work (busy seconds in the tasks, from --json); the
Ray overhead at 2 workers against the local 2-process run, as a share of the per-episode work; and the projection
for 10,000 episodes on N nodes with C CPUs each, as a formula with the measured constants. Target: Ray overhead
under 10% of the per-episode work at 2 workers.

Run alone on a quiet machine: PYTHONPATH=. .venv/bin/python bench/ray_scaling.py [--copies 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from test.ray_nodes import RayNodes  # noqa: E402  (the same cluster of this machine as the tests)

SOURCE = ROOT / 'bench' / 'real_data' / 'g1_inspire'
TARGET_OVERHEAD = 0.10


def robodata(*args: str, env: dict[str, str] | None = None) -> tuple[float, dict[str, Any]]:
    start = time.perf_counter()
    run = subprocess.run([sys.executable, '-m', 'ros_robodata.cli.main', *args], capture_output=True, text=True,
                         env=env)
    took = time.perf_counter() - start
    if run.returncode not in (0, 3):
        sys.exit(f'robodata {" ".join(args)} failed ({run.returncode}): {run.stderr[-2000:]}')
    text = run.stdout[run.stdout.find('{'):] if '{' in run.stdout else '{}'
    return took, json.loads(text)


def build_dataset(work: Path, copies: int) -> Path:
    """`copies` imports of the real episodes, merged into one dataset."""
    parts = []
    for n in range(copies):
        part = work / f'part{n}'
        robodata('import', str(SOURCE), '--dataset', str(part), '--json')
        parts.append(str(part))
    merged = work / 'episodes_all'
    robodata('merge', *parts, '--into', str(merged), '--json')
    for part in parts:
        shutil.rmtree(part)
    return merged


def fresh(dataset: Path, work: Path, name: str) -> Path:
    copy = work / name
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(dataset, copy, symlinks=True)
    return copy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--copies', type=int, default=2, help='imports of the 100 real episodes (default 2: 200)')
    args = parser.parse_args()
    if not SOURCE.is_dir():
        sys.exit(f'{SOURCE} is missing: run sh bench/real_data/rebuild.sh')
    work = Path(tempfile.mkdtemp(prefix='ray_scaling_'))
    try:
        started = time.perf_counter()
        dataset = build_dataset(work, args.copies)
        from ros_robodata.dataset.dataset import Dataset
        n = len(Dataset.open(dataset).episode_ids())
        print(f'dataset: {n} episodes (real, {SOURCE.name} imported {args.copies}x), built in '
              f'{time.perf_counter() - started:.1f} s')
        runs: dict[str, tuple[float, dict[str, Any]]] = {}
        base_env = {**os.environ}
        for workers in (1, 2):
            copy = fresh(dataset, work, f'local{workers}')
            env = {**base_env, 'XDG_CACHE_HOME': str(work / f'cache_local{workers}')}
            runs[f'local --workers {workers}'] = robodata('score', str(copy), '--workers', str(workers), '--json',
                                                          env=env)
        for nodes in (1, 2):
            cluster = RayNodes(nodes=nodes, cpus=1)
            try:
                copy = fresh(dataset, work, f'ray{nodes}')
                env = {**cluster.env, 'XDG_CACHE_HOME': str(work / f'cache_ray{nodes}')}
                runs[f'ray, {nodes} worker(s)'] = robodata('score', str(copy), '--ray', cluster.address, '--json',
                                                           env=env)
                if nodes == 2:
                    runs['ray, 2 workers, rerun'] = robodata('score', str(copy), '--ray', cluster.address, '--json',
                                                             env=env)
            finally:
                cluster.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f'\n{"run":<26} {"wall s":>8} {"episodes/s":>11} {"task busy s":>12} {"submitted":>10} {"cached":>7}')
    for name, (took, doc) in runs.items():
        cluster_doc = doc.get('cluster', {})
        busy = sum(node['busy_s'] for node in cluster_doc.get('nodes', {}).values()) if cluster_doc else float('nan')
        print(f'{name:<26} {took:>8.2f} {n / took:>11.2f} {busy:>12.2f} {cluster_doc.get("run", "-")!s:>10} '
              f'{cluster_doc.get("cached", "-")!s:>7}')

    local1, local2 = runs['local --workers 1'][0], runs['local --workers 2'][0]
    ray1, ray2 = runs['ray, 1 worker(s)'][0], runs['ray, 2 worker(s)'][0]
    busy2 = sum(node['busy_s'] for node in runs['ray, 2 worker(s)'][1]['cluster']['nodes'].values())
    work_per_episode = busy2 / n  # seconds of task work per episode, measured inside the tasks
    overhead_2 = (ray2 - local2) / n  # wall seconds per episode the cluster adds over local processes
    share = overhead_2 / work_per_episode
    print(f'\nper-episode work (inside the tasks, 2 workers): {work_per_episode * 1000:.1f} ms')
    print(f'Ray overhead at 2 workers: ({ray2:.2f} s - {local2:.2f} s local) / {n} = {overhead_2 * 1000:.1f} ms an '
          f'episode = {share:.1%} of the per-episode work (target under {TARGET_OVERHEAD:.0%}: '
          f'{"met" if share < TARGET_OVERHEAD else "NOT met"})')
    rerun = runs['ray, 2 workers, rerun'][0]  # start, connect, the dataset-level steps and writes: no task
    scheduling = (ray2 - rerun) / n - work_per_episode / 2  # what a task costs beyond its work, per episode
    print(f'Ray scheduling at 2 workers: ({ray2:.2f} s - {rerun:.2f} s without tasks) / {n} - '
          f'{work_per_episode * 1000:.1f} ms / 2 = {scheduling * 1000:.1f} ms an episode = '
          f'{scheduling / work_per_episode:.1%} of the work')
    print(f'Ray at 1 worker against local --workers 1: {ray1 / local1:.2f}x the wall time')
    driver = max(0.0, local1 - busy2) / n  # per episode on the driver: planning, the dataset-level steps, writes
    fixed = max(0.0, ray2 - busy2 / 2 - n * driver)  # what does not shrink with more episodes: start, connect
    print('\nprojection, 10,000 episodes on N nodes of C CPUs (constants measured above):')
    print(f'  T(10k) = F + 10000 x w / (N x C) + 10000 x d,  F = {fixed:.1f} s (start, connect), '
          f'w = {work_per_episode:.3f} s (per-episode work), d = {driver * 1000:.1f} ms (driver per episode)')
    for nodes, cpus in ((1, 2), (4, 8), (16, 16)):
        total = fixed + 10000 * work_per_episode / (nodes * cpus) + 10000 * driver
        print(f'  N={nodes:<3} C={cpus:<3} -> {total / 60:.1f} min')
    print('  (the driver term d stays on one machine: the dataset-level steps (consistency, success) and the '
          'writes; it bounds the speed-up)')


if __name__ == '__main__':
    main()
