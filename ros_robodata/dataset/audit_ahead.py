"""The second half of a large audit.jsonl hashed line by line in a second process, while the verifier walks the first.

Checking the hash chain costs one sha256 call per line, and in Python that call, not reading the file, is what
bounds `verify_audit` on one core (bench/governance.py: splitting and hashing the lines alone is about 1.2x
`sha256sum` of the same file). For a file of AHEAD_MIN_BYTES or more on a machine with a second core, a forked process
hashes every whole line from the first line start after the middle of the file and hands back their digests; the
verifier takes them when its walk gets there and compares them as it compares its own. It checks nothing itself:
anything that does not match is gone through line by line by the verifier, as without it.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
from multiprocessing.connection import Connection
from pathlib import Path

__all__ = ['AHEAD_MIN_BYTES', 'LinesAhead', 'hash_ahead']

AHEAD_MIN_BYTES = 32 << 20  # below this, starting a process costs more than it saves
_READ = 1 << 22
_SCAN = 1 << 16  # how far past the middle a line start is looked for


def _hash_lines(path: str, start: int, end: int, out: Connection) -> None:
    """The sha256 digests (32 bytes each, in order) of every whole line in bytes start..end, sent as one message."""
    digests: list[bytes] = []
    sha256 = hashlib.sha256
    with open(path, 'rb', buffering=0) as f:
        f.seek(start)
        carry, left = b'', end - start
        while left > 0:
            chunk = f.read(min(_READ, left))
            if not chunk:
                break
            left -= len(chunk)
            lines = (carry + chunk).split(b'\n')
            carry = lines.pop()
            digests.extend(sha256(line).digest() for line in lines)
    out.send_bytes(b''.join(digests))
    out.close()


class LinesAhead:
    """The digests of the lines from `first_line` on (1-based line numbers of the file), being hashed elsewhere."""

    def __init__(self, first_line: int, process: multiprocessing.process.BaseProcess, conn: Connection) -> None:
        self.first_line = first_line
        self._process, self._conn = process, conn
        self._digests: bytes | None = None
        self._done = False

    def digests(self) -> bytes | None:
        """Every digest, 32 bytes a line (waits for the process the first time); None if it failed."""
        if not self._done:
            self._done = True
            try:
                self._digests = self._conn.recv_bytes()
            except (EOFError, OSError):
                self._digests = None
        return self._digests

    def close(self) -> None:
        """Stop the process if it is still hashing (the verifier found a bad line first) and let it go."""
        if self._process.is_alive():
            self._process.terminate()
        self._process.join()
        self._conn.close()


def hash_ahead(path: Path, fd: int, size: int) -> LinesAhead | None:
    """Start hashing the second half of the file in another process; None where that would not pay (a small file,
    one core, no line start near the middle).

    Args:
        path: the audit file (the process opens it by name).
        fd: the verifier's descriptor of the same file (to find the middle line start and count the lines before).
        size: the bytes to consider (the size the verifier read it at: lines appended since are not its business).
    """
    if size < AHEAD_MIN_BYTES or (os.cpu_count() or 1) < 2:
        return None
    middle = size // 2
    newline = os.pread(fd, _SCAN, middle).find(b'\n')
    if newline < 0:
        return None
    start = middle + newline + 1
    before, pos = 0, 0
    while pos < start:
        chunk = os.pread(fd, min(_READ, start - pos), pos)
        if not chunk:
            return None
        before += chunk.count(b'\n')
        pos += len(chunk)
    context = multiprocessing.get_context('fork')  # the file's bytes are all it needs: nothing to import again
    receive, send = context.Pipe(duplex=False)
    process = context.Process(target=_hash_lines, args=(str(path), start, size, send), daemon=True)
    process.start()
    send.close()
    return LinesAhead(before + 1, process, receive)
