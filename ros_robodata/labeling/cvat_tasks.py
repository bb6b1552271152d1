"""CVAT: the labels and the ordered image list `cvat-cli task create` takes."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from ros_robodata.errors import TaskFileError
from ros_robodata.labeling.task_frames import CameraImage, camera_images
from ros_robodata.labeling.taxonomy import Taxonomy

_CVAT_SHAPES = {'bbox': 'rectangle', 'polygon': 'polygon', 'keypoints': 'points'}

def cvat_labels(taxonomy: Taxonomy) -> list[dict[str, Any]]:
    """CVAT label spec (what `cvat-cli task create --labels` takes), one label per labelable class.

    Type: the one shape of a single-shape class (rectangle, polygon, points), `tag` for tag- or
    temporal-only classes (CVAT marks time spans as per-frame tags), `any` for several kinds. The taxonomy's
    attributes of a class (its own and its ancestors') become mutable select attributes, so they can change along
    a track.
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
        attributes = [{'name': a.name, 'mutable': True, 'input_type': 'select', 'default_value': a.default,
                       'values': list(a.values)} for a in taxonomy.attributes_of(cls.path)]
        labels.append({'name': cls.path, 'color': cls.color, 'type': label_type, 'attributes': attributes})
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
