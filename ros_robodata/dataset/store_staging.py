"""A dataset in object storage (s3://bucket/path, any fsspec URL) worked on where it lies: its small files (the
catalog, dataset.yaml, each episode's episode.yaml and sidecars, the bags' metadata.yaml) are staged in a folder of
the user's cache, the command runs on that copy while each job downloads its own episode's bag, and the files the
command wrote or changed are put back. One writer at a time: two runs on the same dataset at once would each put
back their own catalog. Credentials come from the environment only (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
AWS_ENDPOINT_URL for an S3-compatible store...) and never appear in a message."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sqlite3
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from ros_robodata.cluster.remote_jobs import Listing, RemoteRoot
from ros_robodata.cluster.result_cache import default_folder
from ros_robodata.errors import DatasetError, RobodataError

BAG_DATA = re.compile(r'^episodes/[^/]+/bag/(?!metadata\.yaml$)')  # a bag's data files: read by the jobs only
_NOT_PUT = ('-wal', '-shm', '.tmp')


def _store(url: str) -> tuple[Any, str]:
    try:
        import fsspec  # optional dependency: pip install 'ros_robodata[objects]'

        fs, root = fsspec.core.url_to_fs(url)
    except ImportError as err:
        raise RobodataError(f"{url}: object storage needs fsspec and the store's package ({err.name or err}): "
                            "pip install 'ros_robodata[objects]'") from None
    except (ValueError, OSError) as err:
        raise RobodataError(f'{url}: cannot open the object store: {type(err).__name__}') from None
    return fs, str(root).rstrip('/')


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tag(info: dict[str, Any]) -> str:
    """What tells one version of a stored file from another: its ETag (S3), md5 or modification time."""
    for key in ('ETag', 'etag', 'md5Hash', 'md5', 'LastModified', 'mtime', 'last_modified'):
        if info.get(key) is not None:
            return str(info[key]).strip('"')
    return ''


def _mtime(info: dict[str, Any]) -> float | None:
    value = info.get('LastModified') or info.get('mtime') or info.get('last_modified')
    if isinstance(value, datetime):
        return value.timestamp()
    return float(value) if isinstance(value, (int, float)) else None


class StagedDataset:
    """`with StagedDataset(url) as staged:` the dataset's small files in `staged.local`; `staged.push()` puts back
    what the command wrote.

    Args:
        url: the dataset's URL in object storage.
        cache: where staged copies go; $XDG_CACHE_HOME/ros_robodata/staged (or ~/.cache/...) when None.

    Raises:
        RobodataError: the store cannot be reached, or its package is not installed.
        DatasetError: no dataset at that URL (no dataset.yaml).
    """

    def __init__(self, url: str, cache: Path | None = None) -> None:
        self.url = url.rstrip('/')
        base = cache or default_folder().parent / 'staged'
        self.local = base / hashlib.sha256(self.url.encode()).hexdigest()[:16] / (self.url.rsplit('/', 1)[-1] or 'ds')
        self.listing: dict[str, Listing] = {}
        self._pulled: dict[str, str] = {}

    def __enter__(self) -> StagedDataset:
        fs, root = _store(self.url)
        try:
            found: dict[str, dict[str, Any]] = fs.find(root, detail=True)
        except (OSError, ValueError) as err:
            raise RobodataError(f'{self.url}: cannot list the object store: {type(err).__name__}') from None
        files = {path[len(root):].lstrip('/'): info for path, info in found.items() if info.get('type') != 'directory'}
        if 'dataset.yaml' not in files:
            raise DatasetError(f'{self.url}: not a ros_robodata dataset (no dataset.yaml there)')
        shutil.rmtree(self.local, ignore_errors=True)  # what an earlier run staged may be stale
        self.local.mkdir(parents=True, mode=0o700)
        by_folder: dict[str, list[tuple[str, int, str]]] = {}
        for rel, info in sorted(files.items()):
            if BAG_DATA.match(rel):  # not staged: known by the store's listing (the staged files by their bytes)
                parts = rel.split('/')
                by_folder.setdefault('/'.join(parts[:2]), []).append(
                    ('/'.join(parts[2:]), int(info.get('size') or 0), _tag(info)))
                continue
            local = self.local / rel
            local.parent.mkdir(parents=True, exist_ok=True)
            try:
                fs.get_file(f'{root}/{rel}', str(local))
            except (OSError, ValueError) as err:
                raise RobodataError(f'{self.url}/{rel}: cannot read from the object store: '
                                    f'{type(err).__name__}') from None
            if (when := _mtime(info)) is not None:
                os.utime(local, (when, when))
            self._pulled[rel] = _sha256(local)
        self.listing = {folder: tuple(entries) for folder, entries in by_folder.items()}
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        return None

    def remote_root(self) -> RemoteRoot:
        """Where the jobs fetch their episodes from, and what their results depend on."""
        return RemoteRoot(self.url, self.local, self.listing)

    def push(self) -> list[str]:
        """Put back every file the command wrote or changed (the catalog folded first); the paths put.

        Raises:
            RobodataError: the store refused a file (those before it are put; a rerun puts the rest).
        """
        catalog = self.local / 'catalog.sqlite'
        if catalog.is_file():
            try:
                with sqlite3.connect(catalog) as db:
                    db.execute('PRAGMA wal_checkpoint(TRUNCATE)')
            except sqlite3.Error:
                pass
        fs, root = _store(self.url)
        put: list[str] = []
        for path in sorted(p for p in self.local.rglob('*') if p.is_file()):
            rel = path.relative_to(self.local).as_posix()
            if rel.endswith(_NOT_PUT) or path.name.startswith('.'):
                continue
            digest = _sha256(path)
            if self._pulled.get(rel) == digest:
                continue
            try:
                fs.put_file(str(path), f'{root}/{rel}')
            except (OSError, ValueError) as err:
                raise RobodataError(f'{self.url}/{rel}: cannot write to the object store: '
                                    f'{type(err).__name__}') from None
            self._pulled[rel] = digest
            put.append(rel)
        return put
