"""What checking a dataset's governance records costs: the hash-chained audit log now, a release's files later.

Audit phase (--audit-entries, default 1,000,000): a chained audit.jsonl of that many realistic entries (the actions,
fields and sizes the recorder, `set`, import, review and select write; about 290 bytes a line) is built in Python
in the format append_audit writes (audit_chain.format_line, without an fsync per line), then, in the same run and
best of --repeats each:

- `verify_audit` over the whole file, against `sha256sum` of the same file (the cost of reading and hashing every
  byte once, the floor a chain check is judged against). Target: at most 1.3x;
- what dominates verify: the same bytes hashed whole by Python's hashlib, and split into lines with each line
  hashed and nothing else (the per-line Python work no line-by-line check avoids);
- append_audit and audit_head on the same file: they read its end only, so they stay in milliseconds whatever the
  file's length (the figure that matters is that they do not grow with it).

Release phase (--release-gb, e.g. 10): a dataset of that many GB of approved episodes (100 MB bags, their
checksums recorded as they were written, as the recorder does), then `release create` and `release verify` against
`sha256sum` of the same files in the same run (target: within 1.3x). Both re-hash every byte: the checksums recorded
at write time are compared, never trusted in place of reading (a copy that kept the files' times over changed bytes
would pass a size-and-time check). Needs the release's size free in --tmp.

Needs about 2x the audit's size of free space in the temporary folder (--tmp).
"""

from __future__ import annotations

import argparse
import hashlib
import random
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

VERIFY_TARGET = 1.3
WRITE_BLOCK = 1 << 20  # what the release dataset is written in

ACTIONS = ['create_episode', 'record_checksums', 'set_outcome', 'set_status', 'add_labels', 'select_review',
           'import_episode', 'repair']
REASONS = ['', 'cube lifted 8 cm', 'dropped the cube at the bin', 'camera blurred in the first second',
           'gripper slipped, operator recovered', 'wrong task label from the rig']


def best_of(repeats: int, run: Callable[[], object]) -> float:
    best = float('inf')
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def details(rng: random.Random, action: str, n: int) -> dict[str, object]:
    """The fields the writer of `action` adds (dataset.py, staging.py, annotations.py, queue.py)."""
    if action == 'create_episode':
        return {'task': 'pick_place_cube', 'operator': rng.choice(['kim', 'lee', 'rig-3']), 'mode': 'teleop'}
    if action == 'record_checksums':
        return {'files': ['metadata.yaml', f'ep{n:07d}_0.mcap']}
    if action in ('set_outcome', 'set_status'):
        old, new = rng.sample(['unknown', 'success', 'failure', 'recovery'], 2)
        return {'old': old, 'new': new, 'reason': rng.choice(REASONS)}
    if action == 'add_labels':
        return {'revision': rng.randint(1, 4), 'source': {'tool': 'label_studio', 'task': rng.randint(1, 10**5)},
                'labels': rng.randint(1, 9), 'superseded': []}
    if action == 'select_review':
        return {'budget': 3, 'picked': [f'ep{rng.randint(0, n):07d}' for _ in range(3)]}
    if action == 'import_episode':
        return {'source': f'/data/rigs/rig-3/2026-03-02/ep{n:07d}', 'split': None}
    return {'actions': ['reindexed metadata.yaml']}


def write_audit(path: Path, entries: int, seed: int = 0) -> int:
    """A chained audit of `entries` lines in append_audit's format; returns its size in bytes."""
    from ros_robodata.dataset.audit_chain import GENESIS, format_line

    rng = random.Random(seed)
    t0 = 1_772_440_000_000_000_000
    prev, size = GENESIS, 0
    with path.open('wb') as out:
        block: list[bytes] = []
        for n in range(entries):
            action = 'create_dataset' if n == 0 else rng.choice(ACTIONS)
            ns = t0 + n * 1_700_000_000
            entry = {'time': time.strftime('%Y-%m-%dT%H:%M:%S+0000', time.gmtime(ns // 10**9)), 'time_ns': ns,
                     'who': rng.choice(['kim', 'lee', 'rig-3', 'reviewer_ana']), 'action': action,
                     'episode': None if action in ('create_dataset', 'select_review') else f'ep{n:07d}',
                     **({'name': 'fleet'} if n == 0 else details(rng, action, n))}
            line = format_line(prev, n + 1, entry)
            prev = hashlib.sha256(line).hexdigest()
            block.append(line + b'\n')
            size += len(line) + 1
            if len(block) == 10_000:
                out.write(b''.join(block))
                block.clear()
        out.write(b''.join(block))
    return size


def lines_hashed(path: Path) -> None:
    """The floor of any line-by-line check in Python: every line split off and hashed, nothing compared."""
    from ros_robodata.dataset.audit_chain import BLOCK

    sha256, carry = hashlib.sha256, b''
    with path.open('rb', buffering=0) as f:
        while chunk := f.read(BLOCK):
            lines = (carry + chunk).split(b'\n')
            carry = lines.pop()
            [sha256(line).digest() for line in lines]


def audit_phase(entries: int, repeats: int, work: Path) -> None:
    from ros_robodata.dataset.audit import append_audit, audit_head, verify_audit

    path = work / 'audit.jsonl'
    start = time.perf_counter()
    size = write_audit(path, entries)
    print(f'audit: {entries:,} entries, {size / 1e6:.0f} MB (written in {time.perf_counter() - start:.1f} s)')
    sha256sum = shutil.which('sha256sum')
    if sha256sum is None:
        raise SystemExit('sha256sum not found (coreutils): it is the baseline')
    subprocess.run([sha256sum, str(path)], check=True, capture_output=True)  # both read from the page cache

    checks = []
    verify_s = best_of(repeats, lambda: checks.append(verify_audit(path)))
    if not checks[-1].ok or checks[-1].entries != entries:
        raise SystemExit(f'verify_audit did not pass the bench file: {checks[-1]}')
    sum_s = best_of(repeats, lambda: subprocess.run([sha256sum, str(path)], check=True, capture_output=True))
    whole_s = best_of(repeats, lambda: hashlib.sha256(path.read_bytes()).digest())
    lines_s = best_of(repeats, lambda: lines_hashed(path))
    head_s = best_of(repeats, lambda: audit_head(path))
    append_s = best_of(repeats, lambda: append_audit(path, 'set_outcome', 'ep0000001', 'kim', old='unknown',
                                                     new='success', reason='bench'))
    mb = size / 1e6
    print(f'\n== best of {repeats} ==')
    print(f'sha256sum                 {sum_s:7.3f} s  ({mb / sum_s:.0f} MB/s)')
    print(f'verify_audit              {verify_s:7.3f} s  ({mb / verify_s:.0f} MB/s, '
          f'{verify_s / entries * 1e9:.0f} ns a line)')
    print(f'  hashlib, file whole     {whole_s:7.3f} s  (read + hash every byte once, in Python)')
    print(f'  lines split and hashed  {lines_s:7.3f} s  (the per-line floor: one sha256 call per line)')
    print(f'audit_head                {head_s * 1e3:7.2f} ms')
    print(f'append_audit              {append_s * 1e3:7.2f} ms  (one fsync included)')
    ratio = verify_s / sum_s
    print(f'\nverify / sha256sum {ratio:.2f} (target <= {VERIFY_TARGET}): '
          f'{"met" if ratio <= VERIFY_TARGET else "NOT met"}; hashing every line in one process alone takes '
          f'{lines_s / sum_s:.2f}x sha256sum (verify hands half of it to a second process past 32 MB)')


def write_release_dataset(root: Path, size_gb: float, episode_mb: int) -> tuple[object, list[Path]]:
    """A dataset of approved episodes of about `size_gb` in all: each a bag of one `episode_mb` storage file (bytes
    of no format: a release hashes files, it never parses them) and its metadata.yaml, with the checksums recorded as
    the recorder records them while it writes. Returns (the dataset, every file a release will hash)."""
    from ros_robodata.dataset import Dataset
    from ros_robodata.dataset.episode import Episode

    dataset = Dataset.create(root, name='bench')
    noise = random.Random(34).randbytes(WRITE_BLOCK * 4)
    count = max(1, round(size_gb * 1000 / episode_mb))
    for n in range(count):
        episode_id = f'ep{n:05d}'
        bag = dataset.bag_dir(episode_id)
        bag.mkdir(parents=True)
        digest, left, offset = hashlib.sha256(), episode_mb * 1_000_000, n * 4099
        with (bag / f'{episode_id}_0.mcap').open('wb') as f:
            while left > 0:
                start = offset % (len(noise) - WRITE_BLOCK)
                chunk = noise[start:start + min(WRITE_BLOCK, left)]
                f.write(chunk)
                digest.update(chunk)
                left -= len(chunk)
                offset += 7919
        (bag / 'metadata.yaml').write_text(f'rosbag2_bagfile_information:\n  version: 9\n  relative_file_paths: '
                                           f'[{episode_id}_0.mcap]\n')
        dataset.add_episode(Episode(id=episode_id, task='pick_place_cube', operator='kim', outcome='success',
                                    status='complete', start_ns=1_765_000_000_000_000_000 + n * 10**10,
                                    stop_ns=1_765_000_000_000_000_000 + n * 10**10 + 9 * 10**9), who='bench')
        dataset.record_checksums(episode_id, who='bench', known={f'{episode_id}_0.mcap': digest.hexdigest()})
        dataset.decide(episode_id, 'approved', {'verdict': 'approved', 'policy': 'bench', 'policy_sha256': '',
                                                'reasons': [], 'why': 'bench', 'time': ''}, who='bench')
    files = sorted(p for p in (root / 'episodes').rglob('*') if p.is_file())
    return dataset, files


def release_phase(size_gb: float, repeats: int, work: Path, episode_mb: int = 100) -> None:
    """A release of about `size_gb` made and verified, against `sha256sum` reading and hashing the same files in the
    same run (one process, as a user would run it; and two at once, one per core, as the release's threads do)."""
    from ros_robodata.dataset.audit_chain import audit_head
    from ros_robodata.governance.release import create_release, verify_release

    start = time.perf_counter()
    dataset, files = write_release_dataset(work / 'release_ds', size_gb, episode_mb)
    total = sum(p.stat().st_size for p in files)
    print(f'\nrelease: {len(dataset.episode_ids())} approved episodes, {len(files)} files, {total / 1e9:.2f} GB '
          f'(written in {time.perf_counter() - start:.1f} s)')
    sha256sum = shutil.which('sha256sum')
    if sha256sum is None:
        raise SystemExit('sha256sum not found (coreutils): it is the baseline')
    names = [str(p) for p in files]
    half = len(names) // 2

    def one() -> None:
        subprocess.run([sha256sum, *names], check=True, capture_output=True)

    def two() -> None:
        procs = [subprocess.Popen([sha256sum, *part], stdout=subprocess.DEVNULL) for part in (names[:half],
                                                                                             names[half:])]
        for proc in procs:
            if proc.wait() != 0:
                raise SystemExit('sha256sum failed')

    one()  # every run below reads from the page cache
    made: list[object] = []
    create_s = best_of(repeats, lambda: made.append(create_release(
        dataset, f'v{len(made) + 1}', dataset.list(), why='bench', audit_head=audit_head(dataset.audit_path))))
    checks: list[object] = []
    verify_s = best_of(repeats, lambda: checks.append(verify_release(dataset, 'v1')))
    bad = [c for c in checks if not c.ok]  # type: ignore[attr-defined]
    if bad:
        raise SystemExit(f'release verify did not pass the bench dataset: {bad[0]}')
    one_s = best_of(repeats, one)
    two_s = best_of(repeats, two)
    gb = total / 1e9
    print(f'\n== best of {repeats} ==')
    print(f'sha256sum, one process    {one_s:7.2f} s  ({gb / one_s:.2f} GB/s)')
    print(f'sha256sum, two at once    {two_s:7.2f} s  ({gb / two_s:.2f} GB/s)')
    print(f'release create            {create_s:7.2f} s  ({gb / create_s:.2f} GB/s: hash, compare with the write-time '
          f'checksums, manifest, croissant.json)')
    print(f'release verify            {verify_s:7.2f} s  ({gb / verify_s:.2f} GB/s: re-hash every file, the audit '
          f'chain up to the release\'s head)')
    for what, secs in (('create', create_s), ('verify', verify_s)):
        ratio = secs / one_s
        print(f'release {what} / sha256sum {ratio:.2f} (target <= {VERIFY_TARGET}): '
              f'{"met" if ratio <= VERIFY_TARGET else "NOT met"}; against two sha256sum at once {secs / two_s:.2f}')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--repeats', type=int, default=3, help='timings are the best of this many (default 3)')
    parser.add_argument('--tmp', help='folder for the files (default: the system temporary folder)')
    audit = parser.add_argument_group('audit phase')
    audit.add_argument('--audit-entries', type=int, default=1_000_000,
                       help='entries of the chained audit (default 1,000,000; 0 skips the phase)')
    release = parser.add_argument_group('release phase')
    release.add_argument('--release-gb', type=float, default=0.0,
                         help='size of the release to build and check, e.g. 10 (default 0: skipped)')
    release.add_argument('--episode-mb', type=int, default=100, help='size of each episode\'s bag (default 100)')
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix='robodata-governance-bench-', dir=args.tmp))
    try:
        if args.audit_entries > 0:
            audit_phase(args.audit_entries, args.repeats, work)
        if args.release_gb > 0:
            release_phase(args.release_gb, args.repeats, work, args.episode_mb)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    main()
