"""Importing recordings made elsewhere: each bag, each window of a long log, or each video becomes an episode.

An episode is built in a hidden staging folder (`episodes/.<id>.importing/`) and renamed into place only when
its bag, episode.yaml and checksums are whole, so an import killed midway leaves nothing that looks complete;
the next import into the dataset clears what it left and does the work again. The same content is never
imported twice: every imported episode records its recording's content id (and, for a split log, its window),
and the catalog indexes it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ros_robodata.cluster import Executor
from ros_robodata.dataset.dataset import Dataset, is_dataset
from ros_robodata.dataset.importers.import_bag import import_bag
from ros_robodata.dataset.importers.import_common import Imported, ImportOptions
from ros_robodata.dataset.sources import Recording, find_recordings
from ros_robodata.dataset.staging import import_lock
from ros_robodata.dataset.transfer import free_text
from ros_robodata.errors import RobodataError
from ros_robodata.profile import Profile, load_profile


def import_recording(dataset: Dataset, recording: Recording, options: ImportOptions, *,
                     profile: Profile | None = None, who: str | None = None,
                     executor: Executor | None = None) -> Imported:
    """Import one recording (already found by sources.find_recordings); call inside import_lock(). `executor`:
    where a LeRobot dataset's episodes are converted (local processes, a Ray cluster), one job each."""
    options.check()
    if recording.kind == 'video':
        # Start-up time: PyAV and OpenCV (~150 ms) load only when a video is imported.
        from ros_robodata.dataset.importers.import_video import import_video

        return import_video(dataset, recording, options, profile, who)
    if recording.kind == 'lerobot':
        # Start-up time: pyarrow and PyAV (~160 ms) load only when a LeRobot dataset is imported.
        from ros_robodata.dataset.importers.import_lerobot import import_lerobot

        return import_lerobot(dataset, recording, options, profile, who, executor)
    return import_bag(dataset, recording, options, profile, who)


@dataclass
class ImportRun:
    """What an import did: the dataset (and whether it was made now), each recording's result, what failed.

    Args:
        dataset: the dataset imported into.
        created: the dataset was made by this import.
        imported: per recording imported, its new episodes (and those it already had in the dataset).
        failed: per recording that could not be imported, why.
        skipped: recordings inside the dataset itself, left alone.
        removed: the dataset was made by this run and removed again, as nothing was imported into it.
    """

    dataset: Dataset
    created: bool = False
    imported: list[Imported] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # recordings inside the dataset itself
    removed: bool = False  # the dataset was made by this run and removed again: nothing was imported into it

    @property
    def episodes(self) -> list[str]:
        """The ids of every episode this import made, in import order."""
        return [e for r in self.imported for e in r.episodes]


def dataset_for_import(path: str | os.PathLike[str], profile: Profile | None = None) -> tuple[Dataset, Profile | None,
                                                                                              bool]:
    """(the dataset, made when absent, the profile recordings are checked against, whether it was made). A dataset
    made without a profile takes the one given; one made with another profile is refused."""
    if not is_dataset(Path(path)):
        return Dataset.create(path, profile=profile), profile, True
    dataset = Dataset.open(path)
    if profile is None:
        return dataset, dataset.profile if dataset.has_profile else None, False
    if not dataset.has_profile:
        dataset.set_profile(profile)
        return dataset, profile, False
    if dataset.profile.sha256 != profile.sha256:
        raise RobodataError(f'{dataset.root}: was made with another robot profile '
                            f'({dataset.info["robot_profile"].get("source")}); import without --profile to use its '
                            'own, or into a new dataset')
    return dataset, profile, False


def import_recordings(sources: Iterable[str | os.PathLike[str]], dataset: Dataset | str | os.PathLike[str],
                      options: ImportOptions | None = None, *, profile: Profile | str | None = None,
                      on_result: Callable[[Imported | Recording, str | None], None] | None = None,
                      progress: Callable[[Iterable[Any]], Iterator[Any]] | None = None,
                      executor: Executor | None = None) -> ImportRun:
    """Import every recording at or under `sources` into `dataset` (made when absent). A recording that cannot be
    imported is kept in `failed` with its reason and the rest go on; `on_result(result, None)` or
    `on_result(recording, reason)` is called after each one. Every source is checked before the dataset is
    touched.

    Args:
        sources: bags (rosbag2 or ROS 1), videos, LeRobot datasets, or folders of them.
        dataset: the dataset, or the folder of one (made when absent).
        options: how recordings become episodes (task, outcome, copy/link/move, split...).
        profile: the robot profile (or its YAML path) recordings are checked against; None: the dataset's own.
        on_result: called after each recording with its result, or with the recording and why it failed.
        progress: wraps the recordings to show progress.
        executor: where a LeRobot dataset's episodes are converted (local processes, a Ray cluster whose nodes see
            the dataset's folder); here when None.

    Raises:
        ProfileError: `profile` cannot be read.
        DatasetError: the dataset cannot be opened or made, or another import is running into it.
        RobodataError: a source is missing or holds no recording, the options contradict each other, or the
            dataset was made with another profile.
    """
    options = options or ImportOptions()
    options.check()
    recordings = find_recordings(sources)
    root = Path(dataset.root if isinstance(dataset, Dataset) else dataset).resolve()
    inside = [r for r in recordings if r.path.resolve().is_relative_to(root)]
    recordings = [r for r in recordings if r not in inside]
    if options.episode_id and len(recordings) > 1:
        raise RobodataError(f'--id names one episode; the sources hold {len(recordings)} recordings')
    loaded = load_profile(profile) if isinstance(profile, (str, os.PathLike)) else profile
    if isinstance(dataset, Dataset):
        target, checked, created = dataset, loaded or (dataset.profile if dataset.has_profile else None), False
    else:
        target, checked, created = dataset_for_import(dataset, loaded)
    run = ImportRun(target, created, skipped=[str(r.path) for r in inside])
    with import_lock(target):
        for recording in progress(recordings) if progress else recordings:
            try:
                result = import_recording(target, recording, options, profile=checked, executor=executor)
            except OSError as err:  # the dataset's disk filled (or went read-only) meanwhile: staging is gone
                run.failed[str(recording.path)] = (f'{recording.path}: cannot write into {target.root}: '
                                                   f'{err.strerror or err} ({free_text(target.root)} free); '
                                                   'nothing of it was imported')
                if on_result is not None:
                    on_result(recording, run.failed[str(recording.path)])
                continue
            except RobodataError as err:
                run.failed[str(recording.path)] = ' '.join(str(err).split())
                if on_result is not None:
                    on_result(recording, run.failed[str(recording.path)])
                continue
            run.imported.append(result)
            if on_result is not None:
                on_result(result, None)
    if created and not run.imported:
        # Nothing went in: the dataset this run made would hold nothing but a profile that matched none of the
        # sources, and the retry with the right profile would be refused. An import that fails creates nothing.
        shutil.rmtree(target.root, ignore_errors=True)
        run.created, run.removed = False, True
    return run
