"""What `robodata export frames` costs: frames per second exported, against a raw read of the same bags.

A temporary dataset of simulated episodes (`write_sim_episode`, both cameras and the LiDAR, no ROS) is exported
with `export_frames` in the configurations the issue names, each with 1 and 2 worker processes, all in one run:

  JPEG        every reference frame (--every-n 1), cameras only: one JPEG per camera per frame
  JPEG + PCD  the same with --lidar: a binary PCD of the nearest scan with every frame too
  rerun       the JPEG + PCD export again into a folder that holds it already: every episode is found current
              (frames.json and the checksum of every file) and skipped, so this is the idempotent rerun's cost

The baseline is a raw read of every message of every bag (`BagReader.messages()`, nothing decoded). Every timed
export goes into a fresh folder (the rerun excepted); the best of --repeats counts. The options are built by the
CLI's own `options_from_args`, so they are exactly what `robodata export frames --every-n 1 [--lidar]` asks for.
There is no numeric target: the ratio of export time to raw read time is printed per configuration (informative).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import resource
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PROFILE = ROOT / 'config' / 'sim_cell.yaml'
EXPORT_DIR = ROOT / 'ros_robodata' / 'export'
MB = 1e6
REFERENCE_CORES = 2  # the machine the figures in bench/README.md come from


def export_digest() -> str:
    """sha256 of ros_robodata/export/*.py and its schema: a warning at the end says when they changed mid-run."""
    h = hashlib.sha256()
    for path in sorted([*EXPORT_DIR.glob('*.py'), *EXPORT_DIR.glob('*.json')]):
        h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()[:12]


def load() -> str:
    try:
        return ' '.join(f'{v:.2f}' for v in os.getloadavg())
    except OSError:
        return 'n/a'


# --- the dataset ---------------------------------------------------------------------------------------------------

@dataclass
class Bags:
    """The dataset's episodes and what their bags hold, all bags together."""

    dataset: Any
    profile: Any
    ids: list[str]
    paths: list[Path]
    messages: int = 0
    bytes: int = 0
    episode_s: float = 0.0
    per_topic: Counter[str] = field(default_factory=Counter)


def build_dataset(root: Path, episodes: int, size: tuple[int, int], profile_path: Path) -> Bags:
    from ros_robodata.bag.reader import BagReader
    from ros_robodata.dataset import Dataset
    from ros_robodata.dataset.episode import Episode
    from ros_robodata.profile import load_profile
    from ros_robodata.sim.to_bag import write_sim_episode

    profile = load_profile(profile_path)
    dataset = Dataset.create(root, profile=profile)
    bags = Bags(dataset, profile, [], [])
    for seed in range(episodes):
        eid = f'20260101-1200{seed:02d}'
        t0 = time.perf_counter()
        truth = write_sim_episode(dataset.bag_dir(eid), profile, seed=seed, cameras=True, lidar=True,
                                  image_size=size)
        dataset.add_episode(Episode(id=eid, task='pick', status='complete', outcome='success'))
        bags.ids.append(eid)
        bags.paths.append(dataset.bag_dir(eid))
        with BagReader(dataset.bag_dir(eid)) as reader:
            bags.messages += reader.message_count
            bags.bytes += reader.size_bytes
            bags.episode_s += reader.duration_ns / 1e9
            for message in reader.messages():
                bags.per_topic[message.topic] += 1
        print(f'[dataset] episode {eid} (seed {seed}, {truth["duration_s"]:.1f} s of episode, cameras '
              f'{size[0]}x{size[1]}, LiDAR) written in {time.perf_counter() - t0:.1f} s', flush=True)
    return bags


# --- timing --------------------------------------------------------------------------------------------------------

def raw_read(paths: list[Path]) -> int:
    from ros_robodata.bag.reader import BagReader

    n = 0
    for path in paths:
        with BagReader(path) as reader:
            for _ in reader.messages():
                n += 1
    return n


def cpu_seconds() -> float:
    """User + system CPU time of this process and of its finished children (the export's worker processes)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def best_of(n: int, fn: Callable[[], object]) -> tuple[float, list[float], float]:
    """(best wall time, every wall time, CPU time of the best run)."""
    times: list[float] = []
    cpus: list[float] = []
    for _ in range(n):
        c0, t0 = cpu_seconds(), time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        cpus.append(cpu_seconds() - c0)
    best = times.index(min(times))
    return times[best], times, cpus[best]


def export_options(lidar: bool) -> Any:
    """ExportOptions exactly as `robodata export frames --every-n 1 [--lidar]` builds them."""
    from ros_robodata.cli.export_cmd import options_from_args

    args = argparse.Namespace(every=None, every_n='1', around_events=None, window=None, cameras=None,
                              reference=None, lidar=lidar, lidar_voxel=None, lidar_crop=None, format='jpg',
                              tolerance='50ms')
    return options_from_args(args)


@dataclass
class Row:
    name: str
    workers: int
    seconds: float
    runs: list[float]
    cpu: float  # CPU seconds of the best run, workers included
    frames: int
    files: Counter[str]
    exported: int
    skipped: int


def count_files(manifest: dict[str, Any]) -> Counter[str]:
    """Files the manifest lists, by extension (jpg, png, pcd)."""
    return Counter(entry['file'].rsplit('.', 1)[-1] for frame in manifest['frames']
                   for entry in frame['sensors'].values())


def run_export(bags: Bags, options: Any, out: Path, workers: int) -> Any:
    from ros_robodata.export.frames_run import export_frames

    result = export_frames(bags.dataset, out, options, profile=bags.profile, workers=workers)
    if result.failed:
        raise RuntimeError(f'export into {out} failed: {result.failed}')
    return result


def time_fresh(bags: Bags, name: str, options: Any, workers: int, scratch: Path, repeats: int,
               keep: Path | None = None) -> Row:
    """Best of `repeats` exports, each into a folder of its own; the last one is moved to `keep` if given."""
    times: list[float] = []
    cpus: list[float] = []
    result = None
    for rep in range(repeats):
        out = scratch / f'{name.replace(" ", "").replace("+", "_")}_w{workers}_{rep}'
        c0, t0 = cpu_seconds(), time.perf_counter()
        result = run_export(bags, options, out, workers)
        times.append(time.perf_counter() - t0)
        cpus.append(cpu_seconds() - c0)
        if result.skipped:
            raise RuntimeError(f'{out}: a fresh folder, yet {len(result.skipped)} episode(s) were skipped')
        if keep is not None and rep == repeats - 1:
            out.rename(keep)
        else:
            shutil.rmtree(out)
    assert result is not None
    best = times.index(min(times))
    return Row(name, workers, times[best], times, cpus[best], len(result.manifest['frames']),
               count_files(result.manifest), len(result.exported), len(result.skipped))


def time_rerun(bags: Bags, name: str, options: Any, workers: int, out: Path, repeats: int) -> Row:
    times: list[float] = []
    cpus: list[float] = []
    result = None
    for _ in range(repeats):
        c0, t0 = cpu_seconds(), time.perf_counter()
        result = run_export(bags, options, out, workers)
        times.append(time.perf_counter() - t0)
        cpus.append(cpu_seconds() - c0)
    assert result is not None
    if result.exported:
        print(f'WARNING: the rerun exported {len(result.exported)} episode(s) again instead of skipping them')
    best = times.index(min(times))
    return Row(name, workers, times[best], times, cpus[best], len(result.manifest['frames']),
               count_files(result.manifest), len(result.exported), len(result.skipped))


def rerun_split(bags: Bags, options: Any, out: Path, repeats: int) -> tuple[float, float]:
    """Of a rerun: (checking every episode is current: frames.json and every file's checksum, validating the
    manifest against its JSON schema), best of `repeats` each; the rest is building and comparing manifest.json."""
    from ros_robodata.export.frames import plan_export
    from ros_robodata.export.manifest import MANIFEST_FILE, episode_is_current, validate_manifest

    settings = plan_export(bags.profile, options, bags.dataset.name).settings()
    folders = [out / 'episodes' / eid for eid in bags.ids]

    def check() -> None:
        for folder in folders:
            if episode_is_current(folder, settings) is None:
                raise RuntimeError(f'{folder}: not current')

    manifest = json.loads((out / MANIFEST_FILE).read_text(encoding='utf-8'))
    return best_of(repeats, check)[0], best_of(repeats, lambda: validate_manifest(manifest))[0]


def _nothing(_: int) -> int:
    return 0


def pool_startup(workers: int, repeats: int) -> float:
    """A process pool of `workers` doing one trivial job each: the fixed price of --workers > 1."""
    def once() -> None:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            list(pool.map(_nothing, range(workers)))

    return best_of(repeats, once)[0]


# --- main ----------------------------------------------------------------------------------------------------------

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--episodes', type=int, default=4, help='simulated episodes in the dataset (default 4)')
    parser.add_argument('--image-size', default='320x240', help="camera image size WxH (default 320x240, the demo's)")
    parser.add_argument('--repeats', type=int, default=3, help='timed runs per configuration; the best counts '
                                                               '(default 3)')
    parser.add_argument('--quick', action='store_true', help='2 episodes at 160x120, best of 2')
    parser.add_argument('--profile', type=Path, default=PROFILE, help='robot profile (default the sim cell)')
    args = parser.parse_args()
    wall0 = time.monotonic()
    try:
        width, height = (int(v) for v in args.image_size.lower().split('x'))
    except ValueError:
        parser.error('--image-size takes WIDTHxHEIGHT, e.g. 320x240')
    episodes, repeats = args.episodes, args.repeats
    if args.quick:
        episodes, repeats, (width, height) = min(2, episodes), min(2, repeats), (160, 120)
    if episodes < 1 or repeats < 1:
        parser.error('--episodes and --repeats must be at least 1')
    cpus = os.cpu_count() or 1
    digest = export_digest()
    print(f'export code: {EXPORT_DIR.relative_to(ROOT)}/*.py, *.json (sha256 {digest})')
    worker_counts = sorted({min(w, cpus) for w in (1, 2)})  # the CLI caps --workers at the CPU count too
    print(f'this machine: os.cpu_count() = {cpus}')
    print(f'note: the reference machine has {REFERENCE_CORES} cores, so 2 workers is its ceiling; each worker '
          'process adds start-up cost (the pool, pickling the plan, per-episode setup) that short episodes '
          '(~10 s of data each here) do not amortize well')
    load_start = load()
    if worker_counts != [1, 2]:
        print(f'WARNING: only {cpus} CPU: the 2-worker rows are left out (the CLI would cap --workers at {cpus})')

    with tempfile.TemporaryDirectory(prefix='robodata_exportbench_') as tmp:
        bags = build_dataset(Path(tmp) / 'dataset', episodes, (width, height), args.profile)
        reference = bags.profile.topics.cameras[0].topic
        lidar_topic = bags.profile.topics.lidars[0].topic if bags.profile.topics.lidars else None
        expected = bags.per_topic[reference]
        scratch = Path(tmp) / 'exports'
        scratch.mkdir()
        jpeg, with_lidar = export_options(False), export_options(True)

        # warm-up, untimed: imports (cv2, open3d), the typestore and first-call costs, in this process, so the
        # forked workers start with them loaded too
        from ros_robodata.export.frames import export_episode, plan_export
        export_episode(bags.paths[0], bags.ids[0], scratch / 'warmup', plan_export(bags.profile, with_lidar))
        shutil.rmtree(scratch / 'warmup')

        raw_s, raw_runs, raw_cpu = best_of(repeats, lambda: raw_read(bags.paths))
        rows: list[Row] = []
        kept = scratch / 'current'
        for name, options in (('JPEG', jpeg), ('JPEG + PCD', with_lidar)):
            for workers in worker_counts:
                keep = kept if (name == 'JPEG + PCD' and workers == 1) else None
                rows.append(time_fresh(bags, name, options, workers, scratch, repeats, keep))
                print(f'[export] {name}, {workers} worker(s): best {rows[-1].seconds:.2f} s of '
                      f'{", ".join(f"{t:.2f}" for t in rows[-1].runs)}', flush=True)
        rows.append(time_rerun(bags, 'rerun (JPEG + PCD)', with_lidar, 1, kept, repeats))
        check_s, validate_s = rerun_split(bags, with_lidar, kept, repeats)
        pool_s = pool_startup(2, repeats) if 2 in worker_counts else math.nan
    load_end = load()

    mb = bags.bytes / MB
    print(f'\n== dataset: {episodes} episodes, {bags.episode_s:.1f} s of episode, {bags.messages} messages, '
          f'{mb:.1f} MB of bag; cameras {width}x{height} ==')
    for topic, n in sorted(bags.per_topic.items()):
        role = ' (reference camera)' if topic == reference else ''
        print(f'  {topic:28} {n:7d}{role}')
    print(f'\n== export frames against a raw read of every message (best of {repeats}; MB = 10^6 bytes of bag) ==')
    print(f'{"configuration":20} {"workers":>7} {"frames":>6} {"JPEG":>6} {"PCD":>6} {"s":>7} {"CPU s":>6} '
          f'{"frames/s":>8} {"files/s":>8} {"bag MB/s":>8} {"x raw read":>10}  {"runs s":12}')
    print(f'{"raw read":20} {"1":>7} {"":>6} {"":>6} {"":>6} {raw_s:7.3f} {raw_cpu:6.3f} {"":>8} {"":>8} '
          f'{mb / raw_s:8.1f} '
          f'{1.0:10.2f}  {", ".join(f"{t:.3f}" for t in raw_runs)}')
    for r in rows:
        files = sum(r.files.values())
        print(f'{r.name:20} {r.workers:7d} {r.frames:6d} {r.files["jpg"]:6d} {r.files["pcd"]:6d} {r.seconds:7.3f} '
              f'{r.cpu:6.2f} {r.frames / r.seconds:8.1f} {files / r.seconds:8.1f} {mb / r.seconds:8.1f} '
              f'{r.seconds / raw_s:10.2f}  {", ".join(f"{t:.3f}" for t in r.runs)}')
    print('CPU s: user + system time of the best run, worker processes included; CPU s / s is how many cores the run '
          'kept busy on average (up to 2 with 2 workers, when nothing else wants the cores)')
    print(f'raw read: {bags.messages / raw_s:,.0f} messages/s, {mb / raw_s:.1f} MB/s, '
          f'{bags.episode_s / raw_s:.0f}x real time')
    print(f'frames: every reference frame ({reference}: {expected} in the bags); each frame is one JPEG per camera'
          f'{f", plus with --lidar the nearest {lidar_topic} scan as PCD" if lidar_topic else ""} (a 10 Hz scan '
          'is the nearest partner of several 30 Hz frames, so it is written once per frame)')
    for r in rows:
        if not r.name.startswith('rerun') and r.frames != expected:
            print(f'WARNING: {r.name}, {r.workers} worker(s): {r.frames} frames exported, {expected} scheduled')
    rerun = rows[-1]
    print(f'rerun: {rerun.skipped} of {episodes} episodes found current and skipped, {rerun.exported} exported '
          'again (the cost is reading frames.json and checksumming every file, then the manifest)')
    print(f'  of which: checking the {episodes} episodes are current {check_s:.3f} s, validating the manifest '
          f'against its JSON schema {validate_s:.3f} s, the rest (episode metadata, building, serializing '
          f'and comparing manifest.json) {max(0.0, rerun.seconds - check_s - validate_s):.3f} s')
    if pool_s == pool_s:
        print(f'a process pool of 2 doing one trivial job each: {pool_s:.3f} s (best of {repeats})')
    by_key = {(r.name, r.workers): r for r in rows}
    for name in ('JPEG', 'JPEG + PCD'):
        one, two = by_key.get((name, 1)), by_key.get((name, 2))
        if one and two:
            print(f'{name}: 2 workers take {two.seconds / one.seconds:.2f}x the time of 1 '
                  f'({one.seconds / two.seconds:.2f}x speed-up)')
        if one:
            print(f'{name}, 1 worker: {bags.episode_s / one.seconds:.1f}x real time; '
                  f'{one.seconds / one.frames * 1e3:.2f} ms per frame, of which the raw read is '
                  f'{raw_s / one.frames * 1e3:.2f} ms')

    print('\n== summary (no numeric target: export time / raw read time, informative) ==')
    for r in rows:
        print(f'  {r.name}, {r.workers} worker(s): export / raw read {r.seconds / raw_s:.2f} ({r.seconds:.3f} s / '
              f'{raw_s:.3f} s; {r.frames / r.seconds:.1f} frames/s): informative')
    print(f'load average (1, 5, 15 min) at the start {load_start}, at the end {load_end}: on {cpus} CPU(s), other '
          'work running beside this bench slows the 2-worker rows first')
    if export_digest() != digest:
        print(f'WARNING: {EXPORT_DIR.relative_to(ROOT)} changed during the run: the figures above may mix two '
              'versions of the export code')
    print(f'wall time {time.monotonic() - wall0:.0f} s')
    return 0


if __name__ == '__main__':
    sys.exit(main())
