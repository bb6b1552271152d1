"""Which episode a labeled image or video belongs to, from the names a labeling tool kept.

Files robodata exports carry the episode id in their path (`episodes/<id>/<sensor>/...`, `videos/<id>/...`) or in
their frame id (`<id>/<index>`); CVAT and COCO keep those names. A file from elsewhere needs `--episode`.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import PurePosixPath

from ros_robodata.errors import AnnotationError


def episode_of(name: str, known: Collection[str], *, fixed: str | None, where: str) -> str:
    """The episode `name` (a file name, a frame id, a task name) belongs to; `fixed` wins when given."""
    if fixed:
        return fixed
    parts = PurePosixPath(str(name).replace('\\', '/')).parts
    for part in parts:
        if part in known:
            return part
    for part in str(name).replace('/', ' ').replace('__', ' ').split():
        if part in known:
            return part
    raise AnnotationError(f'{where}: cannot tell which episode {name!r} belongs to (no episode id of the dataset in '
                          'its name): pass --episode ID')


def sensor_of(name: str) -> str:
    """The camera name in an exported image path `episodes/<id>/<sensor>/<file>` ('' otherwise)."""
    parts = PurePosixPath(str(name)).parts
    if len(parts) >= 4 and parts[-4] == 'episodes':
        return parts[-2].removeprefix('camera_')
    return ''


def frame_index(name: str) -> int | None:
    """The frame index an exported image's name gives (`000012.jpg` -> 12), None for other names."""
    stem = PurePosixPath(str(name)).stem.rsplit('__', 1)[-1]
    return int(stem) if stem.isdigit() else None
