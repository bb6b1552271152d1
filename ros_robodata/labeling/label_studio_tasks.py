"""Label Studio: image tasks, per-episode timeline tasks (with an MP4 of the frames), and their labeling configs."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import cv2

from ros_robodata.errors import TaskFileError
from ros_robodata.files import replace_unless_same
from ros_robodata.labeling.task_frames import (
    DEFAULT_BASE_URL,
    CameraImage,
    _episode_order,
    _inside,
    _reference_sensor,
    camera_images,
    episode_fps,
)
from ros_robodata.labeling.taxonomy import Taxonomy

_IMAGE_TAGS = {'bbox': 'RectangleLabels', 'polygon': 'PolygonLabels', 'keypoints': 'KeyPointLabels'}

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


def _attribute_choices(parent: ET.Element, to_name: str, region_tag: str, taxonomy: Taxonomy,
                       classes: Iterable[Any]) -> None:
    """Per-region Choices for the classes' attributes, shown when a region of a class that has the attribute is
    selected (one control per attribute name and value list, named `attribute_NAME`, `attribute_NAME_2` ...)."""
    groups: dict[tuple[str, tuple[str, ...]], tuple[Any, list[str]]] = {}
    for cls in classes:
        for attribute in taxonomy.attributes_of(cls.path):
            key = (attribute.name, attribute.values)
            groups.setdefault(key, (attribute, []))[1].append(cls.path)
    used: dict[str, int] = {}
    for (name, _), (attribute, paths) in groups.items():
        used[name] = used.get(name, 0) + 1
        control_name = f'attribute_{name}' + (f'_{used[name]}' if used[name] > 1 else '')
        when = {'visibleWhen': 'region-selected', 'whenTagName': region_tag, 'whenLabelValue': ','.join(paths)}
        box = ET.SubElement(parent, 'View', when)  # the heading shows with its choices only
        ET.SubElement(box, 'Header', {'value': attribute.description or name, 'size': '6'})
        control = ET.SubElement(box, 'Choices', {'name': control_name, 'toName': to_name, 'perRegion': 'true',
                                                 'choice': 'single-radio', 'showInline': 'true', **when})
        for value in attribute.values:
            attrs = {'value': value}
            if value == attribute.default:
                attrs['selected'] = 'true'
            ET.SubElement(control, 'Choice', attrs)


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
    spatial = [c for c in taxonomy.classes if any(k in _IMAGE_TAGS for k in c.kinds)]
    _attribute_choices(view, 'image', 'image', taxonomy, spatial)
    return _xml(view)


def label_studio_timeline_config(taxonomy: Taxonomy) -> str:
    """Labeling config for the episode tasks: TimelineLabels with the temporal classes over `$video`, and a
    per-region Choices for each attribute of theirs (shown when a span of a class that has it is selected)."""
    view = ET.Element('View')
    ET.SubElement(view, 'Header', {'value': '$episode_id'})
    _labels(view, 'TimelineLabels', 'timeline', 'video', taxonomy.with_kind('temporal'))
    ET.SubElement(view, 'Video', {'name': 'video', 'value': '$video', 'frameRate': '$fps', 'timelineHeight': '120'})
    _attribute_choices(view, 'video', 'video', taxonomy, taxonomy.with_kind('temporal'))
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
    writer = cv2.VideoWriter(str(tmp), cv2.VideoWriter.fourcc(*'mp4v'), float(fps), (width, height))
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
