"""COCO: the images and categories of an annotations file, its annotations left to be labelled."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ros_robodata.labeling.task_frames import MANIFEST_FORMAT, camera_images
from ros_robodata.labeling.taxonomy import Taxonomy


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
