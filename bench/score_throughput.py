"""What scoring a bag costs: time against a raw read of the same bag, and memory against the episode's length.

Time: simulated episodes with both cameras and the LiDAR at the demo's size (320x240) are written straight into
bags (`write_sim_episode`, no ROS). For each, a raw read of every message (`BagReader.messages()`, nothing
decoded) and `score_bag` (every check, every camera frame, one pass: the checks run on arrays of a chunk of
messages, quality/batch_pass.py) are timed, best of --repeats each. Target (issue 28): scoring takes at most 1.3x
the raw read. `score_bag(images=False)` splits the time into the read plus the cheap checks (timing, motion,
wrench, on CDR bytes) and what the camera checks add (decoding every frame, the image checks, on a worker thread
beside the read). `score_bag(batch=False)`, the checks fed one message at a time as a live monitor does, is timed
too for comparison.

Memory: the first episode alone (short) against a long bag made of the recorded episodes end to end (--segments
of them, each shifted in time, header stamps inside the CDR bytes shifted too). Each is scored in a fresh
subprocess that reports its peak resident memory (VmHWM); a subprocess that imports the same modules and loads
the profile but scores nothing is the baseline. Target: memory does not grow with the episode's length, i.e. the
long bag's growth over the baseline is at most 1.5x the short one's. Scoring time per second of episode is printed
for both.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PROFILE = ROOT / 'config' / 'sim_cell.yaml'
TARGET_RATIO = 1.3
TARGET_GROWTH = 1.5
JUNCTION_NS = 2_000_000  # from one segment's last message to the next one's first in the long bag
_STAMP = struct.Struct('<iI')


# --- the child that scores one bag in a fresh process -----------------------------------------------------------

def _peak_kib() -> int:
    """Peak resident set (VmHWM) of this process in KiB; ru_maxrss where /proc is not there."""
    try:
        for line in Path('/proc/self/status').read_text().splitlines():
            if line.startswith('VmHWM:'):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def child(what: str, bag: str, profile_path: str) -> None:
    """Import what scoring imports, then score `bag` (or nothing, for the baseline); print one JSON line."""
    # score_bag imports the image modules (and cv2) lazily; the baseline must hold them too.
    import ros_robodata.bag.image
    import ros_robodata.quality.images  # noqa: F401
    from ros_robodata.bag.types import typestore
    from ros_robodata.profile import load_profile
    from ros_robodata.quality.scoring import score_bag

    profile = load_profile(profile_path)
    typestore()
    out: dict[str, object] = {'before_kib': _peak_kib()}
    if what == 'score':
        t0 = time.perf_counter()
        report = score_bag(bag, profile).report
        out['score_s'] = time.perf_counter() - t0
        out['findings'] = len(report.findings)
        out['checks'] = [[f'{f.check} {f.topic}'.strip(), [list(r) for r in f.ranges]] for f in report.findings]
        out['duration_s'] = float(report.metrics['duration_s'])
    out['peak_kib'] = _peak_kib()
    out['maxrss_kib'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps(out), flush=True)


def run_child(what: str, bag: Path | None, profile: Path) -> dict[str, Any]:
    cmd = [sys.executable, __file__, '--child', what, str(bag or ''), '--profile', str(profile)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f'child {what} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}')
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- bags --------------------------------------------------------------------------------------------------------

def record(out: Path, seeds: list[int], size: tuple[int, int], profile_path: Path) -> list[Path]:
    from ros_robodata.profile import load_profile
    from ros_robodata.sim.to_bag import write_sim_episode

    profile = load_profile(profile_path)
    bags = []
    for i, seed in enumerate(seeds):
        bag = out / f'episode_{seed}'
        mode = ('teleop', 'kinesthetic')[i % 2]
        t0 = time.perf_counter()
        truth = write_sim_episode(bag, profile, seed, mode=mode, cameras=True, lidar=True, image_size=size)
        print(f'[throughput] recorded seed {seed} ({mode}, {truth["duration_s"]:.1f} s of episode, cameras '
              f'{size[0]}x{size[1]}, LiDAR) in {time.perf_counter() - t0:.1f} s', flush=True)
        bags.append(bag)
    return bags


def concatenate(sources: list[Path], out: Path) -> list[int]:
    """One bag of `sources` end to end: receive times and the header stamps inside the CDR bytes (int32 sec,
    uint32 nanosec after the 4-byte encapsulation header) shifted so each segment follows the one before.
    Returns the times (ns) where the segments after the first begin."""
    from ros_robodata.bag.reader import BagReader
    from ros_robodata.bag.types import typestore
    from ros_robodata.bag.writer import BagWriter
    from ros_robodata.signals.cdr import header_stamp_ns, starts_with_header

    store = typestore()
    stamped: dict[str, bool] = {}
    base: int | None = None
    junctions: list[int] = []
    with BagWriter(out) as writer:
        for src in sources:
            with BagReader(src) as reader:
                for name, info in reader.topics.items():
                    if not writer.has_topic(name):
                        writer.add_topic(name, info.msgtype)
                        stamped[name] = info.msgtype in store.fielddefs and starts_with_header(info.msgtype, store)
                start, end = reader.start_ns, reader.end_ns
                assert start is not None and end is not None
                if base is None:
                    base = start
                else:
                    junctions.append(base)
                shift = base - start
                for message in reader.messages():
                    data: bytes | memoryview | bytearray = message.data
                    if stamped[message.topic] and shift:
                        stamp = header_stamp_ns(data)
                        if stamp is not None and data[1] == 1:
                            patched = bytearray(data)
                            sec, nanosec = divmod(stamp + shift, 1_000_000_000)
                            _STAMP.pack_into(patched, 4, sec, nanosec)
                            data = patched
                    writer.write(message.topic, message.t_ns + shift, bytes(data))
                base += end - start + JUNCTION_NS
    return junctions


def bag_facts(bag: Path) -> tuple[int, float, float]:
    """(messages, MiB, duration s)."""
    from ros_robodata.bag.reader import BagReader

    with BagReader(bag) as reader:
        return reader.message_count, reader.size_bytes / 2**20, reader.duration_ns / 1e9


# --- timing ------------------------------------------------------------------------------------------------------

def best_of(n: int, fn: Callable[[], object]) -> float:
    best = math.inf
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def raw_read(bag: Path) -> int:
    from ros_robodata.bag.reader import BagReader

    with BagReader(bag) as reader:
        n = 0
        for _ in reader.messages():
            n += 1
        return n


def timing(bags: list[Path], profile_path: Path, repeats: int) -> str:
    from ros_robodata.profile import load_profile
    from ros_robodata.quality.scoring import score_bag

    profile = load_profile(profile_path)
    score_bag(bags[0], profile)  # warm up: imports, typestore, first-call allocations
    print(f'\n== time: score_bag against a raw read of every message (best of {repeats}) ==')
    print(f'{"bag":12} {"messages":>8} {"MiB":>6} {"episode s":>9} {"raw read s":>10} {"score s":>8} '
          f'{"no images s":>11} {"streaming s":>11} {"score/raw":>9} {"findings":>8}')
    totals = dict.fromkeys(('raw', 'score', 'plain', 'streaming', 'episode', 'messages'), 0.0)
    for bag in bags:
        messages, mib, duration = bag_facts(bag)
        raw = best_of(repeats, lambda b=bag: raw_read(b))
        scored = best_of(repeats, lambda b=bag: score_bag(b, profile))
        plain = best_of(repeats, lambda b=bag: score_bag(b, profile, images=False))
        streaming = best_of(repeats, lambda b=bag: score_bag(b, profile, batch=False))
        findings = len(score_bag(bag, profile).report.findings)
        print(f'{bag.name:12} {messages:8d} {mib:6.1f} {duration:9.1f} {raw:10.3f} {scored:8.3f} {plain:11.3f} '
              f'{streaming:11.3f} {scored / raw:9.2f} {findings:8d}')
        for key, value in (('raw', raw), ('score', scored), ('plain', plain), ('streaming', streaming),
                           ('episode', duration), ('messages', messages)):
            totals[key] += value
    t = totals
    ratio = t['score'] / t['raw']
    print(f'{"total":12} {t["messages"]:8.0f} {"":6} {t["episode"]:9.1f} {t["raw"]:10.3f} {t["score"]:8.3f} '
          f'{t["plain"]:11.3f} {t["streaming"]:11.3f} {ratio:9.2f}')
    print('\nwhere the scoring time goes (all bags):')
    parts = (('raw read of every message (baseline)', t['raw']),
             ('timing, motion and wrench checks beyond the read (images=False minus the read)', t['plain'] - t['raw']),
             ('camera checks: decoding every frame and the image checks (images=True minus images=False)',
              t['score'] - t['plain']),
             ('score_bag (all of it)', t['score']))
    for name, seconds in parts:
        print(f'  {name:92} {seconds:7.3f} s  {100 * seconds / t["score"]:5.0f}%  '
              f'{seconds / t["episode"] * 1e3:6.1f} ms per s of episode')
    print(f'score_bag runs at {t["episode"] / t["score"]:.1f}x real time; without the camera checks '
          f'{t["episode"] / t["plain"]:.1f}x; fed one message at a time (batch=False, as live) '
          f'{t["streaming"] / t["raw"]:.2f}x the raw read')
    return (f'score_bag / raw read {ratio:.2f} ({t["score"]:.3f} s / {t["raw"]:.3f} s; target <= {TARGET_RATIO:g}): '
            f'{"met" if ratio <= TARGET_RATIO else "NOT met"}')


def memory(bags: list[Path], tmp: Path, segments: int, profile_path: Path) -> str:
    long_bag = tmp / 'long'
    sources = [bags[i % len(bags)] for i in range(segments)]
    t0 = time.perf_counter()
    junctions = concatenate(sources, long_bag)
    print(f'\n[memory] long bag: {segments} segments ({", ".join(b.name for b in sources)}) written in '
          f'{time.perf_counter() - t0:.1f} s', flush=True)
    baseline = run_child('baseline', None, profile_path)
    rows = [('short', bags[0]), ('long', long_bag)]
    results = {name: run_child('score', bag, profile_path) for name, bag in rows}
    base_mib = baseline['peak_kib'] / 1024
    print(f'\n== memory: peak resident set of scoring in a fresh process (VmHWM), baseline = imports + profile, '
          f'no scoring: {base_mib:.0f} MiB ==')
    print(f'{"bag":6} {"messages":>8} {"MiB":>7} {"episode s":>9} {"peak MiB":>8} {"growth MiB":>10} '
          f'{"score s":>8} {"ms per s of episode":>19} {"findings":>8}')
    growth = {}
    for name, bag in rows:
        r = results[name]
        messages, mib, duration = bag_facts(bag)
        peak = r['peak_kib'] / 1024
        growth[name] = peak - base_mib
        print(f'{name:6} {messages:8d} {mib:7.1f} {duration:9.1f} {peak:8.1f} {growth[name]:10.1f} '
              f'{r["score_s"]:8.2f} {r["score_s"] / duration * 1e3:19.1f} {r["findings"]:8.0f}')
    for name, _ in rows:
        found = results[name]['checks']
        if name == 'long':
            at_junction = sum(1 for _, ranges in found if ranges and all(
                any(abs(a - j) <= 200_000_000 or abs(b - j) <= 200_000_000 for j in junctions) for a, b in ranges))
            print(f'findings in long: {", ".join(c for c, _ in found) or "none"} ({at_junction} of {len(found)} '
                  f'only within 0.2 s of the {len(junctions)} junctions, where an episode ending in one pose is '
                  'followed by one starting at home)')
        else:
            print(f'findings in {name}: {", ".join(c for c, _ in found) or "none"}')
    short_s, long_s = bag_facts(bags[0])[2], bag_facts(long_bag)[2]
    shutil.rmtree(long_bag, ignore_errors=True)
    ratio = growth['long'] / growth['short'] if growth['short'] > 0 else math.inf
    print(f'the long episode is {long_s / short_s:.1f}x as long; its growth over the baseline is {ratio:.2f}x the '
          f'short one\'s ({growth["long"]:.1f} / {growth["short"]:.1f} MiB)')
    return (f'memory: long growth / short growth {ratio:.2f} for a {long_s / short_s:.1f}x longer episode '
            f'(target <= {TARGET_GROWTH:g}): {"met" if ratio <= TARGET_GROWTH else "NOT met"}')


# --- main --------------------------------------------------------------------------------------------------------

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--seeds', default='0,1', help='episodes to record, comma-separated seeds (default 0,1)')
    parser.add_argument('--image-size', default='320x240', help='camera image size WxH (default 320x240, the demo\'s)')
    parser.add_argument('--repeats', type=int, default=3, help='timed runs per bag; the best counts (default 3)')
    parser.add_argument('--segments', type=int, default=10, help='episodes end to end in the long bag (default 10)')
    parser.add_argument('--quick', action='store_true', help='one episode, best of 2, a 4-segment long bag')
    parser.add_argument('--no-memory', action='store_true', help='time only')
    parser.add_argument('--profile', type=Path, default=PROFILE, help='robot profile (default the sim cell)')
    parser.add_argument('--child', nargs=2, metavar=('WHAT', 'BAG'), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], str(args.profile))
        return 0
    wall0 = time.monotonic()
    try:
        seeds = [int(s) for s in args.seeds.split(',') if s.strip()]
        width, height = (int(v) for v in args.image_size.lower().split('x'))
    except ValueError:
        parser.error('--seeds takes integers, --image-size WIDTHxHEIGHT')
    if args.quick:
        seeds, repeats, segments = seeds[:1], min(2, args.repeats), min(4, args.segments)
    else:
        repeats, segments = args.repeats, args.segments
    verdicts = []
    with tempfile.TemporaryDirectory(prefix='robodata_scorebench_') as tmp:
        bags = record(Path(tmp), seeds, (width, height), args.profile)
        verdicts.append(timing(bags, args.profile, repeats))
        if not args.no_memory:
            verdicts.append(memory(bags, Path(tmp), segments, args.profile))
    print('\n== summary ==')
    met = sum(1 for line in verdicts if line.endswith(': met'))
    print(f'targets met: {met} of {len(verdicts)}')
    for line in verdicts:
        print(f'  {line}')
    print(f'wall time {time.monotonic() - wall0:.0f} s')
    return 0


if __name__ == '__main__':
    sys.exit(main())
