"""Episodes built out of sight and put into place whole: what importing (and registering) share.

An episode is made in a hidden staging folder (`episodes/.<id>.importing/`) and renamed over its reserved empty
folder only when its bag, episode.yaml and checksums are whole, so a process killed midway leaves nothing that
looks like an episode. One importer works in a dataset at a time; taking the lock clears what a killed one left
and lists an episode that was renamed into place but never reached the catalog.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ros_robodata.dataset.audit import append_audit
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.episode import Episode, write_episode
from ros_robodata.errors import DatasetError

STAGING_SUFFIX = '.importing'
REPLACED_SUFFIX = '.replaced'  # a partial episode moved aside while the whole recording takes its place
LOCK_FILE = '.import.lock'
CARRIED_OVER = ('annotations.json',)  # what people added to a partial episode: kept when the whole one replaces it


@contextmanager
def import_lock(dataset: Dataset) -> Iterator[None]:
    """One importer per dataset at a time; taking the lock also clears what a killed import left behind. The lock
    file goes when the import ends, so a dataset is left as it was (a waiting importer that locked the file just
    removed sees so and takes the new one)."""
    dataset.episodes_dir.mkdir(parents=True, exist_ok=True)
    path = dataset.episodes_dir / LOCK_FILE
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode('ascii', 'replace').strip() or 'another process'
            os.close(fd)
            raise DatasetError(f'{dataset.root}: another import is running into this dataset (pid {holder}); '
                               'wait for it or stop it') from None
        try:
            current = os.stat(path).st_ino
        except FileNotFoundError:
            current = None
        if current == os.fstat(fd).st_ino:
            break
        os.close(fd)  # the importer before released and removed it: lock the file that is there now
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        _clear_staging(dataset)
        _reconcile(dataset)
        yield
    finally:
        path.unlink(missing_ok=True)  # while still holding it
        os.close(fd)


def _clear_staging(dataset: Dataset) -> None:
    """Staging folders of an import that was killed, and the empty folders they had reserved."""
    for staging in dataset.episodes_dir.glob(f'.*{STAGING_SUFFIX}'):
        shutil.rmtree(staging, ignore_errors=True)
        reserved = dataset.episodes_dir / staging.name[1:-len(STAGING_SUFFIX)]
        if reserved.is_dir() and not any(reserved.iterdir()):
            reserved.rmdir()
    for aside in dataset.episodes_dir.glob(f'.*{REPLACED_SUFFIX}'):  # killed between the two renames of a replace
        episode = dataset.episodes_dir / aside.name[1:-len(REPLACED_SUFFIX)]
        if episode.exists():
            shutil.rmtree(aside, ignore_errors=True)  # the whole one is in place
        else:
            os.replace(aside, episode)  # the partial one goes back; the whole recording is taken again


def _reconcile(dataset: Dataset) -> None:
    """Episode folders renamed into place by an import killed before it reached the catalog."""
    listed = {row.id for row in dataset.catalog.query()}
    for episode_id in dataset.episode_ids():
        if episode_id not in listed:
            dataset.save_episode(dataset.episode(episode_id))


def imported_from(dataset: Dataset, cid: str) -> dict[str, Episode]:
    """The dataset's episodes imported from the recording with content id `cid`, by id."""
    found = {}
    for episode_id in dataset.catalog.with_source(cid):
        try:
            found[episode_id] = dataset.episode(episode_id)
        except DatasetError:
            continue
    return found


def commit_episode(dataset: Dataset, staging: Path, episode: Episode, who: str | None, *,
                   replaces: Episode | None = None) -> None:
    """episode.yaml into the staging folder, then the folder into place (replacing its empty reservation, or the
    partial episode `replaces` of the same recording), then the catalog row and the audit entry."""
    write_episode(staging / 'episode.yaml', episode)
    target = dataset.episode_dir(episode.id)
    if replaces is None:
        os.replace(staging, target)
    else:
        for name in CARRIED_OVER:
            if (target / name).is_file():
                shutil.copy2(target / name, staging / name)
        aside = dataset.episodes_dir / f'.{episode.id}{REPLACED_SUFFIX}'
        shutil.rmtree(aside, ignore_errors=True)
        os.replace(target, aside)
        os.replace(staging, target)
        shutil.rmtree(aside, ignore_errors=True)
    dataset.catalog.upsert(episode, **dataset.bag_stats(episode))
    if replaces is not None:
        append_audit(dataset.audit_path, 'replace_episode', episode.id, who, source=episode.source.get('path'),
                     content_id=episode.source.get('content_id'),
                     replaced_content_id=replaces.source.get('content_id'), replaced_status=replaces.status,
                     reason='the whole recording arrived after a partial one was imported')
        return
    append_audit(dataset.audit_path, 'import_episode', episode.id, who, source=episode.source.get('path'),
                 method=episode.source.get('method'), content_id=episode.source.get('content_id'),
                 window=episode.source.get('window'))


@contextmanager
def staging_folder(dataset: Dataset, episode_id: str) -> Iterator[Path]:
    """A hidden folder to build the episode in; removed (with its reservation) unless committed."""
    staging = dataset.episodes_dir / f'.{episode_id}{STAGING_SUFFIX}'
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        yield staging
    except BaseException:
        discard_staging(dataset, episode_id, staging)
        raise


def discard_staging(dataset: Dataset, episode_id: str, staging: Path) -> None:
    """An episode that will not be committed: its staging folder and its empty reservation, gone."""
    shutil.rmtree(staging, ignore_errors=True)
    reserved = dataset.episode_dir(episode_id)
    if reserved.is_dir() and not any(reserved.iterdir()):
        reserved.rmdir()
