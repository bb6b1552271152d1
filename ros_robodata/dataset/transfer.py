"""How a recording's files get into an episode's bag folder: copied (hashed on the way, so the source is read
once), linked where they lie, or moved (a hard link, then the source goes once the episode is in)."""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.sources import METADATA_FILE, Recording
from ros_robodata.errors import RobodataError
from ros_robodata.files import free_bytes, mib

__all__ = ['check_room', 'copy_hashing', 'free_text', 'remove_source', 'transfer']

ROOM_MARGIN_BYTES = 8 << 20  # episode.yaml, the catalog's growth, metadata: what an import writes beside the bag


def free_text(path: Path) -> str:
    """The free space on `path`'s disk, as a person reads it."""
    return mib(free_bytes(path))


def check_room(dataset: Dataset, recording: Recording, method: str) -> None:
    """Refuse, before anything is written, an import the dataset's disk has no room for: a copy needs the
    recording's size there; a link needs none, nor a move within one file system (a hard link).

    Raises:
        RobodataError: Naming the space needed and the space free.
    """
    if method == 'link':
        return
    if method == 'move':
        with contextlib.suppress(OSError):
            if os.stat(recording.files[0]).st_dev == os.stat(dataset.root).st_dev:
                return
    need = recording.size_bytes + ROOM_MARGIN_BYTES
    free = free_bytes(dataset.root)
    if free is not None and free < need:
        raise RobodataError(f'{recording.path}: importing it needs about {mib(need)} free on the disk of '
                            f'{dataset.root}; {mib(free)} is free. Free some space (or --link it where it lies); '
                            'nothing of it was imported')


def transfer(recording: Recording, bag: Path, method: str) -> dict[str, str]:
    """Put the recording's storage files (and its metadata.yaml) into `bag`; returns the sha256 of each file
    copied (hashed on the way, so a copy reads the source once)."""
    hashes: dict[str, str] = {}
    files = list(recording.files)
    if recording.has_metadata:
        files.append(recording.path / METADATA_FILE)
    for file in files:
        target = bag / file.name
        if file.name == METADATA_FILE or method == 'copy':
            hashes[file.name] = copy_hashing(file, target)
        elif method == 'link':
            target.symlink_to(file.resolve())
        else:  # move: a hard link is instant on the same filesystem; the source goes once the episode is in
            try:
                os.link(file, target)
            except OSError:
                hashes[file.name] = copy_hashing(file, target)
    return hashes


def copy_hashing(src: Path, dst: Path, chunk: int = 4 << 20) -> str:
    digest = hashlib.sha256()
    with src.open('rb') as fin, dst.open('wb') as fout:
        while block := fin.read(chunk):
            digest.update(block)
            fout.write(block)
        fout.flush()
        os.fsync(fout.fileno())
    return digest.hexdigest()


def remove_source(recording: Recording) -> None:
    for file in recording.files:
        file.unlink(missing_ok=True)
    if recording.kind == 'bag':
        (recording.path / METADATA_FILE).unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            recording.path.rmdir()  # only when nothing else is left in it
