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


def read_audit(path: Path) -> Iterator[dict]:
    if not path.exists():
        return
    with path.open(encoding='utf-8') as f:
        for line in f:
            if line.strip():
                yield json.loads(line)
