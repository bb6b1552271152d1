"""Jobs whose episode lives in object storage (s3://, gs://: fsspec URLs): the driver works on a staged copy of the
dataset without its bags, and each job, wherever it runs, first downloads its episode's folder to a temporary
folder of its own, runs there and deletes it. Credentials come from the environment of each process (the
store's usual variables: AWS_ACCESS_KEY_ID, AWS_ENDPOINT_URL...), never from a job or a log line."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from ros_robodata.errors import RobodataError

J = TypeVar('J')
R = TypeVar('R')

Listing = tuple[tuple[str, int, str], ...]  # (path inside the episode folder, size, the store's tag), sorted


@dataclass(frozen=True)
class RemoteRoot:
    """A dataset in object storage and its staged copy on the driver.

    Args:
        url: the dataset's URL (s3://bucket/path).
        local: the staged copy (everything but the bags' data files).
        listing: per episode folder ("episodes/<id>"), its bag data files in the store (path, size, tag): with the
            staged files, what a result depends on.
    """

    url: str
    local: Path
    listing: dict[str, Listing]

    def wrap(self, job: Any) -> Fetched[Any]:
        """`job` (its `bag` inside the staged copy) as a job that downloads its episode's folder first."""
        rel = Path(job.bag).absolute().relative_to(self.local.absolute())
        folder = '/'.join(rel.parts[:2])
        return Fetched(job, f'{self.url.rstrip("/")}/{folder}', self.local.absolute() / folder,
                       self.listing.get(folder, ()))


@dataclass(frozen=True)
class Fetched(Generic[J]):
    """A job, the episode folder to download before it runs, and where its paths point on the driver."""

    job: J
    url: str
    staged: Path
    listing: Listing


def download_folder(url: str, dest: Path) -> None:
    """Every file under `url` into `dest`, as the same relative paths.

    Raises:
        RobodataError: the store cannot be reached or read (the line names the URL, never a credential).
    """
    import fsspec  # optional dependency: only for datasets in object storage

    try:
        fs, root = fsspec.core.url_to_fs(url)
        root = root.rstrip('/')
        for remote in fs.find(root):
            local = dest / Path(remote[len(root):].lstrip('/'))
            local.parent.mkdir(parents=True, exist_ok=True)
            fs.get_file(remote, str(local))
    except (OSError, ValueError) as err:
        raise RobodataError(f'{url}: cannot read from the object store: {type(err).__name__}') from None


def run_fetched(fn: Callable[[J], R], fetched: Fetched[J]) -> R:
    """Worker: download the episode's folder, run `fn` on the job with its paths moved there, clean up."""
    with tempfile.TemporaryDirectory(prefix='robodata-episode-') as tmp:
        copy = Path(tmp) / fetched.staged.name
        download_folder(fetched.url, copy)
        return fn(_rebased(fetched.job, fetched.staged, copy))


def _rebased(job: J, old: Path, new: Path) -> J:
    """The job with every path field under `old` moved under `new`."""
    changes = {}
    for field in dataclasses.fields(job):  # type: ignore[arg-type]
        value = getattr(job, field.name)
        if isinstance(value, Path) and (value == old or old in value.parents):
            changes[field.name] = new / value.relative_to(old)
    return dataclasses.replace(job, **changes)  # type: ignore[type-var]


def is_store_url(text: str | os.PathLike[str]) -> bool:
    """An fsspec URL of an object store (s3://, gs://, az://...), not a local path or file://."""
    scheme, sep, _ = str(text).partition('://')
    return bool(sep) and scheme not in ('', 'file', 'local')
