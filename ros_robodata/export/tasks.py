"""Task files that labeling tools import, built from a frame export's manifest.

Annotation teams work in Label Studio, CVAT or straight on COCO files; each wants the same frames and
the same classes (`config/taxonomy.yaml`) in its own shape. `write_task_files` writes all of them
into the export folder DIR (the one holding `manifest.json`), with every path inside the files
relative to DIR, so the folder can be moved or mounted elsewhere as a whole:

    DIR/label_studio/tasks_images.json    one image task per camera frame (RectangleLabels, PolygonLabels,
    DIR/label_studio/config_images.xml    KeyPointLabels, Choices for tags: from the taxonomy kinds)
    DIR/label_studio/tasks_timeline.json  one task per episode for temporal labels (TimelineLabels on a
    DIR/label_studio/config_timeline.xml  <Video>), with the ordered frame list and, optionally, an MP4
    DIR/label_studio/videos/<episode>/<reference camera>.mp4
    DIR/cvat/task.json, labels.json, image_list.txt   (images/ only with copy_images=True)
    DIR/coco/annotations.json             images and categories; annotations [] to be labelled

Importing, per tool:

- Label Studio: start it with `LABEL_STUDIO_LOCAL_FILES_SERVING_ENABLED=true` and
  `LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT=<document root>` (DIR unless you passed `document_root`),
  add a Local Files source storage for DIR (without syncing it), create one project with
  `config_images.xml` and import `tasks_images.json`, and one with `config_timeline.xml` and import
  `tasks_timeline.json`. A timeline label's frame numbers index the task's `frame_ids` list.
- CVAT: from DIR, `cvat-cli --server-host HOST --auth USER task create "NAME" --labels cvat/labels.json
  local $(cat cvat/image_list.txt)` (the exact line is in `cvat/task.json`). The list is in
  lexicographic order, CVAT's default sorting, so CVAT frame k is `task.json` `frames[k]`.
- COCO: point your tool at `coco/annotations.json` with the image root DIR (`file_name` is relative
  to DIR); fill `annotations`, keep `categories` (see taxonomy.py for the supercategory rule).

Rules that keep reruns and exports safe: every file path taken from the manifest must stay inside
DIR once resolved (a `../../etc/passwd` is refused, not read); episode and sensor names used in file
names must be plain names; each file is written to a temporary name and moved into place, and is
left untouched when its bytes would not change, so rerunning on the same manifest gives the same
bytes (the MP4s included: OpenCV's mp4v writer is deterministic).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import statistics
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any
from urllib.parse import quote

import cv2

from ros_robodata.errors import RobodataError, TaskFileError
from ros_robodata.export.taxonomy import Taxonomy
from ros_robodata.files import replace_unless_same, write_atomic
from ros_robodata.vocabulary import parse_duration

MANIFEST_FORMAT = 'ros_robodata.frames/1'
DEFAULT_BASE_URL = '/data/local-files/?d='
TOOLS = ('label_studio', 'cvat', 'coco')

_SAFE_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]*')
_IMAGE_TAGS = {'bbox': 'RectangleLabels', 'polygon': 'PolygonLabels', 'keypoints': 'KeyPointLabels'}
_CVAT_SHAPES = {'bbox': 'rectangle', 'polygon': 'polygon', 'keypoints': 'points'}
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


# -- manifest ----------------------------------------------------------------------------------


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


# -- Label Studio ------------------------------------------------------------------------------


def _url(base_url: str, root: Path, rel: str, document_root: Path | None) -> str:
    """Label Studio URL of a file under DIR: `base_url` + its path relative to the document root."""
    doc_root = (document_root or root).resolve()
    target = root.resolve() / rel
    if not target.is_relative_to(doc_root):
        raise TaskFileError(f'label studio: {target} is outside the document root {doc_root}')
    return base_url + quote(target.relative_to(doc_root).as_posix(), safe='/')


def label_studio_tasks(
    manifest: Mapping[str, Any],
    *,
    root: Path,
    base_url: str = DEFAULT_BASE_URL,
    document_root: Path | None = None,
) -> list[dict[str, Any]]:
    """One Label Studio image task per exported camera image (LiDAR scans are not image tasks).

    `root` is DIR (manifest paths are relative to it); URLs are `base_url` + the path relative to
    `document_root` (Label Studio's LOCAL_FILES_DOCUMENT_ROOT, default DIR).
    """
    return [
        {
            'data': {
                'image': _url(base_url, root, image.file, document_root),
                'frame_id': image.frame_id,
                'episode_id': image.episode_id,
                'sensor': image.sensor,
                't_s': image.t_s,
                'events_active': list(image.events_active),
            }
        }
        for image in camera_images(manifest, root=root)
    ]


def episode_sequences(manifest: Mapping[str, Any], *, root: Path) -> dict[str, list[CameraImage]]:
    """Per episode (manifest order), the reference camera's images ordered by frame index."""
    images = camera_images(manifest, root=root)
    reference = _reference_sensor(manifest, images)
    sequences: dict[str, list[CameraImage]] = {}
    for episode_id in _episode_order(manifest, images):
        frames = sorted((i for i in images if i.episode_id == episode_id and i.sensor == reference), key=_by_index)
        if frames:
            sequences[episode_id] = frames
    return sequences


def _by_index(image: CameraImage) -> tuple[int, float]:
    return image.index, image.t_s


def video_path(episode_id: str, sensor: str) -> str:
    """Where an episode's MP4 goes, relative to DIR."""
    return f'label_studio/videos/{episode_id}/{sensor}.mp4'


def label_studio_timeline_tasks(
    manifest: Mapping[str, Any],
    *,
    root: Path,
    base_url: str = DEFAULT_BASE_URL,
    document_root: Path | None = None,
    videos: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """One timeline task per episode: the reference camera's ordered frames, fps and, when given, the video.

    `videos` maps episode id to its MP4 path relative to DIR (see `write_episode_video`); the
    timeline config plays `$video`, so tasks without one need the MP4 written first. A timeline
    label's frame number k (1-based in Label Studio) is `frame_ids[k - 1]`.
    """
    episodes = {e.get('episode_id'): e for e in manifest.get('episodes') or () if isinstance(e, Mapping)}
    tasks: list[dict[str, Any]] = []
    for episode_id, frames in episode_sequences(manifest, root=root).items():
        info = episodes.get(episode_id, {})
        data: dict[str, Any] = {}
        if videos and episode_id in videos:
            data['video'] = _url(base_url, root, videos[episode_id], document_root)
        data.update(
            {
                'frames': [_url(base_url, root, f.file, document_root) for f in frames],
                'frame_ids': [f.frame_id for f in frames],
                't_s': [f.t_s for f in frames],
                'fps': episode_fps(manifest, [f.t_s for f in frames]),
                'episode_id': episode_id,
                'sensor': frames[0].sensor,
                'task': info.get('task'),
                'outcome': info.get('outcome'),
            }
        )
        tasks.append({'data': data})
    return tasks


def _labels(parent: ET.Element, tag: str, name: str, to_name: str, classes: Iterable[Any], **extra: str) -> None:
    """A control tag with one label per class (value = class path, colored); nothing if no classes."""
    classes = list(classes)
    if not classes:
        return
    control = ET.SubElement(parent, tag, {'name': name, 'toName': to_name, **extra})
    child = 'Choice' if tag == 'Choices' else 'Label'
    for cls in classes:
        attrs = {'value': cls.path}
        if child == 'Label':
            attrs['background'] = cls.color
        if cls.description:
            attrs['hint'] = cls.description
        ET.SubElement(control, child, attrs)


def _xml(view: ET.Element) -> str:
    ET.indent(view, space='  ')
    return ET.tostring(view, encoding='unicode') + '\n'


def label_studio_image_config(taxonomy: Taxonomy) -> str:
    """Labeling config for the image tasks: one control per spatial kind plus Choices for tags."""
    view = ET.Element('View')
    ET.SubElement(view, 'Header', {'value': '$frame_id'})
    ET.SubElement(view, 'Image', {'name': 'image', 'value': '$image', 'zoom': 'true', 'zoomControl': 'true'})
    for kind, tag in _IMAGE_TAGS.items():
        _labels(view, tag, kind, 'image', taxonomy.with_kind(kind))
    _labels(view, 'Choices', 'tag', 'image', taxonomy.with_kind('tag'), choice='multiple', showInline='true')
    return _xml(view)


def label_studio_timeline_config(taxonomy: Taxonomy) -> str:
    """Labeling config for the episode tasks: TimelineLabels with the temporal classes over `$video`."""
    view = ET.Element('View')
    ET.SubElement(view, 'Header', {'value': '$episode_id'})
    _labels(view, 'TimelineLabels', 'timeline', 'video', taxonomy.with_kind('temporal'))
    ET.SubElement(view, 'Video', {'name': 'video', 'value': '$video', 'frameRate': '$fps', 'timelineHeight': '120'})
    return _xml(view)


def write_episode_video(frames: Sequence[CameraImage], *, root: Path, rel: str, fps: float) -> Path:
    """Encode an episode's frames as MP4 (OpenCV, 'mp4v') at DIR/`rel`; same frames give the same bytes.

    Frames of another size than the first are resized to it (a camera that changed resolution
    mid-episode still makes one playable video).
    """
    target = root / _inside(root, rel, 'video')
    first = _read_image(root, frames[0])
    height, width = first.shape[:2]
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f'.{target.stem}.tmp{target.suffix}')
    writer = cv2.VideoWriter(str(tmp), cv2.VideoWriter_fourcc(*'mp4v'), float(fps), (width, height))
    if not writer.isOpened():
        raise TaskFileError(f'{target}: OpenCV cannot write mp4v video here; rerun with video disabled')
    try:
        for n, frame in enumerate(frames):
            image = first if n == 0 else _read_image(root, frame)
            if image.shape[:2] != (height, width):
                image = cv2.resize(image, (width, height), interpolation=cv2.INTER_AREA)
            writer.write(image)
    finally:
        writer.release()
    replace_unless_same(tmp, target)
    return target


def _read_image(root: Path, frame: CameraImage) -> Any:
    image = cv2.imread(str(root / frame.file), cv2.IMREAD_COLOR)
    if image is None:
        raise TaskFileError(f'{root / frame.file}: OpenCV cannot decode this image ({frame.frame_id})')
    return image


# -- CVAT --------------------------------------------------------------------------------------


def cvat_labels(taxonomy: Taxonomy) -> list[dict[str, Any]]:
    """CVAT label spec (what `cvat-cli task create --labels` takes), one label per labelable class.

    Type: the one shape of a single-shape class (rectangle, polygon, points), `tag` for tag- or
    temporal-only classes (CVAT marks time spans as per-frame tags), `any` for several kinds.
    """
    labels: list[dict[str, Any]] = []
    for cls in taxonomy.classes:
        if not cls.kinds:
            continue
        shapes = [_CVAT_SHAPES[k] for k in cls.kinds if k in _CVAT_SHAPES]
        has_tag = any(k in ('tag', 'temporal') for k in cls.kinds)
        if len(shapes) == 1 and not has_tag:
            label_type = shapes[0]
        elif not shapes:
            label_type = 'tag'
        else:
            label_type = 'any'
        labels.append({'name': cls.path, 'color': cls.color, 'type': label_type, 'attributes': []})
    return labels


def _flat_name(image: CameraImage) -> str:
    return f'{image.episode_id}__{image.sensor}__{image.index:06d}{PurePosixPath(image.file).suffix.lower()}'


def cvat_task(
    manifest: Mapping[str, Any], taxonomy: Taxonomy, *, root: Path, copy_images: bool = False
) -> dict[str, Any]:
    """The CVAT task spec: name, labels, the image files (relative to DIR, in CVAT's sorting order) and how to import.

    Without `copy_images` the list points at the exported images where they are; with it, at
    flat-named copies in `cvat/images/` (one folder to upload or share, names unique per image).
    `frames[k]` maps CVAT frame k back to the frame id, episode and sensor.
    """
    images = camera_images(manifest, root=root)
    files = [f'cvat/images/{_flat_name(i)}' for i in images] if copy_images else [i.file for i in images]
    if len(set(files)) != len(files):
        raise TaskFileError('cvat: two camera images map to the same file name; check episode and sensor names')
    pairs = sorted(zip(files, images, strict=True), key=lambda pair: pair[0])
    name = f'{manifest.get("dataset") or "ros_robodata"} frames'
    return {
        'name': name,
        'labels': cvat_labels(taxonomy),
        'sorting_method': 'lexicographical',
        'image_files': [file for file, _ in pairs],
        'frames': [
            {
                'file': file,
                'source': image.file,
                'frame_id': image.frame_id,
                'episode_id': image.episode_id,
                'sensor': image.sensor,
                't_s': image.t_s,
            }
            for file, image in pairs
        ],
        'import': {
            'labels_file': 'cvat/labels.json',
            'image_list': 'cvat/image_list.txt',
            'run_in': 'the export folder (paths are relative to it)',
            'command': (
                f'cvat-cli --server-host HOST --auth USER task create {json.dumps(name)} '
                '--labels cvat/labels.json local $(cat cvat/image_list.txt)'
            ),
        },
    }


# -- COCO --------------------------------------------------------------------------------------


def coco_skeleton(manifest: Mapping[str, Any], taxonomy: Taxonomy, *, root: Path) -> dict[str, Any]:
    """COCO file with every camera image and the taxonomy's categories; annotations left empty to label.

    `file_name` is relative to DIR (the image root); ids count from 1 in frame order.
    """
    images = camera_images(manifest, root=root)
    return {
        'info': {
            'description': f'ros_robodata frame export of {manifest.get("dataset") or "a dataset"}, to be labelled',
            'version': MANIFEST_FORMAT,
            'contributor': 'ros_robodata',
            'dataset': manifest.get('dataset'),
            'taxonomy': taxonomy.name,
            'image_root': 'the export folder (parent of coco/)',
        },
        'licenses': [],
        'images': [
            {
                'id': n,
                'file_name': image.file,
                'width': image.width,
                'height': image.height,
                'frame_id': image.frame_id,
                'episode_id': image.episode_id,
                'sensor': image.sensor,
                't_s': image.t_s,
            }
            for n, image in enumerate(images, start=1)
        ],
        'annotations': [],
        'categories': taxonomy.coco_categories(),
    }


# -- writing -----------------------------------------------------------------------------------


def _json_bytes(value: Any) -> bytes:
    try:
        text = json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)
    except ValueError as exc:
        raise TaskFileError(f'manifest: a value cannot be written as JSON ({exc})') from None
    return (text + '\n').encode('utf-8')


def _write(target: Path, data: bytes) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, data)
    return target


def write_task_files(
    manifest: Mapping[str, Any],
    out_dir: Path,
    taxonomy: Taxonomy,
    *,
    tools: Sequence[str] = TOOLS,
    video: bool = True,
    base_url: str = DEFAULT_BASE_URL,
    document_root: Path | None = None,
    copy_images: bool = False,
) -> dict[str, list[Path]]:
    """Write the task files of `tools` into the export folder `out_dir` (DIR); returns the files per tool.

    Atomic and idempotent (same manifest and taxonomy, same bytes); every path the manifest names
    must resolve inside `out_dir`. `video` writes one MP4 per episode of the reference camera for
    the Label Studio timeline tasks (without it those tasks carry only the frame list, and the
    timeline config, which plays `$video`, will not import them); `copy_images` gives CVAT its own
    flat-named image copies.
    Import steps per tool are in this module's docstring and `cvat/task.json`.
    """
    out_dir = Path(out_dir)
    unknown = [t for t in tools if t not in TOOLS]
    if unknown:
        raise TaskFileError(f'task files: unknown tool {unknown[0]!r} (expected {", ".join(TOOLS)})')
    if not out_dir.is_dir():
        raise TaskFileError(f'{out_dir}: export folder does not exist')
    images = camera_images(manifest, root=out_dir)  # checks every path before anything is written
    written: dict[str, list[Path]] = {}

    if 'label_studio' in tools:
        ls = out_dir / 'label_studio'
        files: list[Path] = []
        videos: dict[str, str] = {}
        if video:
            for episode_id, frames in episode_sequences(manifest, root=out_dir).items():
                rel = video_path(episode_id, frames[0].sensor)
                fps = episode_fps(manifest, [f.t_s for f in frames])
                files.append(write_episode_video(frames, root=out_dir, rel=rel, fps=fps))
                videos[episode_id] = rel
        image_tasks = label_studio_tasks(manifest, root=out_dir, base_url=base_url, document_root=document_root)
        timeline_tasks = label_studio_timeline_tasks(
            manifest, root=out_dir, base_url=base_url, document_root=document_root, videos=videos
        )
        files += [
            _write(ls / 'tasks_images.json', _json_bytes(image_tasks)),
            _write(ls / 'tasks_timeline.json', _json_bytes(timeline_tasks)),
            _write(ls / 'config_images.xml', label_studio_image_config(taxonomy).encode('utf-8')),
            _write(ls / 'config_timeline.xml', label_studio_timeline_config(taxonomy).encode('utf-8')),
        ]
        written['label_studio'] = files

    if 'cvat' in tools:
        spec = cvat_task(manifest, taxonomy, root=out_dir, copy_images=copy_images)
        files = []
        if copy_images:
            for image in images:
                copy = out_dir / 'cvat' / 'images' / _flat_name(image)
                files.append(_write(copy, (out_dir / image.file).read_bytes()))
        files += [
            _write(out_dir / 'cvat' / 'task.json', _json_bytes(spec)),
            _write(out_dir / 'cvat' / 'labels.json', _json_bytes(spec['labels'])),
            _write(out_dir / 'cvat' / 'image_list.txt', ''.join(f'{f}\n' for f in spec['image_files']).encode()),
        ]
        written['cvat'] = files

    if 'coco' in tools:
        coco = coco_skeleton(manifest, taxonomy, root=out_dir)
        written['coco'] = [_write(out_dir / 'coco' / 'annotations.json', _json_bytes(coco))]
    return written
