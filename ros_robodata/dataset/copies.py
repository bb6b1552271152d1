"""copies.jsonl: where a dataset's data was copied to (exports, review media), so the data can be withdrawn.

A participant who withdraws consent must be removed from every copy the dataset made, not only from its bags. Each
command that writes episode data outside the dataset (`export frames`, `export lerobot`, `review push`) appends one
line here: what kind of copy, where, which episodes, and which part of the folder is each episode's (or none: the
copy cannot be cut per episode and is deleted whole). `episodes copy` and `merge` append one line per episode they
pooled into another dataset (kind `dataset`: the path is the copy's episode folder there), which retire retires in
that dataset as its own episode (tombstone and audit there too). `robodata retire` reads it.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from ros_robodata import untrusted
from ros_robodata.errors import RobodataError

__all__ = ['COPIES_FILE', 'POOLED', 'Copy', 'read_copies', 'record_copy']

COPIES_FILE = 'copies.jsonl'
POOLED = 'dataset'  # an episode copied into another dataset (episodes copy, merge)


@dataclass(frozen=True)
class Copy:
    """One copy of episode data outside the dataset.

    Args:
        kind: frames, lerobot, review_media, or dataset (POOLED: an episode copied into another dataset).
        path: the folder written (absolute): for POOLED, the copy's episode folder in that dataset.
        episodes: the episodes it holds.
        parts: per-episode sub-folders, with `{id}` for the episode id; empty: one folder for all, deleted whole.
        time: when it was written.
    """

    kind: str
    path: Path
    episodes: tuple[str, ...]
    parts: tuple[str, ...] = ()
    time: str = ''

    def holds(self, episode_id: str) -> bool:
        return episode_id in self.episodes


def record_copy(dataset_root: Path, kind: str, path: Path, episodes: list[str], parts: tuple[str, ...] = ()) -> str:
    """Append a copy's line (one write, O_APPEND: concurrent writers never interleave a line). A copy is made even
    where it cannot be recorded (a dataset on read-only media, a full disk: exporting from it reads it only); the
    returned note says so, for the command to pass on.

    Args:
        dataset_root: the dataset's folder.
        kind: what the copy is (frames, lerobot, review_media, dataset).
        path: the folder written.
        episodes: the episodes in it.
        parts: per-episode sub-folders, `{id}` for the episode id; empty: delete the folder whole.

    Returns:
        '' when recorded (or recorded already); else one line saying that `robodata retire` will not know this copy.
    """
    if not episodes:
        return ''
    where = Path(path).resolve()
    try:
        known = read_copies(dataset_root)
    except RobodataError as err:
        return f'{err}: this copy is not recorded, so `robodata retire` will not reach it'
    if any(c.kind == kind and c.path == where and set(episodes) <= set(c.episodes) and c.parts == tuple(parts)
           for c in known):
        return ''  # the same copy again (an export or a push rerun): recorded once
    line = json.dumps({'kind': kind, 'path': str(where), 'episodes': sorted(episodes),
                       'parts': list(parts), 'time': time.strftime('%Y-%m-%dT%H:%M:%S%z')}) + '\n'
    try:
        fd = os.open(dataset_root / COPIES_FILE, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
    except OSError as err:
        with contextlib.suppress(OSError):  # a full disk may take the new file and not its line: leave none
            if (dataset_root / COPIES_FILE).stat().st_size == 0:
                (dataset_root / COPIES_FILE).unlink()
        return (f'{dataset_root / COPIES_FILE}: cannot record where this copy went ({err.strerror or err}): '
                f'`robodata retire` will not reach {where}')
    return ''


def read_copies(dataset_root: Path) -> list[Copy]:
    """Every recorded copy, oldest first; a line that is not one is named.

    Raises:
        RobodataError: a line of copies.jsonl is not a copy record (naming the line).
    """
    path = dataset_root / COPIES_FILE
    if not path.is_file():
        return []
    out = []
    for number, line in enumerate(untrusted.read_text(path, RobodataError).splitlines(), 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
            out.append(Copy(str(doc['kind']), Path(doc['path']), tuple(str(e) for e in doc['episodes']),
                            tuple(str(p) for p in doc.get('parts', [])), str(doc.get('time', ''))))
        except (ValueError, KeyError, TypeError, RecursionError):
            raise RobodataError(f'{path}: line {number} is not a copy record') from None
    return out
