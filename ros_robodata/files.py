"""Writing files whole or not at all, once: every write of dataset.yaml, episode.yaml, metadata.yaml, the sidecars
(events.json, quality.json) and the exports goes through here."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

from ros_robodata import untrusted
from ros_robodata.errors import FileWriteError, RobodataError

T = TypeVar('T')

# libyaml's emitter where PyYAML was built with it: ~20x faster than the pure-Python one, same text.
_DUMPER = getattr(yaml, 'CSafeDumper', yaml.SafeDumper)


def file_sha256(path: Path, chunk: int = 1 << 20) -> str:
    """A file's SHA-256, read in blocks."""
    digest = hashlib.sha256()
    with path.open('rb') as f:
        while block := f.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def free_bytes(path: Path) -> int | None:
    """The free space on the disk holding `path` (None where it cannot be read)."""
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return None


def mib(n: int | None) -> str:
    """A byte count as a person reads a disk's room: '12.5 MiB' ('unknown' for None)."""
    return 'unknown' if n is None else f'{n / 2**20:.1f} MiB'


# A write that failed for the disk, said as what it is (the rest by the OS's own words).
STORAGE_ERRNOS = {errno.ENOSPC: 'the disk is full', errno.EDQUOT: 'the disk quota is used up',
                  errno.EROFS: 'the file system is read-only', errno.EACCES: 'permission denied',
                  errno.EPERM: 'permission denied'}


def write_cause(err: BaseException) -> str:
    """Why a write failed, in a person's words: 'the disk is full', 'the file system is read-only', ..."""
    code = getattr(err, 'errno', None) or 0
    more = {errno.EISDIR: 'a folder is where the file belongs (move it away)',
            errno.ENOTDIR: 'a file is where a folder belongs'}
    return STORAGE_ERRNOS.get(code) or more.get(code) or getattr(err, 'strerror', None) or str(err)


def write_atomic(path: Path, data: bytes | str, *, durable: bool = False) -> bool:
    """Write `data` to `path` under a temporary name, then rename it over: a crash leaves the previous file (or
    none), never half of one. A file already holding exactly these bytes is left alone, mtime and all, so a
    rerun changes nothing on disk. `durable` also fsyncs before the rename. Returns whether it wrote."""
    raw = data.encode('utf-8') if isinstance(data, str) else data
    try:
        if path.stat().st_size == len(raw) and path.read_bytes() == raw:
            return False
    except OSError:
        pass
    tmp = path.with_name(f'.{path.name}.tmp')
    try:
        with tmp.open('wb') as f:
            f.write(raw)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as err:  # a full disk, no permission, a folder where the file belongs: one line, no leftover
        tmp.unlink(missing_ok=True)
        raise FileWriteError(f'{path}: cannot write: {write_cause(err)}') from None
    except BaseException:  # Ctrl-C: the temporary file does not outlive the write
        tmp.unlink(missing_ok=True)
        raise
    return True


def leftover_temporaries(folder: Path) -> list[Path]:
    """Temporary files write_atomic left in `folder` when its command was killed (SIGKILL, a power cut): the file
    they were to replace is intact, they are clutter that `robodata repair` removes."""
    try:
        return sorted(p for p in folder.glob('.*.tmp') if p.is_file() and not p.is_symlink())
    except OSError:
        return []


def write_json(path: Path, data: Any, *, indent: int = 1, durable: bool = False) -> bool:
    """JSON with a trailing newline, through write_atomic."""
    return write_atomic(path, json.dumps(data, indent=indent) + '\n', durable=durable)


def read_yaml(path: Path, error: type[RobodataError] = RobodataError) -> Any:
    """A YAML file read as untrusted (untrusted.read_yaml: a regular file, UTF-8, no alias bomb, no absurd numbers)
    with the safe loader; anything wrong is one `error` line naming the file."""
    return untrusted.read_yaml(path, error)


def write_yaml(path: Path, data: Any, *, durable: bool = False) -> bool:
    """YAML (keys in the order given, block style) through write_atomic."""
    text = yaml.dump(data, Dumper=_DUMPER, sort_keys=False, default_flow_style=False, allow_unicode=True)
    return write_atomic(path, text, durable=durable)


def replace_unless_same(tmp: Path, path: Path) -> None:
    """Move a file another library wrote (a video, a point cloud) over `path`, or drop it when `path` already
    holds the same bytes."""
    try:
        if path.stat().st_size == tmp.stat().st_size and path.read_bytes() == tmp.read_bytes():
            tmp.unlink()
            return
    except OSError:
        pass
    os.replace(tmp, path)


_PART = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_.-]*$')


def safe_path(root: Path, *parts: str) -> Path:
    """root/parts..., refused unless every part is a plain name and the result resolves inside root."""
    for part in parts:
        if not _PART.match(part) or '..' in part:
            raise RobodataError(f'{part!r} is not a safe file or folder name')
    path = root.joinpath(*parts)
    if not path.resolve().is_relative_to(root.resolve()):
        raise RobodataError(f'{path}: resolves outside {root}')
    return path


def replace_folder(folder: Path, staging: Path, write: Callable[[Path], T], *, inner: Path = Path()) -> T:
    """Write a folder again without touching the one there until the new one is whole: `write(staging)` fills
    `staging / inner`, which then takes `folder`'s place; on any failure `folder` stays as it was and the staging
    folder is removed. Needs the room of both while it writes. Returns what `write` returned."""
    shutil.rmtree(staging, ignore_errors=True)  # one a killed run left
    try:
        result = write(staging)
        replaced = folder.with_name(f'.{folder.name}.replaced')
        shutil.rmtree(replaced, ignore_errors=True)
        os.replace(folder, replaced)
        try:
            os.replace(staging / inner, folder)
        except OSError:
            os.replace(replaced, folder)
            raise
        shutil.rmtree(replaced, ignore_errors=True)
        return result
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        with contextlib.suppress(OSError):
            staging.parent.rmdir()  # the staging area, when nothing else is staged there
