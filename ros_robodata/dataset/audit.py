"""audit.jsonl: an append-only, hash-chained log of who changed what in a dataset, and when.

Reviewers fix outcomes and statuses; a training set must be traceable to those decisions, and a change to the log
itself must show. One JSON object per line; each line carries the sha256 of the line before it (`prev`) and its own
number (`seq`), the format and the checking in audit_chain.py (`verify_audit`, `audit_head`); `robodata audit`
runs them.

Writers append under an exclusive flock on the audit file's own descriptor: the last line is read and the new one
written (O_APPEND, then fsync) while it is held, so writers in several processes, or threads of one, each chain onto
the line the other wrote and never interleave. The lock is on the file itself, not a lock file beside it: nothing
more in the dataset to copy, to leave behind after a crash or to fail creating where the folder is read-only but
the log is writable, and the lock is on exactly the file (inode) the line goes into. flock is released by the
kernel when a writer dies; readers (verify, the head) take it shared only to read the file's size.
"""

from __future__ import annotations

import fcntl
import getpass
import hashlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ros_robodata.dataset.audit_chain import (
    GENESIS,
    PREFIX,
    AuditCheck,
    audit_head,
    count_lines,
    format_line,
    iter_lines,
    locked,
    seq_of,
    tail,
    verify_audit,
)
from ros_robodata.errors import DatasetError

__all__ = ['AuditCheck', 'Sealed', 'append_audit', 'audit_head', 'check_audit_writable', 'current_user',
           'read_audit', 'seal_audit', 'verify_audit']


def current_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return 'unknown'


def _entry(action: str, episode_id: str | None, who: str | None, details: dict[str, Any]) -> dict[str, Any]:
    return {
        'time': time.strftime('%Y-%m-%dT%H:%M:%S%z'),
        'time_ns': time.time_ns(),
        'who': who or current_user(),
        'action': action,
        'episode': episode_id,
        **details,
    }


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.fsync(fd)


def _open_to_append(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)


def append_audit(path: Path, action: str, episode_id: str | None, who: str | None = None, **details: Any) -> dict:
    """Append one entry, chained onto the last line, and return it (with its prev and seq).

    The first entry of an empty log is the genesis (prev: 64 zeros). A log an older ros_robodata wrote (no prev)
    and nobody sealed yet gets entries as it always did, unchained: chaining from its middle would vouch for lines
    nobody looked at, under the name of whoever happened to write next (the recorder at a rig, a reviewer's `set`);
    `robodata audit seal` is that decision, with a who and a why, and `verify_audit` says "not sealed" until it is
    made. A last line cut short by a crash is ended and chained over; the entry then says `previous_line_cut`.

    Args:
        path: the audit.jsonl (created if absent).
        action: what was done (set_outcome, create_episode...).
        episode_id: the episode it was done to, or None.
        who: who did it; None: the current user.
        **details: more fields (old, new, reason...); not prev or seq, which the chain writes.

    Raises:
        OSError: the line cannot be written (no permission, disk full): callers undo their change.
        ValueError: details name prev or seq.
    """
    if 'prev' in details or 'seq' in details:
        raise ValueError('an audit entry may not set prev or seq: the chain writes them')
    entry = _entry(action, episode_id, who, details)
    fd = _open_to_append(path)
    try:
        with locked(fd, fcntl.LOCK_EX):
            size = os.fstat(fd).st_size
            lines, ends = tail(fd, size, 2)
            cut = b'' if ends else b'\n'  # a line a crash cut short is ended first, never run into ours
            if size and not _chained(fd, lines):
                _write(fd, cut + json.dumps(entry).encode('utf-8') + b'\n')
                return entry
            if cut:
                entry['previous_line_cut'] = True
            prev = hashlib.sha256(lines[-1]).hexdigest() if size else GENESIS
            seq = _next_seq(fd, size, lines)
            _write(fd, cut + format_line(prev, seq, entry) + b'\n')
            return {'prev': prev, 'seq': seq, **entry}
    finally:
        os.close(fd)


def _chained(fd: int, lines: list[bytes]) -> bool:
    """The log has a chain to go on: it starts with one (a genesis) or ends with one (after a seal)."""
    return os.pread(fd, len(PREFIX), 0) == PREFIX or any(line.startswith(PREFIX) for line in lines)


def _next_seq(fd: int, size: int, lines: list[bytes]) -> int:
    """The number of the line about to be written: from the last line's seq, else the one before it (the last was
    cut inside its seq), else counted (a line someone else put at the end)."""
    if not lines:
        return 1
    last = seq_of(lines[-1])
    if last is not None:
        return last + 1
    before = seq_of(lines[0]) if len(lines) == 2 else None
    if before is not None:
        return before + 2
    return count_lines(fd, 0, size) + 1


@dataclass(frozen=True)
class Sealed:
    """What seal_audit did.

    Args:
        sealed: a seal was written now (False: there was nothing to seal, `message` says why).
        lines: the lines it covers (0 when nothing was sealed).
        sha256: their sha256, as the seal records it; None when nothing was sealed.
        seal_line: the seal's line (the one written now, or the one already there); None if there is none.
        message: one sentence for the user.
    """

    sealed: bool
    lines: int
    sha256: str | None
    seal_line: int | None
    message: str


def seal_audit(path: Path, who: str | None = None, why: str = '') -> Sealed:
    """Seal a log an older ros_robodata wrote: one `audit_seal` entry carrying the sha256 of every byte before it
    and how many lines that is, chained onto its last line; every entry after it is chained. Sealing a log that is
    sealed or chained already changes nothing (the message says so).

    Args:
        path: the audit.jsonl.
        who: who seals (kept in the seal); None: the current user.
        why: why (kept in the seal as its reason).

    Raises:
        DatasetError: no such log, or it holds chained lines that no seal covers (run `robodata audit verify`).
        OSError: the seal cannot be written.
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND)
    except FileNotFoundError:
        raise DatasetError(f'{path}: no audit log (no such file): nothing to seal') from None
    try:
        with locked(fd, fcntl.LOCK_EX):
            size = os.fstat(fd).st_size
            digest = hashlib.sha256()
            count, last, ends = 0, b'', True
            for _, line, whole in iter_lines(fd, 0, size):
                if line.startswith(PREFIX) and whole:
                    return _already(path, line, count)
                digest.update(line + b'\n')
                count, last, ends = count + 1, line, whole
            if not count:
                return Sealed(False, 0, None, None, f'{path}: nothing to seal: no entry yet (the first one starts '
                                                    'the hash chain)')
            entry = _entry('audit_seal', None, who, {
                'reason': why, 'sealed_entries': count, 'sealed_sha256': digest.hexdigest(),
                'note': f'lines 1-{count} were written without a hash chain (by an older ros_robodata): this entry '
                        'vouches for them by their sha256; from here on each line carries the sha256 of the line '
                        'before it'})
            line = format_line(hashlib.sha256(last).hexdigest(), count + 1, entry)
            _write(fd, (b'' if ends else b'\n') + line + b'\n')
    finally:
        os.close(fd)
    return Sealed(True, count, entry['sealed_sha256'], count + 1,
                  f'{path}: sealed lines 1-{count}; the hash chain goes on from line {count + 1}')


def _already(path: Path, line: bytes, before: int) -> Sealed:
    """Sealing again: say what is there, or refuse a chain no seal starts."""
    if before == 0:
        return Sealed(False, 0, None, None, f'{path}: nothing to seal: chained from its first line')
    try:
        entry = json.loads(line)
    except (ValueError, RecursionError):
        entry = None
    if isinstance(entry, dict) and entry.get('action') == 'audit_seal':
        return Sealed(False, before, entry.get('sealed_sha256'), before + 1,
                      f'{path}: already sealed on line {before + 1} (lines 1-{before}): nothing to do')
    raise DatasetError(f'{path}: line {before + 1} goes on a hash chain that no seal starts: not sealed again '
                       '(`robodata audit verify` says what changed)')


def check_audit_writable(path: Path) -> None:
    """DatasetError (one line) unless a line can be appended to `path` now: checked before a change is made."""
    if path.exists() and not path.is_file():
        raise DatasetError(f'{path}: not a file: no change is made without its audit line (move it away)')
    try:
        fd = _open_to_append(path)  # read too: the last line is read to chain onto it
    except OSError as err:
        raise DatasetError(f'{path}: cannot be appended to ({err.strerror or err}): no change is made without its '
                           'audit line') from None
    os.close(fd)


def read_audit(path: Path) -> Iterator[dict]:
    """The entries in order; DatasetError naming the line that is not one (a hand edit). A line cut short by a crash
    is passed over where the entry after it says so (`previous_line_cut`: the next writer closed it and chained on),
    and at the very end (nothing was written after it yet)."""
    if not path.exists():
        return
    cut: int | None = None  # the number of a line that was not JSON, until the next line says why
    with path.open(encoding='utf-8', errors='replace') as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except (ValueError, RecursionError):
                if cut is not None:
                    raise DatasetError(f'{path}: line {cut} is not an audit entry (not JSON)') from None
                cut = number
                continue
            if not isinstance(entry, dict):
                raise DatasetError(f'{path}: line {number} is not an audit entry (not a JSON object)')
            if cut is not None and not entry.get('previous_line_cut'):
                raise DatasetError(f'{path}: line {cut} is not an audit entry (not JSON)')
            cut = None
            yield entry
