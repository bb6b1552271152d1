"""The hash chain of audit.jsonl: the line format, the end of the file read backwards, `verify_audit`, `audit_head`.

Every entry this version writes starts with two fields, in this order and spelled so (json.dumps' default
separators), so a reader finds them by position without parsing the line:

    {"prev": "<sha256 hex of the line before, its exact bytes without the newline>", "seq": <its line number>, ...

The first line of a new audit (a dataset's `create_dataset`) is the genesis: its prev is 64 zeros. An audit written
by an older ros_robodata has no prev; `robodata audit seal` (audit.py) appends one `audit_seal` entry carrying the
sha256 of every byte before it (`sealed_sha256`) and how many lines that is (`sealed_entries`), and the chain goes
on from that entry (its prev is the sha256 of the last unchained line, as for any entry).

What the chain shows: a changed, removed, put-in or reordered line anywhere before the last line is found and named
(the first one). The last line is vouched for by nothing inside the file: a change to it that keeps it valid JSON,
or its removal, shows only against a head recorded elsewhere (`audit_head`, kept by a release manifest, given back
as `verify_audit(path, head=...)`); lines appended after a recorded head are the log going on, not a change.

A write cut short (a crash or a power loss) leaves the last line without its newline: verify says so (`truncated`),
which is not a change. The next writer ends that line and chains its entry over it (audit.py), marked
`previous_line_cut`, so the cut line stays vouched for; the entry it held is lost.

Why one module: the line format (where prev and seq sit, byte for byte), the helpers the writers use to read the
end of the file, and the verifier that checks lines by those byte positions without parsing them change together;
the writers (append, seal) are in audit.py, on top of this.
"""

from __future__ import annotations

import binascii
import contextlib
import errno
import fcntl
import hashlib
import json
import operator
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ros_robodata.dataset.audit_ahead import LinesAhead, hash_ahead
from ros_robodata.errors import DatasetError

PREFIX = b'{"prev": "'  # how every chained line starts
GENESIS = '0' * 64  # the prev of the first line of a chain
_HEX_END = len(PREFIX) + 64  # line[len(PREFIX):_HEX_END] is the prev
_HEX = b'0123456789abcdef'
_PREV = operator.itemgetter(slice(len(PREFIX), _HEX_END))  # a line's prev, as written
_SEQ = re.compile(rb'\{"prev": "[0-9a-f]{64}", "seq": (\d+), ')
BLOCK = 1 << 22  # bytes read at a time: 4 MiB keeps the lines of a block in the CPU's caches
_NO_LOCK = (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL)  # a file system without flock


def format_line(prev: str, seq: int, entry: dict[str, Any]) -> bytes:
    """One chained line (no newline): prev and seq first, then the entry's fields as given.

    Args:
        prev: the sha256 (hex) of the line before, or GENESIS for the first.
        seq: the line's number in the file (1-based).
        entry: the entry's other fields.

    Raises:
        ValueError: the entry names `prev` or `seq` itself (they belong to the chain).
    """
    if 'prev' in entry or 'seq' in entry:
        raise ValueError('an audit entry may not set prev or seq: the chain writes them')
    return json.dumps({'prev': prev, 'seq': seq, **entry}).encode('utf-8')


def seq_of(line: bytes) -> int | None:
    """The seq of a chained line as written (None: not a chained line, or cut before its seq ends)."""
    match = _SEQ.match(line)
    return int(match.group(1)) if match else None


@contextlib.contextmanager
def locked(fd: int, how: int) -> Iterator[None]:
    """flock(how) on `fd` for the block. A file system that has no flock (some FUSE mounts) is written unlocked, as
    before locks: one writer at a time is then the user's to keep."""
    try:
        fcntl.flock(fd, how)
    except OSError as err:
        if err.errno not in _NO_LOCK:
            raise
        yield
        return
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def tail(fd: int, size: int, count: int = 2) -> tuple[list[bytes], bool]:
    """The last `count` lines of the first `size` bytes of `fd` (fewer if it has fewer), oldest first, each without
    its newline, read backwards from the end; and whether those bytes end with a newline (False: the last line is
    cut short)."""
    if size == 0:
        return [], True
    ends = os.pread(fd, 1, size - 1) == b'\n'
    end = size - 1 if ends else size  # the final newline is not a line break inside what we look at
    block, start, buf = 8192, end, b''
    while True:
        low = max(0, start - block)
        buf = os.pread(fd, start - low, low) + buf
        start = low
        if buf.count(b'\n') >= count or start == 0:
            lines = buf.split(b'\n')
            return lines[-count:] if start == 0 else lines[1:][-count:], ends
        block *= 2


def count_lines(fd: int, start: int, size: int) -> int:
    """Lines in bytes start..size of `fd` (a last line without its newline counts)."""
    lines, pos, last = 0, start, b'\n'
    while pos < size:
        chunk = os.pread(fd, min(BLOCK, size - pos), pos)
        if not chunk:
            break
        lines += chunk.count(b'\n')
        pos += len(chunk)
        last = chunk[-1:]
    return lines + (last != b'\n')


def iter_lines(fd: int, start: int, size: int) -> Iterator[tuple[int, bytes, bool]]:
    """(offset, line without newline, whether it had one) for every line in bytes start..size of `fd`."""
    pos, carry, offset = start, b'', start
    while pos < size:
        chunk = os.pread(fd, min(BLOCK, size - pos), pos)
        if not chunk:
            break
        pos += len(chunk)
        lines = (carry + chunk).split(b'\n')
        carry = lines.pop()
        for line in lines:
            yield offset, line, True
            offset += len(line) + 1
    if carry:
        yield offset, carry, False


def _open_to_read(path: Path) -> tuple[int, int]:
    """(fd, size): the audit open for reading, its size taken under a shared lock, so it ends with a whole line
    whatever writers append meanwhile (they write a line at a time under an exclusive lock)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        raise
    except OSError as err:
        raise DatasetError(f'{path}: cannot be read ({err.strerror or err})') from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise DatasetError(f'{path}: not a file (a folder?): an audit log is one file')
        with locked(fd, fcntl.LOCK_SH):
            size = os.fstat(fd).st_size
    except BaseException:
        os.close(fd)
        raise
    return fd, size


def audit_head(path: Path) -> tuple[int, str]:
    """(entries, sha256 hex of the last line): what a release records so that its audit can be checked later,
    the last line included (`verify_audit(path, head=...)`). Reads the last two lines only (their seq says how
    many lines there are); an audit never sealed has no seq, so its lines are counted (one read).

    Args:
        path: the audit.jsonl.

    Raises:
        DatasetError: no such file, or it cannot be read.
    """
    path = Path(path)
    try:
        fd, size = _open_to_read(path)
    except FileNotFoundError:
        raise DatasetError(f'{path}: no audit log (no such file)') from None
    try:
        lines, _ = tail(fd, size, 2)
        if not lines:
            return 0, GENESIS
        last = seq_of(lines[-1])
        before = seq_of(lines[0]) if len(lines) == 2 else None
        if last is not None:
            entries = last
        elif before is not None:
            entries = before + 1
        else:
            entries = count_lines(fd, 0, size)
        return entries, hashlib.sha256(lines[-1]).hexdigest()
    finally:
        os.close(fd)


@dataclass(frozen=True)
class AuditCheck:
    """What verify_audit found.

    Args:
        ok: no line was changed, removed, put in or moved (as far as the chain, and a head if given, can tell).
        entries: lines in the file (a last line cut short counts).
        line: the first bad line, 1-based (for a changed sealed part: 1, the problem names the lines); None when ok
            or when the file as a whole is the problem (missing, never sealed).
        problem: what is wrong, one sentence naming the line; '' when ok.
        sealed: the audit starts with lines written before the chain, covered by a seal.
        seal_line: where that seal is (the sealed part is lines 1 to seal_line - 1).
        truncated: the last line is cut short (a write interrupted by a crash or a power loss): not a change; the
            next entry written ends it and chains over it.
    """

    ok: bool
    entries: int
    line: int | None = None
    problem: str = ''
    sealed: bool = False
    seal_line: int | None = None
    truncated: bool = False

    @property
    def notes(self) -> list[str]:
        """What a user should know besides the verdict, one sentence each."""
        notes = []
        if self.sealed and self.seal_line is not None:
            notes.append(f'lines 1-{self.seal_line - 1} were written before the hash chain and are sealed by line '
                         f'{self.seal_line}')
        if self.truncated:
            notes.append(f'line {self.entries}, the last, is cut short: a write was interrupted (a crash or power '
                         'loss); the next entry written closes it and chains over it')
        return notes

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), 'notes': self.notes}


def verify_audit(path: Path, head: tuple[int, str] | None = None) -> AuditCheck:
    """Check audit.jsonl's hash chain (and its sealed part) and name the first line that was changed, removed, put
    in or moved. Hashes every line once and parses JSON only where something is wrong: about as fast as reading the
    file (bench/governance.py).

    Args:
        path: the audit.jsonl.
        head: (entries, sha256 of line `entries`) as `audit_head` gave it earlier (a release records it): checks
            the last line too, and that no line up to it was removed.

    Raises:
        DatasetError: the file cannot be read, or is not a file.
    """
    path = Path(path)
    try:
        fd, size = _open_to_read(path)
    except FileNotFoundError:
        return AuditCheck(False, 0, problem='there is no audit log (the file is missing)')
    ahead = hash_ahead(path, fd, size)
    try:
        return _Verifier(fd, size, head, ahead).run()
    finally:
        if ahead is not None:
            ahead.close()
        os.close(fd)


class _Bad(Exception):
    def __init__(self, line: int, problem: str) -> None:
        super().__init__(problem)
        self.line, self.problem = line, problem


def _span(first: int, last: int) -> str:
    """'line 5 was' or 'lines 5-7 were'."""
    return f'line {first} was' if first == last else f'lines {first}-{last} were'


def _is_entry(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except (ValueError, RecursionError):
        return False


def _cut_short(line: bytes, prev_hex: bytes) -> bool:
    """`line` can be the start of a chained line following `prev_hex` that a crash cut short (all of it but the
    newline, at most), not a line with bytes after its end."""
    start = PREFIX + prev_hex
    if len(line) <= len(start):
        return start.startswith(line)
    if not line.startswith(start):
        return False
    try:
        _, end = json.JSONDecoder().raw_decode(line.decode('ascii'))
    except UnicodeDecodeError:
        return False
    except (ValueError, RecursionError):
        return True  # it stops inside the entry
    return end == len(line)  # the whole entry: only the newline was lost


class _Verifier:
    """One pass over the file: the unchained part before a seal, then the chain, block by block (bulk hashing and
    comparing); a block that does not check out is gone through line by line to name the first bad line."""

    def __init__(self, fd: int, size: int, head: tuple[int, str] | None, ahead: LinesAhead | None = None) -> None:
        self.fd, self.size = fd, size
        self.ahead = ahead  # the second half's digests, hashed in another process (audit_ahead.py)
        self.head = None if head is None else (int(head[0]), str(head[1]).lower())
        self.head_digest: str | None = None  # sha256 hex of line head[0], once passed
        self.seal_line: int | None = None
        self.truncated = False
        self.first = 1  # the first line of the chain (the genesis, or the seal)
        self.line_no = 1  # the next line's number
        self.before: bytes | None = None  # the line before it
        self.expected = bytes(32)  # what the next line's prev must be (as digest bytes)

    def run(self) -> AuditCheck:
        try:
            start = self._start()
            if start is None:
                return self._unsealed()
            self._walk(start)
            self._finish()
        except _Bad as bad:
            return AuditCheck(False, count_lines(self.fd, 0, self.size), bad.line, bad.problem,
                              self.seal_line is not None, self.seal_line, self.truncated)
        return AuditCheck(True, self.line_no - 1, sealed=self.seal_line is not None, seal_line=self.seal_line,
                          truncated=self.truncated)

    def _note_head(self, number: int, line: bytes) -> None:
        if self.head is not None and number == self.head[0]:
            self.head_digest = hashlib.sha256(line).hexdigest()

    # -- where the chain starts: line 1, or a seal after lines an older ros_robodata wrote -------------------

    def _start(self) -> int | None:
        """The offset the walk starts at (the chain's lines after the genesis or the seal), or None: no chain."""
        if os.pread(self.fd, len(PREFIX), 0) == PREFIX or self.size == 0:
            return 0
        sealed = hashlib.sha256()
        number, last = 0, b''
        lines = iter_lines(self.fd, 0, self.size)
        for offset, line, whole in lines:
            if line.startswith(PREFIX) and whole:
                following = next(lines, None)
                self._check_seal(line, number, last, sealed.hexdigest(),
                                 None if following is None else following[1])
                self.first = self.seal_line = number + 1
                self.line_no, self.before = number + 2, line
                self.expected = hashlib.sha256(line).digest()
                self._note_head(number + 1, line)
                return offset + len(line) + 1
            number += 1
            self._note_head(number, line)
            sealed.update(line + b'\n')
            last = line
        self.line_no = number + 1
        return None

    def _unsealed(self) -> AuditCheck:
        entries = self.line_no - 1
        return AuditCheck(False, entries, problem=f'not sealed: its {entries} line(s) were written without a hash '
                                                  'chain (by an older ros_robodata), so a change to them cannot be '
                                                  'seen: run `robodata audit seal` on its dataset')

    def _check_seal(self, line: bytes, unchained: int, last: bytes, digest: str, following: bytes | None) -> None:
        """The first chained line after `unchained` lines without one must seal exactly them."""
        at = unchained + 1
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):
            entry = None
        seq = seq_of(line)
        if not isinstance(entry, dict) or not (entry.get('action') == 'audit_seal' or 'sealed_sha256' in entry):
            if line[len(PREFIX):_HEX_END] == GENESIS.encode():
                raise _Bad(1, f'{_span(1, unchained)} put in before the first entry of the chain (line {at})')
            if seq is not None and seq > at:
                raise _Bad(at, f'line {at} is entry {seq}: the seal before it was removed')
            raise _Bad(1, f'{_span(1, unchained)} changed or put in: not chained, yet line {at} goes on a chain')
        self.seal_line = at
        digest_hex = hashlib.sha256(line).hexdigest()
        if following is not None:
            vouched = following[len(PREFIX):_HEX_END] == digest_hex.encode()
        else:
            vouched = self.head is not None and self.head[1] == digest_hex
        recorded = entry.get('sealed_entries')
        matches = (recorded == unchained and entry.get('sealed_sha256') == digest and seq == at
                   and line[len(PREFIX):_HEX_END] == hashlib.sha256(last).hexdigest().encode())
        if matches:
            return
        if vouched or following is None:
            count = recorded if isinstance(recorded, int) and recorded > 0 else unchained
            now = f' (it has {unchained} now)' if count != unchained else ''
            raise _Bad(1, f'the sealed part (lines 1-{count}) changed{now}: it is not what the seal on line {at} '
                          'records')
        raise _Bad(at, f'line {at}, the seal, was changed: line {at + 1} records a different line before it')

    # -- the chain --------------------------------------------------------------------------------------------

    def _walk(self, start: int) -> None:
        pos, carry = start, b''
        while pos < self.size:
            chunk = os.pread(self.fd, min(BLOCK, self.size - pos), pos)
            if not chunk:
                break
            pos += len(chunk)
            buf = carry + chunk
            cut = buf.rfind(b'\n')
            if cut < 0:
                carry = buf
                continue
            lines = buf[:cut].split(b'\n')
            carry = buf[cut + 1:]
            if not self._block(lines):  # from here to the end line by line: the first bad line raises
                self._lines(self._rest(lines, pos, carry))
                return
        self._lines(iter([(carry, False)] if carry else []))

    def _block(self, lines: list[bytes]) -> bool:
        """Check a block of whole lines at C speed: each carries the sha256 of the line before it (bytes 10-73, in
        lower-case hex). False (nothing taken) when any does not: they are then gone through one by one. A line's
        own prefix is not looked at: a change to it changes the line's sha256, which the next line shows, and the
        last line is read whole (_finish)."""
        prevs = b''.join(map(_PREV, lines))
        if len(prevs) != 64 * len(lines) or prevs.translate(None, _HEX):  # lower-case hex only: 'A' is not 'a'
            return False
        digests = self._digests(lines)  # 32 bytes a line
        if binascii.unhexlify(prevs) != self.expected + digests[:-32]:
            return False
        if self.head is not None and self.line_no <= self.head[0] < self.line_no + len(lines):
            at = (self.head[0] - self.line_no) * 32
            self.head_digest = digests[at:at + 32].hex()
        self.expected, self.before = digests[-32:], lines[-1]
        self.line_no += len(lines)
        return True

    def _digests(self, lines: list[bytes]) -> bytes:
        """The lines' sha256 digests, joined: those of the second half as the process ahead hashed them, when there
        is one and it gave them all."""
        sha256 = hashlib.sha256
        ahead, count = self.ahead, len(lines)
        if ahead is not None and self.line_no + count > ahead.first_line:
            mine = max(0, ahead.first_line - self.line_no)
            done = ahead.digests()
            at = (self.line_no + mine - ahead.first_line) * 32
            theirs = done[at:at + (count - mine) * 32] if done is not None else b''
            if len(theirs) == (count - mine) * 32:
                return b''.join([sha256(line).digest() for line in lines[:mine]]) + theirs
        return b''.join([sha256(line).digest() for line in lines])

    def _rest(self, lines: list[bytes], pos: int, carry: bytes) -> Iterator[tuple[bytes, bool]]:
        for line in lines:
            yield line, True
        for _, line, whole in iter_lines(self.fd, pos - len(carry), self.size):
            yield line, whole

    def _lines(self, lines: Iterator[tuple[bytes, bool]]) -> None:
        """One line at a time, each with the line after it in view (what vouches for it)."""
        current = next(lines, None)
        while current is not None:
            following = next(lines, None)
            self._line(current[0], current[1], None if following is None else following[0])
            current = following

    def _line(self, line: bytes, whole: bool, following: bytes | None) -> None:
        prev_hex = binascii.hexlify(self.expected)
        if not (whole and line[len(PREFIX):_HEX_END] == prev_hex):
            self._mismatch(line, whole, following, prev_hex)
        self._note_head(self.line_no, line)
        self.expected, self.before = hashlib.sha256(line).digest(), line
        self.line_no += 1

    def _mismatch(self, line: bytes, whole: bool, following: bytes | None, prev_hex: bytes) -> None:
        """Line i does not carry the sha256 of line i - 1: say which line is to blame, or let a cut write pass."""
        i, before = self.line_no, self.before
        digest = hashlib.sha256(line).hexdigest()
        if following is not None:
            vouched = following[len(PREFIX):_HEX_END] == digest.encode()
        else:
            vouched = self.head is not None and self.head[1] == digest
        if not whole:  # the last line, without its newline
            if _cut_short(line, prev_hex):
                self.truncated = True
                return
            raise _Bad(i, f'line {i}, the last, has no newline and is not an entry cut short by a crash: it was '
                          'changed')
        if vouched and not _is_entry(line) and _cut_short(line, prev_hex):
            return  # cut by a crash before its prev was whole, and chained over by the next writer
        if before is not None and i > self.first and line == before:
            raise _Bad(i, f'line {i} repeats line {i - 1}: a copy was put in')
        if before is not None and i - 1 >= self.first and not _is_entry(before):
            raise _Bad(i - 1, f'line {i - 1} is not a whole audit entry: it was changed')
        if not line.startswith(PREFIX):
            raise _Bad(i, f'line {i} is not a chained audit entry: it was changed or put in')
        seq = seq_of(line)
        if vouched:  # line i is as written: the break is before it
            if seq is not None and seq > i:
                gone = f'entry {i} before it was' if seq == i + 1 else f'entries {i}-{seq - 1} before it were'
                raise _Bad(i, f'line {i} is entry {seq}: {gone} removed')
            if seq is not None and seq < i:
                start = max(seq, self.first)
                raise _Bad(start, f'{_span(start, i - 1)} put in: line {i} is entry {seq}')
            if i == self.first:
                raise _Bad(i, f'line {i} is not the first entry: it records a line before it (removed)')
            raise _Bad(i - 1, f'line {i - 1} was changed: line {i} records a different line before it')
        says = f' (it says it is entry {seq})' if seq is not None and seq != i else ''
        if i == self.first:
            raise _Bad(i, f'line {i} was changed or put in{says}: the first entry records no line before it')
        raise _Bad(i, f'line {i} was changed, put in or moved{says}: it does not follow line {i - 1}')

    def _finish(self) -> None:
        last = self.line_no - 1
        if self.before is not None and not self.truncated and last > (self.seal_line or 0):
            if not _is_entry(self.before):
                raise _Bad(last, f'line {last}, the last, is not a whole audit entry: it was changed')
            seq = seq_of(self.before)
            if seq is None:
                raise _Bad(last, f'line {last}, the last, is not a chained audit entry: it was changed')
            if seq != last:
                raise _Bad(last, f'line {last}, the last, says it is entry {seq}: lines before it were removed or '
                                 'put in')
        if self.head is None:
            return
        entries, digest = self.head
        if last < entries:
            raise _Bad(last + 1, f'line {last + 1} is missing: the audit ends at line {last}, but the head '
                                 f'recorded has {entries} entries (removed from its end)')
        if entries and self.head_digest != digest:
            raise _Bad(entries, f'line {entries} is not the line the head recorded: it was changed')
