"""tombstones/ID.json: what is left of a retired episode: that it existed, its files' hashes, when, who and why.

Never the data: no bag, no label, no frame. A release that held the episode can then say which of its episodes were
withdrawn and when, and the catalog keeps listing the episode as retired after a rebuild.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ros_robodata import untrusted
from ros_robodata.errors import RobodataError

__all__ = ['TOMBSTONES_DIR', 'read_tombstones', 'write_tombstone']

TOMBSTONES_DIR = 'tombstones'


def write_tombstone(dataset_root: Path, episode_id: str, stone: dict[str, Any]) -> Path:
    """Write an episode's tombstone (owner and group may read it; it names a participant's pseudonym).

    Args:
        dataset_root: the dataset's folder.
        episode_id: the retired episode (already a checked id: it names a file).
        stone: id, time, who, why, files' sha256, copies removed, releases affected.

    Raises:
        OSError: it cannot be written.
    """
    folder = dataset_root / TOMBSTONES_DIR
    folder.mkdir(mode=0o750, exist_ok=True)
    path = folder / f'{episode_id}.json'
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
    with os.fdopen(fd, 'w', encoding='utf-8') as f:
        f.write(json.dumps(stone, indent=1, sort_keys=True) + '\n')
        f.flush()
        os.fsync(f.fileno())
    return path


def read_tombstones(dataset_root: Path) -> dict[str, dict[str, Any]]:
    """Every retired episode's tombstone by id; a file that is not one is skipped (`retire` wrote them all)."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted((dataset_root / TOMBSTONES_DIR).glob('*.json')):
        try:
            stone = untrusted.read_json(path)
        except RobodataError:
            continue
        if isinstance(stone, dict) and stone.get('id') == path.stem:
            out[path.stem] = stone
    return out
