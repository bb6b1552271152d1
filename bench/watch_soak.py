"""A fleet's hour of arrivals, compressed into a few minutes, into `robodata import --watch` (issue 32).

Several simulated robots deliver recordings into one folder at once, as they really arrive:

- rosbag2 folders: the .mcap copied in bursts with pauses longer than --settle, metadata.yaml last;
- recorders that never write metadata.yaml: a folder whose .mcap grows in bursts and stops;
- bare .mcap files written in pieces;
- duplicates: a recording delivered again under another name;
- killed recorders: a folder whose .mcap stops mid-chunk (no footer) and stays so past --incomplete-after, the
  whole recording re-uploaded later as a bare file.

The watcher is the real command in its own process (`--json`), killed with SIGKILL midway and restarted. At the
end every recording's episode is checked against its source: early imports (an episode holding fewer messages
than its recording), duplicates (two episodes of one recording), missed recordings, and the partial episodes
that were replaced. Then the scan cost: a folder of 10,000 recordings looked at by a watcher, first and after a
restart (what it remembers), per 1,000 recordings.

    .venv/bin/python bench/watch_soak.py                     # 4 robots x 40 recordings, ~3 min
    .venv/bin/python bench/watch_soak.py --robots 2 --per-robot 10 --scan 2000   # quicker
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SETTLE_S = 0.5
INCOMPLETE_AFTER_S = 4.0
T0_NS = 1_700_000_000_000_000_000


@dataclass
class Source:
    """One recording a robot makes: its bag folder in the pool, its message count, how it will arrive."""

    name: str
    folder: Path
    messages: int
    mode: str
    delivered: list[Path] = field(default_factory=list)  # where it landed in the inbox (a duplicate: twice)
    finished: dict[str, float] = field(default_factory=dict)  # each place: when its last byte was written

    @property
    def mcap(self) -> Path:
        return next(self.folder.glob('*.mcap'))


def make_pool(pool: Path, robots: int, per_robot: int, rng: random.Random) -> list[Source]:
    """Every recording written once by our writer (rosbag2 layout: <name>.mcap and metadata.yaml), several chunks
    each (the writer flushed as a recorder does)."""
    from ros_robodata.bag.types import typestore
    from ros_robodata.bag.writer import BagWriter

    store = typestore()
    string = store.types['std_msgs/msg/String']
    modes = ['rosbag2 folder'] * 7 + ['no metadata'] * 4 + ['bare file'] * 5 + ['duplicate'] * 2 + ['killed'] * 2
    sources = []
    for robot in range(robots):
        for k in range(per_robot):
            name = f'robot{robot}_{k:03d}'
            messages = 0
            with BagWriter(pool / name) as writer:
                writer.add_topic('/robot/log', 'std_msgs/msg/String')
                for _chunk in range(rng.randint(3, 6)):
                    for _ in range(rng.randint(100, 300)):
                        t = T0_NS + robot * 10**12 + k * 10**10 + messages * 1_000_000
                        writer.write_message('/robot/log', t, string(f'{name} {messages} ' + 'x' * 1500))
                        messages += 1
                    writer.flush()
            sources.append(Source(name, pool / name, messages, rng.choice(modes)))
    return sources


def _in_bursts(data: bytes, target: Path, rng: random.Random, stop_at: int | None = None) -> float:
    """Write `data` (up to `stop_at`) in a few bursts with pauses; when its last byte was written."""
    end = len(data) if stop_at is None else stop_at
    cuts = [*sorted(rng.sample(range(1, end), k=min(end - 1, rng.randint(2, 5)))), end]
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open('wb') as f:
        done = 0
        for cut in cuts:
            if done:
                time.sleep(rng.uniform(0.1, 1.2))  # often longer than --settle: a writer between chunk flushes
            f.write(data[done:cut])
            f.flush()
            done = cut
    return time.monotonic()


def deliver(source: Source, inbox: Path, robot: int, rng: random.Random) -> None:
    data = source.mcap.read_bytes()
    if source.mode in ('rosbag2 folder', 'duplicate'):
        folder = inbox / f'robot{robot}' / source.name
        whole_at = _in_bursts(data, folder / source.mcap.name, rng)  # all its data: taking it now is not early
        time.sleep(rng.uniform(0.2, 1.5))  # rosbag2 writes metadata.yaml when the bag closes
        shutil.copy(source.folder / 'metadata.yaml', folder / 'metadata.yaml')
        _landed(source, folder, whole_at)
        if source.mode == 'duplicate':
            time.sleep(rng.uniform(0.5, 2.0))
            again = inbox / f'{source.name}_resent.mcap'
            _landed(source, again, _in_bursts(data, again, rng))
    elif source.mode == 'no metadata':
        folder = inbox / f'robot{robot}' / source.name
        _landed(source, folder, _in_bursts(data, folder / 'bag.mcap', rng))
    elif source.mode == 'bare file':
        target = inbox / f'{source.name}.mcap'
        _landed(source, target, _in_bursts(data, target, rng))
    else:  # killed: cut mid-way (past its first chunk), never finished; the whole one re-uploaded later
        folder = inbox / f'robot{robot}' / source.name
        _landed(source, folder, _in_bursts(data, folder / 'bag.mcap', rng,
                                           stop_at=len(data) * rng.randint(55, 85) // 100))
        time.sleep(INCOMPLETE_AFTER_S + rng.uniform(2.0, 4.0))
        again = inbox / f'{source.name}_reupload.mcap'
        _landed(source, again, _in_bursts(data, again, rng))


def _landed(source: Source, where: Path, at: float) -> None:
    source.delivered.append(where)
    source.finished[str(where)] = at


class WatcherProcess:
    """`robodata import --watch ... --json` in its own process; its events collected with their arrival time."""

    def __init__(self, inbox: Path, dataset: Path) -> None:
        self.events: list[dict[str, Any]] = []
        self.process = subprocess.Popen(
            [sys.executable, '-m', 'ros_robodata.cli.main', 'import', '--watch', str(inbox), '--dataset', str(dataset),
             '--interval', '250ms', '--settle', f'{SETTLE_S}s', '--incomplete-after', f'{INCOMPLETE_AFTER_S}s',
             '--json'], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith('{'):
                self.events.append({**json.loads(line), 'at': time.monotonic()})

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=60)
        self.reader.join(timeout=10)


def soak(work: Path, robots: int, per_robot: int, seed: int) -> dict[str, Any]:
    from ros_robodata.dataset import Dataset
    from ros_robodata.dataset.audit import read_audit
    from ros_robodata.dataset.sources import content_id

    rng = random.Random(seed)
    sources = make_pool(work / 'pool', robots, per_robot, rng)
    inbox, dataset_root = work / 'inbox', work / 'ds'
    inbox.mkdir()
    watchers = [WatcherProcess(inbox, dataset_root)]
    started = time.monotonic()

    def robot(index: int) -> None:
        own = random.Random(f'{seed}:{index}')
        for source in (s for s in sources if s.name.startswith(f'robot{index}_')):
            time.sleep(own.uniform(0.0, 0.6))
            deliver(source, inbox, index, own)

    threads = [threading.Thread(target=robot, args=(i,)) for i in range(robots)]
    for thread in threads:
        thread.start()
    time.sleep(max(3.0, 1.0 * per_robot))  # about 40% in: the watcher is killed and started again
    watchers[0].kill()
    restarted_at = time.monotonic() - started
    watchers.append(WatcherProcess(inbox, dataset_root))
    for thread in threads:
        thread.join()
    delivered_s = time.monotonic() - started
    quiet_until = time.monotonic() + INCOMPLETE_AFTER_S + 6.0
    while time.monotonic() < quiet_until:
        time.sleep(0.5)
    watchers[-1].stop()

    dataset = Dataset.open(dataset_root)
    rows = {row.id: row for row in dataset.catalog.query()}
    by_content: dict[str, list[str]] = {}
    for episode_id in dataset.episode_ids():
        by_content.setdefault(dataset.episode(episode_id).source.get('content_id', ''), []).append(episode_id)
    duplicates, missed, wrong_count = [], [], []
    for source in sources:
        episodes = by_content.get(content_id([source.mcap]), [])
        if not episodes:
            missed.append(source.name)
            continue
        if len(episodes) > 1:
            duplicates.append(f'{source.name}: {episodes}')
        for episode_id in episodes:
            if rows[episode_id].message_count != source.messages:
                wrong_count.append(f'{episode_id}: {rows[episode_id].message_count} of {source.messages}')
    finished = {path: when for s in sources for path, when in s.finished.items()}
    early = [f'{e["source"]} imported {finished[e["source"]] - e["at"]:.1f} s before its last byte'
             for w in watchers for e in w.events
             if e['event'] == 'imported' and e['episodes'] and e['at'] < finished.get(e['source'], 0.0)]
    partial_imports = sum('taken as it is after' in e.get('note', '') for w in watchers for e in w.events)
    replaced = sum(1 for e in read_audit(dataset.audit_path) if e['action'] == 'replace_episode')
    wholes = {content_id([s.mcap]) for s in sources}
    stray = [c for c in by_content if c not in wholes]  # an episode of a partial copy that was never replaced
    return {
        'recordings': len(sources), 'by mode': {m: sum(s.mode == m for s in sources) for m in
                                                sorted({s.mode for s in sources})},
        'deliveries': sum(len(s.delivered) for s in sources), 'delivered in s': round(delivered_s, 1),
        'watcher restarted (SIGKILL) at s': round(restarted_at, 1),
        'episodes': len(rows), 'early imports': len(early), 'episodes of a partial copy left': len(stray),
        'duplicates': len(duplicates),
        'missed': len(missed), 'episodes whose message count differs from the source': len(wrong_count),
        'killed recordings salvaged as they were': partial_imports, 'partial episodes replaced by the whole':
            replaced, 'killed recordings': sum(s.mode == 'killed' for s in sources),
        'problems': (early + [f'stray episodes of content {c[:12]}: {by_content[c]}' for c in stray] + duplicates
                     + missed + wrong_count)[:20],
    }


def scan_cost(work: Path, count: int) -> dict[str, Any]:
    """A watcher over `count` recordings (100 robot folders of rosbag2 bags): what one scan costs at first, and
    after a restart, when it remembers what it decided."""
    from ros_robodata.dataset import Dataset
    from ros_robodata.dataset.importers import ImportOptions
    from ros_robodata.dataset.watch import Watcher

    talker = ROOT / 'test' / 'data' / 'rosbag2' / 'mcap' / 'talker'
    inbox = work / 'many'
    for i in range(count):
        shutil.copytree(talker, inbox / f'robot{i % 100}' / f'rec_{i:05d}')
    dataset = Dataset.create(work / 'many_ds')
    first = Watcher(inbox, dataset, ImportOptions())
    t0 = time.monotonic()
    first.poll()
    first_s = time.monotonic() - t0
    assert first.memory is not None
    for path, seen in first._seen.items():  # as if every one had been decided (imported or known)
        first.memory.remember(path, seen.state, 'imported')
    t0 = time.monotonic()
    restarted = Watcher(inbox, Dataset.open(work / 'many_ds'), ImportOptions())
    restarted.poll()
    restart_s = time.monotonic() - t0
    t0 = time.monotonic()
    restarted.poll()
    steady_s = time.monotonic() - t0
    known = sum(seen.done for seen in restarted._seen.values())
    assert known == count, f'{known} of {count} remembered'
    per = 1000 / count
    return {'recordings scanned': count, 'first scan s per 1000': round(first_s * per, 3),
            'scan after a restart s per 1000 (remembered)': round(restart_s * per, 3),
            'steady scan s per 1000': round(steady_s * per, 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--robots', type=int, default=4)
    parser.add_argument('--per-robot', type=int, default=40)
    parser.add_argument('--scan', type=int, default=10_000, help='recordings in the scan-cost folder')
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--json', action='store_true')
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix='robodata_watch_soak_'))
    try:
        result = soak(work, args.robots, args.per_robot, args.seed)
        result['scan'] = scan_cost(work, args.scan)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f'== watch_soak: {args.robots} robots x {args.per_robot} recordings (seed {args.seed}) ==')
    for key in ('by mode', 'deliveries', 'delivered in s', 'watcher restarted (SIGKILL) at s', 'episodes',
                'killed recordings', 'killed recordings salvaged as they were',
                'partial episodes replaced by the whole'):
        print(f'  {key}: {result[key]}')
    for key in ('early imports', 'episodes of a partial copy left', 'duplicates', 'missed',
                'episodes whose message count differs from the source'):
        print(f'  {key}: {result[key]} (target 0): {"met" if result[key] == 0 else "NOT met"}')
    for key, value in result['scan'].items():
        print(f'  {key}: {value}')
    scan = result['scan']['scan after a restart s per 1000 (remembered)']
    print(f'  a restart over 10,000 recordings: {scan * 10:.1f} s (target: seconds, not minutes): '
          f'{"met" if scan * 10 < 30 else "NOT met"}')
    for problem in result['problems']:
        print(f'  ! {problem}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
