"""`robodata export lerobot`: a curated training set in LeRobot's dataset format v3.0.

The export is built in a hidden folder beside OUT and renamed into place only when every file is written, so an
interrupted or failed export never leaves a folder that looks like a dataset; OUT must be absent or empty (an
export never writes over anything).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pyarrow as pa

from ros_robodata import untrusted
from ros_robodata.bag.image import decode_image
from ros_robodata.bag.reader import BagReader
from ros_robodata.dataset import lerobot_layout as layout
from ros_robodata.dataset.copies import record_copy
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.embodiments import one_profile
from ros_robodata.errors import DatasetError, ExportError, ProfileError, RobodataError
from ros_robodata.export.face_blur import FaceBlur
from ros_robodata.export.lerobot import stats
from ros_robodata.export.lerobot.card import write_card
from ros_robodata.export.lerobot.frame_labels import flags_per_tick, kept_runs, labels_per_tick
from ros_robodata.export.lerobot.lerobot_files import ExportFiles
from ros_robodata.export.lerobot.lerobot_options import LeRobotOptions
from ros_robodata.export.lerobot.lerobot_video import even_size
from ros_robodata.export.lerobot.meta import write_meta
from ros_robodata.export.lerobot.policy import Candidate, Selection, select
from ros_robodata.export.lerobot.sampling import ACTION_TYPES, EpisodeGrid, grid_episode
from ros_robodata.export.pii_guard import audit_pii, check_pii
from ros_robodata.profile import Profile
from ros_robodata.version import __version__


@dataclass
class LeRobotExport:
    """What an export wrote: the folder, the selection, counts, what went wrong per episode, and where the time went
    (reading and decoding the bags, encoding video, the rest).

    Args:
        out_dir: the LeRobot dataset folder written.
        selection: the episodes the policy kept (in export order, with their split) and why each other was left out.
        episodes: how many LeRobot episodes were written (a source episode cut by flagged windows gives several).
        frames: how many frames were written in all.
        failed: per source episode that could not be exported, why.
        notes: warnings for the user (no frame left after trimming, the action read from the next state...).
        seconds: where the time went: 'total' and 'video_encoding'.
        faces_blurred: how many faces were blurred (options.blur_faces), else None.
    """

    out_dir: Path
    selection: Selection
    episodes: int = 0
    frames: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    faces_blurred: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The result as `robodata export lerobot --json` prints it."""
        return {'out': str(self.out_dir), 'episodes': self.episodes, 'frames': self.frames,
                'source_episodes': self.selection.kept, 'split': self.selection.split_of,
                'left_out': self.selection.left_out, 'failed': self.failed,
                'warnings': self.selection.warnings + self.notes, 'seconds': self.seconds,
                'faces_blurred': self.faces_blurred}


def _read_json(path: Path) -> dict[str, Any]:
    """An episode's sidecar (quality.json, events.json) as robodata wrote it, read with the limits of any file a
    user may have edited (size, nesting, digits): ExportError naming it when it is not readable JSON."""
    if not path.is_file():
        return {}
    data = untrusted.read_json(path, ExportError)
    return data if isinstance(data, dict) else {}


def _action_topic(profile: Profile, wanted: str | None, notes: list[str]) -> str | None:
    """The topic actions are read from: the one asked for, else the profile's actions topic when it holds numbers,
    else None (the next state)."""
    if wanted is None:
        return None
    if wanted:
        if wanted not in {spec.topic for _, spec in profile.all_topics()}:
            raise RobodataError(f'--action-topic: {wanted} is not a topic of the profile ({profile.source})')
        return wanted
    actions = profile.topics.actions
    if actions is None:
        return None
    if actions.type not in ACTION_TYPES:
        notes.append(f'the actions topic {actions.topic} is {actions.type}, not numbers an action is read from: the '
                     'action is the next state (name a leader arm with --action-topic)')
        return None
    return actions.topic


def _prepare_out(out: Path) -> Path:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ExportError(f'{out}: exists and is not empty: an export never writes over anything; give a new folder')
    staging = out.parent / f'.{out.name}.partial'
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    return staging


def candidates(dataset: Dataset, ids: list[str]) -> list[Candidate]:
    out = []
    for episode_id in ids:
        episode = dataset.episode(episode_id)
        score = _read_json(dataset.episode_dir(episode_id) / 'quality.json').get('score')
        out.append(Candidate(episode_id, episode.outcome, episode.status,
                             float(score) if isinstance(score, (int, float)) else None))
    return out


def _camera_frames(bag: Path, profile: Profile, grid: EpisodeGrid, order: np.ndarray,
                   cameras: list[str], blur: FaceBlur | None = None) -> Iterator[tuple[str, int, np.ndarray]]:
    """(camera, position in `order`, RGB frame) for every kept tick, in tick order per camera; each picked frame
    is decoded once, even when it serves two ticks, and its faces blurred when `blur` is given."""
    topic_of = {c.topic: c.name for c in profile.topics.cameras if c.name in cameras}
    wanted: dict[str, dict[int, list[int]]] = {name: {} for name in cameras}  # camera -> frame -> positions
    for pos, tick in enumerate(order):
        for name in cameras:
            wanted[name].setdefault(int(grid.camera_picks[name][tick]), []).append(pos)
    seen = dict.fromkeys(cameras, -1)
    next_pos = dict.fromkeys(cameras, 0)
    pending: dict[str, dict[int, np.ndarray]] = {name: {} for name in cameras}
    with BagReader(bag) as reader:
        for message in reader.messages(list(topic_of)):
            name = topic_of[message.topic]
            seen[name] += 1
            positions = wanted[name].get(seen[name])
            if not positions:
                continue
            rgb = decode_image(reader.decode(message), 'rgb')
            if blur is not None:
                rgb = blur(rgb, cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
            for pos in positions:
                pending[name][pos] = rgb
            while next_pos[name] in pending[name]:
                yield name, next_pos[name], pending[name].pop(next_pos[name])
                next_pos[name] += 1
    for name in cameras:
        if next_pos[name] != len(order):
            raise ExportError(f'{bag}: camera {name}: {len(order) - next_pos[name]} frame(s) could not be read')


def export_lerobot(dataset: Dataset, out: str | os.PathLike[str], options: LeRobotOptions | None = None, *,
                   episode_ids: list[str] | None = None,
                   progress: Callable[[Iterable[Any]], Iterator[Any]] | None = None,
                   profile: Profile | None = None, record: bool = True) -> LeRobotExport:
    """Export the dataset's episodes chosen by the policy as a LeRobot v3.0 dataset at `out`, ready to train a
    policy on; written in a staging folder and moved into place whole, so a failed export leaves nothing.

    Args:
        dataset: the dataset the episodes come from (with its robot profile).
        out: the LeRobot dataset folder to write (new or empty).
        options: the curation policy and the format (fps, cameras, action, codec, file sizes).
        episode_ids: the episodes the policy chooses from; None: every episode of the dataset.
        progress: wraps the episodes to show progress.
        profile: the robot profile to read the episodes with; None: theirs (a dataset of several robots: the kept
            episodes must all be one robot's; `export_pool` writes one dataset per robot).
        record: record the export in the dataset's copies (False: a part `export_pool` builds on, recorded there).

    Raises:
        ExportError: `out` is not empty, no episode passes the policy, nothing could be exported, episodes
            have different joints or robots, or a camera the profile marks `pii: true` is exported without
            options.allow_pii or options.blur_faces (granted, either is written to the dataset's audit.jsonl).
        DatasetError: the dataset has no robot profile.
        RobodataError: the options are out of range or name a camera or topic the profile does not have.
    """
    options = options or LeRobotOptions()
    options.check()
    selection = select(candidates(dataset, episode_ids if episode_ids is not None else dataset.episode_ids()),
                       options.policy)
    if not selection.kept:
        raise ExportError(f'{dataset.root}: no episode passes the policy ({len(selection.left_out)} left out: '
                          + '; '.join(f'{k}: {v}' for k, v in list(selection.left_out.items())[:5]) + ')')
    if profile is None:
        try:
            profile = one_profile(dataset, [dataset.episode(e) for e in selection.kept])
        except (DatasetError, ProfileError):
            raise
        except RobodataError as err:
            raise ExportError(f'{err}, or --pool for one LeRobot dataset per robot') from None
    out_dir = Path(out)
    cameras = [c.name for c in profile.topics.cameras]
    if options.cameras is not None:
        if unknown := [c for c in options.cameras if c not in cameras]:
            raise RobodataError(f'--cameras: the profile has no camera {", ".join(unknown)} (it has: '
                                f'{", ".join(cameras) or "none"})')
        cameras = list(options.cameras)
    pii = check_pii(profile, cameras, allow_pii=options.allow_pii, blur_faces=options.blur_faces)
    fps = options.fps or next((round(c.rate_hz) for c in profile.topics.cameras
                               if c.name in cameras and c.rate_hz), 30)
    notes: list[str] = []
    action_topic = _action_topic(profile, options.action_topic, notes)
    staging = _prepare_out(out_dir)
    result = LeRobotExport(out_dir, selection, notes=notes)
    started = time.perf_counter()
    writer = ExportFiles(staging, fps, options)
    tasks: dict[str, int] = {}
    names: tuple[list[str], list[str]] | None = None
    sources: dict[int, str] = {}
    blur = FaceBlur() if options.blur_faces and cameras else None
    try:
        # the permission on record before a frame is written
        audit_pii(dataset.root, pii, out_dir, export='lerobot', allow_pii=options.allow_pii,
                  blur_faces=options.blur_faces, episodes=selection.kept)
        for episode_id in (progress(selection.kept) if progress else selection.kept):
            try:
                parts = _export_episode(dataset, episode_id, profile, options, fps, cameras, action_topic, writer,
                                        tasks, selection.split_of[episode_id], blur)
            except RobodataError as err:
                result.failed[episode_id] = ' '.join(str(err).split())
                continue
            if parts is None:
                result.notes.append(f'{episode_id}: no frame left after trimming and cutting flagged windows')
                continue
            grid_names, new = parts
            if names is None:
                names = grid_names
            elif names != grid_names:
                raise ExportError(f'{episode_id}: state or action joints {grid_names} differ from earlier episodes\' '
                                  f'{names}: one dataset needs one layout')
            for index in new:
                sources[index] = episode_id
        writer.close()
        if not writer.episode_rows:
            raise ExportError(f'{dataset.root}: nothing exported: ' + '; '.join(
                f'{k}: {v}' for k, v in list(result.failed.items())[:3]))
        assert names is not None
        write_meta(staging, dataset, profile, options, fps, cameras, writer, tasks, names, selection, action_topic)
        result.episodes = len(writer.episode_rows)
        result.frames = writer.index
        write_card(staging / 'README.md', dataset, profile, options.policy.to_json(), selection, writer.episode_rows,
                   result.failed, __version__, options.release)
        if out_dir.exists():
            out_dir.rmdir()  # found empty above
        staging.rename(out_dir)
        # where the data went, so `robodata retire` can withdraw it (a LeRobot dataset is deleted whole)
        if record and (note := record_copy(dataset.root, 'lerobot', out_dir,
                                           [e for e in selection.kept if e not in result.failed])):
            result.notes.append(note)
    except BaseException:
        with contextlib.suppress(Exception):
            writer.close()
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if blur is not None:
        result.faces_blurred = blur.faces
    total = time.perf_counter() - started
    result.seconds = {'total': round(total, 3), 'video_encoding': round(writer.encode_s, 3)}
    return result


def _trim_window(quality: dict[str, Any], folder: Path) -> tuple[int | None, int | None]:
    """The trim points `robodata score` wrote (s from the episode's first stamp) as header-clock bounds."""
    metrics = quality.get('metrics')
    trim = metrics.get('trim') if isinstance(metrics, dict) else None
    origin = quality.get('start_ns')
    if not trim or origin is None:
        return None, None
    try:
        return (int(origin + float(trim['start_s']) * 1e9) if 'start_s' in trim else None,
                int(origin + float(trim['end_s']) * 1e9) if 'end_s' in trim else None)
    except (TypeError, ValueError) as err:
        raise ExportError(f'{folder / "quality.json"}: trim points are not numbers ({err}): run robodata score '
                          'again') from None


def _export_episode(dataset: Dataset, episode_id: str, profile: Profile, options: LeRobotOptions, fps: int,
                    cameras: list[str], action_topic: str | None, writer: ExportFiles, tasks: dict[str, int],
                    split: str, blur: FaceBlur | None = None) -> tuple[tuple[list[str], list[str]], list[int]] | None:
    folder = dataset.episode_dir(episode_id)
    episode = dataset.episode(episode_id)
    quality = _read_json(folder / 'quality.json')
    events = _read_json(folder / 'events.json')
    window = _trim_window(quality, folder) if options.policy.trim_idle else (None, None)
    grid = grid_episode(dataset.bag_dir(episode_id), profile, fps, cameras, action_topic=action_topic,
                        window_ns=window)
    flags = flags_per_tick(quality.get('findings') or [], grid.ticks)
    keep = np.ones(len(grid), dtype=bool)
    if options.policy.exclude_flagged:
        keep = np.array([not f for f in flags], dtype=bool)
    parts = kept_runs(keep)
    if not parts:
        return None
    subtask, event = labels_per_tick(events, grid.ticks, fps)
    task = episode.task or dataset.name
    task_index = tasks.setdefault(task, len(tasks))
    order = np.concatenate(parts)
    # sampled frames for each part's image statistics
    part_of = np.concatenate([np.full(len(p), i) for i, p in enumerate(parts)])
    start_of = np.cumsum([0] + [len(p) for p in parts])
    samples = {i: set(stats.sample_indices(len(p))) for i, p in enumerate(parts)}
    sampled: dict[tuple[int, str], list[np.ndarray]] = {}
    from_ts: dict[tuple[int, str], float] = {}
    frames = _camera_frames(dataset.bag_dir(episode_id), profile, grid, order, cameras, blur) if cameras \
        else iter(())
    for name, pos, rgb in frames:
        height, width = rgb.shape[:2]
        w, h = even_size(width, height)
        video = writer.video(name, w, h)
        part = int(part_of[pos])
        if pos == start_of[part]:
            from_ts[(part, name)] = video.frames / fps
        started = time.perf_counter()
        video.add(rgb[:h, :w])
        writer.encode_s += time.perf_counter() - started
        if pos - start_of[part] in samples[part]:
            sampled.setdefault((part, name), []).append(stats.downsample(rgb[:h, :w]))
    new = []
    for i, ticks in enumerate(parts):
        n = len(ticks)
        index = len(writer.episode_rows)
        frame_index = np.arange(n, dtype=np.int64)
        timestamp = (frame_index / fps).astype(np.float32)
        flagged = [flags[k] for k in ticks]
        columns = {
            layout.STATE: pa.FixedSizeListArray.from_arrays(pa.array(grid.state[ticks].reshape(-1)),
                                                            grid.state.shape[1]),
            layout.ACTION: pa.FixedSizeListArray.from_arrays(pa.array(grid.action[ticks].reshape(-1)),
                                                             grid.action.shape[1]),
            'timestamp': pa.array(timestamp), 'frame_index': pa.array(frame_index),
            'episode_index': pa.array(np.full(n, index, dtype=np.int64)),
            'index': pa.array(np.arange(writer.index, writer.index + n, dtype=np.int64)),
            'task_index': pa.array(np.full(n, task_index, dtype=np.int64)),
            'subtask': pa.array([subtask[k] for k in ticks], pa.string()),
            'event': pa.array([event[k] for k in ticks], pa.string()),
            'quality.flags': pa.array(flagged, pa.string()),
            'quality.flagged': pa.array([bool(f) for f in flagged], pa.bool_()),
        }
        chunk, file = writer.write_rows(pa.table(columns))
        feature_stats = {
            layout.STATE: stats.vector_stats(grid.state[ticks]), layout.ACTION: stats.vector_stats(grid.action[ticks]),
            'timestamp': stats.vector_stats(timestamp), 'frame_index': stats.vector_stats(frame_index),
            'episode_index': stats.vector_stats(np.full(n, index)),
            'index': stats.vector_stats(np.arange(writer.index, writer.index + n)),
            'task_index': stats.vector_stats(np.full(n, task_index))}
        row: dict[str, Any] = {
            'episode_index': index, 'tasks': [task], 'length': n, 'data/chunk_index': chunk, 'data/file_index': file,
            'dataset_from_index': writer.index, 'dataset_to_index': writer.index + n}
        for name in cameras:
            key = layout.IMAGES_PREFIX + name
            video_index = writer.video_files[name]
            row[f'videos/{key}/chunk_index'] = video_index // layout.CHUNKS_SIZE
            row[f'videos/{key}/file_index'] = video_index
            row[f'videos/{key}/from_timestamp'] = from_ts[(i, name)]
            row[f'videos/{key}/to_timestamp'] = from_ts[(i, name)] + n / fps
            feature_stats[key] = stats.image_stats(np.stack(sampled[(i, name)]))
        row.update({'meta/episodes/chunk_index': 0, 'meta/episodes/file_index': 0,
                    'source_episode_id': episode_id, 'source_part': i, 'source_start_ns': int(grid.ticks[ticks[0]]),
                    'outcome': episode.outcome, 'review': episode.status if episode.status in ('approved',
                                                                                              'rejected') else '',
                    'score': float(quality['score']) if isinstance(quality.get('score'), (int, float)) else None,
                    'operator': episode.operator, 'mode': episode.mode,
                    'split': split, 'flagged_frames': int(sum(bool(f) for f in flagged)),
                    'max_offset_ms': max(grid.offset_ms.values())})
        writer.episode_rows.append(row)
        writer.episode_stats.append(feature_stats)
        writer.index += n
        new.append(index)
    writer.end_episode()
    return (grid.state_names, grid.action_names), new


