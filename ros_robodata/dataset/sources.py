"""Recordings made elsewhere, found on disk: rosbag2 bags (a folder or a bare .mcap/.db3), ROS 1 bags and
videos.

A user points `robodata import` (or any analysis command) at a bag, a video, or a folder of them; this
module says which recordings are there, without reading their messages, and gives each a content id
that stays the same wherever the files are copied to, so the same recording is never imported twice.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ros_robodata.bag.reader import STORAGE_SUFFIXES
from ros_robodata.errors import RobodataError
from ros_robodata.vocabulary import VIDEO_SUFFIXES

METADATA_FILE = 'metadata.yaml'
# Files up to this size are hashed whole; larger ones by a fixed sample, so identifying a recording costs the
# same for 10 MB and 100 GB.
WHOLE_FILE_BYTES = 16 << 20
SAMPLE_BLOCKS = 32
SAMPLE_BLOCK_BYTES = 64 << 10
# What the analysis commands cannot read where it lies (imported first, into a dataset).
IMPORT_FIRST = {'video': 'a video', 'lerobot': 'a LeRobot dataset', 'rosbag1': 'a ROS 1 bag'}
_SPLIT_PART = re.compile(r'^(?P<base>.+)_(?P<index>\d+)$')


ROSBAG1_SUFFIX = '.bag'


@dataclass(frozen=True)
class Recording:
    """One recording on disk: `kind` is 'bag' (a rosbag2 folder), 'bag_file' (a bare .mcap/.db3 outside any
    bag folder), 'rosbag1' (a ROS 1 .bag file), 'video' or 'lerobot' (a LeRobot dataset folder); `files` are the
    storage (or video, or parquet and video) files that hold its content. `origin` is set on a rosbag2 copy made
    from another recording (a converted ROS 1 bag): its identity, name and provenance are the origin's."""

    kind: str
    path: Path
    files: tuple[Path, ...]
    origin: Recording | None = None

    @property
    def name(self) -> str:
        """The recording's own name: the bag folder's name, or the file's name without its suffix."""
        if self.origin is not None:
            return self.origin.name
        return self.path.name if self.kind in ('bag', 'lerobot') else self.path.stem

    @property
    def source(self) -> Recording:
        """The recording as the user gave it: the origin of a conversion, else this one."""
        return self.origin if self.origin is not None else self

    @property
    def is_bag(self) -> bool:
        return self.kind in ('bag', 'bag_file')

    @property
    def size_bytes(self) -> int:
        return sum(f.stat().st_size for f in self.files)

    @property
    def has_metadata(self) -> bool:
        return self.kind == 'bag' and (self.path / METADATA_FILE).is_file()


def is_bag_folder(path: Path) -> bool:
    """A folder that is itself one bag: it has metadata.yaml, or storage files named like one bag's parts
    (rosbag2 names them <folder>_0.mcap, <folder>_1.mcap, ...) and no metadata.yaml yet (a recorder that
    was killed, or one still writing)."""
    if not path.is_dir():
        return False
    if (path / METADATA_FILE).is_file():
        return True
    storage = [p for p in path.iterdir() if p.suffix in STORAGE_SUFFIXES and p.is_file()]
    return bool(storage) and all(_part_of(p, path.name) for p in storage)


def _part_of(file: Path, folder_name: str) -> bool:
    match = _SPLIT_PART.match(file.stem)
    return file.stem == folder_name or (match is not None and match['base'] == folder_name)


def recording_at(path: Path) -> Recording | None:
    """The recording `path` itself is (a bag folder, a bare bag file, a video), or None."""
    if path.is_file():
        if path.suffix in STORAGE_SUFFIXES:
            return Recording('bag_file', path, (path,))
        if path.suffix.lower() in VIDEO_SUFFIXES:
            return Recording('video', path, (path,))
        if path.suffix == ROSBAG1_SUFFIX:
            return Recording('rosbag1', path, (path,))
        return None
    if is_bag_folder(path):
        return Recording('bag', path, tuple(_bag_files(path)))
    if is_lerobot_folder(path):
        files = [path / 'meta' / 'info.json', *sorted(p for p in (path / 'data').rglob('*.parquet') if p.is_file())]
        return Recording('lerobot', path, tuple(files + sorted(p for p in (path / 'videos').rglob('*.mp4'))))
    return None


def is_lerobot_folder(path: Path) -> bool:
    """A LeRobot dataset: meta/info.json naming a codebase_version, and data/ beside it."""
    info = path / 'meta' / 'info.json'
    if not (info.is_file() and (path / 'data').is_dir()):
        return False
    try:
        data = json.loads(info.read_text(encoding='utf-8'))
    except (OSError, ValueError):
        return True  # laid out as one: the importer says what is wrong with its info.json
    return not isinstance(data, dict) or 'codebase_version' in data


def _bag_files(path: Path) -> list[Path]:
    storage = sorted(p for p in path.iterdir() if p.suffix in STORAGE_SUFFIXES and p.is_file())
    return storage


def find_recordings(paths: Iterable[str | os.PathLike[str]], *, videos: bool = True) -> list[Recording]:
    """Every recording at or under `paths`, in a stable order; a bag folder is never searched inside.
    RobodataError for a path that does not exist or holds no recording at all."""
    found: list[Recording] = []
    for given in paths:
        path = Path(given)
        if not path.exists():
            raise RobodataError(f'{path}: no such file or directory')
        here = recording_at(path)
        if here is not None:
            if here.kind in IMPORT_FIRST and not videos:
                raise RobodataError(f'{path}: {IMPORT_FIRST[here.kind]}, not a rosbag2 bag: run `robodata import '
                                    f'{path} --dataset D` first')
            found.append(here)
            continue
        if path.is_file():
            raise RobodataError(f'{path}: not a bag or a video (expected a bag folder, .mcap, .db3, a ROS 1 .bag, '
                                f'or one of {", ".join(VIDEO_SUFFIXES)})')
        inside = list(_walk(path, videos))
        if not inside:
            kinds = 'bags or videos' if videos else 'bags'
            raise RobodataError(f'{path}: no {kinds} in this folder (looked for metadata.yaml, .mcap and .db3 files'
                                + (', and videos' if videos else '') + ')')
        found.extend(inside)
    return found


def _walk(folder: Path, videos: bool) -> Iterable[Recording]:
    try:
        entries = sorted(folder.iterdir())
    except OSError as err:
        raise RobodataError(f'{folder}: cannot list: {err.strerror or err}') from None
    for entry in entries:
        if entry.name.startswith('.'):
            continue  # hidden: our own staging folders, editors' temporary files
        recording = recording_at(entry)
        if recording is not None:
            if recording.kind not in IMPORT_FIRST or videos:
                yield recording
        elif entry.is_dir() and not entry.is_symlink():
            yield from _walk(entry, videos)


HEAD_BYTES = 1 << 20  # what tells a recording's later, longer copy: its first MiB (header, schemas, first chunks)


def head_of(file: Path, length: int | None = None) -> tuple[int, str] | None:
    """(bytes, sha256) of the first `length` (default: up to HEAD_BYTES) bytes of an MCAP file, None for other
    files or when it is shorter than `length`. MCAP is written front to back, so a partial copy of a recording
    and the whole one share their first bytes; a sqlite3 file rewrites its pages and has no such head."""
    if file.suffix != '.mcap':
        return None
    try:
        with file.open('rb') as f:
            data = f.read(HEAD_BYTES if length is None else length)
    except OSError:
        return None
    if length is not None and len(data) < length:
        return None
    return len(data), hashlib.sha256(data).hexdigest()


def content_id(files: Iterable[Path]) -> str:
    """sha256 over each file's size and content: whole for files up to 16 MiB, else 32 blocks of 64 KiB spread
    evenly from the first byte to the last. Two recordings share it only when they hold the same bytes (any
    two different recordings differ in their stamps throughout), whatever their names or folders."""
    digest = hashlib.sha256(b'ros_robodata.content_id/1')
    for file in files:
        size = file.stat().st_size
        digest.update(size.to_bytes(8, 'little'))
        with file.open('rb') as f:
            if size <= WHOLE_FILE_BYTES:
                while block := f.read(1 << 20):
                    digest.update(block)
                continue
            last = size - SAMPLE_BLOCK_BYTES
            for i in range(SAMPLE_BLOCKS):
                f.seek(last * i // (SAMPLE_BLOCKS - 1))
                digest.update(f.read(SAMPLE_BLOCK_BYTES))
    return digest.hexdigest()


def file_state(files: Iterable[Path]) -> tuple[tuple[str, int, int], ...]:
    """(name, size, mtime_ns) of each file: what a watcher compares to tell a file still being written."""
    state = []
    for file in files:
        try:
            st = os.stat(file)
        except OSError:
            continue
        state.append((file.name, st.st_size, st.st_mtime_ns))
    return tuple(state)
