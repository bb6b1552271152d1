"""audit.jsonl as a hash chain (issue 34): every line carries the sha256 of the line before it; `verify_audit` names
the first line that was changed, removed, put in or moved; writers in several processes keep the chain whole; an
audit an older version wrote is sealed, not silently chained from its middle; `robodata audit verify/seal`.

What "located" means here (the tests assert it exactly). Lines are numbered 1..N in the file as it was written.
- a byte of line k changed (its newline included): the bad line is k;
- line k removed: the bad line is k (the line that now stands where it was, or the first missing one at the end);
- a line put in so that it becomes line q: the bad line is q; except a copy of the line just before it or just
  after it, where the two lines are byte for byte the same and the bad line is the second of the two;
- lines a < b swapped: the bad line is a.
The last line is vouched for by nothing inside the file, so the full property is checked against the head a release
records (`audit_head` before the change, `verify_audit(path, head=...)`); without a head the same holds for every
change that leaves the last two lines alone, and a line correctly chained onto the end is the log going on.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ros_robodata.cli.main import main
from ros_robodata.dataset.audit import append_audit, audit_head, read_audit, seal_audit, verify_audit
from ros_robodata.dataset.audit_chain import GENESIS, format_line
from ros_robodata.dataset.dataset import Dataset

ROOT = Path(__file__).resolve().parent.parent
PROPERTY = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def write_real_audit(path: Path) -> None:
    """What a dataset's writers append in a day, through append_audit itself: nested details, lists, a reason
    across two lines, non-ASCII text."""
    append_audit(path, 'create_dataset', None, 'kim', name='demo')
    append_audit(path, 'set_profile', None, 'kim', sha256='ab' * 32)
    for n in (1, 2, 3):
        append_audit(path, 'create_episode', f'ep{n:02d}', 'rig-3', task='pick_place_cube',
                     source={'path': f'/bags/ep{n:02d}', 'kind': 'rosbag2'})
    append_audit(path, 'record_checksums', 'ep01', None, files=['metadata.yaml', 'ep01_0.mcap'])
    append_audit(path, 'set_outcome', 'ep01', 'reviewer_kim', old='unknown', new='success',
                 reason='cube lifted 8 cm\nthen placed — réussi')
    append_audit(path, 'add_labels', 'ep02', 'lead', revision=2, source={'tool': 'label_studio', 'task': 7},
                 labels=3, superseded=['v1'])
    append_audit(path, 'select_review', None, 'lee', budget=2, picked=['ep02', 'ep03'])
    append_audit(path, 'set_status', 'ep03', 'lee', old='complete', new='discarded', reason='camera blurred')
    append_audit(path, 'repair', 'ep03', None, actions=['reindexed metadata.yaml'])
    append_audit(path, 'set_outcome', 'ep02', 'kim', old='unknown', new='failure', reason='dropped it')


@pytest.fixture(scope='module')
def real_audit(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp('real') / 'audit.jsonl'
    write_real_audit(path)
    return path.read_bytes()


def lines_of(data: bytes) -> list[bytes]:
    assert data.endswith(b'\n')
    return data[:-1].split(b'\n')


def joined(lines: list[bytes]) -> bytes:
    return b''.join(line + b'\n' for line in lines)


def cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


# -- the chain as written ---------------------------------------------------------------------------------------


def test_every_line_carries_the_sha256_of_the_line_before_and_the_first_is_the_genesis(real_audit):
    lines = lines_of(real_audit)
    entries = [json.loads(line) for line in lines]
    assert entries[0]['prev'] == GENESIS and entries[0]['action'] == 'create_dataset'
    for before, entry in zip(lines, entries[1:], strict=False):
        assert entry['prev'] == hashlib.sha256(before).hexdigest()
    assert [e['seq'] for e in entries] == list(range(1, len(lines) + 1))
    assert all({'time', 'time_ns', 'who', 'action', 'episode'} <= set(e) for e in entries)  # nothing lost
    assert entries[6]['reason'] == 'cube lifted 8 cm\nthen placed — réussi'


def test_a_new_dataset_starts_the_chain_with_its_one_line(tmp_path):
    dataset = Dataset.create(tmp_path / 'ds', name='ds')
    (line,) = dataset.audit_path.read_bytes().splitlines()
    assert json.loads(line)['prev'] == GENESIS and json.loads(line)['action'] == 'create_dataset'
    assert verify_audit(dataset.audit_path).ok


def test_an_unedited_audit_verifies(tmp_path, real_audit):
    path = tmp_path / 'audit.jsonl'
    path.write_bytes(real_audit)
    check = verify_audit(path)
    assert (check.ok, check.entries, check.line, check.problem) == (True, len(lines_of(real_audit)), None, '')
    assert verify_audit(path, head=audit_head(path)).ok


def test_the_head_is_the_count_and_the_sha256_of_the_last_line(tmp_path, real_audit):
    path = tmp_path / 'audit.jsonl'
    path.write_bytes(real_audit)
    lines = lines_of(real_audit)
    assert audit_head(path) == (len(lines), hashlib.sha256(lines[-1]).hexdigest())


# -- any single change is found, and where ------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One change to the file and the line verify must name (see the module docstring)."""

    what: str
    data: bytes
    bad_line: int


def _edit(lines: list[bytes], k: int, offset: int, byte: int) -> Change:
    data = bytearray(joined(lines))
    at = sum(len(line) + 1 for line in lines[:k - 1]) + offset  # offset == len(line): its newline
    byte = byte if byte != data[at] else (byte + 1) % 256
    data[at] = byte
    return Change(f'byte {offset} of line {k} set to {byte}', bytes(data), k)


def _insert(lines: list[bytes], q: int, line: bytes, what: str) -> Change:
    if q >= 2 and line == lines[q - 2]:
        bad = q  # a copy of the line before it: the second of the two is the one
    elif q <= len(lines) and line == lines[q - 1]:
        bad = q + 1  # a copy of the line it was put before
    else:
        bad = q
    return Change(f'{what} put in as line {q}', joined([*lines[:q - 1], line, *lines[q - 1:]]), bad)


def structural_changes(data: bytes, before: int | None = None) -> list[Change]:
    """Every removal, swap and copy of a line put in anywhere; with `before`, only among lines 1..before."""
    lines = lines_of(data)
    last = before or len(lines)
    found = [Change(f'line {k} removed', joined(lines[:k - 1] + lines[k:]), k) for k in range(1, last + 1)]
    for a in range(1, last + 1):
        for b in range(a + 1, last + 1):
            swapped = list(lines)
            swapped[a - 1], swapped[b - 1] = swapped[b - 1], swapped[a - 1]
            found.append(Change(f'lines {a} and {b} swapped', joined(swapped), a))
    for q in range(1, (last if before else last + 1) + 1):
        found += [_insert(lines, q, lines[j - 1], f'a copy of line {j}') for j in range(1, len(lines) + 1)]
    return found


@st.composite
def edits(draw: st.DrawFn, data: bytes, before: int | None = None) -> Change:
    """Any byte of any line (its newline included) set to any other value; with `before`, in lines 1..before."""
    lines = lines_of(data)
    k = draw(st.integers(1, before or len(lines)))
    return _edit(lines, k, draw(st.integers(0, len(lines[k - 1]))), draw(st.integers(0, 255)))


@st.composite
def new_lines(draw: st.DrawFn, data: bytes, before: int | None = None) -> Change:
    """A line made up and put in anywhere: chained with a made-up prev, forged onto the line before it (prev and
    seq right), or unchained as an older ros_robodata wrote; with `before`, as line 1..before."""
    lines = lines_of(data)
    kind = draw(st.sampled_from(['invent', 'forge', 'old']))
    q = draw(st.integers(1, before or len(lines) + 1))
    fields = draw(st.dictionaries(st.sampled_from(['who', 'action', 'episode', 'reason', 'new']),
                                  st.text(max_size=12), min_size=1))
    entry = {'time': '2026-03-02T10:15:00+0000', 'time_ns': 1, **fields}
    if kind == 'old':
        return _insert(lines, q, json.dumps(entry).encode(), 'an unchained line')
    if kind == 'forge':
        if q == len(lines) + 1:
            q = len(lines)  # onto the end it would be the log going on, not a change
        prev = GENESIS if q == 1 else hashlib.sha256(lines[q - 2]).hexdigest()
        return _insert(lines, q, format_line(prev, q, entry), 'a forged line')
    prev = draw(st.text('0123456789abcdef', min_size=64, max_size=64))
    return _insert(lines, q, format_line(prev, draw(st.integers(1, 40)), entry), 'an invented line')


def _assert_located(path: Path, change: Change, head: tuple[int, str] | None) -> None:
    path.write_bytes(change.data)
    check = verify_audit(path, head=head)
    assert not check.ok, change.what
    assert check.line == change.bad_line, (change.what, check.problem)
    assert re.search(rf'\blines? {change.bad_line}\b', check.problem), (change.what, check.problem)


def test_any_single_change_is_found_at_its_line_against_a_recorded_head(tmp_path, real_audit):
    path = tmp_path / 'audit.jsonl'
    path.write_bytes(real_audit)
    head = audit_head(path)
    for change in structural_changes(real_audit):
        _assert_located(path, change, head)
    for k, line in enumerate(lines_of(real_audit), 1):  # every byte, to a neighbour, a line break, a quote
        for offset in range(len(line) + 1):
            for byte in (line[offset] ^ 1 if offset < len(line) else 0x20, 0x0A, 0x22):
                _assert_located(path, _edit(lines_of(real_audit), k, offset, byte), head)

    @PROPERTY
    @given(change=st.one_of(edits(real_audit), new_lines(real_audit)))
    def property_(change: Change) -> None:
        _assert_located(path, change, head)

    property_()


def test_without_a_head_any_change_before_the_last_two_lines_is_found_at_its_line(tmp_path, real_audit):
    path = tmp_path / 'audit.jsonl'
    before = len(lines_of(real_audit)) - 2
    for change in structural_changes(real_audit, before):
        _assert_located(path, change, None)

    @PROPERTY
    @given(change=st.one_of(edits(real_audit, before), new_lines(real_audit, before)))
    def property_(change: Change) -> None:
        _assert_located(path, change, None)

    property_()


def test_what_only_a_head_can_show(tmp_path, real_audit):
    """The last line changed but still an entry, or gone: the file alone cannot tell; the head can."""
    path = tmp_path / 'audit.jsonl'
    path.write_bytes(real_audit)
    head = audit_head(path)
    lines = lines_of(real_audit)
    renamed = lines[-1].replace(b'"who": "kim"', b'"who": "kia"')
    for data, line in ((joined([*lines[:-1], renamed]), len(lines)), (joined(lines[:-1]), len(lines))):
        path.write_bytes(data)
        assert verify_audit(path).ok
        check = verify_audit(path, head=head)
        assert (check.ok, check.line) == (False, line), check.problem
    # a broken last line, or one whose prev is wrong, needs no head
    path.write_bytes(joined([*lines[:-1], renamed[:-1]]))
    assert verify_audit(path).line == len(lines)


# -- a write cut short ----------------------------------------------------------------------------------------


def test_a_last_line_cut_short_is_told_apart_from_a_change_and_the_next_entry_closes_it(tmp_path, real_audit):
    path = tmp_path / 'audit.jsonl'
    lines = lines_of(real_audit)
    start = len(real_audit) - len(lines[-1]) - 1

    @PROPERTY
    @given(kept=st.integers(1, len(lines[-1])))
    def property_(kept: int) -> None:
        path.write_bytes(real_audit[:start + kept])  # what a power loss in the middle of the write leaves
        check = verify_audit(path)
        assert (check.ok, check.truncated, check.entries) == (True, True, len(lines))
        assert any('cut short' in note for note in check.notes)
        entry = append_audit(path, 'set_outcome', 'ep01', 'kim', old='failure', new='success')
        assert entry['previous_line_cut'] is True and entry['seq'] == len(lines) + 1
        check = verify_audit(path)
        assert (check.ok, check.truncated, check.entries) == (True, False, len(lines) + 1), check.problem
        assert path.read_bytes().split(b'\n')[len(lines) - 1] == real_audit[start:start + kept]

    property_()


def test_verify_says_a_cut_last_line_and_exits_0(tmp_path, capsys):
    dataset = Dataset.create(tmp_path / 'ds', name='ds')
    append_audit(dataset.audit_path, 'set_profile', None, 'kim', sha256='00')
    data = dataset.audit_path.read_bytes()
    dataset.audit_path.write_bytes(data[:-30])
    code, out, err = cli(capsys, 'audit', 'verify', dataset.root)
    assert (code, err) == (0, '')
    assert 'line 2, the last, is cut short' in out


# -- writers at once ----------------------------------------------------------------------------------------------

WRITER = '''
import sys, time
from pathlib import Path
from ros_robodata.dataset.audit import append_audit
path, who, seconds = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3])
print('ready', flush=True)
sys.stdin.readline()
end, n = time.monotonic() + seconds, 0
while time.monotonic() < end:
    append_audit(path, 'stress', None, who, n=n)
    n += 1
print(n, flush=True)
'''


def test_two_processes_and_the_recorders_path_append_at_once_and_the_chain_holds(make_demo_dataset):
    dataset = make_demo_dataset(1)
    (episode,) = dataset.episode_ids()
    before = len(list(read_audit(dataset.audit_path)))
    seconds = 10.0
    procs = [subprocess.Popen([sys.executable, '-c', WRITER, str(dataset.audit_path), who, str(seconds)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
             for who in ('proc-a', 'proc-b')]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == 'ready'
    written: list[str] = []

    def recorder() -> None:  # a Dataset method in this process: episode.yaml, catalog row and audit line
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            n = len(written)
            dataset.set_outcome(episode, ('success', 'failure')[n % 2], 'thread', reason=str(n))
            written.append(str(n))

    thread = threading.Thread(target=recorder)
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write('go\n')
        proc.stdin.flush()
    thread.start()
    counts = {}
    for who, proc in zip(('proc-a', 'proc-b'), procs, strict=True):
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0
        counts[who] = int(out.strip())
    thread.join()

    check = verify_audit(dataset.audit_path)
    assert check.ok, check.problem
    entries = list(read_audit(dataset.audit_path))
    assert check.entries == len(entries) == before + counts['proc-a'] + counts['proc-b'] + len(written)
    for who, count in counts.items():
        assert count > 10
        assert [e['n'] for e in entries if e['who'] == who] == list(range(count))  # all of them, in order
    assert [e['reason'] for e in entries if e['who'] == 'thread'] == written
    assert [e['seq'] for e in entries] == list(range(1, len(entries) + 1))


def test_entries_far_longer_than_what_is_read_at_a_time_chain_too(tmp_path):
    path = tmp_path / 'audit.jsonl'
    for n in range(4):
        append_audit(path, 'select_review', None, 'kim', picked=[f'ep{i:06d}' for i in range(n * 9000)])
    assert [e['seq'] for e in read_audit(path)] == [1, 2, 3, 4]
    assert verify_audit(path).ok and audit_head(path)[0] == 4


def test_appending_and_the_head_read_only_the_end_of_a_long_audit(tmp_path, monkeypatch):
    path = tmp_path / 'audit.jsonl'
    prev, lines = GENESIS, []
    for n in range(20_000):
        line = format_line(prev, n + 1, {'time': 't', 'time_ns': n, 'who': 'kim', 'action': 'set_outcome',
                                         'episode': f'ep{n}', 'old': 'unknown', 'new': 'success', 'reason': 'ok'})
        lines.append(line)
        prev = hashlib.sha256(line).hexdigest()
    path.write_bytes(joined(lines))
    read = []
    pread = os.pread

    def counting(fd: int, length: int, offset: int) -> bytes:
        read.append(length)
        return pread(fd, length, offset)

    monkeypatch.setattr(os, 'pread', counting)
    assert append_audit(path, 'set_status', 'ep1', 'kim')['seq'] == 20_001
    assert audit_head(path)[0] == 20_001
    assert sum(read) < 64 * 1024 < path.stat().st_size // 10
    monkeypatch.undo()
    assert verify_audit(path).ok


# -- an audit an older version wrote: sealed, not chained from its middle ------------------------------------------


def _old_dataset(tmp_path: Path) -> Dataset:
    """A dataset whose audit an older ros_robodata wrote: the same entries, no prev, no seq."""
    dataset = Dataset.create(tmp_path / 'old', name='old')
    old = [{'time': '2025-11-03T09:00:00+0000', 'time_ns': n, 'who': 'kim', 'action': action, 'episode': None}
           for n, action in enumerate(['create_dataset', 'set_profile', 'select_review'])]
    dataset.audit_path.write_text(''.join(json.dumps(e) + '\n' for e in old), encoding='utf-8')
    return dataset


def test_an_old_audit_is_not_chained_from_its_middle_and_verify_asks_for_a_seal(tmp_path, capsys):
    dataset = _old_dataset(tmp_path)
    append_audit(dataset.audit_path, 'set_status', None, 'lee', new='complete')
    entries = list(read_audit(dataset.audit_path))
    assert len(entries) == 4 and not any('prev' in e for e in entries)
    check = verify_audit(dataset.audit_path)
    assert (check.ok, check.line, check.sealed) == (False, None, False)
    code, _, err = cli(capsys, 'audit', 'verify', dataset.root)
    assert code == 1
    assert err.count('\n') == 1 and str(dataset.audit_path) in err
    assert 'not sealed' in err and 'robodata audit seal' in err


def test_sealing_vouches_for_the_old_lines_and_the_chain_goes_on_from_the_seal(tmp_path, capsys):
    dataset = _old_dataset(tmp_path)
    old_bytes = dataset.audit_path.read_bytes()
    code, out, err = cli(capsys, 'audit', 'seal', dataset.root, '--who', 'kim', '--why', 'before release 3')
    assert (code, err) == (0, '')
    assert 'sealed lines 1-3' in out
    seal = list(read_audit(dataset.audit_path))[-1]
    assert (seal['action'], seal['who'], seal['reason'], seal['seq']) == ('audit_seal', 'kim', 'before release 3', 4)
    assert (seal['sealed_entries'], seal['sealed_sha256']) == (3, hashlib.sha256(old_bytes).hexdigest())
    assert 'lines 1-3 were written without a hash chain' in seal['note']

    append_audit(dataset.audit_path, 'set_status', None, 'lee', new='complete')
    last = list(read_audit(dataset.audit_path))[-1]
    assert last['prev'] == hashlib.sha256(dataset.audit_path.read_bytes().splitlines()[3]).hexdigest()
    check = verify_audit(dataset.audit_path)
    assert (check.ok, check.sealed, check.seal_line, check.entries) == (True, True, 4, 5)

    # sealing twice changes nothing and says so
    before = dataset.audit_path.read_bytes()
    code, out, _ = cli(capsys, 'audit', 'seal', dataset.root, '--json')
    assert code == 0 and json.loads(out)['sealed'] is False and 'already sealed on line 4' in json.loads(out)['message']
    assert dataset.audit_path.read_bytes() == before


@pytest.mark.parametrize('change', ['edited', 'removed', 'put in'])
def test_a_change_in_the_sealed_part_is_found(tmp_path, capsys, change):
    dataset = _old_dataset(tmp_path)
    seal_audit(dataset.audit_path, 'kim')
    append_audit(dataset.audit_path, 'set_status', None, 'lee', new='complete')
    lines = lines_of(dataset.audit_path.read_bytes())
    if change == 'edited':
        lines[1] = lines[1].replace(b'"who": "kim"', b'"who": "eve"')
    elif change == 'removed':
        del lines[1]
    else:
        lines.insert(2, lines[2])
    dataset.audit_path.write_bytes(joined(lines))
    check = verify_audit(dataset.audit_path)
    assert (check.ok, check.line) == (False, 1)
    assert check.problem.startswith('the sealed part (lines 1-3) changed')
    code, _, err = cli(capsys, 'audit', 'verify', dataset.root)
    assert code == 1 and err.count('\n') == 1
    assert f'{dataset.audit_path}: the sealed part (lines 1-3) changed' in err


def test_sealing_a_chained_audit_changes_nothing(tmp_path, capsys):
    dataset = Dataset.create(tmp_path / 'ds', name='ds')
    before = dataset.audit_path.read_bytes()
    code, out, _ = cli(capsys, 'audit', 'seal', dataset.root)
    assert code == 0 and 'nothing to seal: chained from its first line' in out
    assert dataset.audit_path.read_bytes() == before


# -- robodata audit verify ------------------------------------------------------------------------------------------


def test_verify_on_the_command_line(tmp_path, capsys, real_audit):
    dataset = Dataset.create(tmp_path / 'ds', name='ds')
    dataset.audit_path.write_bytes(real_audit)
    code, out, err = cli(capsys, 'audit', 'verify', dataset.root)
    assert (code, err) == (0, '')
    assert f'ok: {len(lines_of(real_audit))} entries' in out

    lines = lines_of(real_audit)
    lines[4] = lines[4].replace(b'"task": "pick_place_cube"', b'"task": "pick_place_cubE"')
    dataset.audit_path.write_bytes(joined(lines))
    code, out, err = cli(capsys, 'audit', 'verify', dataset.root)
    assert code == 1
    assert err == (f'robodata audit verify: error: {dataset.audit_path}: line 5 was changed: line 6 records a '
                   'different line before it\n')
    code, out, _ = cli(capsys, 'audit', 'verify', dataset.root, '--json')
    report = json.loads(out)
    assert code == 1 and (report['ok'], report['line'], report['entries']) == (False, 5, len(lines))


def test_verify_needs_a_dataset(tmp_path, capsys):
    code, _, err = cli(capsys, 'audit', 'verify', tmp_path / 'nothing')
    assert code == 1 and err.count('\n') == 1 and 'no such file or directory' in err


# -- a large audit: its second half hashed by a second process -----------------------------------------------------


def _long_audit(lines: int) -> list[bytes]:
    out, prev = [], GENESIS
    for n in range(1, lines + 1):
        line = format_line(prev, n, {'time': '2026-12-07T10:00:00+0000', 'time_ns': n, 'who': 'kim',
                                     'action': 'set_outcome', 'episode': f'ep{n:05d}', 'reason': 'x' * (n % 50)})
        out.append(line)
        prev = hashlib.sha256(line).hexdigest()
    return out


@pytest.mark.parametrize('block', [1 << 22, 4096])  # the halves inside one block read, and across many
def test_a_large_audit_hashed_on_two_cores_finds_the_same_lines(tmp_path, monkeypatch, block):
    """Past audit_ahead.AHEAD_MIN_BYTES the second half's lines are hashed by another process: it must change no
    verdict and no line named, wherever the change is (first half, the line at the middle, second half, the last
    lines, a head in the second half). Here every file takes that path."""
    from ros_robodata.dataset import audit_ahead, audit_chain

    monkeypatch.setattr(audit_ahead, 'AHEAD_MIN_BYTES', 0)
    monkeypatch.setattr(audit_chain, 'BLOCK', block)
    used = []
    real = audit_ahead.LinesAhead.digests
    monkeypatch.setattr(audit_ahead.LinesAhead, 'digests', lambda self: used.append(self.first_line) or real(self))
    lines = _long_audit(3000)
    path = tmp_path / 'audit.jsonl'
    path.write_bytes(joined(lines))
    assert verify_audit(path).ok and verify_audit(path, head=audit_head(path)).ok
    assert used and 1400 < used[0] < 1600  # the digests of the second half came from the other process
    middle = used[0]
    head = audit_head(path)
    changes = [_edit(lines, k, offset, 0x41) for k in (2, middle - 1, middle, middle + 1, 2900)
               for offset in (12, 90, len(lines[k - 1]))]
    changes += [Change(f'line {k} removed', joined(lines[:k - 1] + lines[k:]), k) for k in (middle, 2500)]
    swapped = list(lines)
    swapped[middle - 1], swapped[middle] = swapped[middle], swapped[middle - 1]
    changes.append(Change('the two lines at the middle swapped', joined(swapped), middle))
    changes.append(_insert(lines, 2000, lines[1999], 'a copy of line 2000'))
    for change in changes:
        _assert_located(path, change, head)
    path.write_bytes(joined(lines[:-1]))  # the last line gone: only the head shows it
    check = verify_audit(path, head=head)
    assert not check.ok and check.line == 3000
