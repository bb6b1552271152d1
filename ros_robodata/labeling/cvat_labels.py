"""CVAT's XML exports: "CVAT for video 1.1" (tracks over frames) and "CVAT for images 1.1" (shapes per image).

Video: each `<track>` is one object; its `<box>`/`<polygon>` per frame carry `keyframe`, `outside` (the object is
not in view: no label) and `occluded`. CVAT writes every frame of a track, interpolated ones with keyframe="0";
a file holding only keyframes is interpolated here (linearly between two keyframes, as CVAT does), so both give the
same labels. Images: each `<image name=...>` holds boxes, polygons and `<tag>`s. The episode comes from the task
name or source (video) or the image name (images), else `--episode`.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Collection
from pathlib import Path
from typing import TypedDict

from ros_robodata import untrusted
from ros_robodata.dataset.label import BOX, POLYGON, TAG, Label, OnFrame, Source, class_path
from ros_robodata.errors import AnnotationError, RobodataError
from ros_robodata.labeling.frame_names import episode_of, frame_index, sensor_of


def read_xml(path: Path) -> ET.Element:
    """The file's root element; one AnnotationError line for a file that is not well-formed XML."""
    try:
        text = untrusted.read_text(path, AnnotationError)
    except RobodataError as err:
        raise AnnotationError(str(err)) from None
    if '<!ENTITY' in text:
        raise AnnotationError(f'{path}: declares XML entities, which CVAT never writes; not read')
    try:
        return ET.fromstring(text)
    except ET.ParseError as err:
        raise AnnotationError(f'{path}: not well-formed XML ({err})') from None


def is_cvat(root: ET.Element) -> str | None:
    """'cvat_video' or 'cvat_images' for a CVAT 1.1 export, None otherwise."""
    if root.tag != 'annotations':
        return None
    if root.find('track') is not None or (root.find('meta/task/mode') is not None and \
            (root.findtext('meta/task/mode') or '').strip() == 'interpolation'):
        return 'cvat_video'
    return 'cvat_images'


def _meta(root: ET.Element) -> tuple[str, str, str, str]:
    """(task id, task name, owner, updated time) from the export's meta (job exports name them too)."""
    task = root.find('meta/task')
    if task is None:
        task = root.find('meta/job')
    if task is None:
        task = ET.Element('task')
    owner = (task.findtext('owner/username') or task.findtext('assignee/username') or '').strip()
    updated = (task.findtext('updated') or root.findtext('meta/dumped') or '').strip()
    return (task.findtext('id') or '').strip(), (task.findtext('name') or '').strip(), owner, updated


def _float(element: ET.Element, key: str, where: str) -> float:
    try:
        return float(element.attrib[key])
    except KeyError:
        raise AnnotationError(f'{where}: <{element.tag}> has no {key}') from None
    except ValueError:
        raise AnnotationError(f'{where}: <{element.tag}> {key}={element.attrib[key]!r} is not a number') from None


def _flag(element: ET.Element, key: str) -> bool:
    return element.attrib.get(key, '0').strip() in ('1', 'true', 'True')


def _box(element: ET.Element, where: str) -> tuple[float, float, float, float]:
    xtl, ytl, xbr, ybr = (_float(element, k, where) for k in ('xtl', 'ytl', 'xbr', 'ybr'))
    if xbr < xtl or ybr < ytl:
        raise AnnotationError(f'{where}: box corners reversed ({xtl},{ytl})-({xbr},{ybr})')
    return xtl, ytl, xbr - xtl, ybr - ytl


def _points(element: ET.Element, where: str) -> tuple[tuple[float, float], ...]:
    try:
        return tuple((float(x), float(y)) for x, y in (p.split(',') for p in element.attrib['points'].split(';')))
    except (KeyError, ValueError):
        raise AnnotationError(f'{where}: <{element.tag}> points are not "x,y;x,y;..."') from None


class _TrackShape(TypedDict):
    """A track's shape on one frame, as `Label` keyword arguments."""

    frame: int
    track: str
    keyframe: bool
    occluded: bool


def video_labels(path: Path, known: Collection[str], *, episode: str | None,
                 annotator: str | None) -> dict[str, list[Label]]:
    """Labels of a CVAT for video 1.1 file, per episode."""
    root = read_xml(path)
    task_id, name, owner, updated = _meta(root)
    source_name = (root.findtext('meta/task/source') or root.findtext('meta/source') or '').strip()
    where = str(path)
    episode_id = episode_of(f'{name}/{source_name}', known, fixed=episode, where=where)
    who = annotator or owner or 'unknown'
    labels: list[Label] = []
    for track in root.iter('track'):
        track_id = track.attrib.get('id', '')
        at = f'{where}: track {track_id}'
        value = class_path(track.attrib.get('label', ''))
        shapes = sorted(((int(_float(s, 'frame', at)), s) for s in track if s.tag in ('box', 'polygon')),
                        key=lambda pair: pair[0])
        if not shapes:
            raise AnnotationError(f'{at}: a track with no box or polygon')
        for frame, shape in _every_frame(shapes, at):
            if _flag(shape, 'outside'):
                continue
            source = Source('cvat', name, task_id, f'track{track_id}/{frame}')
            common: _TrackShape = {'frame': frame, 'track': f'{task_id}/{track_id}',
                                   'keyframe': _flag(shape, 'keyframe'), 'occluded': _flag(shape, 'occluded')}
            if shape.tag == 'box':
                labels.append(Label(BOX, value, who, updated, source, box=_box(shape, at), **common))
            else:
                labels.append(Label(POLYGON, value, who, updated, source, points=_points(shape, at), **common))
    return {episode_id: labels}


def _every_frame(shapes: list[tuple[int, ET.Element]], where: str) -> list[tuple[int, ET.Element]]:
    """The track's shapes, with boxes between two keyframes interpolated where the file leaves frames out."""
    out: list[tuple[int, ET.Element]] = []
    for (frame, shape), following in zip(shapes, [*shapes[1:], None], strict=True):
        out.append((frame, shape))
        if following is None or shape.tag != 'box' or following[1].tag != 'box' or _flag(shape, 'outside') \
                or _flag(following[1], 'outside'):
            continue
        next_frame, next_shape = following
        a, b = _box(shape, where), _box(next_shape, where)
        for f in range(frame + 1, next_frame):
            w = (f - frame) / (next_frame - frame)
            x, y, bw, bh = (p + w * (q - p) for p, q in zip(a, b, strict=True))
            between = ET.Element('box', {'frame': str(f), 'outside': '0', 'keyframe': '0',
                                         'occluded': shape.attrib.get('occluded', '0'),
                                         'xtl': str(x), 'ytl': str(y), 'xbr': str(x + bw), 'ybr': str(y + bh)})
            out.append((f, between))
    return out


def image_labels(path: Path, known: Collection[str], *, episode: str | None,
                 annotator: str | None) -> dict[str, list[Label]]:
    """Labels of a CVAT for images 1.1 file, per episode."""
    root = read_xml(path)
    task_id, name, owner, updated = _meta(root)
    who = annotator or owner or 'unknown'
    out: dict[str, list[Label]] = {}
    for image in root.iter('image'):
        image_name = image.attrib.get('name', '')
        at = f'{path}: image {image.attrib.get("id", "?")} ({image_name})'
        if not image_name:
            raise AnnotationError(f'{at}: an image without a name')
        episode_id = episode_of(image_name, known, fixed=episode, where=at)
        index = frame_index(image_name)
        frame: OnFrame = {'frame': index if index is not None else int(image.attrib.get('id', 0)),
                          'sensor': sensor_of(image_name),
                          'frame_id': f'{episode_id}/{index:06d}' if index is not None else ''}
        labels = out.setdefault(episode_id, [])
        for k, shape in enumerate(image):
            value = class_path(shape.attrib.get('label', ''))
            source = Source('cvat', name, task_id, f'{image_name}#{k}')
            if shape.tag == 'box':
                labels.append(Label(BOX, value, who, updated, source, box=_box(shape, at),
                                    occluded=_flag(shape, 'occluded'), **frame))
            elif shape.tag == 'polygon':
                labels.append(Label(POLYGON, value, who, updated, source, points=_points(shape, at),
                                    occluded=_flag(shape, 'occluded'), **frame))
            elif shape.tag == 'tag':
                labels.append(Label(TAG, value, who, updated, source, **frame))
    return out
