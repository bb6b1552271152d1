"""What has arrived in a watched folder, each recording as one unit, and whether its writer has finished it.

A watcher must never take a recording early. rosbag2 writes a bag folder's storage file first and its
metadata.yaml when the bag closes, and its MCAP writer can leave the file unchanged for seconds between chunk
flushes (a low rate, a paused recorder): a file that has stopped changing is not a finished file. So:

- a folder holding storage files is one bag (named after the folder), never loose files: whether it has a
  metadata.yaml yet or not, and whatever its storage file is called (`run_c/bag.mcap`); only a folder of
  several storage files not named as one bag's parts (`logs/a.mcap`, `logs/b.mcap`) holds bare files, as the
  watched folder itself does;
- an MCAP file is finished when it ends in its footer and summary (the writer's last records); a bag folder
  without metadata.yaml, or a bare .mcap, waits for that; a sqlite3 file waits while its journal is beside it
  or while it is shorter than its header's page count (a copy cut short);
- anything else (a video, a ROS 1 bag) is finished once it stops changing, as before.

A file that never gets its end (the recorder was killed) is still taken, as it is, once it has not changed for a
long time (the watcher's `incomplete_after`): it is salvaged as an `incomplete` episode, and the whole recording
replaces it if it arrives later.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from ros_robodata.bag.reader import MCAP_MAGIC, STORAGE_SUFFIXES
from ros_robodata.dataset.sources import METADATA_FILE, Recording, recording_at

__all__ = ['find_arrivals', 'mcap_is_whole', 'sqlite_is_whole', 'unfinished']

_FOOTER_OPCODE = 0x02
_FOOTER_BYTES = 1 + 8 + 20  # opcode, record length, summary start, summary offset start, summary crc
SQLITE_SIDE_FILES = ('-journal', '-wal')  # beside a .db3 while a writer has it open (rollback journal or WAL)


def find_arrivals(folder: Path, skip: Path | None = None) -> tuple[list[Recording], list[tuple[Path, str]]]:
    """Every recording at or under `folder` (not `folder` itself, nor anything inside `skip`, the dataset), and
    the paths that could not be looked at, each with why (no permission, gone while being listed)."""
    found: list[Recording] = []
    unreadable: list[tuple[Path, str]] = []
    _scan(folder, found, unreadable, skip.resolve() if skip else None, top=True)
    return found, unreadable


def _scan(folder: Path, found: list[Recording], unreadable: list[tuple[Path, str]], skip: Path | None,
          top: bool) -> None:
    if skip is not None and folder.resolve() == skip:
        return  # the dataset's own bags, when it lies inside the watched folder
    try:
        entries = sorted(e for e in folder.iterdir() if not e.name.startswith('.'))
        unit = None if top else _bag_unit(folder, entries)
    except OSError as err:
        unreadable.append((folder, err.strerror or str(err)))
        return
    if unit is not None:
        found.append(unit)
        if unit.kind == 'lerobot':
            return
        entries = [e for e in entries if e.suffix not in STORAGE_SUFFIXES and e.name != METADATA_FILE]
    for entry in entries:
        try:
            if entry.is_dir() and not entry.is_symlink():
                _scan(entry, found, unreadable, skip, top=False)
            elif (recording := recording_at(entry)) is not None:
                found.append(recording)
        except OSError as err:
            unreadable.append((entry, err.strerror or str(err)))


def _bag_unit(folder: Path, entries: list[Path]) -> Recording | None:
    """The bag `folder` is, when it holds one: a rosbag2 folder (metadata.yaml, or parts named after it), a
    LeRobot dataset, or a folder holding a single storage file and no metadata.yaml yet (a recorder writing)."""
    found = recording_at(folder)
    if found is not None:
        return found
    storage = [e for e in entries if e.suffix in STORAGE_SUFFIXES and e.is_file()]
    if len(storage) == 1:
        return Recording('bag', folder, (storage[0],))
    return None


def mcap_is_whole(path: Path) -> bool:
    """The file ends as a finished MCAP does: its footer record (pointing at a summary section), then the magic."""
    try:
        with path.open('rb') as f:
            size = f.seek(0, os.SEEK_END)
            if size < len(MCAP_MAGIC) * 2 + _FOOTER_BYTES:
                return False
            f.seek(size - len(MCAP_MAGIC) - _FOOTER_BYTES)
            tail = f.read(_FOOTER_BYTES + len(MCAP_MAGIC))
    except OSError:
        return False
    if tail[-len(MCAP_MAGIC):] != MCAP_MAGIC or tail[0] != _FOOTER_OPCODE:
        return False
    length, summary_start = struct.unpack_from('<QQ', tail, 1)
    return length == 20 and 0 < summary_start < size


def unfinished(recording: Recording) -> str:
    """Why the recording's writer has not finished it yet ('' when it has, as far as its files can tell)."""
    if recording.kind not in ('bag', 'bag_file'):
        return ''
    for file in recording.files:
        if file.suffix == '.mcap' and not mcap_is_whole(file):
            return f'{file.name} has no footer yet (still being written?)'
        if file.suffix == '.db3' and any(file.with_name(file.name + side).exists() for side in SQLITE_SIDE_FILES):
            return f'{file.name} has its journal beside it (still open by its writer?)'
        if file.suffix == '.db3' and not sqlite_is_whole(file):
            return f'{file.name} is shorter than its header says (still being copied?)'
    return ''


def sqlite_is_whole(path: Path) -> bool:
    """The file holds every page its SQLite header counts (a copy cut short does not); a header too old to count
    its pages (written before SQLite 3.7.0) is taken as whole."""
    try:
        with path.open('rb') as f:
            header = f.read(100)
            size = f.seek(0, os.SEEK_END)
    except OSError:
        return False
    if len(header) < 100 or not header.startswith(b'SQLite format 3\x00'):
        return False
    page_size = struct.unpack_from('>H', header, 16)[0]
    page_size = 65536 if page_size == 1 else page_size
    changes, pages, valid_for = (struct.unpack_from('>I', header, at)[0] for at in (24, 28, 92))
    if pages == 0 or changes != valid_for:
        return True  # the in-header size is not kept by this writer
    return size == pages * page_size
