"""Importing recordings made elsewhere: each bag, each window of a long log, or each video becomes an episode.

An episode is built in a hidden staging folder (`episodes/.<id>.importing/`) and renamed into place only when
its bag, episode.yaml and checksums are whole, so an import killed midway leaves nothing that looks complete;
the next import into the dataset clears what it left and does the work again. The same content is never
imported twice: every imported episode records its recording's content id (and, for a split log, its window),
and the catalog indexes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import time
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ros_robodata import __version__
from ros_robodata.bag.reader import BagReader, TopicInfo
from ros_robodata.bag.repair import repair_bag
from ros_robodata.dataset.audit import append_audit
from ros_robodata.dataset.dataset import Dataset, file_sha256
from ros_robodata.dataset.episode import Episode, check_episode_id
from ros_robodata.dataset.sources import METADATA_FILE, Recording, content_id
from ros_robodata.dataset.split import SplitSpec, find_windows, write_windows
from ros_robodata.errors import DatasetError, RobodataError
from ros_robodata.profile import COMPRESSED_IMAGE, Profile
from ros_robodata.record.topic_stats import TopicStats, stamp_range
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
    episodes: list[str] = field(default_factory=list)
    existing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {'source': str(self.recording.path), 'kind': self.recording.kind, 'episodes': self.episodes,
                'already_imported_as': self.existing, 'notes': self.notes}


# -- the dataset side ---------------------------------------------------------------------------------------


@contextmanager
def import_lock(dataset: Dataset) -> Iterator[None]:
    """One importer per dataset at a time; taking the lock also clears what a killed import left behind."""
    dataset.episodes_dir.mkdir(parents=True, exist_ok=True)
    path = dataset.episodes_dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode('ascii', 'replace').strip() or 'another process'
            raise DatasetError(f'{dataset.root}: another import is running into this dataset (pid {holder}); '
                               'wait for it or stop it') from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        _clear_staging(dataset)
        _reconcile(dataset)
        yield
    finally:
        os.close(fd)


def _clear_staging(dataset: Dataset) -> None:
    """Staging folders of an import that was killed, and the empty folders they had reserved."""
    for staging in dataset.episodes_dir.glob(f'.*{STAGING_SUFFIX}'):
        shutil.rmtree(staging, ignore_errors=True)
        reserved = dataset.episodes_dir / staging.name[1:-len(STAGING_SUFFIX)]
        if reserved.is_dir() and not any(reserved.iterdir()):
            reserved.rmdir()


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


def episode_id_for(name: str) -> str:
    """An episode id from a recording's file or folder name: letters, digits, '_', '-', '.' (other characters
    become '_', accents lose their marks), at most 100 characters; RobodataError when nothing usable is left."""
    ascii_name = unicodedata.normalize('NFKD', name).encode('ascii', 'ignore').decode('ascii')
    text = re.sub(r'[^A-Za-z0-9_.-]+', '_', ascii_name)
    text = re.sub(r'\.{2,}', '.', text).lstrip('._-')[:100].rstrip('._-')
    if not text:
        raise RobodataError(f'{name!r}: nothing in this name is usable as an episode id; give one with --id')
    return check_episode_id(text)


def _commit(dataset: Dataset, staging: Path, episode: Episode, who: str | None) -> None:
    """episode.yaml into the staging folder, then the folder into place (replacing its empty reservation), then
    the catalog row and the audit entry."""
    from ros_robodata.dataset.episode import write_episode

    write_episode(staging / 'episode.yaml', episode)
    os.replace(staging, dataset.episode_dir(episode.id))
    dataset.catalog.upsert(episode, **dataset.bag_stats(episode))
    append_audit(dataset.audit_path, 'import_episode', episode.id, who, source=episode.source.get('path'),
                 method=episode.source.get('method'), content_id=episode.source.get('content_id'),
                 window=episode.source.get('window'))


@contextmanager
def _staging(dataset: Dataset, episode_id: str) -> Iterator[Path]:
    """A hidden folder to build the episode in; removed (with its reservation) unless committed."""
    staging = dataset.episodes_dir / f'.{episode_id}{STAGING_SUFFIX}'
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        reserved = dataset.episode_dir(episode_id)
        if reserved.is_dir() and not any(reserved.iterdir()):
            reserved.rmdir()
        raise


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
        return _import_video(dataset, recording, options, profile, who)
    cid = content_id(recording.files)
    done = imported_from(dataset, cid)
    result = Imported(recording)
    if done and options.split is None:
        result.existing = sorted(done)
        return result
    with BagReader(recording.path) as reader:
        topics = reader.topics
        damaged = bool(reader.damaged_files)
        reader_notes = list(reader.notes)
    result.notes += check_topics(recording.path, topics, profile)
    if options.split is None:
        result.episodes.append(_import_whole(dataset, recording, options, profile, who, cid, damaged,
                                             reader_notes, result.notes))
        return result
    return _import_split(dataset, recording, options, profile, who, cid, done, result)


def _source(recording: Recording, options: ImportOptions, cid: str, **extra: Any) -> dict[str, Any]:
    return {'path': str(recording.path.resolve()), 'kind': recording.kind, 'method': options.method,
            'content_id': cid, 'size_bytes': recording.size_bytes, 'files': [f.name for f in recording.files],
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
                  who: str | None, cid: str, damaged: bool, reader_notes: list[str], notes: list[str]) -> str:
    episode_id = dataset.reserve_episode_id(options.episode_id or episode_id_for(recording.name))
    method = 'copy' if damaged and options.method == 'link' else options.method
    if method != options.method:
        notes.append('the bag is damaged: copied and repaired instead of linked')
    with _staging(dataset, episode_id) as staging:
        bag = staging / 'bag'
        bag.mkdir()
        hashes = _transfer(recording, bag, method)
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
                          source=_source(recording, replace(options, method=method), cid))
        if method == 'link':
            _summary_stats(episode, bag, profile)
        else:
            fill_stats_from_bag(episode, bag, profile)
        episode.bag_sha256 = _checksums(bag, hashes, linked=method == 'link')
        _commit(dataset, staging, episode, who)
    if method == 'move':
        _remove_source(recording)
    return episode_id


def _transfer(recording: Recording, bag: Path, method: str) -> dict[str, str]:
    """Put the recording's storage files (and its metadata.yaml) into `bag`; returns the sha256 of each file
    copied (hashed on the way, so a copy reads the source once)."""
    hashes: dict[str, str] = {}
    files = list(recording.files)
    if recording.has_metadata:
        files.append(recording.path / METADATA_FILE)
    for file in files:
        target = bag / file.name
        if file.name == METADATA_FILE or method == 'copy':
            hashes[file.name] = _copy_hashing(file, target)
        elif method == 'link':
            target.symlink_to(file.resolve())
        else:  # move: a hard link is instant on the same filesystem; the source goes once the episode is in
            try:
                os.link(file, target)
            except OSError:
                hashes[file.name] = _copy_hashing(file, target)
    return hashes


def _copy_hashing(src: Path, dst: Path, chunk: int = 4 << 20) -> str:
    digest = hashlib.sha256()
    with src.open('rb') as fin, dst.open('wb') as fout:
        while block := fin.read(chunk):
            digest.update(block)
            fout.write(block)
        fout.flush()
        os.fsync(fout.fileno())
    return digest.hexdigest()


def _checksums(bag: Path, hashes: dict[str, str], *, linked: bool) -> dict[str, str]:
    """sha256 of every file of the episode's bag: taken while copying where possible. A linked bag's files are
    not read (that is what --link is for): they are checked by their content id instead."""
    out = {}
    for path in sorted(p for p in bag.iterdir() if p.is_file()):
        if path.is_symlink() and linked:
            continue
        out[path.name] = hashes.get(path.name) or file_sha256(path)
    return out


def _remove_source(recording: Recording) -> None:
    for file in recording.files:
        file.unlink(missing_ok=True)
    if recording.kind == 'bag':
        (recording.path / METADATA_FILE).unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            recording.path.rmdir()  # only when nothing else is left in it


def _expected_rates(profile: Profile | None) -> dict[str, float | None]:
    return {} if profile is None else {spec.topic: spec.rate_hz for _, spec in profile.all_topics()}


def fill_stats_from_bag(episode: Episode, bag: Path, profile: Profile | None) -> int:
    """Counts, rates, header-stamp range and loss by stamps, as the recorder writes them: one pass over the bag;
    returns the number of messages."""
    from ros_robodata.signals.cdr import starts_with_header

    rates = _expected_rates(profile)
    with BagReader(bag) as reader:
        store = reader.typestore
        stats = {name: TopicStats(name, info.msgtype, rates.get(name), info.msgtype in store.fielddefs
                                  and starts_with_header(info.msgtype, store), info.latched)
                 for name, info in reader.topics.items()}
        for message in reader.messages():
            stats[message.topic].update(message.t_ns, message.data)
        episode.start_ns, episode.stop_ns = reader.start_ns, reader.end_ns
    fill_stats(episode, stats)
    return sum(s.count for s in stats.values())


def fill_stats(episode: Episode, stats: dict[str, TopicStats]) -> None:
    """episode.yaml's topics, loss and header-stamp range from the per-topic figures of its messages."""
    episode.topics = {topic: s.summary() for topic, s in stats.items()}
    episode.stamp_start_ns, episode.stamp_stop_ns = stamp_range(stats.values())
    episode.loss = {
        'total_lost': sum(s.lost for s in stats.values()),
        'missing_by_stamp': sum(s.missing_by_stamp for s in stats.values()),
        'dropped_by_recorder': 0,
        'topics': {topic: s.loss() for topic, s in stats.items()},
    }


def _summary_stats(episode: Episode, bag: Path, profile: Profile | None) -> None:
    """What the bag's index says, without reading a message: a linked import costs the same for any size."""
    rates = _expected_rates(profile)
    with BagReader(bag) as reader:
        duration = reader.duration_ns / 1e9
        episode.start_ns, episode.stop_ns = reader.start_ns, reader.end_ns
        episode.topics = {
            name: {'type': info.msgtype, 'count': info.count,
                   'rate_hz': round(info.count / duration, 3) if duration > 0 and info.count > 1 else None,
                   'expected_rate_hz': rates.get(name), 'latched': info.latched}
            for name, info in reader.topics.items()}
    episode.loss = {'note': 'not measured: a linked bag is not read at import (`robodata score` measures it)'}


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
            written = write_windows(reader, todo, [s / 'bag' for s in stagings], _expected_rates(profile),
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
                    source=_source(recording, replace(options, method='copy'), cid, window={
                        **window.to_json(), 'of': len(windows), 'split': options.split.describe()}))
                episode.start_ns, episode.stop_ns = stats.first_ns, stats.last_ns
                fill_stats(episode, stats.topics)
                episode.bag_sha256 = _checksums(staging / 'bag', {}, linked=False)
                _commit(dataset, staging, episode, who)
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


# -- videos ------------------------------------------------------------------------------------------------------


def _video_camera(profile: Profile | None, wanted: str | None, where: Path) -> tuple[str, str]:
    """(topic, frame_id) the video's frames go to: the profile camera named by --camera, or its only
    CompressedImage camera; without a profile, /camera/image_raw/compressed."""
    if profile is None:
        if wanted:
            raise RobodataError(f'{where}: --camera needs a dataset made with a profile (or --profile)')
        return '/camera/image_raw/compressed', 'camera'
    cameras = profile.topics.cameras
    if wanted:
        match = [c for c in cameras if c.name == wanted]
        if not match:
            raise RobodataError(f'--camera: the profile has no camera {wanted!r} (it has: '
                                f'{", ".join(c.name for c in cameras) or "none"})')
        camera = match[0]
    else:
        compressed = [c for c in cameras if c.type == COMPRESSED_IMAGE]
        if len(compressed) != 1:
            names = ', '.join(c.name for c in compressed) or 'none'
            raise RobodataError(f'{where}: a video becomes one camera of the profile ({profile.source}), a '
                                f'{COMPRESSED_IMAGE} one; it has {len(compressed)} ({names}): name it with --camera')
        camera = compressed[0]
    if camera.type != COMPRESSED_IMAGE:
        raise RobodataError(f'{where}: camera {camera.name} ({camera.topic}) is {camera.type} in the profile; a video '
                            f'imports as {COMPRESSED_IMAGE} (JPEG frames)')
    return camera.topic, camera.name


def _import_video(dataset: Dataset, recording: Recording, options: ImportOptions, profile: Profile | None,
                  who: str | None) -> Imported:
    from ros_robodata.bag.video import probe_video, video_to_bag

    result = Imported(recording)
    if options.method == 'link':
        raise RobodataError(f'{recording.path}: a video is converted into a bag; --link cannot apply (use --copy, '
                            'the default, or --move)')
    if options.split is not None:
        raise RobodataError(f'{recording.path}: splitting applies to bags, not videos')
    topic, frame_id = _video_camera(profile, options.camera, recording.path)
    info = probe_video(recording.path)  # an unreadable video fails here, before anything is made
    cid = content_id(recording.files)
    if done := imported_from(dataset, cid):
        result.existing = sorted(done)
        return result
    episode_id = dataset.reserve_episode_id(options.episode_id or episode_id_for(recording.name))
    with _staging(dataset, episode_id) as staging:
        video = video_to_bag(recording.path, staging / 'bag', topic=topic, frame_id=frame_id,
                             start_ns=options.video_start_ns, jpeg_quality=options.jpeg_quality,
                             storage=profile.recording.storage if profile else 'mcap',
                             compression=profile.recording.compression if profile else 'zstd')
        result.notes += video.notes
        episode = Episode(id=episode_id, task=options.task, operator=options.operator,
                          mode=options.mode if options.mode != 'unknown' else 'human',
                          robot=profile.robot.name if profile else '', outcome=options.outcome,
                          status='incomplete' if video.skipped_frames else 'complete',
                          profile_sha256=profile.sha256 if profile else '', notes='\n'.join(video.notes),
                          source=_source(recording, options, cid, video={**info.to_dict(), 'clock': video.clock,
                                                                         'frames_written': video.frames,
                                                                         'frames_skipped': video.skipped_frames}))
        fill_stats_from_bag(episode, staging / 'bag', profile)
        episode.bag_sha256 = _checksums(staging / 'bag', {}, linked=False)
        _commit(dataset, staging, episode, who)
    result.episodes.append(episode_id)
    if options.method == 'move':
        _remove_source(recording)
    return result
