"""Recorder throughput: a rig load from a separate process, recorded, against a bare subscriber.

Phases (each with a fresh publisher process; the recorder and the bare subscriber get the same load in turn):
  rig        three 640x480 rgb8 cameras at 30 Hz (real photos), joint states and wrench at 500 Hz,
             gripper and operator commands at 100 Hz, a 30k-point LiDAR at 10 Hz;
  session    the same load recorded by `robodata session` (recorder, live segmenter and quality monitor in one
             process) instead of `robodata record`;
  tuned      the rig load with what the recorder recommends applied: config/dds/fastdds_rig.xml given to the
             publisher (the drivers) and to the receiving side;
  saturating the same, with joint states and wrench pushed to --saturate-hz each;
  boundaries the rig load while `robodata record` stops and starts an episode every --episode-s, a bare
             subscriber in its own process beside it: its latency in the second around each boundary against
             mid-episode (target: p99 within 20 ms); session-boundaries the same with `robodata session`.
With --load NAME every phase publishes another rig's load instead of the bench's own: bench/rigs/NAME_load.py,
recorded with bench/rigs/NAME.yaml (a load written blind from bench/rigs/NAME.md, one process per driver).
For each phase: the recorder, then a bare raw=True subscriber that only counts (the ceiling for Python). Prints
per-topic published vs recorded vs bare counts and their ratio, loss of small messages and of camera/LiDAR
frames, CPU and peak memory of both. Targets (issues 3 and 15): recorder/bare >= 0.99 per topic at rig load,
reliable depth 10 and best effort, quiet and with --busy-core, session likewise; tuned with a busy core at depth
10: at most 0.5% of small messages and 1% of camera frames lost; at saturating load the recorder keeps at least
95% of what the bare subscriber receives.

    .venv/bin/python bench/record_throughput.py --phases rig,session,tuned --publisher-depth 10 --busy-core
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import rclpy
import yaml
from rclpy.executors import SingleThreadedExecutor
from std_srvs.srv import Trigger

from ros_robodata.bag.reader import BagReader
from ros_robodata.dataset import Dataset
from ros_robodata.paths import config_path
from ros_robodata.record.host_check import RIG_PROFILE
from ros_robodata.srv import StartEpisode

HERE = Path(__file__).resolve().parent
PROFILE = HERE / 'rig_profile.yaml'
RECORDER_EXECUTOR = 'events'  # --executor: the recorder's rclpy executor (the bare subscriber keeps events)
LOAD_SCRIPT: Path | None = None  # --load: another rig's load script (bench/rigs/NAME_load.py) instead of rig_load.py
PHOTOS = HERE.parent / 'test' / 'data' / 'photos'
TICK = os.sysconf('SC_CLK_TCK')


DDS_PROFILE: str | None = None  # a Fast DDS XML profile for the receiving side (recorder and bare subscriber)
PUBLISHER_DDS_PROFILE: str | None = None  # and one for the rig's publisher (a driver's own participant)


def env_for(domain: int, receiver: bool = False, recorder: bool = False) -> dict[str, str]:
    env = {**os.environ, 'ROS_DOMAIN_ID': str(domain), 'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST'}
    env.pop('ROBODATA_EXECUTOR', None)
    if recorder:
        env['ROBODATA_EXECUTOR'] = RECORDER_EXECUTOR
    profile = DDS_PROFILE if receiver else PUBLISHER_DDS_PROFILE
    if profile:
        env['FASTRTPS_DEFAULT_PROFILES_FILE'] = env['FASTDDS_DEFAULT_PROFILES_FILE'] = profile
    return env


def process_tree(pid: int) -> list[int]:
    """The process and its descendants (the recorder's writer runs in a child process)."""
    pids, queue = [], [pid]
    while queue:
        current = queue.pop()
        pids.append(current)
        for task in Path(f'/proc/{current}/task').iterdir():
            children = task / 'children'
            if children.exists():
                queue += [int(c) for c in children.read_text().split()]
    return pids


def cpu_seconds(pid: int) -> float:
    total = 0.0
    for member in process_tree(pid):
        fields = Path(f'/proc/{member}/stat').read_text().rsplit(')', 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / TICK
    return total


def peak_rss_mb(pid: int) -> float:
    """Sum of each process's peak resident memory in the tree."""
    total = 0.0
    for member in process_tree(pid):
        for line in Path(f'/proc/{member}/status').read_text().splitlines():
            if line.startswith('VmHWM:'):
                total += int(line.split()[1]) / 1024
    return total


class ServiceClient:
    """One ROS participant for a whole phase: discovered once, before the load starts."""

    def __init__(self, domain: int) -> None:
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain)
        self.node = rclpy.create_node('bench_client', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)

    def call(self, srv: type, name: str, request: object, timeout: float = 120.0) -> object:
        client = self.node.create_client(srv, name)
        deadline = time.monotonic() + timeout
        while not client.service_is_ready():
            if time.monotonic() > deadline:
                raise RuntimeError(f'{name} never appeared')
            self.executor.spin_once(timeout_sec=0.1)
        future = client.call_async(request)
        while not future.done():
            if time.monotonic() > deadline:
                raise RuntimeError(f'{name} did not answer in {timeout:.0f} s')
            self.executor.spin_once(timeout_sec=0.1)
        return future.result()

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)


def publish_load(domain: int, seconds: float, load: list[str]) -> dict[str, int]:
    if LOAD_SCRIPT is None:
        photos = ['--photos', str(PHOTOS)] if PHOTOS.is_dir() else []
        command = [sys.executable, str(HERE / 'rig_load.py'), '--seconds', str(seconds), *photos, *load]
    else:  # a blind rig load takes only its own options; its drivers' QoS and rates are its own
        command = [sys.executable, str(LOAD_SCRIPT), '--seconds', str(seconds)]
    done = subprocess.run(command, env=env_for(domain), capture_output=True, text=True, timeout=seconds + 300)
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    publish_load.max_late_ms = result['max_late_ms']  # type: ignore[attr-defined]
    return result['published']


def run_recorder(seconds: float, load: list[str], workdir: Path, command: str = 'record') -> dict:
    domain = random.randint(1, 200)
    dataset = workdir / f'ds_{domain}'
    log = open(workdir / f'recorder_{domain}.log', 'w')  # noqa: SIM115 - closed below; a pipe nobody reads would block it
    proc = subprocess.Popen([sys.executable, '-m', 'ros_robodata.cli.main', command, '--profile', str(PROFILE),
                             '--dataset', str(dataset), '--task', 'bench'],
                            env=env_for(domain, receiver=True, recorder=True),
                            stdout=log, stderr=subprocess.STDOUT)
    client = ServiceClient(domain)
    try:
        client.call(Trigger, '/recorder/stop_episode', Trigger.Request())  # discovers the stop service too
        episode_id = client.call(StartEpisode, '/recorder/start_episode', StartEpisode.Request()).episode_id
        time.sleep(1.0)
        cpu0, t0 = cpu_seconds(proc.pid), time.monotonic()
        published = publish_load(domain, seconds, load)
        time.sleep(1.0)
        cpu, wall = cpu_seconds(proc.pid) - cpu0, time.monotonic() - t0
        rss = peak_rss_mb(proc.pid)
        t_stop = time.monotonic()
        client.call(Trigger, '/recorder/stop_episode', Trigger.Request())
        stop_s = time.monotonic() - t_stop
    finally:
        client.close()
        proc.send_signal(signal.SIGINT)
        proc.wait(120)
        log.close()
    # What the recorder told its user about lost frames (issue 28: the DDS profile named only where it is the cause).
    advice = [line.split(']: ', 1)[-1] for line in (workdir / f'recorder_{domain}.log').read_text().splitlines()
              if 'is losing messages' in line]
    ds = Dataset.open(dataset)
    with BagReader(ds.bag_dir(episode_id)) as bag:
        recorded = {name: info.count for name, info in bag.topics.items()}
    episode = ds.episode(episode_id)
    bag_mb = sum(p.stat().st_size for p in ds.bag_files(episode_id)) / 2**20
    shutil.rmtree(dataset)  # a 1080p load writes gigabytes a run; trials must not fill the disk
    return {'published': published, 'received': recorded, 'cpu_pct': 100 * cpu / wall, 'peak_rss_mb': rss,
            'loss': episode.loss, 'stop_s': stop_s, 'advice': advice, 'publisher_late_ms': publish_load.max_late_ms,  # type: ignore[attr-defined]
            'bag_mb': bag_mb}


def run_bare(seconds: float, load: list[str]) -> dict:
    domain = random.randint(1, 200)
    proc = subprocess.Popen([sys.executable, str(HERE / 'bare_subscriber.py'), str(PROFILE),
                             'best_effort' if '--best-effort' in load else 'reliable'],
                            env=env_for(domain, receiver=True),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        time.sleep(2.0)
        cpu0, t0 = cpu_seconds(proc.pid), time.monotonic()
        published = publish_load(domain, seconds, load)
        time.sleep(1.0)
        cpu, wall = cpu_seconds(proc.pid) - cpu0, time.monotonic() - t0
        rss = peak_rss_mb(proc.pid)
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    result = json.loads(out.strip().splitlines()[-1])
    return {'published': published, 'received': result['received'], 'cpu_pct': 100 * cpu / wall, 'peak_rss_mb': rss,
            'latency_ms_max': result['latency_ms_max'], 'publisher_late_ms': publish_load.max_late_ms}  # type: ignore[attr-defined]


def run_boundaries(seconds: float, load: list[str], workdir: Path, command: str, episode_s: float) -> dict:
    """The recorder cycling episodes back to back (stop, then start at once, every `episode_s`) under the load,
    with the bare subscriber in its own process beside it noting every message's latency: what an episode's end
    costs the other processes on the computer (a real driver, a viewer), around each boundary."""
    domain = random.randint(1, 200)
    dataset, dump = workdir / f'ds_{domain}', workdir / f'bare_{domain}.npz'
    log = open(workdir / f'recorder_{domain}.log', 'w')  # noqa: SIM115 - closed below
    proc = subprocess.Popen([sys.executable, '-m', 'ros_robodata.cli.main', command, '--profile', str(PROFILE),
                             '--dataset', str(dataset), '--task', 'bench'],
                            env=env_for(domain, receiver=True, recorder=True),
                            stdout=log, stderr=subprocess.STDOUT)
    bare = subprocess.Popen([sys.executable, str(HERE / 'bare_subscriber.py'), str(PROFILE),
                             'best_effort' if '--best-effort' in load else 'reliable', str(dump)],
                            env=env_for(domain, receiver=True), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    client = ServiceClient(domain)
    boundaries: list[tuple[int, float]] = []  # (wall ns of the stop request, seconds until start answered)
    try:
        client.call(Trigger, '/recorder/stop_episode', Trigger.Request())  # discovers the stop service too
        client.call(StartEpisode, '/recorder/start_episode', StartEpisode.Request())
        time.sleep(2.0)
        publisher = threading.Thread(target=publish_load, args=(domain, seconds, load))
        publisher.start()
        due = time.monotonic() + episode_s
        while publisher.is_alive():
            if time.monotonic() >= due and time.monotonic() < due + 1.0:
                at, t0 = time.time_ns(), time.monotonic()
                client.call(Trigger, '/recorder/stop_episode', Trigger.Request())
                client.call(StartEpisode, '/recorder/start_episode', StartEpisode.Request())
                boundaries.append((at, time.monotonic() - t0))
                due += episode_s
            time.sleep(0.02)
        publisher.join()
        client.call(Trigger, '/recorder/stop_episode', Trigger.Request())
    finally:
        client.close()
        for process in (proc, bare):
            process.send_signal(signal.SIGINT)
        proc.wait(120)
        bare.communicate(timeout=60)
        log.close()
    shutil.rmtree(dataset, ignore_errors=True)
    data = np.load(dump)
    topics = sorted({key.split('|')[0] for key in data.files})
    return {'boundaries': boundaries, 'received': {t: data[f'{t}|received'] for t in topics},
            'latency': {t: data[f'{t}|latency'] for t in topics}}


def report_boundaries(name: str, runs: list[dict], around: tuple[float, float] = (-0.2, 0.8),
                      clear_s: float = 1.5) -> dict:
    """Latency of the bare subscriber's messages received in the second around each boundary (from `around[0]` s
    before the stop request to `around[1]` s after) against mid-episode (further than `clear_s` from any)."""
    print(f'\n== {name}: a bare subscriber beside the recorder, around episode boundaries vs mid-episode ==')
    kinds: dict[str, tuple[list[np.ndarray], list[np.ndarray]]] = {'small': ([], []), 'camera and LiDAR': ([], [])}
    answers = []
    for run in runs:
        stops = np.array([at for at, _ in run['boundaries']], dtype=np.int64)
        answers += [s for _, s in run['boundaries']]
        if not len(stops):
            continue
        for topic, received in run['received'].items():
            latency = run['latency'][topic] / 1e6
            offset = (received[:, None] - stops[None, :]) / 1e9
            near = ((offset >= around[0]) & (offset <= around[1])).any(axis=1)
            far = (np.abs(offset) > clear_s).all(axis=1) & (received > received[0] + 2e9) & \
                (received < received[-1] - 2e9)
            large = any(word in topic for word in ('image', 'camera', 'lidar', 'points'))
            boundary, middle = kinds['camera and LiDAR' if large else 'small']
            boundary.append(latency[near])
            middle.append(latency[far])
    out = {}
    print(f'{sum(len(r["boundaries"]) for r in runs)} boundaries; stop + start answered in '
          f'{np.median(answers) * 1000 if answers else float("nan"):.0f} ms median, '
          f'{max(answers, default=float("nan")) * 1000:.0f} ms worst')
    print(f'{"messages":18} {"n near":>7} {"p50":>6} {"p99":>7} {"max":>7}   {"n mid":>7} {"p50":>6} {"p99":>7} '
          f'{"max":>7}   {"p99 diff":>8}')
    for kind, (boundary, middle) in kinds.items():
        near, far = np.concatenate(boundary or [np.zeros(0)]), np.concatenate(middle or [np.zeros(0)])
        if not len(near) or not len(far):
            continue
        p = {key: (np.percentile(v, 50), np.percentile(v, 99), v.max()) for key, v in (('near', near), ('far', far))}
        diff = p['near'][1] - p['far'][1]
        out[kind] = diff
        print(f'{kind:18} {len(near):7d} {p["near"][0]:6.1f} {p["near"][1]:7.1f} {p["near"][2]:7.1f}   '
              f'{len(far):7d} {p["far"][0]:6.1f} {p["far"][1]:7.1f} {p["far"][2]:7.1f}   {diff:8.1f}')
    return out


def pooled(runs: list[dict]) -> dict:
    """Several runs of one side as one: counts summed per topic, CPU and latency the mean and the worst."""
    if len(runs) == 1:
        return runs[0]
    out = dict(runs[-1])
    for key in ('published', 'received'):
        out[key] = {}
        for run in runs:
            for topic, n in run[key].items():
                out[key][topic] = out[key].get(topic, 0) + n
    out['cpu_pct'] = sum(r['cpu_pct'] for r in runs) / len(runs)
    out['peak_rss_mb'] = max(r['peak_rss_mb'] for r in runs)
    out['publisher_late_ms'] = max(r['publisher_late_ms'] for r in runs)
    if 'loss' in out:
        loss = {'missing_by_stamp': sum(r['loss']['missing_by_stamp'] for r in runs),
                'dropped_by_recorder': sum(r['loss']['dropped_by_recorder'] for r in runs), 'topics': {}}
        for run in runs:
            for topic, t in run['loss']['topics'].items():
                worst = loss['topics'].setdefault(topic, {'latency_ms_max': 0.0})
                worst['latency_ms_max'] = max(worst['latency_ms_max'], t.get('latency_ms_max') or 0.0)
        out['loss'] = loss
        out['stop_s'] = max(r['stop_s'] for r in runs)
        out['advice'] = [line for r in runs for line in r['advice']]
        out['bag_mb'] = sum(r['bag_mb'] for r in runs) / len(runs)
    else:
        out['latency_ms_max'] = {}
        for run in runs:
            for topic, ms in run['latency_ms_max'].items():
                out['latency_ms_max'][topic] = max(out['latency_ms_max'].get(topic, 0.0), ms)
    return out


def report(name: str, rec: dict, bare: dict) -> dict:
    print(f'\n== {name} load ==')
    print(f'{"topic":28} {"published":>10} {"recorded":>10} {"rec lost":>9} {"bare pub":>9} {"bare got":>9} '
          f'{"rec/bare":>9}')
    rec_lost = rec_total = bare_total = rec_kept = 0
    ratios = {}
    # per kind: recorder published, recorded, bare published, bare received
    kinds = {'small': [0, 0, 0, 0], 'camera and LiDAR': [0, 0, 0, 0]}
    for topic in sorted(rec['published']):
        pub, got = rec['published'][topic], rec['received'].get(topic, 0)
        bpub, bgot = bare['published'].get(topic, 0), bare['received'].get(topic, 0)
        ratio = (got / pub) / (bgot / bpub) if pub and bpub and bgot else float('nan')
        print(f'{topic:28} {pub:10d} {got:10d} {pub - got:9d} {bpub:9d} {bgot:9d} {ratio:9.3f}')
        ratios[topic] = ratio
        large = any(word in topic for word in ('image', 'camera', 'lidar', 'points'))
        kind = kinds['camera and LiDAR' if large else 'small']
        for i, n in enumerate((pub, got, bpub, bgot)):
            kind[i] += n
        rec_lost += pub - got
        rec_total += pub
        rec_kept += got
        bare_total += bgot
    for kind, (pub, got, bpub, bgot) in kinds.items():
        if pub and bpub:
            print(f'{kind} messages lost: recorder {100 * (pub - got) / pub:.2f}%, bare subscriber '
                  f'{100 * (bpub - bgot) / bpub:.2f}%')
    loss = rec['loss']
    print(f'recorder (ROS process + writer process): CPU {rec["cpu_pct"]:.0f}% of one core, '
          f'peak RSS {rec["peak_rss_mb"]:.0f} MiB, '
          f'bag {rec["bag_mb"]:.0f} MiB, loss by header stamps {loss["missing_by_stamp"]}, '
          f'dropped by recorder {loss["dropped_by_recorder"]}, '
          f'stop answered in {rec["stop_s"]:.1f} s')
    worst = max((t['latency_ms_max'] or 0.0, topic) for topic, t in loss['topics'].items())
    print(f'recorder receive latency (header stamp to callback): worst {worst[0]:.0f} ms on {worst[1]}; '
          f'the publisher itself ran up to {rec["publisher_late_ms"]:.0f} ms behind its schedule')
    for line in dict.fromkeys(rec['advice']):
        print(f'recorder said: {line}')
    if not rec['advice']:
        print('recorder said nothing about lost frames')
    print(f'bare subscriber: CPU {bare["cpu_pct"]:.0f}% of one core, peak RSS {bare["peak_rss_mb"]:.0f} MiB')
    bare_worst = max((ms, topic) for topic, ms in bare['latency_ms_max'].items() if topic in rec['published'])
    print(f'bare subscriber receive latency: worst {bare_worst[0]:.0f} ms on {bare_worst[1]} '
          f'(publisher up to {bare["publisher_late_ms"]:.0f} ms behind)')
    lost = {kind: (100 * (pub - got) / pub if pub else 0.0, 100 * (bpub - bgot) / bpub if bpub else 0.0)
            for kind, (pub, got, bpub, bgot) in kinds.items()}
    return {'lost': rec_lost, 'total': rec_total, 'kept': rec_kept, 'bare_total': bare_total,
            'worst_ratio': min((r, t) for t, r in ratios.items() if r == r), 'lost_pct': lost}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--seconds', type=float, default=20.0, help='publishing time per phase')
    parser.add_argument('--saturate-hz', type=float, default=8000.0, help='joint state and wrench rate when saturating')
    parser.add_argument('--phases', default='rig,saturating', help='which phases to run, comma-separated')
    parser.add_argument('--publisher-depth', type=int, default=0,
                        help='publisher history depth (10: ros2_control and most camera drivers; 0: 2 s of history)')
    parser.add_argument('--publisher-qos', choices=('reliable', 'sensor'), default='reliable',
                        help='sensor: best effort, depth 5 (the sensor-data QoS of many drivers)')
    parser.add_argument('--busy-core', nargs='?', type=int, const=1, default=0, metavar='N',
                        help='other processes keep N cores (1 when no N) busy through every phase (the recorder and '
                             'the bare subscriber alike)')
    parser.add_argument('--dds-profile', help='Fast DDS XML profile for the recorder and the bare subscriber '
                        '(e.g. config/dds/fastdds_rig.xml)')
    parser.add_argument('--publisher-dds-profile', help="Fast DDS XML profile for the rig's publisher (what a driver "
                        'would be started with)')
    parser.add_argument('--trials', type=int, default=1,
                        help='recorder and bare subscriber runs per phase, in alternating order; the summary pools '
                             'their counts (transport loss on a shared machine varies by about a point between runs)')
    parser.add_argument('--episode-s', type=float, default=5.0,
                        help='boundaries phases: the length of each episode (stop and start back to back)')
    parser.add_argument('--compression', choices=('profile', 'zstd', 'none'), default='profile',
                        help="the recorder's chunk compression (profile: bench/rig_profile.yaml's, zstd)")
    parser.add_argument('--load', metavar='NAME',
                        help='publish bench/rigs/NAME_load.py (a rig load written blind from bench/rigs/NAME.md) and '
                             'record it with bench/rigs/NAME.yaml instead of the bench\'s own load and profile')
    parser.add_argument('--executor', choices=('events', 'single', 'multi'), default='events',
                        help="the recorder's rclpy executor (ROBODATA_EXECUTOR); the bare subscriber keeps events")
    args = parser.parse_args()
    global DDS_PROFILE, PUBLISHER_DDS_PROFILE, PROFILE, LOAD_SCRIPT, RECORDER_EXECUTOR
    RECORDER_EXECUTOR = args.executor
    if args.load:
        LOAD_SCRIPT, PROFILE = HERE / 'rigs' / f'{args.load}_load.py', HERE / 'rigs' / f'{args.load}.yaml'
        for path in (LOAD_SCRIPT, PROFILE):
            if not path.is_file():
                parser.error(f'--load {args.load}: {path} does not exist')
        if 'saturating' in args.phases.split(','):
            parser.error('--load: the saturating phase pushes the bench\'s own load; leave it out')
        print(f'load: {LOAD_SCRIPT.relative_to(HERE)} recorded with {PROFILE.relative_to(HERE)}', flush=True)
    DDS_PROFILE = str(Path(args.dds_profile).resolve()) if args.dds_profile else None
    PUBLISHER_DDS_PROFILE = str(Path(args.publisher_dds_profile).resolve()) if args.publisher_dds_profile else None
    rig = ['--cameras', '3']
    if args.publisher_qos == 'sensor':
        rig += ['--best-effort', '--depth', str(args.publisher_depth or 5)]
    elif args.publisher_depth:
        rig += ['--depth', str(args.publisher_depth)]
    depth = args.publisher_depth or (5 if args.publisher_qos == 'sensor' else '2 s of history')
    publishers = 'QoS as the load gives them' if args.load else f'{args.publisher_qos}, depth {depth}'
    print(f'recorder executor: {args.executor}; publishers: {publishers}'
          f'{f"; {args.busy_core} core(s) kept busy by other processes" if args.busy_core else ""}', flush=True)
    # A busy loop that ends with this script, however it ends (an orphan would skew every later run).
    spin = 'import os\nparent = os.getppid()\nwhile os.getppid() == parent: pass'
    busy = [subprocess.Popen([sys.executable, '-c', spin]) for _ in range(args.busy_core)]
    saturating = [*rig, '--joint-hz', str(args.saturate_hz), '--wrench-hz', str(args.saturate_hz)]
    recommended = str(config_path(RIG_PROFILE))
    given = (DDS_PROFILE, PUBLISHER_DDS_PROFILE)
    with tempfile.TemporaryDirectory(prefix='robodata_bench_') as tmp:
        if args.compression != 'profile':  # the same rig profile with another recording.compression
            changed = Path(tmp) / 'rig_profile.yaml'
            data = yaml.safe_load(PROFILE.read_text())
            data.setdefault('recording', {})['compression'] = args.compression
            changed.write_text(yaml.safe_dump(data, sort_keys=False))
            PROFILE = changed
        results = {}
        boundaries = {}
        for name, command in (('boundaries', 'record'), ('session-boundaries', 'session')):
            if name not in args.phases.split(','):
                continue
            runs = []
            for trial in range(args.trials):
                print(f'[{name}] trial {trial + 1}/{args.trials}: {command}, an episode every {args.episode_s:g} s '
                      'beside a bare subscriber ...', flush=True)
                runs.append(run_boundaries(args.seconds, rig, Path(tmp), command, args.episode_s))
            boundaries[name] = report_boundaries(name if args.trials == 1 else f'{name}, {args.trials} trials pooled',
                                                 runs)
        for name, load, command in (('rig', rig, 'record'), ('session', rig, 'session'), ('tuned', rig, 'record'),
                                    ('saturating', saturating, 'record')):
            if name not in args.phases.split(','):
                continue
            DDS_PROFILE, PUBLISHER_DDS_PROFILE = (recommended, recommended) if name == 'tuned' else given
            recs, bares = [], []
            for trial in range(args.trials):
                # Alternate who goes first: a machine that grows busier over a phase must not favour one side.
                order = ('recorder', 'bare') if trial % 2 == 0 else ('bare', 'recorder')
                for side in order:
                    print(f'[{name}] trial {trial + 1}/{args.trials}: '
                          f'{command if side == "recorder" else "bare subscriber"} ...', flush=True)
                    if side == 'recorder':
                        recs.append(run_recorder(args.seconds, load, Path(tmp), command))
                    else:
                        bares.append(run_bare(args.seconds, load))
            if args.trials > 1:
                for trial, (rec, bare) in enumerate(zip(recs, bares, strict=True)):
                    results[f'{name} trial {trial + 1}'] = report(f'{name} trial {trial + 1}', rec, bare)
            results[name] = report(name if args.trials == 1 else f'{name}, {args.trials} trials pooled',
                                   pooled(recs), pooled(bares))
    for process in busy:
        process.kill()
        process.wait()
    print('\n== summary ==')
    for name, result in results.items():
        (small, small_bare), (large, large_bare) = result['lost_pct']['small'], result['lost_pct']['camera and LiDAR']
        ratio, topic = result['worst_ratio']
        print(f'{name}: recorder lost {small:.2f}% of small messages and {large:.2f}% of camera/LiDAR frames '
              f'(bare subscriber {small_bare:.2f}% / {large_bare:.2f}%); worst recorder/bare {ratio:.3f} on {topic} '
              f'(target >= 0.99)')
    for name, diffs in boundaries.items():
        text = ', '.join(f'{kind} {diff:+.1f} ms' for kind, diff in diffs.items())
        met = 'met' if diffs and all(abs(d) <= 20 for d in diffs.values()) else 'NOT met'
        print(f'{name}: bare subscriber p99 latency around a boundary minus mid-episode: {text} (target within '
              f'20 ms: {met})')
    if 'tuned' in results:
        (small, _), (large, _) = results['tuned']['lost_pct']['small'], results['tuned']['lost_pct']['camera and LiDAR']
        print(f'tuned: {small:.2f}% small / {large:.2f}% frames lost (target <= 0.5% / 1%)')
    if 'saturating' in results:
        kept, bare_total = results['saturating']['kept'], results['saturating']['bare_total']
        print(f'saturating load: recorder kept {kept} messages, bare subscriber {bare_total}: '
              f'{100 * kept / max(bare_total, 1):.1f}% (target >= 95%)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
