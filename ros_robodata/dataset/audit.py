"""audit.jsonl: an append-only log of who changed what in a dataset, and when.

Reviewers fix outcomes and statuses; a training set must be traceable to those decisions.
One JSON object per line, appended with O_APPEND and fsync so lines never interleave or vanish.
"""

from __future__ import annotations

import getpass
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ros_robodata.errors import DatasetError


def current_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return 'unknown'


def append_audit(path: Path, action: str, episode_id: str | None, who: str | None = None, **details: Any) -> dict:
    entry = {
        'time': time.strftime('%Y-%m-%dT%H:%M:%S%z'),
        'time_ns': time.time_ns(),
        'who': who or current_user(),
        'action': action,
        'episode': episode_id,
        **details,
    }
    line = (json.dumps(entry, sort_keys=False) + '\n').encode('utf-8')
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
    return entry


def check_audit_writable(path: Path) -> None:
    """DatasetError (one line) unless a line can be appended to `path` now: checked before a change is made."""
    if path.exists() and not path.is_file():
        raise DatasetError(f'{path}: not a file: no change is made without its audit line (move it away)')
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError as err:
        raise DatasetError(f'{path}: cannot be appended to ({err.strerror or err}): no change is made without its '
                           'audit line') from None
    os.close(fd)


def read_audit(path: Path) -> Iterator[dict]:
    """The entries in order; DatasetError naming the line that is not one (a hand edit, a cut write)."""
    if not path.exists():
        return
    with path.open(encoding='utf-8', errors='replace') as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except (ValueError, RecursionError):
                raise DatasetError(f'{path}: line {number} is not an audit entry (not JSON)') from None
            if not isinstance(entry, dict):
                raise DatasetError(f'{path}: line {number} is not an audit entry (not a JSON object)')
            yield entry
