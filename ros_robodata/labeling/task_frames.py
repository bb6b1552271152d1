"""The camera frames a manifest lists, checked: every path inside DIR, every name plain, in episode order;
and the playback rate a labeling tool should show them at."""

from __future__ import annotations

import itertools
import os
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from ros_robodata.errors import RobodataError, TaskFileError
from ros_robodata.vocabulary import parse_duration

MANIFEST_FORMAT = 'ros_robodata.frames/1'
DEFAULT_BASE_URL = '/data/local-files/?d='
TOOLS = ('label_studio', 'cvat', 'coco')

_SAFE_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]*')
_PERIOD_KEYS = ('every_s', 'period_s', 'interval_s', 'every')


@dataclass(frozen=True)
class CameraImage:
    """One exported camera image: where it is (relative to DIR) and what it shows."""

    frame_id: str
    episode_id: str
    index: int
    sensor: str
    t_s: float
    file: str
    width: int
    height: int
    events_active: tuple[str, ...]


def _frames(manifest: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The manifest's frame list, after the checks every writer relies on."""
    if not isinstance(manifest, Mapping):
        raise TaskFileError('manifest: expected a JSON object')
    fmt = manifest.get('format')
    if fmt != MANIFEST_FORMAT:
        raise TaskFileError(f'manifest: format {fmt!r} is not supported (expected {MANIFEST_FORMAT!r})')
    frames = manifest.get('frames')
    if not isinstance(frames, list):
        raise TaskFileError('manifest: frames must be a list')
    return frames


def _inside(root: Path, file: Any, where: str) -> str:
    """`file` normalised as a POSIX path relative to `root`, refused if it resolves anywhere else."""
    if not isinstance(file, str) or not file or '\0' in file or '\\' in file:
        raise TaskFileError(f'{where}: file must be a relative path inside the export folder, got {file!r}')
    if PurePosixPath(file).is_absolute() or PureWindowsPath(file).drive:
        raise TaskFileError(f'{where}: file {file!r} is absolute; manifest paths are relative to the export folder')
    base = root.resolve()
    target = (base / file).resolve()
    if not target.is_relative_to(base):
        raise TaskFileError(f'{where}: file {file!r} resolves outside the export folder {root}')
    return PurePosixPath(os.path.normpath(file)).as_posix()


def _safe_name(name: Any, what: str, where: str) -> str:
    """A name used in output file names: letters, digits, '.', '_' and '-', not starting with '.'."""
    if not isinstance(name, str) or not _SAFE_NAME.fullmatch(name):
        raise TaskFileError(f'{where}: {what} {name!r} is not a safe file name (letters, digits, . _ -)')
    return name


def camera_images(manifest: Mapping[str, Any], *, root: Path) -> list[CameraImage]:
    """Every camera image of the export, in frame order and sensor-name order within a frame.

    Checks every file path in the manifest (LiDAR scans too) against `root`, so no writer can be
    led outside the export folder, and that each camera image exists.
    """
    images: list[CameraImage] = []
    for n, frame in enumerate(_frames(manifest)):
        where = f'manifest: frames[{n}]'
        if not isinstance(frame, Mapping) or not isinstance(frame.get('sensors'), Mapping):
            raise TaskFileError(f'{where}: expected an object with sensors')
        episode_id = _safe_name(frame.get('episode_id'), 'episode_id', where)
        for sensor in sorted(frame['sensors']):
            entry = frame['sensors'][sensor]
            at = f'{where}.sensors.{sensor}'
            if not isinstance(entry, Mapping):
                raise TaskFileError(f'{at}: expected an object')
            rel = _inside(root, entry.get('file'), at)
            if 'points' in entry or 'width' not in entry:
                continue  # a point cloud: checked for safety, not a labeling image
            _safe_name(sensor, 'sensor name', at)
            if not (root / rel).is_file():
                raise TaskFileError(f'{at}: image {rel} is missing from {root}')
            images.append(
                CameraImage(
                    frame_id=str(frame.get('frame_id', f'{episode_id}/{int(frame.get("index", 0)):06d}')),
                    episode_id=episode_id,
                    index=int(frame.get('index', 0)),
                    sensor=sensor,
                    t_s=float(frame.get('t_s', 0.0)),
                    file=rel,
                    width=int(entry['width']),
                    height=int(entry['height']),
                    events_active=tuple(str(e) for e in frame.get('events_active') or ()),
                )
            )
    return images


def _episode_order(manifest: Mapping[str, Any], images: Iterable[CameraImage]) -> list[str]:
    """Episode ids in manifest order (the episodes list first, then any only seen in frames)."""
    order: dict[str, None] = {}
    for episode in manifest.get('episodes') or ():
        if isinstance(episode, Mapping) and isinstance(episode.get('episode_id'), str):
            order.setdefault(episode['episode_id'])
    for image in images:
        order.setdefault(image.episode_id)
    return list(order)


def _reference_sensor(manifest: Mapping[str, Any], images: Sequence[CameraImage]) -> str | None:
    """The sync reference camera; the first camera by name when the manifest names none."""
    sync = manifest.get('sync')
    reference = sync.get('reference') if isinstance(sync, Mapping) else None
    if isinstance(reference, str) and reference:
        return reference
    return min((image.sensor for image in images), default=None)


def _period_s(value: Any) -> float | None:
    """A schedule interval in seconds from 0.5, '0.5s' or '500ms'; None if it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if value > 0 else None
    if isinstance(value, str):
        try:
            return parse_duration(value) / 1e9
        except RobodataError:
            return None
    return None


def episode_fps(manifest: Mapping[str, Any], times_s: Sequence[float]) -> float:
    """Playback rate of an episode's frame sequence, so a video second is a recorded second.

    From the schedule's fixed interval when it has one (`every_s`, `period_s`, `interval_s` or
    `every`: 0.5, '0.5s', '500ms'); else from the median spacing of the frames (every-n and
    around-events schedules); 1 fps for a single frame. Timeline labels count frames, so the rate
    only sets how fast the annotator's video plays.
    """
    schedule = manifest.get('schedule')
    if isinstance(schedule, Mapping):
        for key in _PERIOD_KEYS:
            period = _period_s(schedule.get(key))
            if period is not None:
                return round(1.0 / period, 6)
    steps = [b - a for a, b in itertools.pairwise(times_s) if b > a]
    if steps:
        return round(1.0 / statistics.median(steps), 6)
    return 1.0
