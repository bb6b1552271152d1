"""Importing recordings made elsewhere: each bag, each window of a long log, or each video becomes an episode.

An episode is built in a hidden staging folder (`episodes/.<id>.importing/`) and renamed into place only when
its bag, episode.yaml and checksums are whole, so an import killed midway leaves nothing that looks complete;
the next import into the dataset clears what it left and does the work again. The same content is never
imported twice: every imported episode records its recording's content id (and, for a split log, its window),
and the catalog indexes it.
"""

from __future__ import annotations

import os
import re
import shutil
import time
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ros_robodata.bag.bag_repair import repair_bag
from ros_robodata.bag.reader import BagReader, TopicInfo
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.episode import Episode, check_episode_id
from ros_robodata.dataset.episode_stats import (
    bag_checksums,
    expected_rates,
    fill_stats,
    fill_stats_from_bag,
    fill_stats_from_index,
)
from ros_robodata.dataset.import_rosbag1 import CONVERTED_NOTE, converted_rosbag1
from ros_robodata.dataset.partial import partial_episode
from ros_robodata.dataset.sources import METADATA_FILE, Recording, content_id, find_recordings, head_of
from ros_robodata.dataset.split import SplitSpec, find_windows, write_windows
from ros_robodata.dataset.staging import commit_episode, import_lock, imported_from, staging_folder
from ros_robodata.dataset.transfer import check_room, free_text, remove_source, transfer
from ros_robodata.errors import RobodataError
from ros_robodata.profile import Profile, load_profile
from ros_robodata.version import __version__
from ros_robodata.vocabulary import MODES, OUTCOMES

METHODS = ('copy', 'link', 'move')
STAGING_SUFFIX = '.importing'
LOCK_FILE = '.import.lock'


@dataclass(frozen=True)
class ImportOptions:
    """How recordings become episodes; every field has the meaning of the `robodata import` option."""

    task: str = ''
    operator: str = ''
    mode: str = 'unknown'
    outcome: str = 'unknown'
    method: str = 'copy'  # copy | link | move
    split: SplitSpec | None = None
    episode_id: str | None = None  # only for one recording imported whole
    video_start_ns: int | None = None  # a video's absolute start; None: its creation time, else the file's
    jpeg_quality: int = 90
    camera: str | None = None  # the profile camera a video becomes; None: the profile's only CompressedImage one
    raw_images: bool = False  # a LeRobot dataset's videos as sensor_msgs/Image instead of JPEG CompressedImages

    def check(self) -> None:
        if self.method not in METHODS:
            raise RobodataError(f'method {self.method!r} is not one of {", ".join(METHODS)}')
        if self.mode not in MODES:
            raise RobodataError(f'--mode: {self.mode!r} is not one of {", ".join(MODES)}')
        if self.outcome not in OUTCOMES:
            raise RobodataError(f'--outcome: {self.outcome!r} is not one of {", ".join(OUTCOMES)}')
        if not 1 <= self.jpeg_quality <= 100:
            raise RobodataError(f'--jpeg-quality must be 1..100, got {self.jpeg_quality}')
        if self.split is not None and self.method == 'move':
            raise RobodataError('--move with a split would delete the messages outside the episodes\' windows: use '
                                '--copy (the default) and remove the log yourself once you are content')
        if self.episode_id is not None:
            check_episode_id(self.episode_id)
            if self.split is not None:
                raise RobodataError('--id names one episode; a split makes several (their ids come from the '
                                    'recording name)')


@dataclass
class Imported:
    """What one recording gave: the new episodes, the ones it already had in the dataset, and notes."""

    recording: Recording
    dataset: Dataset
    episodes: list[str] = field(default_factory=list)
    existing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {'source': str(self.recording.path), 'kind': self.recording.kind, 'episodes': self.episodes,
                'already_imported_as': self.existing, 'notes': self.notes}


def episode_id_for(name: str) -> str:
    """An episode id from a recording's file or folder name: letters, digits, '_', '-', '.' (other characters
    become '_', accents lose their marks), at most 100 characters; RobodataError when nothing usable is left."""
    ascii_name = unicodedata.normalize('NFKD', name).encode('ascii', 'ignore').decode('ascii')
    text = re.sub(r'[^A-Za-z0-9_.-]+', '_', ascii_name)
    text = re.sub(r'\.{2,}', '.', text).lstrip('._-')[:100].rstrip('._-')
    if not text:
        raise RobodataError(f'{name!r}: nothing in this name is usable as an episode id; give one with --id')
    return check_episode_id(text)


# -- checks against the profile ------------------------------------------------------------------------------


def check_topics(where: Path, topics: dict[str, TopicInfo], profile: Profile | None) -> list[str]:
    """RobodataError when a topic of the profile has another type in the recording (it would be read wrongly
    by every later step); returns a note naming the profile's topics the recording does not have."""
    if profile is None:
        return []
    missing = []
    for role, spec in profile.all_topics():
        info = topics.get(spec.topic)
        if info is None:
            missing.append(spec.topic)
        elif info.msgtype != spec.type:
            raise RobodataError(f'{where}: {spec.topic} is {info.msgtype} here, but the profile ({profile.source}) '
                                f'says {spec.type} for {role}: is this recording from another rig?')
    if len(missing) == len(profile.all_topics()):
        raise RobodataError(f'{where}: none of the profile\'s topics ({", ".join(missing)}) is in this recording '
                            f'(it has: {", ".join(topics) or "none"}): is it from another rig? Import it into a '
                            'dataset made with its own profile')
    return [f'not in this recording: {", ".join(missing)}'] if missing else []


# -- bags ------------------------------------------------------------------------------------------------------


def import_recording(dataset: Dataset, recording: Recording, options: ImportOptions, *,
                     profile: Profile | None = None, who: str | None = None) -> Imported:
    """Import one recording (already found by sources.find_recordings); call inside import_lock()."""
    options.check()
    if recording.kind == 'video':
        from ros_robodata.dataset.import_video import import_video  # loads PyAV and OpenCV only for videos

        return import_video(dataset, recording, options, profile, who)
    if recording.kind == 'lerobot':
        from ros_robodata.dataset.import_lerobot import import_lerobot  # pyarrow and PyAV only for these

        return import_lerobot(dataset, recording, options, profile, who)
    cid = content_id(recording.source.files)
    done = imported_from(dataset, cid)
    result = Imported(recording.source, dataset)
    if done and options.split is None:
        result.existing = sorted(done)
        return result
    if recording.kind == 'rosbag1':  # converted, then imported as the rosbag2 bag it becomes
        with converted_rosbag1(dataset, recording) as bag:
            converted = import_recording(dataset, bag, replace(options, method='move'), profile=profile, who=who)
        if options.method == 'move' and converted.episodes:
            remove_source(recording)
        return converted
    if recording.origin is not None:
        result.notes.append(CONVERTED_NOTE)
    with BagReader(recording.path) as reader:
        topics = reader.topics
        damaged = bool(reader.damaged_files)
        reader_notes = list(reader.notes)
    result.notes += check_topics(recording.path, topics, profile)
    check_room(dataset, recording, 'copy' if options.method == 'link' and damaged else options.method)
    if options.split is None:
        partial = None if options.episode_id else partial_episode(dataset, recording)
        if partial is not None:
            result.notes.append(f'the whole recording of partial episode {partial.id} ({partial.status}, '
                                f'{partial.source.get("size_bytes", 0):,} bytes): it replaces it, same id')
        result.episodes.append(_import_whole(dataset, recording, options, profile, who, cid, damaged,
                                             reader_notes, result.notes, replaces=partial))
        return result
    return _import_split(dataset, recording, options, profile, who, cid, done, result)


def source_record(recording: Recording, options: ImportOptions, cid: str, **extra: Any) -> dict[str, Any]:
    method = 'convert' if recording.origin is not None else options.method  # the bag here is a conversion
    recording = recording.source
    head = head_of(recording.files[0]) if recording.files else None
    return {'path': str(recording.path.resolve()), 'kind': recording.kind, 'method': method,
            'content_id': cid, 'size_bytes': recording.size_bytes, 'files': [f.name for f in recording.files],
            **({'head_bytes': head[0], 'head_sha256': head[1]} if head else {}),
            'imported': time.strftime('%Y-%m-%dT%H:%M:%S%z'), 'imported_by': f'ros_robodata {__version__}',
            **_writer_of(recording), **extra}


def _writer_of(recording: Recording) -> dict[str, Any]:
    """Which library wrote an MCAP bag (its header says, e.g. 'rosbag2_storage_mcap' or 'mcap-ros2-support')."""
    first = recording.files[0]
    if first.suffix != '.mcap':
        return {}
    try:
        from mcap.reader import make_reader

        with first.open('rb') as f:
            header = make_reader(f).get_header()
        return {'written_by': header.library} if header.library else {}
    except Exception:  # a damaged file still imports; the writer is only provenance
        return {}


def _import_whole(dataset: Dataset, recording: Recording, options: ImportOptions, profile: Profile | None,
                  who: str | None, cid: str, damaged: bool, reader_notes: list[str], notes: list[str], *,
                  replaces: Episode | None = None) -> str:
    episode_id = replaces.id if replaces is not None else dataset.reserve_episode_id(
        options.episode_id or episode_id_for(recording.name))
    method = 'copy' if damaged and options.method == 'link' else options.method
    if method != options.method:
        notes.append('the bag is damaged: copied and repaired instead of linked')
    with staging_folder(dataset, episode_id) as staging:
        bag = staging / 'bag'
        bag.mkdir()
        hashes = transfer(recording, bag, method)
        repaired = repair_bag(bag) if (damaged or not (bag / METADATA_FILE).is_file()) else None
        status = 'complete'
        episode_notes = list(notes)
        if damaged:
            status = 'incomplete'
            episode_notes += reader_notes
            assert repaired is not None
            episode_notes += repaired.actions
        episode = Episode(id=episode_id, task=options.task, operator=options.operator, mode=options.mode,
                          robot=profile.robot.name if profile else '', outcome=options.outcome, status=status,
                          profile_sha256=profile.sha256 if profile else '', notes='\n'.join(episode_notes),
                          source=source_record(recording, replace(options, method=method), cid))
        if method == 'link':
            fill_stats_from_index(episode, bag, profile)
        else:
            fill_stats_from_bag(episode, bag, profile)
        episode.bag_sha256 = bag_checksums(bag, hashes, linked=method == 'link')
        if replaces is not None:  # what people said about the partial episode stands for the whole one
            episode.task, episode.operator, episode.outcome = replaces.task, replaces.operator, replaces.outcome
        commit_episode(dataset, staging, episode, who, replaces=replaces)
    if method == 'move':
        remove_source(recording)
    return episode_id


# -- split logs ------------------------------------------------------------------------------------------------


def _import_split(dataset: Dataset, recording: Recording, options: ImportOptions, profile: Profile | None,
                  who: str | None, cid: str, done: dict[str, Episode], result: Imported) -> Imported:
    assert options.split is not None
    whole = [i for i, e in done.items() if not e.source.get('window')]
    if whole:
        result.existing = whole
        result.notes.append(f'already imported whole as {", ".join(whole)}; not split again')
        return result
    with BagReader(recording.path) as reader:
        windows = find_windows(reader, options.split, profile)
        if not windows:
            raise RobodataError(f'{recording.path}: {options.split.describe()} finds no episode in this recording '
                                f'({reader.duration_ns / 1e9:.1f} s, {reader.message_count} message(s))')
        have = {_window_key(e.source['window']): i for i, e in done.items()}
        wanted = {_window_key(w.to_json()) for w in windows}
        if stray := sorted(i for key, i in have.items() if key not in wanted):
            raise RobodataError(f'{recording.path}: already imported with other windows as {", ".join(stray)}; '
                                'remove those episodes first to split it differently')
        todo = [w for w in windows if _window_key(w.to_json()) not in have]
        result.existing = sorted(have.values())
        if not todo:
            return result
        width = max(2, len(str(len(windows))))
        base = episode_id_for(recording.name)
        ids = [dataset.reserve_episode_id(f'{base}-{w.index + 1:0{width}d}') for w in todo]
        stagings = [dataset.episodes_dir / f'.{i}{STAGING_SUFFIX}' for i in ids]
        try:
            for staging in stagings:
                shutil.rmtree(staging, ignore_errors=True)
                staging.mkdir()
            storage = profile.recording.storage if profile else 'mcap'
            compression = profile.recording.compression if profile else 'zstd'
            written = write_windows(reader, todo, [s / 'bag' for s in stagings], expected_rates(profile),
                                    storage=storage, compression=compression)
            for episode_id, staging, window, stats in zip(ids, stagings, todo, written, strict=True):
                if stats is None:
                    shutil.rmtree(staging)
                    dataset.episode_dir(episode_id).rmdir()
                    result.notes.append(f'window {window.index + 1} ({window.describe(reader.start_ns)}) holds no '
                                        'message: no episode')
                    continue
                episode = Episode(
                    id=episode_id, task=window.task or options.task, operator=window.operator or options.operator,
                    mode=window.mode or options.mode, robot=profile.robot.name if profile else '',
                    outcome=window.outcome or options.outcome, status='complete',
                    profile_sha256=profile.sha256 if profile else '',
                    notes='\n'.join([*result.notes, *([window.note] if window.note else [])]),
                    source=source_record(recording, replace(options, method='copy'), cid, window={
                        **window.to_json(), 'of': len(windows), 'split': options.split.describe()}))
                episode.start_ns, episode.stop_ns = stats.first_ns, stats.last_ns
                fill_stats(episode, stats.topics)
                episode.bag_sha256 = bag_checksums(staging / 'bag', {}, linked=False)
                commit_episode(dataset, staging, episode, who)
                result.episodes.append(episode_id)
        except BaseException:
            for staging, episode_id in zip(stagings, ids, strict=True):
                if staging.exists():
                    shutil.rmtree(staging, ignore_errors=True)
                    reserved = dataset.episode_dir(episode_id)
                    if reserved.is_dir() and not any(reserved.iterdir()):
                        reserved.rmdir()
            raise
    return result


def _window_key(window: dict[str, Any]) -> tuple[int, int]:
    return int(window['start_ns']), int(window['end_ns'])


# -- the front door -------------------------------------------------------------------------------------------


@dataclass
class ImportRun:
    """What an import did: the dataset (and whether it was made now), each recording's result, what failed."""

    dataset: Dataset
    created: bool = False
    imported: list[Imported] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # recordings inside the dataset itself
    removed: bool = False  # the dataset was made by this run and removed again: nothing was imported into it

    @property
    def episodes(self) -> list[str]:
        return [e for r in self.imported for e in r.episodes]


def dataset_for_import(path: str | os.PathLike[str], profile: Profile | None = None) -> tuple[Dataset, Profile | None,
                                                                                              bool]:
    """(the dataset, made when absent, the profile recordings are checked against, whether it was made). A dataset
    made without a profile takes the one given; one made with another profile is refused."""
    from ros_robodata.dataset.dataset import is_dataset

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
                      progress: Callable[[Iterable[Any]], Iterator[Any]] | None = None) -> ImportRun:
    """Import every recording at or under `sources` into `dataset` (made when absent). A recording that cannot be
    imported is kept in `failed` with its reason and the rest go on; `on_result(result, None)` or
    `on_result(recording, reason)` is called after each one. Every source is checked before the dataset is
    touched."""
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
                result = import_recording(target, recording, options, profile=checked)
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
