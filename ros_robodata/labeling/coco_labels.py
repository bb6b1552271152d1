"""COCO annotation files: boxes and polygons on images, classes from categories with their supercategory.

COCO holds one level of hierarchy (supercategory -> name). A category whose id and name are those of a taxonomy
class (what `export frames` writes) takes that class's full path; otherwise the path is `supercategory/name` (just
`name` when the two are the same). RLE masks are refused (not a polygon). The episode comes from the image's
`episode_id` (our exports), else its file name, else `--episode`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from ros_robodata import untrusted
from ros_robodata.dataset.label import BOX, POLYGON, Label, OnFrame, Source, class_path
from ros_robodata.errors import AnnotationError, RobodataError
from ros_robodata.labeling.frame_names import episode_of, frame_index, sensor_of
from ros_robodata.labeling.taxonomy import Taxonomy


def is_coco(data: Any) -> bool:
    return isinstance(data, Mapping) and isinstance(data.get('images'), list) and 'annotations' in data \
        and 'categories' in data


def category_paths(categories: Any, taxonomy: Taxonomy | None, where: str) -> dict[int, str]:
    """Category id -> class path (see the module docstring)."""
    if not isinstance(categories, list):
        raise AnnotationError(f'{where}: categories is not a list')
    by_id = {c.id: c for c in taxonomy.classes} if taxonomy else {}
    out: dict[int, str] = {}
    for n, category in enumerate(categories):
        if not isinstance(category, Mapping) or not isinstance(category.get('id'), int) \
                or not isinstance(category.get('name'), str) or not category['name'].strip():
            raise AnnotationError(f'{where}: categories[{n}] needs an integer id and a name')
        name, parent = category['name'].strip(), str(category.get('supercategory') or '').strip()
        known = by_id.get(category['id'])
        if taxonomy is not None and known is not None and taxonomy.coco_name(known.path) == name:
            out[category['id']] = known.path
        elif not parent or parent == name:
            out[category['id']] = class_path(name)
        else:
            out[category['id']] = class_path(f'{parent}/{name}')
    return out


def coco_labels(path: Path, known: Collection[str], *, episode: str | None, annotator: str | None,
                taxonomy: Taxonomy | None) -> dict[str, list[Label]]:
    """Labels of a COCO file, per episode."""
    try:
        data = untrusted.read_json(path, AnnotationError)
    except RobodataError as err:
        raise AnnotationError(str(err)) from None
    where = str(path)
    if not is_coco(data):
        raise AnnotationError(f'{where}: not a COCO file (images, annotations and categories expected)')
    paths = category_paths(data['categories'], taxonomy, where)
    info = data.get('info') if isinstance(data.get('info'), Mapping) else {}
    who = annotator or str(info.get('contributor') or '') or 'unknown'
    if who == 'ros_robodata':
        who = 'unknown'  # the skeleton's contributor: not the person who drew the boxes
    when = str(info.get('date_created') or '')
    images: dict[int, Mapping[str, Any]] = {}
    for n, image in enumerate(data['images']):
        if not isinstance(image, Mapping) or not isinstance(image.get('id'), int) or not image.get('file_name'):
            raise AnnotationError(f'{where}: images[{n}] needs an integer id and a file_name')
        images[image['id']] = image
    if not isinstance(data['annotations'], list):
        raise AnnotationError(f'{where}: annotations is not a list')
    out: dict[str, list[Label]] = {}
    for n, ann in enumerate(data['annotations']):
        at = f'{where}: annotations[{n}]'
        if not isinstance(ann, Mapping):
            raise AnnotationError(f'{at}: not an object')
        image = images.get(ann.get('image_id'))  # type: ignore[arg-type]
        if image is None:
            raise AnnotationError(f'{at}: image_id {ann.get("image_id")!r} is not among the images')
        if ann.get('category_id') not in paths:
            raise AnnotationError(f'{at}: category_id {ann.get("category_id")!r} is not among the categories')
        file_name = str(image['file_name'])
        episode_id = str(image.get('episode_id') or '') or episode_of(file_name, known, fixed=episode, where=at)
        if episode and not image.get('episode_id'):
            episode_id = episode
        index = frame_index(file_name)
        frame: OnFrame = {'frame': index if index is not None else int(image['id']),
                          'frame_id': str(image.get('frame_id') or ''),
                          'sensor': str(image.get('sensor') or sensor_of(file_name))}
        source = Source('coco', path.name, '', str(ann.get('id', n)))
        value = paths[ann['category_id']]
        confidence = ann.get('score')
        labels = out.setdefault(episode_id, [])
        segmentation = ann.get('segmentation')
        try:
            if isinstance(segmentation, Mapping):
                raise AnnotationError(f'{at}: an RLE mask; only polygons and boxes are imported')
            if segmentation:
                for k, polygon in enumerate(segmentation):
                    points = tuple((float(polygon[i]), float(polygon[i + 1])) for i in range(0, len(polygon) - 1, 2))
                    labels.append(Label(POLYGON, value, who, when, Source('coco', path.name, '', f'{source.item}/{k}'),
                                        points=points, confidence=confidence, **frame))
            elif ann.get('bbox') is not None:
                x, y, w, h = (float(v) for v in ann['bbox'])
                labels.append(Label(BOX, value, who, when, source, box=(x, y, w, h), confidence=confidence, **frame))
            else:
                raise AnnotationError(f'{at}: neither a bbox nor a polygon segmentation')
        except (TypeError, ValueError) as err:
            raise AnnotationError(f'{at}: bbox or segmentation unreadable ({err})') from None
    return out
