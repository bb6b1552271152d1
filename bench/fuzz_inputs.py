"""Bad input at scale: damaged bags, broken dataset files, hostile YAML and JSON, odd arguments, against every
offline command. Each case copies a small real dataset (simulated episodes imported, segmented, scored and
exported), breaks one thing, runs one command in a forked child with a time limit, and is judged:

- a clean error: exit status 1 and exactly one stderr line `robodata <command>: error: ...`;
- handled: exit status 0 or 3 (the command did what it could and said what it could not);
- storage cases put the dataset on a small tmpfs of its own, full, nearly full or read-only (as root; else said);
- a traceback (target 0), a run over --limit seconds (target 0, killed), a file of the dataset changed that the
  command does not own (target 0), and the peak resident memory of any case (target under 1 GiB).

Seeded and bounded: the same --seed gives the same cases. Usage:

    .venv/bin/python bench/fuzz_inputs.py --cases 2000          # ~10 min on 2 cores
    .venv/bin/python bench/fuzz_inputs.py --cases 40 --json     # what the tests run
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import hashlib
import io
import json
import os
import random
import resource
import shutil
import signal
import struct
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PROFILE = ROOT / 'config' / 'sim_cell.yaml'
TAXONOMY = ROOT / 'config' / 'taxonomy.yaml'
STOP_LIMIT_S = 1.0  # SIGTERM ends any command within this, whatever it is reading
MEMORY_LIMIT = 2 * 1024**3  # a child over this fails with MemoryError (counted), rather than the machine swapping

# What each command may write in the dataset it works on (anything else changed is damage).
OWNED = {
    'info': [], 'verify': [], 'list': [], 'profile': [],
    'segment': ['episodes/*/events.json'],
    'score': ['episodes/*/events.json', 'episodes/*/quality.json', 'quality_summary.json', 'catalog.sqlite*'],
    'report': ['report.html', 'catalog.sqlite*'],
    'export': ['episodes/*/events.json'],
    'set': ['episodes/*/episode.yaml', 'audit.jsonl', 'catalog.sqlite*'],
    'catalog': ['catalog.sqlite*', 'audit.jsonl'],
    'repair': ['episodes/*', 'episodes/*/*', 'episodes/*/bag/*', 'episodes/*/bag/damaged/*', 'catalog.sqlite*',
               'audit.jsonl'],
}


@dataclass
class Case:
    number: int
    what: str  # the damage or oddity
    command: str
    args: list[str]
    broke: str = ''  # the file deliberately broken (its change is not damage)
    term_after: float | None = None  # SIGTERM this many seconds after the start (a scheduler's `kill`)
    as_user: bool = False  # without root's permission override (CAP_DAC_OVERRIDE): permission bits apply
    locked: list[tuple[str, int]] = field(default_factory=list)  # (path, mode) for the run, restored after it


@dataclass
class Outcome:
    case: Case
    code: int | None  # None: killed after the time limit
    seconds: float
    stderr: str
    peak_kib: int
    changed: list[str] = field(default_factory=list)
    stop_s: float | None = None  # from SIGTERM to the process gone

    @property
    def kind(self) -> str:
        if self.code is None:
            return 'hang'
        if 'Traceback (most recent call last)' in self.stderr:
            return 'traceback'
        if self.changed:
            return 'damaged'
        if self.case.term_after is not None:
            if self.stop_s is not None and self.stop_s > STOP_LIMIT_S:
                return 'slow stop'
            if self.code in (130, -signal.SIGTERM) or self.code in (0, 3):  # stopped, or done before the signal
                return 'handled'
        lines = self.stderr.strip().splitlines()
        one_line = len(lines) == 1 and lines[0].startswith('robodata ') and ': error: ' in lines[0]
        if self.code == 1 and one_line:
            return 'clean error'
        if self.code == 2 and lines and ': error: ' in lines[-1]:  # argparse: the usage line, then the error
            return 'clean error'
        if self.code in (0, 3) or (self.code == 1 and self.case.command == 'verify' and not lines):
            return 'handled'  # verify's 1 with nothing on stderr: it found problems and listed them
        return 'other'


# -- the base data ---------------------------------------------------------------------------------------------


def build_base(work: Path) -> Path:
    """Two simulated episodes, imported into a dataset, segmented, scored, exported: every file a dataset has."""
    from ros_robodata.cli.main import main
    from ros_robodata.profile import load_profile
    from ros_robodata.sim.to_bag import write_sim_episode

    profile = load_profile(PROFILE)
    bags = work / 'bags'
    for seed in (0, 3):
        write_sim_episode(bags / f'demo_{seed}', profile, seed=seed, max_duration_s=3.0, cameras=True,
                          image_size=(64, 48))
    dataset = work / 'base' / 'ds'
    quiet = io.StringIO()
    with _redirect(quiet):
        for args in (['import', str(bags), '--dataset', str(dataset), '--profile', str(PROFILE), '--task', 'pick'],
                     ['segment', str(dataset)], ['score', str(dataset)],
                     ['export', 'frames', str(dataset), '--out', str(work / 'base' / 'frames'), '--tasks', 'none',
                      '--every', '0.5s']):
            code = main(args)
            if code not in (0, 3):
                raise RuntimeError(f'setting up the base data failed at {args}: {quiet.getvalue()[-2000:]}')
    shutil.copytree(bags / 'demo_0', work / 'base' / 'bag')
    _sqlite3_copy(work / 'base' / 'bag', work / 'base' / 'db3_bag')
    (work / 'base' / 'big_taxonomy.yaml').write_text('version: 1\nname: big\nclasses:\n' + ''.join(
        f'  - name: group{i // 100}/class{i}\n    id: {i + 1}\n    kinds: [bbox]\n' for i in range(100_000)))
    shutil.copy(PROFILE, work / 'base' / 'profile.yaml')
    shutil.copy(TAXONOMY, work / 'base' / 'taxonomy.yaml')
    return work / 'base'


def _sqlite3_copy(bag: Path, out: Path) -> None:
    """The same recording as a rosbag2 sqlite3 bag (what older rigs and `ros2 bag record -s sqlite3` write)."""
    from ros_robodata.bag.reader import BagReader
    from ros_robodata.bag.writer import BagWriter

    with BagReader(bag) as source:
        writer = BagWriter(out, storage='sqlite3').open()
        for info in source.topics.values():
            writer.add_topic(info.name, info.msgtype)
        for message in source.messages():
            writer.write(message.topic, message.t_ns, message.data)
        writer.close()


class _redirect:
    def __init__(self, sink: io.StringIO) -> None:
        self.sink = sink

    def __enter__(self) -> None:
        self.saved = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = self.sink

    def __exit__(self, *exc: object) -> None:
        sys.stdout, sys.stderr = self.saved


# -- mutations -------------------------------------------------------------------------------------------------

BOMB = ('a: &a [x,x,x,x,x,x,x,x,x,x]\n'
        + ''.join(f'{chr(98 + i)}: &{chr(98 + i)} [{",".join(["*" + chr(97 + i)] * 10)}]\n' for i in range(8)))


def mutate_bytes(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """One kind of binary damage, placed at random."""
    kind = rng.choice(['flip header', 'flip middle', 'flip end', 'truncate', 'bogus length', 'zero block',
                       'garbage schema', 'empty'])
    b = bytearray(data)
    n = len(b)
    if kind == 'empty' or n < 64:
        return b'', 'empty file'
    if kind.startswith('flip'):
        at = {'flip header': rng.randrange(0, min(256, n - 8)), 'flip middle': rng.randrange(n // 4, 3 * n // 4),
              'flip end': rng.randrange(max(0, n - 512), n - 8)}[kind]
        width = rng.choice([1, 8, 64])
        for i in range(at, min(n, at + width)):
            b[i] ^= rng.randrange(1, 256)
        return bytes(b), f'{kind} ({width} bytes at {at})'
    if kind == 'truncate':
        cut = rng.randrange(0, n)
        return bytes(b[:cut]), f'truncated at {cut} of {n}'
    if kind == 'bogus length':
        at = rng.randrange(0, n - 8)
        b[at:at + 8] = struct.pack('<Q', rng.choice([2**63 - 1, 85761906966642, 2**40, n * 2]))
        return bytes(b), f'bogus length at {at}'
    if kind == 'zero block':
        at = rng.randrange(0, n - 4096) if n > 4096 else 0
        b[at:at + 4096] = bytes(min(4096, n - at))
        return bytes(b), f'4 KiB zeroed at {at}'
    marker = b'MSG: '
    at = data.find(marker)
    if at < 0:
        at = rng.randrange(0, n - 32)
    b[at:at + 32] = bytes(rng.randrange(32, 127) for _ in range(32))
    return bytes(b), 'garbage in a schema'


def mutate_text(text: str, rng: random.Random, kind_of_file: str) -> tuple[bytes, str]:
    """One kind of damage to a YAML or JSON file."""
    json_file = kind_of_file == 'json'
    kind = rng.choice(['alias bomb', 'deep nesting', 'huge integer', 'wrong type', 'not utf-8', 'truncate',
                       'empty', 'flip bytes', 'drop a key', 'null', 'list instead', 'recursive alias',
                       'other encoding', 'duplicate key', 'long value'])
    if kind == 'recursive alias' and not json_file:
        form = rng.choice(['a: &a [*a]', 'a: &a {k: *a}', 'a: &a [1, [2, *a]]'])
        return f'{text}\nself_{rng.randrange(99)}:\n  {form}\n'.encode(), f'{kind} ({form})'
    if kind == 'other encoding':
        codec = rng.choice(['utf-16', 'utf-32', 'latin-1', 'utf-8-sig'])
        return text.replace(':', ': é', 1).encode(codec, errors='replace'), f'{kind} ({codec})'
    if kind == 'duplicate key' and not json_file:
        first = next((line for line in text.splitlines() if line and line[0].isalpha() and ':' in line), 'k: 1')
        return f'{text}\n{first.split(":")[0]}: 1\n'.encode(), kind
    if kind == 'long value':
        return re_value(text, '"' + 'x' * rng.choice([300, 20_000, 2_000_000]) + '"', rng).encode(), kind
    if kind == 'alias bomb' and not json_file:
        return (text + '\nextra_bomb:\n' + ''.join('  ' + line + '\n' for line in BOMB.splitlines())).encode(), kind
    if kind == 'deep nesting':
        depth = rng.choice([80, 1500, 100_000])
        nested = '[' * depth + ']' * depth
        return (f'{{"deep": {nested}}}' if json_file else f'{text}\ndeep_key: {nested}\n').encode(), f'{kind} {depth}'
    if kind == 'huge integer':
        digits = '9' * rng.choice([25, 400, 5000])
        return re_number(text, digits).encode(), f'{kind} ({len(digits)} digits)'
    if kind == 'wrong type':
        replacement = rng.choice(['[1, 2]', '{"a": 1}', '"text"', '-1', '1e400', 'true', 'null'])
        return re_value(text, replacement, rng).encode(), f'{kind} -> {replacement}'
    if kind == 'not utf-8':
        return text.encode() + b'\n# \xff\xfe\xe9\n', kind
    if kind == 'truncate':
        cut = rng.randrange(0, max(1, len(text)))
        return text[:cut].encode(), f'truncated at {cut}'
    if kind == 'empty':
        return b'', kind
    if kind == 'flip bytes':
        raw = bytearray(text.encode())
        for _ in range(rng.randrange(1, 8)):
            if raw:
                raw[rng.randrange(len(raw))] = rng.randrange(1, 256)
        return bytes(raw), kind
    if kind == 'drop a key':
        lines = text.splitlines()
        if lines:
            del lines[rng.randrange(len(lines))]
        return '\n'.join(lines).encode(), kind
    if kind == 'null':
        return b'null\n', kind
    return b'- a\n- b\n' if not json_file else b'[1, 2, 3]', kind


def re_number(text: str, digits: str) -> str:
    import re

    match = re.search(r'(?<![\w.])\d{2,}(?![\w.])', text)
    return text[:match.start()] + digits + text[match.end():] if match else text + f'\nn: {digits}\n'


def re_value(text: str, replacement: str, rng: random.Random) -> str:
    import re

    spots = list(re.finditer(r'(:\s*)([^\s{\[][^\n,}]*)', text))
    if not spots:
        return text
    spot = rng.choice(spots)
    return text[:spot.start(2)] + replacement + text[spot.end(2):]


def special_file(path: Path, rng: random.Random) -> str:
    """Replace a file with something that is not a regular file."""
    kind = rng.choice(['fifo', 'directory', 'symlink loop', 'dangling symlink'])
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
    if kind == 'fifo':
        os.mkfifo(path)
    elif kind == 'directory':
        path.mkdir()
    elif kind == 'symlink loop':
        path.symlink_to(path)
    else:
        path.symlink_to(path.parent / 'nowhere')
    return kind


# -- cases -----------------------------------------------------------------------------------------------------

COMMANDS_ON_DATASET = ['info', 'verify', 'list', 'segment', 'score', 'report', 'export', 'repair', 'catalog', 'set']
ODD_VALUES = ['', ' ', '-1', '0', '1e30', '1e-30', 'nan', 'inf', '1 s', '2min', 'abc', '..', '/', '/dev/null',
              'é', '9' * 50, '--json', '-x']


CAN_MOUNT = os.geteuid() == 0  # a small tmpfs per storage case, as a user's data disk (root only)
FILLER = '.fuzz_filler'


def storage_fault(ds: Path, rng: random.Random) -> str:
    """Move the case's dataset onto a small file system of its own, then fill it or make it read-only."""
    import subprocess

    held = ds.with_name('ds_held')
    ds.rename(held)
    ds.mkdir()
    size = sum(p.stat().st_size for p in held.rglob('*') if p.is_file()) + (8 << 20)
    subprocess.run(['mount', '-t', 'tmpfs', '-o', f'size={size}', 'tmpfs', str(ds)], check=True, capture_output=True)
    shutil.copytree(held, ds, symlinks=True, dirs_exist_ok=True)
    shutil.rmtree(held)
    fault = rng.choice(['full', 'full', 'nearly full', 'read-only'])
    if fault == 'read-only':
        subprocess.run(['mount', '-o', 'remount,ro', str(ds)], check=True, capture_output=True)
        return 'read-only'
    leave = 0 if fault == 'full' else rng.choice([64 << 10, 1 << 20, 4 << 20])
    with contextlib.suppress(OSError), (ds / FILLER).open('wb') as f:  # an error: full to the last block
        f.write(bytes(max(0, shutil.disk_usage(ds).free - leave)))
    return 'full' if fault == 'full' else f'nearly full ({leave >> 10} KiB left)'


CATALOG_COLUMNS = ['task', 'operator', 'mode', 'robot', 'outcome', 'status', 'start_ns', 'stop_ns', 'duration_s',
                   'message_count', 'size_bytes', 'score', 'scores', 'bag_sha256', 'review_rank', 'review_priority',
                   'review_reason', 'reviewed_outcome']
SQLITE_ODD = ["'abc'", "''", '-1', '1.5', '1e308', "x'00ff'", "'{not json'", "'[1, 2]'", '9223372036854775807',
              "'nan'", 'NULL']


def catalog_cell(number: int, ds: Path, case_dir: Path, episode: Path, rng: random.Random) -> Case:
    """A catalog cell edited by hand: SQLite keeps any type in any column."""
    import sqlite3

    column, value = rng.choice(CATALOG_COLUMNS), rng.choice(SQLITE_ODD)
    with contextlib.closing(sqlite3.connect(ds / 'catalog.sqlite')) as conn, conn:
        try:
            conn.execute(f'UPDATE episodes SET {column} = {value}')
        except sqlite3.IntegrityError:  # NULL where the schema says NOT NULL: SQLite refuses it itself
            conn.execute(f"UPDATE episodes SET {column} = 'x'")
            value = "'x'"
    command = rng.choice(['list', 'info', 'verify', 'report', 'score', 'select', 'catalog', 'set'])
    target = str(episode if command == 'set' else ds)
    args = (['select', target, '--dry-run'] if command == 'select'
            else command_args(command, target, case_dir, rng))
    return Case(number, f'catalog {column} = {value}', command, args, 'ds/catalog.sqlite')


SQLITE_ROWS = ["UPDATE messages SET timestamp = 'abc' WHERE id % 7 = 3", 'UPDATE messages SET timestamp = 1.5e300',
               "UPDATE messages SET timestamp = x'0102' WHERE id = 5", 'UPDATE messages SET timestamp = -5',
               "UPDATE messages SET data = 'hello' WHERE id % 3 = 0", 'UPDATE messages SET topic_id = 99 WHERE id < 9',
               'DELETE FROM topics', "UPDATE topics SET type = 'no/such/Type'", "UPDATE topics SET name = 5",
               'DROP TABLE messages', "UPDATE topics SET offered_qos_profiles = '- [broken'",
               'UPDATE messages SET data = zeroblob(3)']


def sqlite3_bag(number: int, case_dir: Path, rng: random.Random) -> Case:
    """A rosbag2 sqlite3 bag with rows a hand or another tool got wrong."""
    import sqlite3

    bag = case_dir / 'db3_bag'
    change = rng.choice(SQLITE_ROWS)
    with contextlib.closing(sqlite3.connect(next(bag.glob('*.db3')))) as conn, conn:
        conn.execute(change)
    command = rng.choice(['info', 'verify', 'score', 'segment', 'report', 'export'])
    args = command_args(command, str(bag), case_dir, rng)
    if command == 'report':
        args = ['report', str(bag), '--out', str(case_dir / 'r.html'), '--profile', str(case_dir / 'profile.yaml')]
    return Case(number, f'sqlite3 bag: {change}', command, args, 'db3_bag')


def permissions(number: int, ds: Path, case_dir: Path, episode: Path, rng: random.Random) -> Case:
    """A folder or file the user may not read or write (run without root's override)."""
    what, path, mode = rng.choice([
        ('the dataset folder unreadable', ds, 0o000), ('the dataset read-only', ds, 0o555),
        ('an episode folder read-only', episode, 0o555), ('the bag folder read-only', episode / 'bag', 0o555),
        ('the catalog read-only', ds / 'catalog.sqlite', 0o444), ('the profile unreadable', case_dir / 'profile.yaml',
                                                                  0o000),
        ('episode.yaml unreadable', episode / 'episode.yaml', 0o000), ('events.json unreadable',
                                                                       episode / 'events.json', 0o000),
        ('the working folder read-only', case_dir, 0o555)])
    command = rng.choice(['info', 'verify', 'list', 'segment', 'score', 'report', 'export', 'repair', 'catalog', 'set',
                          'init'])
    if command == 'init':
        args = ['init', str(case_dir / 'new_ds'), '--profile', str(case_dir / 'profile.yaml')]
    else:
        args = command_args(command, str(episode if command == 'set' else rng.choice([ds, episode])), case_dir, rng)
    return Case(number, what, command, args, as_user=True, locked=[(str(path), mode)])


def _without_override() -> None:
    """In the child, before exec: drop what lets root read and write past permission bits."""
    if os.geteuid() == 0:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
            libc.prctl(24, capability, 0, 0, 0)  # PR_CAPBSET_DROP


def release_disk(case_dir: Path) -> None:
    """Unmount a storage case's file system (its dataset goes with it)."""
    import subprocess

    if os.path.ismount(case_dir / 'ds'):
        subprocess.run(['umount', '-l', str(case_dir / 'ds')], check=False, capture_output=True)


def command_args(command: str, target: str, case_dir: Path, rng: random.Random) -> list[str]:
    out = str(case_dir / 'out')
    return {
        'info': ['info', target], 'verify': ['verify', target], 'list': ['list', target],
        'segment': ['segment', target, '--profile', str(case_dir / 'profile.yaml')],
        'score': ['score', target, '--profile', str(case_dir / 'profile.yaml')],
        'report': ['report', target, '--out', str(case_dir / 'r.html'), '--profile', str(case_dir / 'profile.yaml')],
        'export': ['export', 'frames', target, '--out', out, '--tasks', rng.choice(['none', 'label_studio']),
                   '--taxonomy', str(case_dir / 'taxonomy.yaml'), '--profile', str(case_dir / 'profile.yaml')],
        'repair': ['repair', target, '--profile', str(case_dir / 'profile.yaml')],
        'catalog': ['catalog', 'rebuild', target],
        'set': ['set', target, '--outcome', rng.choice(['success', 'failure']), '--reason', 'fuzz'],
        'profile': ['profile', str(case_dir / 'profile.yaml')],
    }[command]


def make_case(number: int, rng: random.Random, base: Path, case_dir: Path) -> Case:
    """Copy the base data into case_dir and break one thing in it."""
    shutil.copytree(base, case_dir, symlinks=True)
    ds = case_dir / 'ds'
    episode = sorted(p for p in (ds / 'episodes').iterdir() if p.is_dir() and not p.name.startswith('.'))[0]
    family = rng.choice(['bag', 'bag', 'bag', 'dataset file', 'dataset file', 'sidecar', 'profile', 'taxonomy',
                         'special file', 'arguments', 'storage', 'catalog cell', 'sqlite3 bag', 'sigterm',
                         'permissions'])
    if family == 'storage' and not CAN_MOUNT:
        family = 'arguments'  # counted under 'storage cases' as not run: mounting needs root
    if family == 'storage':
        what = storage_fault(ds, rng)
        command = rng.choice(['info', 'verify', 'list', 'segment', 'score', 'report', 'export', 'repair', 'catalog',
                              'set'])
        target = str(episode if command == 'set' else rng.choice([ds, episode]))
        return Case(number, f'the dataset disk is {what}', command, command_args(command, target, case_dir, rng))
    if family == 'catalog cell':
        return catalog_cell(number, ds, case_dir, episode, rng)
    if family == 'sqlite3 bag':
        return sqlite3_bag(number, case_dir, rng)
    if family == 'sigterm':
        command = rng.choice(['segment', 'score', 'report', 'export', 'verify', 'catalog', 'repair', 'info'])
        args = command_args(command, str(ds), case_dir, rng)
        what = 'SIGTERM'
        if command == 'export' and rng.random() < 0.5:
            args[args.index('--taxonomy') + 1] = str(case_dir / 'big_taxonomy.yaml')
            args[args.index('--tasks') + 1] = 'label_studio'
            what += ' while reading a 100,000-class taxonomy'
        delay = round(rng.uniform(0.2, 4.0), 2)
        return Case(number, f'{what} after {delay} s', command, args, term_after=delay)
    if family == 'permissions':
        return permissions(number, ds, case_dir, episode, rng)
    if family == 'bag':
        target_bag = rng.choice([episode / 'bag', case_dir / 'bag'])
        storage = next(target_bag.glob('*.mcap'))
        content, what = mutate_bytes(storage.read_bytes(), rng)
        storage.write_bytes(content)
        command = rng.choice(['info', 'verify', 'segment', 'score', 'report', 'export', 'repair'])
        target = str(target_bag if command != 'repair' or rng.random() < 0.5 else ds)
        if target_bag == episode / 'bag' and rng.random() < 0.5:
            target = str(rng.choice([ds, episode]))
        return Case(number, f'bag storage: {what}', command, command_args(command, target, case_dir, rng),
                    str(storage.relative_to(case_dir)))
    if family == 'dataset file':
        path = rng.choice([ds / 'dataset.yaml', episode / 'episode.yaml', episode / 'bag' / 'metadata.yaml',
                           case_dir / 'bag' / 'metadata.yaml'])
        content, what = mutate_text(path.read_text(), rng, 'yaml')
        path.write_bytes(content)
        command = rng.choice(COMMANDS_ON_DATASET)
        target = str(rng.choice([ds, episode]) if 'bag' not in path.parts or path.parent == episode / 'bag'
                     else case_dir / 'bag')
        if command == 'set':
            target = str(episode)
        return Case(number, f'{path.name}: {what}', command, command_args(command, target, case_dir, rng),
                    str(path.relative_to(case_dir)))
    if family == 'sidecar':
        path = rng.choice([episode / 'events.json', episode / 'quality.json', ds / 'quality_summary.json',
                           case_dir / 'frames' / 'manifest.json', ds / 'audit.jsonl'])
        if not path.exists():
            path.write_text('{}')
        content, what = mutate_text(path.read_text(), rng, 'json')
        path.write_bytes(content)
        command = rng.choice(['score', 'report', 'export', 'list', 'verify', 'set', 'info'])
        target = str(episode if command == 'set' else rng.choice([ds, episode]))
        args = command_args(command, target, case_dir, rng)
        if command == 'export' and 'manifest' in path.name:
            args[args.index('--out') + 1] = str(case_dir / 'frames')
        if command == 'export' and path.name == 'events.json':
            args += ['--around-events', 'grasp,release', '--window', '1s']
        return Case(number, f'{path.name}: {what}', command, args, str(path.relative_to(case_dir)))
    if family in ('profile', 'taxonomy'):
        path = case_dir / f'{family}.yaml'
        content, what = mutate_text(path.read_text(), rng, 'yaml')
        path.write_bytes(content)
        command = 'profile' if family == 'profile' and rng.random() < 0.4 else rng.choice(
            ['segment', 'score', 'export'] if family == 'profile' else ['export'])
        args = command_args(command, str(rng.choice([ds, case_dir / 'bag'])), case_dir, rng)
        if family == 'taxonomy' and '--tasks' in args:
            args[args.index('--tasks') + 1] = 'label_studio'
        return Case(number, f'{family}: {what}', command, args, str(path.relative_to(case_dir)))
    if family == 'special file':
        path = rng.choice([ds / 'dataset.yaml', episode / 'episode.yaml', episode / 'bag' / 'metadata.yaml',
                           episode / 'events.json', case_dir / 'profile.yaml', case_dir / 'taxonomy.yaml',
                           ds / 'audit.jsonl', ds / 'catalog.sqlite'])
        what = special_file(path, rng)
        command = rng.choice(['info', 'verify', 'list', 'segment', 'score', 'export', 'set', 'repair', 'catalog'])
        target = str(episode if command == 'set' else rng.choice([ds, episode]))
        return Case(number, f'{path.name} is a {what}', command, command_args(command, target, case_dir, rng),
                    str(path.relative_to(case_dir)))
    # odd arguments
    command = rng.choice(['export', 'segment', 'score', 'report', 'list', 'set'])
    args = command_args(command, str(episode if command == 'set' else ds), case_dir, rng)
    option, value = rng.choice({
        'export': [('--every', None), ('--every-n', None), ('--window', None), ('--around-events', None),
                   ('--out', None), ('--workers', None), ('--tolerance', None), ('--cameras', None)],
        'segment': [('--since', None), ('--task', None), ('--status', None)],
        'score': [('--workers', None), ('--since', None), ('--outcome', None)],
        'report': [('--out', None), ('--episodes', None)],
        'list': [('--since', None), ('--status', None)],
        'set': [('--status', None), ('--outcome', None), ('--who', None)],
    }[command])
    data_paths = [str(case_dir / 'ds' / 'dataset.yaml'), str(case_dir / 'profile.yaml'),
                  str(next(episode.glob('bag/*.mcap')))]
    value = rng.choice([*ODD_VALUES, *data_paths])
    if option in args:
        args[args.index(option) + 1] = value
    else:
        args += [option, value]
    if option == '--window':
        args += ['--around-events', 'grasp']
    return Case(number, f'{option} {value!r}', command, args)


# -- running ---------------------------------------------------------------------------------------------------


def digest(root: Path) -> dict[str, str]:
    out = {}
    for path in sorted(root.rglob('*')):
        try:
            if path.is_file() and not path.is_symlink():
                out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            pass
    return out


def run_case(case: Case, case_dir: Path, limit_s: float) -> Outcome:
    """Run the case's command as a user would (`robodata ...` in its own process group), killed past `limit_s`."""
    import subprocess

    before = digest(case_dir / 'ds')
    err_path = case_dir / 'stderr.txt'
    modes = [(path, os.stat(path).st_mode & 0o7777) for path, _ in case.locked]
    for path, mode in case.locked:
        os.chmod(path, mode)
    start = time.monotonic()

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
        if case.as_user:
            _without_override()

    with err_path.open('wb') as err:
        proc = subprocess.Popen([sys.executable, '-m', 'ros_robodata.cli.main', *case.args], cwd=case_dir,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                preexec_fn=limits, start_new_session=True,
                                env={**os.environ, 'PYTHONPATH': os.pathsep.join(  # this tree, not another
                                    filter(None, [str(ROOT), os.environ.get('PYTHONPATH')]))})
        status, rusage, killed, stop_s = _wait(proc.pid, limit_s, case.term_after)
    proc.returncode = 0  # reaped by _wait
    seconds = time.monotonic() - start
    for path, mode in modes:
        os.chmod(path, mode)
    code = None if killed else os.waitstatus_to_exitcode(status)
    stderr = err_path.read_text(errors='replace')
    outcome = Outcome(case, code, seconds, stderr, rusage.ru_maxrss if rusage else 0, stop_s=stop_s)
    after = digest(case_dir / 'ds')
    owned = OWNED.get(case.command, [])
    broke = case.broke[3:] if case.broke.startswith('ds/') else None
    for name in sorted(set(before) | set(after)):
        if before.get(name) == after.get(name) or name == broke:
            continue
        if name not in before and case.command in ('repair', 'score', 'segment', 'export', 'report', 'catalog', 'set'):
            continue  # a new file is a result, not damage (reports, sidecars, damaged/ copies)
        if any(fnmatch.fnmatch(name, pattern) for pattern in owned):
            continue
        outcome.changed.append(name)
    return outcome


def _wait(pid: int, limit_s: float, term_after: float | None = None) -> tuple[int, Any, bool, float | None]:
    """(status, rusage, killed at the limit, seconds from SIGTERM to exit when one was sent)."""
    start = time.monotonic()
    deadline = start + limit_s
    sent = None
    while True:
        done, status, rusage = os.wait4(pid, os.WNOHANG)
        if done:
            return status, rusage, False, None if sent is None else time.monotonic() - sent
        now = time.monotonic()
        if term_after is not None and sent is None and now - start >= term_after:
            os.kill(pid, signal.SIGTERM)  # the command only, as `kill PID` does
            sent = now
        if now > deadline:
            os.killpg(pid, signal.SIGKILL)  # with any worker processes it started
            _, status, rusage = os.wait4(pid, 0)
            return status, rusage, True, None if sent is None else time.monotonic() - sent
        time.sleep(0.005)


def fuzz(cases: int, seed: int, limit_s: float, keep: Path | None = None, quiet: bool = False,
         workers: int = 2) -> dict[str, Any]:
    from concurrent.futures import ThreadPoolExecutor

    work = Path(tempfile.mkdtemp(prefix='robodata_fuzz_'))
    try:
        t0 = time.monotonic()
        base = build_base(work)
        setup_s = time.monotonic() - t0
        done = [0]

        def one(number: int) -> Outcome:
            rng = random.Random(f'{seed}:{number}')  # each case its own stream: the same cases in any order
            case_dir = work / f'case_{number}'
            case = make_case(number, rng, base, case_dir)
            outcome = run_case(case, case_dir, limit_s)
            if outcome.kind in ('traceback', 'hang', 'damaged', 'other') and keep is not None:
                shutil.copytree(case_dir, keep / f'case_{number}', symlinks=True, dirs_exist_ok=True)
            release_disk(case_dir)
            shutil.rmtree(case_dir, ignore_errors=True)
            done[0] += 1
            if not quiet and done[0] % 100 == 0:
                print(f'[fuzz] {done[0]}/{cases} cases ...', file=sys.stderr, flush=True)
            return outcome

        with ThreadPoolExecutor(max_workers=workers) as pool:
            outcomes = list(pool.map(one, range(cases)))
        return summarize(outcomes, setup_s, time.monotonic() - t0 - setup_s, limit_s)
    finally:
        for case_dir in work.glob('case_*'):
            release_disk(case_dir)
        shutil.rmtree(work, ignore_errors=True)


def summarize(outcomes: list[Outcome], setup_s: float, run_s: float, limit_s: float) -> dict[str, Any]:
    kinds = Counter(o.kind for o in outcomes)
    bad = [o for o in outcomes if o.kind in ('traceback', 'hang', 'damaged', 'other', 'slow stop')]
    stops = sorted(o.stop_s for o in outcomes if o.stop_s is not None)
    slow = [o for o in outcomes if o.code is not None and o.seconds > limit_s]
    return {
        'cases': len(outcomes),
        'clean one-line errors': kinds.get('clean error', 0),
        'handled (exit 0 or 3)': kinds.get('handled', 0),
        'tracebacks': kinds.get('traceback', 0),
        'runs over the limit': kinds.get('hang', 0) + len(slow),
        'dataset files damaged': kinds.get('damaged', 0),
        'other exits': kinds.get('other', 0),
        'SIGTERM cases': sum(o.case.term_after is not None for o in outcomes),
        f'SIGTERM stops over {STOP_LIMIT_S:g} s': kinds.get('slow stop', 0),
        'slowest SIGTERM stop (s)': round(stops[-1], 3) if stops else None,
        'permission cases': sum(o.case.as_user for o in outcomes),
        'cases by family': dict(Counter(_family(o.case) for o in outcomes)),
        'storage cases': sum(o.case.what.startswith('the dataset disk is') for o in outcomes) if CAN_MOUNT
        else 'not run (mounting a small file system needs root)',
        'peak memory of any case (MiB)': round(max((o.peak_kib for o in outcomes), default=0) / 1024, 1),
        'slowest case (s)': round(max((o.seconds for o in outcomes), default=0), 2),
        'setup s': round(setup_s, 1), 'run s': round(run_s, 1),
        'problems': [{'case': o.case.number, 'what': o.case.what, 'command': ' '.join(o.case.args[:1]),
                      'kind': o.kind, 'code': o.code, 'changed': o.changed,
                      'stderr': o.stderr.strip().splitlines()[-1:] if o.stderr.strip() else []} for o in bad][:50],
    }


def _family(case: Case) -> str:
    if case.term_after is not None:
        return 'sigterm'
    if case.as_user:
        return 'permissions'
    for prefix, name in (('catalog ', 'catalog cell'), ('sqlite3 bag', 'sqlite3 bag'), ('bag storage', 'bag'),
                         ('the dataset disk', 'storage'), ('profile:', 'profile'), ('taxonomy:', 'taxonomy'),
                         ('--', 'arguments')):
        if case.what.startswith(prefix):
            return name
    if ' is a ' in case.what:
        return 'special file'
    return 'dataset file or sidecar'


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--cases', type=int, default=2000)
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--limit', type=float, default=10.0, help='seconds a case may run before it is a hang')
    parser.add_argument('--keep', type=Path, help='copy the failing cases here')
    parser.add_argument('--workers', type=int, default=2, help='cases run side by side (default 2)')
    parser.add_argument('--json', action='store_true', help='print the figures as JSON')
    args = parser.parse_args()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    result = fuzz(args.cases, args.seed, args.limit, args.keep, quiet=args.json, workers=args.workers)
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f'== fuzz_inputs: {result["cases"]} cases (seed {args.seed}, limit {args.limit:g} s) ==')
    for key in ('clean one-line errors', 'handled (exit 0 or 3)', 'other exits', 'storage cases', 'permission cases',
                'SIGTERM cases', 'slowest SIGTERM stop (s)', 'cases by family'):
        print(f'  {key}: {result[key]}')
    print(f'  setup {result["setup s"]} s, cases {result["run s"]} s, slowest case {result["slowest case (s)"]} s')
    targets = [('tracebacks', result['tracebacks'], 0), ('runs over the limit', result['runs over the limit'], 0),
               ('dataset files damaged', result['dataset files damaged'], 0),
               (f'SIGTERM stops over {STOP_LIMIT_S:g} s', result[f'SIGTERM stops over {STOP_LIMIT_S:g} s'], 0)]
    for name, value, target in targets:
        print(f'  {name}: {value} (target {target}): {"met" if value <= target else "NOT met"}')
    peak = result['peak memory of any case (MiB)']
    print(f'  peak memory of any case: {peak} MiB (target under 1024 MiB): {"met" if peak < 1024 else "NOT met"}')
    for problem in result['problems'][:20]:
        print(f'  ! case {problem["case"]} {problem["kind"]}: {problem["what"]} -> {problem["command"]}: '
              f'{problem["stderr"]}{" changed " + ", ".join(problem["changed"]) if problem["changed"] else ""}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
