"""A LeRobot dataset (v3.0, or v2.1) imported as episodes: each of its episodes becomes a standard bag, so the
segmenter, the quality checks, the review queue and the report run on datasets others published.

In each bag: `observation.state` and `action` as sensor_msgs/JointState (joints named as info.json names them,
else joint_0...), each camera video as JPEG CompressedImages (or raw Images), all stamped at the episode's frame
times. LeRobot keeps no wall-clock time, so an episode starts at a fixed epoch plus its index in hours, unless it
came from our own export, whose `source_start_ns` gives back the original stamps. A dataset made by the import gets
a robot profile written from info.json (topics, rates, cameras); give --profile to add a gripper for the segmenter.

Why one module: the source (what info.json and the episode tables say), the episode's clock and its camera
messages are one reading of a LeRobot dataset, shared by the import (into bags) and by the analyses that read a
LeRobot folder in place (dataset/lerobot_episode_source.py), so both see the same messages.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ros_robodata.bag.types import header, typestore
from ros_robodata.cluster import Executor, JobFailure, map_jobs
from ros_robodata.dataset import lerobot_layout as layout
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.episode import Episode
from ros_robodata.dataset.episode_stats import bag_checksums, fill_stats_from_bag
from ros_robodata.dataset.importers.import_common import Imported, ImportOptions, episode_id_for, source_record
from ros_robodata.dataset.lerobot_features import ACTION_NAMES, STATE_NAMES, feature_names, is_vector, vector_feature
from ros_robodata.dataset.lerobot_rows import Rows, joined, read_rows
from ros_robodata.dataset.sources import Recording, content_id
from ros_robodata.dataset.staging import commit_episode, discard_staging, imported_from, staging_folder
from ros_robodata.errors import RobodataError
from ros_robodata.profile import COMPRESSED_IMAGE, IMAGE, JOINT_STATE, Profile, profile_from_dict
from ros_robodata.vocabulary import MODES, OUTCOMES

STATE_TOPIC, ACTION_TOPIC = '/observation/state', '/action'
EPOCH_NS = 1_700_000_000 * 1_000_000_000  # 2023-11-14 22:13 UTC: episode k starts k hours after it
HOUR_NS = 3_600 * 1_000_000_000
KEEP_VALUES = 20_000_000  # state values of the data files read last kept in memory (160 MB): read once, not twice


def read_parquet(path: Path, columns: list[str] | None = None) -> pa.Table:
    """A parquet file of the dataset (only those of `columns` it has, when given); RobodataError naming it when it
    is not one (a Git LFS pointer, damage)."""
    try:
        with path.open('rb') as f:
            head = f.read(4)
        if head != b'PAR1':
            pointer = ' (a Git LFS pointer? fetch the real file)' if head == b'vers' else ''
            raise RobodataError(f'{path}: not a parquet file{pointer}')
        # ParquetFile, not read_table: that one loads pyarrow.dataset and pandas (0.2 s a command) and reads a small
        # file in twice the time.
        with pq.ParquetFile(path) as parquet:
            have = parquet.schema_arrow.names
            return parquet.read(columns=None if columns is None else [c for c in columns if c in have])
    except (OSError, pa.ArrowException) as err:
        raise RobodataError(f'{path}: not readable: {err}') from None


def camera_topic(name: str, raw: bool) -> str:
    return f'/camera/{name}/image_raw' + ('' if raw else '/compressed')


def camera_name(video_key: str) -> str:
    """observation.images.wrist -> wrist; observation.image -> image (profile camera names are [a-z0-9_]+)."""
    tail = video_key.removeprefix(layout.IMAGES_PREFIX).removeprefix('observation.')
    return re.sub(r'[^a-z0-9_]+', '_', tail.lower()).strip('_') or 'camera'


@dataclass
class LeRobotEpisode:
    """One episode of a LeRobot dataset, read: its rows and where its video frames are."""

    index: int
    task: str
    timestamps: np.ndarray
    state: np.ndarray
    action: np.ndarray | None
    videos: dict[str, tuple[Path, float]] = field(default_factory=dict)  # key -> (file, from_timestamp)
    extra: dict[str, Any] = field(default_factory=dict)  # our own export's per-episode columns


class LeRobotSource:
    """A LeRobot dataset on disk, v3.0 or v2.1."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.unnamed: list[str] = []  # features whose info.json names could not be read (joint_N used)
        self.info = layout.read_info(root)
        self.version = str(self.info.get('codebase_version', ''))
        if self.version not in ('v3.0', 'v2.1', 'v2.0'):
            raise RobodataError(f'{root}: LeRobot codebase_version {self.version!r}: v3.0 and v2.1 are imported')
        try:
            self.fps = float(self.info['fps'])
        except (KeyError, TypeError, ValueError):
            raise RobodataError(f'{root / layout.INFO}: no numeric "fps"') from None
        features = self.info['features']
        state_key = vector_feature(features, (layout.STATE, *STATE_NAMES))
        self.action_key = vector_feature(features, (layout.ACTION, *ACTION_NAMES))
        if state_key is None:
            vectors = [k for k in features if is_vector(features[k])]
            raise RobodataError(f'{root}: no {layout.STATE} feature in {layout.INFO} (nor {", ".join(STATE_NAMES)}): '
                                'nothing to make joint states of'
                                + (f'; its numeric vectors are {", ".join(vectors)}' if vectors else ''))
        self.state_key: str = state_key
        read_as = ((self.state_key, layout.STATE, 'the joint states'), (self.action_key, layout.ACTION, 'the commands'))
        self.renamed = [f'{key} (not {standard}) read as {what}' for key, standard, what in read_as
                        if key not in (None, standard)]
        declared = [k for k, v in features.items() if isinstance(v, dict) and v.get('dtype') == 'video']
        videos = [p.parts for p in (root / 'videos').rglob('*.mp4')] if (root / 'videos').is_dir() else []
        self.video_keys = [k for k in declared if any(k in parts for parts in videos)]
        self.absent_videos = [k for k in declared if k not in self.video_keys]
        self.tasks = layout.read_tasks(root)
        self.meta = self._episode_meta()
        self._kept: dict[tuple[Path, ...], Rows] = {}

    def names(self, feature: str, size: int) -> list[str]:
        """The feature's per-dimension names as info.json gives them, in any form public datasets use; `joint_N`
        (and a note in `unnamed`) when none of them fits the feature's width."""
        declared = (self.info['features'].get(feature) or {}).get('names')
        found = feature_names(declared, size)
        if found is not None:
            return found
        if declared is not None and feature not in self.unnamed:
            self.unnamed.append(feature)
        return [f'joint_{i}' for i in range(size)]

    def _episode_meta(self) -> dict[int, dict[str, Any]]:
        if self.version == 'v3.0':
            files = sorted((self.root / layout.EPISODES_DIR).glob('*/*.parquet'))
            rows: list[dict[str, Any]] = []
            for path in files:
                table = read_parquet(path)
                table = table.select([c for c in table.column_names if not c.startswith('stats/')])
                rows += table.to_pylist()
            return {int(r['episode_index']): r for r in rows}
        path = self.root / 'meta' / 'episodes.jsonl'
        out = {}
        if path.is_file():
            for line in path.read_text(encoding='utf-8', errors='replace').splitlines():
                if line.strip():
                    row = json.loads(line)  # a bad line: ValueError, told as malformed by import_lerobot
                    out[int(row['episode_index'])] = row
        return out

    def _data_files(self) -> list[Path]:
        files = sorted((self.root / 'data').glob('*/*.parquet'))
        if not files:
            raise RobodataError(f'{self.root}: no data/*/*.parquet: not a LeRobot dataset, or its data is missing')
        return files

    def episode_indices(self) -> list[int]:
        """The episodes the dataset holds, by index: from its episode table, else from its data files."""
        if self.meta:
            return sorted(self.meta)
        return sorted({int(i) for i in np.unique(self._rows(self._data_files()).episode)})

    def _files_of(self, index: int) -> list[Path]:
        """The data file(s) that hold episode `index`: the one its episode table or the path template names when
        it is there, else all of them."""
        template = str(self.info.get('data_path') or '')
        meta = self.meta.get(index, {})
        chunks = int(self.info.get('chunks_size') or layout.CHUNKS_SIZE)
        try:
            if self.version == 'v3.0' and 'data/file_index' in meta:
                path = self.root / (template or layout.DATA_PATH).format(
                    chunk_index=meta['data/chunk_index'], file_index=meta['data/file_index'])
            else:
                path = self.root / template.format(episode_chunk=index // chunks, episode_index=index)
        except (KeyError, IndexError, ValueError, TypeError):
            path = None
        return [path] if path is not None and template and path.is_file() else self._data_files()

    def episode_tasks(self) -> dict[int, str]:
        """Each episode's task, by index, as episodes() gives it (the task of its first frame recorded). The rows
        read stay kept (up to KEEP_VALUES), so the episodes read next do not read their files again."""
        out: dict[int, str] = {}
        for path in self._data_files():
            rows = self._rows([path])
            for index in np.unique(rows.episode).tolist():
                if index in out:
                    continue
                mine = rows.take(np.flatnonzero(rows.episode == index))
                first = int(mine.recorded_order()[0])
                text = self.tasks.get(int(mine.task[first])) if mine.task is not None else None
                if text is None:
                    tasks = self.meta.get(index, {}).get('tasks') or []
                    text = str(tasks[0]) if tasks else ''
                out[int(index)] = text
        return dict(sorted(out.items()))

    def _rows(self, files: list[Path]) -> Rows:
        """The rows of `files`, read with pyarrow a file at a time; the files read last are kept (up to KEEP_VALUES
        state values), so the episodes of one v3.0 file, asked for one by one, read it once."""
        key = tuple(files)
        kept = self._kept.get(key)
        if kept is None:
            state, action = self.state_key, self.action_key or layout.ACTION
            kept = self._kept[key] = joined([read_rows(read_parquet(path), path, state, action) for path in files])
            while len(self._kept) > 1 and sum(r.state.size for r in self._kept.values()) > KEEP_VALUES:
                del self._kept[next(iter(self._kept))]  # the oldest first
        return kept

    def episodes(self, only: int | None = None) -> Iterator[LeRobotEpisode]:
        """Every episode (or only episode `only`), its rows in the order they were recorded."""
        rows = self._rows(self._data_files() if only is None else self._files_of(only))
        if only is not None:
            rows = rows.take(np.flatnonzero(rows.episode == only))
        by_episode = np.argsort(rows.episode, kind='stable')
        bounds = np.flatnonzero(np.diff(rows.episode[by_episode])) + 1
        for part in np.split(by_episode, bounds) if len(by_episode) else []:
            mine = rows.take(part)
            mine = mine.take(mine.recorded_order())
            index = int(mine.episode[0])
            meta = self.meta.get(index, {})
            task = self.tasks.get(int(mine.task[0])) if mine.task is not None else None
            if task is None:
                tasks = meta.get('tasks') or []
                task = str(tasks[0]) if tasks else ''
            yield LeRobotEpisode(index, task, mine.timestamp, mine.state, mine.action, self._videos(index, meta), meta)

    def _videos(self, index: int, meta: dict[str, Any]) -> dict[str, tuple[Path, float]]:
        out = {}
        template = str(self.info.get('video_path') or layout.VIDEO_PATH)
        chunks = int(self.info.get('chunks_size') or layout.CHUNKS_SIZE)
        for key in self.video_keys:
            try:
                if self.version == 'v3.0':
                    if f'videos/{key}/file_index' not in meta:
                        continue
                    path = self.root / template.format(video_key=key, chunk_index=meta[f'videos/{key}/chunk_index'],
                                                       file_index=meta[f'videos/{key}/file_index'])
                    start = float(meta.get(f'videos/{key}/from_timestamp') or 0.0)
                else:
                    path = self.root / template.format(video_key=key, episode_chunk=index // chunks,
                                                       episode_index=index)
                    start = 0.0
            except (KeyError, IndexError, ValueError, TypeError) as err:
                raise RobodataError(f'{self.root / layout.INFO}: video_path {template!r} does not fit episode {index}: '
                                    f'{err}') from None
            if path.is_file():
                out[key] = (path, start)
        return out

    def profile(self, raw: bool = False) -> Profile:
        """A robot profile for this dataset: the topics the import writes, at its fps."""
        rate = round(self.fps, 3)
        cameras = [{'name': camera_name(k), 'topic': camera_topic(camera_name(k), raw),
                    'type': IMAGE if raw else COMPRESSED_IMAGE, 'rate_hz': rate} for k in self.video_keys]
        topics: dict[str, Any] = {'joint_states': {'topic': STATE_TOPIC, 'type': JOINT_STATE, 'rate_hz': rate}}
        if self.action_key is not None:
            topics['actions'] = {'topic': ACTION_TOPIC, 'type': JOINT_STATE, 'rate_hz': rate}
        if cameras:
            topics['cameras'] = cameras
        robot = str(self.info.get('robot_type') or self.root.name)
        return profile_from_dict({'robot': {'name': robot, 'description': f'LeRobot dataset {self.root.name} '
                                            f'({self.version}), imported'}, 'topics': topics},
                                 self.root / layout.INFO)


def _frames(path: Path, times: np.ndarray, fps: float, pixels: bool = True
            ) -> Iterator[tuple[int, np.ndarray | None]]:
    """(row, RGB frame) for each wanted time (s in the file) that a decoded frame lies within half a period of;
    without `pixels`, (row, None) from the packets' times alone, nothing decoded."""
    import av  # PyAV: loaded only where a video is read (0.1 s a command that reads none)

    half = 0.5 / fps
    try:
        container = av.open(str(path))
    except av.FFmpegError as err:
        raise RobodataError(f'{path}: not a readable video: {err}') from None
    with container:
        stream = container.streams.video[0]
        if times[0] > half and stream.time_base is not None:
            container.seek(int(max(0.0, times[0] - 1.0) / stream.time_base), stream=stream, backward=True)
        k = 0
        try:
            if pixels:
                decoded: Iterator[tuple[Any, float]] = (
                    (frame, float(frame.pts * Fraction(frame.time_base))) for frame in container.decode(stream)
                    if frame.pts is not None and frame.time_base is not None)
            else:  # presentation order: the packets' times sorted
                base = Fraction(stream.time_base) if stream.time_base is not None else None
                pts = sorted(p.pts for p in container.demux(stream) if p.pts is not None and p.size)
                decoded = iter([] if base is None else [(None, float(t * base)) for t in pts])
            for frame, t in decoded:
                while k < len(times) and times[k] < t - half:
                    k += 1  # a frame the video lacks: its row gets no image
                if k >= len(times):
                    return
                if abs(times[k] - t) <= half:
                    rgb = frame.to_ndarray(format='rgb24') if frame is not None else None
                    while k < len(times) and abs(times[k] - t) <= half:
                        yield k, rgb
                        k += 1
        except av.FFmpegError as err:
            raise RobodataError(f'{path}: decoding stopped at {k} of {len(times)} frames: {err}') from None


def _arrivals(stamps: np.ndarray, fps: float) -> np.ndarray:
    """When each frame 'arrived', in frame order: its timestamp, except that a timestamp that stepped back (or
    repeats) does not take the arrival clock back with it; from there on, the arrivals run ahead of the stamps by
    the step. So the bag keeps the recording's order and the timing checks see the stamps jump against arrival,
    as they would on a rig."""
    period = round(1e9 / fps) if fps > 0 else 1
    out = stamps.copy()
    shift = 0
    for i in range(1, len(stamps)):
        step = int(stamps[i] - stamps[i - 1])
        if step <= 0:
            shift += period - step
        out[i] = stamps[i] + shift
    return out


def start_of(episode: LeRobotEpisode) -> int:
    """When the episode's bag starts (ns): our own export's `source_start_ns`, else the fixed epoch plus its index
    in hours."""
    given = episode.extra.get('source_start_ns')
    return int(given) if isinstance(given, int) else EPOCH_NS + episode.index * HOUR_NS


def clock(source: LeRobotSource, episode: LeRobotEpisode, start_ns: int) -> tuple[np.ndarray, np.ndarray]:
    """(header stamps, arrival times) in ns of the episode's frames, as its bag holds them."""
    stamps = start_ns + np.round(episode.timestamps * 1e9).astype(np.int64)
    return stamps, _arrivals(stamps, source.fps)


def camera_messages(source: LeRobotSource, episode: LeRobotEpisode, key: str, stamps: np.ndarray, raw: bool,
                    jpeg_quality: int, pixels: bool = True) -> Iterator[tuple[int, Any]]:
    """(stamp, Image or CompressedImage) for each frame of camera `key` the video has, as the bag holds them;
    without `pixels`, the same messages with their header alone (nothing decoded: for checks of timing only)."""
    from ros_robodata.bag.image import encode_compressed, encode_image  # start-up time: OpenCV, for frames only

    types = typestore().types
    name = camera_name(key)
    path, start = episode.videos[key]
    for row, rgb in _frames(path, start + episode.timestamps, source.fps, pixels):
        stamp = int(stamps[row])
        if rgb is None:
            yield stamp, (types[IMAGE](header=header(stamp, name), height=0, width=0, encoding='rgb8', is_bigendian=0,
                                       step=0, data=np.zeros(0, np.uint8)) if raw else
                          types[COMPRESSED_IMAGE](header=header(stamp, name), format='jpeg',
                                                  data=np.zeros(0, np.uint8)))
        elif raw:
            yield stamp, types[IMAGE](header=header(stamp, name), **encode_image(rgb, 'rgb8'))
        else:
            yield stamp, types[COMPRESSED_IMAGE](header=header(stamp, name),
                                                 **encode_compressed(rgb, 'jpeg', jpeg_quality))


def _write_bag(bag: Path, source: LeRobotSource, episode: LeRobotEpisode, start_ns: int, options: ImportOptions,
               raw: bool, profile: Profile | None) -> tuple[int, dict[str, int]]:
    from ros_robodata.bag.writer import BagWriter  # start-up time: rosbags' writer, not needed to read in place

    types = typestore().types
    stamps, received = clock(source, episode, start_ns)
    state_names = source.names(source.state_key, episode.state.shape[1])
    action_names = (source.names(source.action_key or layout.ACTION, episode.action.shape[1])
                    if episode.action is not None else [])
    empty = np.array([], dtype=np.float64)
    storage = profile.recording.storage if profile else 'mcap'
    compression = profile.recording.compression if profile else 'zstd'
    missing: dict[str, int] = {}
    with BagWriter(bag, storage=storage, compression=compression) as writer:
        writer.add_topic(STATE_TOPIC, JOINT_STATE)
        if episode.action is not None:
            writer.add_topic(ACTION_TOPIC, JOINT_STATE)
        for i, (stamp, arrival) in enumerate(zip(stamps, received, strict=True)):
            writer.write_message(STATE_TOPIC, int(arrival), types[JOINT_STATE](
                header=header(int(stamp)), name=state_names, position=episode.state[i], velocity=empty, effort=empty))
            if episode.action is not None:
                writer.write_message(ACTION_TOPIC, int(arrival), types[JOINT_STATE](
                    header=header(int(stamp)), name=action_names, position=episode.action[i], velocity=empty,
                    effort=empty))
        for key in source.video_keys:
            topic = camera_topic(camera_name(key), raw)
            if key not in episode.videos:
                missing[key] = len(stamps)
                continue
            writer.add_topic(topic, IMAGE if raw else COMPRESSED_IMAGE)
            written = 0
            for stamp, msg in camera_messages(source, episode, key, stamps, raw, options.jpeg_quality):
                writer.write_message(topic, stamp, msg)
                written += 1
            if written < len(stamps):
                missing[key] = len(stamps) - written
    return len(stamps), missing


def _label(value: Any, allowed: tuple[str, ...], default: str) -> str:
    return value if isinstance(value, str) and value in allowed else default


def import_lerobot(dataset: Dataset, recording: Recording, options: ImportOptions, profile: Profile | None,
                   who: str | None, executor: Executor | None = None) -> Imported:
    """Import every episode of the LeRobot dataset at recording.path not already imported; with `executor` (local
    processes, a Ray cluster that sees the dataset's folder) the episodes are converted there, one job each, and
    committed here. A dataset whose files do not hold what LeRobot's format says (a missing key, a value of the
    wrong kind, rows of unequal length) is one RobodataError naming it; the episodes imported before it stay."""
    try:
        return _import(dataset, recording, options, profile, who, executor)
    except (KeyError, IndexError, TypeError, ValueError) as err:
        raise RobodataError(f'{recording.path}: not a well-formed LeRobot dataset: {type(err).__name__}: '
                            f'{err}') from None


@dataclass(frozen=True)
class EpisodeJob:
    """One LeRobot episode for a converting worker (a process or a Ray task): where it is, the staging folder its
    bag goes to, and everything its episode.yaml needs but the bag's own statistics."""

    root: Path
    index: int
    staging: Path
    episode_id: str
    options: ImportOptions
    profile: Profile
    source: dict[str, Any]  # source_record() of the recording, without the episode's own `lerobot` part


_SOURCES: dict[Path, LeRobotSource] = {}  # per worker process: the dataset read once for all its episodes


def _convert(job: EpisodeJob) -> tuple[Episode, list[str]]:
    """Worker: write the episode's bag into its staging folder; (its episode.yaml record, its notes)."""
    source = _SOURCES.get(job.root)
    if source is None:
        _SOURCES.clear()
        source = _SOURCES[job.root] = LeRobotSource(job.root)
    episode = next(source.episodes(only=job.index))
    return _record(job.staging, source, episode, job.episode_id, job.options, job.profile, job.source)


def _record(staging: Path, source: LeRobotSource, episode: LeRobotEpisode, episode_id: str, options: ImportOptions,
            profile: Profile, recorded: dict[str, Any]) -> tuple[Episode, list[str]]:
    """The episode's bag written into `staging`/bag; its episode.yaml record and notes."""
    extra = episode.extra
    frames, missing = _write_bag(staging / 'bag', source, episode, start_of(episode), options, options.raw_images,
                                 profile)
    notes = [f'{key}: {n} of {frames} frame(s) have no video frame' for key, n in missing.items()]
    info: dict[str, Any] = {
        'episode_index': episode.index, 'codebase_version': source.version, 'fps': source.fps,
        'frames': frames, 'clock': 'source_start_ns' if 'source_start_ns' in extra else 'fixed epoch',
        **{k: extra[k] for k in ('source_episode_id', 'source_part', 'split', 'score', 'review') if k in extra}}
    record = Episode(
        id=episode_id, task=episode.task or options.task, operator=str(extra.get('operator') or options.operator),
        mode=_label(extra.get('mode'), MODES, options.mode), robot=profile.robot.name,
        outcome=_label(extra.get('outcome'), OUTCOMES, options.outcome),
        status='incomplete' if missing else 'complete', profile_sha256=profile.sha256, notes='\n'.join(notes),
        source={**recorded, 'lerobot': info})
    fill_stats_from_bag(record, staging / 'bag', profile)
    record.bag_sha256 = bag_checksums(staging / 'bag', {}, linked=False)
    return record, notes


def _import(dataset: Dataset, recording: Recording, options: ImportOptions, profile: Profile | None,
            who: str | None, executor: Executor | None = None) -> Imported:
    result = Imported(recording, dataset)
    if options.method != 'copy':
        raise RobodataError(f'{recording.path}: a LeRobot dataset is converted into bags; --{options.method} cannot '
                            'apply (use --copy, the default)')
    if options.split is not None or options.episode_id is not None:
        raise RobodataError(f'{recording.path}: a LeRobot dataset brings its own episodes: no split, no --id')
    source = LeRobotSource(recording.path)
    own = source.profile(options.raw_images)
    if profile is None:
        dataset.set_profile(own, who)
        profile = own
        result.notes.append(f'robot profile written from {layout.INFO} (no gripper: give --profile for the segmenter)')
    else:
        check_profile(profile, own, recording.path)
    result.notes += [f'{key}: in {layout.INFO}, but no video file here: left out' for key in source.absent_videos]
    result.notes += source.renamed
    cid = content_id(recording.files)
    done = {int(e.source.get('lerobot', {}).get('episode_index', -1)): i
            for i, e in imported_from(dataset, cid).items()}
    base = episode_id_for(recording.name)
    recorded = source_record(recording, options, cid)
    if executor is not None and (executor.ray is not None or executor.workers > 1):
        _import_as_jobs(dataset, recording, source, options, profile, who, executor, done, base, recorded, result)
    else:
        for episode in source.episodes():
            if episode.index in done:
                result.existing.append(done[episode.index])
                continue
            episode_id = dataset.reserve_episode_id(f'{base}-{episode.index:06d}')
            with staging_folder(dataset, episode_id) as staging:
                record, notes = _record(staging, source, episode, episode_id, options, profile, recorded)
                commit_episode(dataset, staging, record, who)
            result.episodes.append(episode_id)
            result.notes += [f'{episode_id}: {n}' for n in notes]
    result.notes += [f'{key}: its names in {layout.INFO} do not name each of its values: joints called joint_N'
                     for key in source.unnamed]
    return result


def _import_as_jobs(dataset: Dataset, recording: Recording, source: LeRobotSource, options: ImportOptions,
                    profile: Profile, who: str | None, executor: Executor, done: dict[int, str], base: str,
                    recorded: dict[str, Any], result: Imported) -> None:
    """One job per episode, converted where `executor` runs them into staging folders of the dataset (a folder the
    workers share), committed here in episode order; an episode whose job failed is named and left out, the others
    are imported (a rerun imports only what is missing)."""
    jobs = []
    with ExitStack() as stack:  # a stop (Ctrl-C, an error) removes every staging folder and reservation
        for index in source.episode_indices():
            if index in done:
                result.existing.append(done[index])
                continue
            episode_id = dataset.reserve_episode_id(f'{base}-{index:06d}')
            staging = stack.enter_context(staging_folder(dataset, episode_id))
            jobs.append(EpisodeJob(recording.path.absolute(), index, staging.absolute(), episode_id, options, profile,
                                   recorded))
        converted = map_jobs(_convert, jobs, executor)
        failed = []
        for job, outcome in zip(jobs, converted, strict=True):
            if isinstance(outcome, JobFailure):
                failed.append(f'episode {job.index}: {outcome.reason}')
                discard_staging(dataset, job.episode_id, job.staging)
                continue
            record, notes = outcome
            commit_episode(dataset, job.staging, record, who)
            result.episodes.append(job.episode_id)
            result.notes += [f'{job.episode_id}: {n}' for n in notes]
    if failed:
        raise RobodataError(f'{recording.path}: {len(failed)} episode(s) not imported ({"; ".join(failed[:3])}'
                            f'{"; ..." if len(failed) > 3 else ""}); the {len(result.episodes)} others are')


def check_profile(profile: Profile, own: Profile, where: Path) -> None:
    """The dataset's profile must read the topics the import writes, with the same types."""
    mine = {spec.topic: spec.type for _, spec in own.all_topics()}
    theirs = {spec.topic: spec.type for _, spec in profile.all_topics()}
    if wrong := [t for t in mine if t in theirs and theirs[t] != mine[t]]:
        raise RobodataError(f'{where}: the profile ({profile.source}) reads {", ".join(wrong)} as another type than '
                            'the import writes')
    if not any(t in theirs for t in mine):
        raise RobodataError(f'{where}: the profile ({profile.source}) names none of the topics a LeRobot import '
                            f'writes ({", ".join(mine)}): import into a new dataset, or use a profile that does')
