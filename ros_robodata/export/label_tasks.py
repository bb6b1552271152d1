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

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ros_robodata.errors import TaskFileError
from ros_robodata.export.ledger import Ledger
from ros_robodata.labeling.coco_tasks import coco_skeleton
from ros_robodata.labeling.cvat_tasks import _flat_name, cvat_task
from ros_robodata.labeling.label_studio_tasks import (
    episode_sequences,
    label_studio_image_config,
    label_studio_tasks,
    label_studio_timeline_config,
    label_studio_timeline_tasks,
    video_path,
    write_episode_video,
)
from ros_robodata.labeling.task_frames import DEFAULT_BASE_URL, TOOLS, camera_images, episode_fps
from ros_robodata.labeling.taxonomy import Taxonomy


def _json_bytes(value: Any) -> bytes:
    try:
        text = json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)
    except ValueError as exc:
        raise TaskFileError(f'manifest: a value cannot be written as JSON ({exc})') from None
    return (text + '\n').encode('utf-8')


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
    notes: list[str] | None = None,
) -> dict[str, list[Path]]:
    """Write the task files of `tools` into the export folder `out_dir` (DIR); returns the files per tool.

    Atomic and idempotent (same manifest and taxonomy, same bytes); every path the manifest names
    must resolve inside `out_dir`. `video` writes one MP4 per episode of the reference camera for
    the Label Studio timeline tasks (without it those tasks carry only the frame list, and the
    timeline config, which plays `$video`, will not import them); `copy_images` gives CVAT its own
    flat-named image copies.
    Import steps per tool are in this module's docstring and `cvat/task.json`.
    A task file someone changed since robodata wrote it (labels added), or one robodata never wrote, is never
    replaced: it is kept, this run's version goes beside it as `<name>.new<suffix>`, and a line saying so is
    appended to `notes` (export.ledger).
    """
    out_dir = Path(out_dir)
    unknown = [t for t in tools if t not in TOOLS]
    if unknown:
        raise TaskFileError(f'task files: unknown tool {unknown[0]!r} (expected {", ".join(TOOLS)})')
    if not out_dir.is_dir():
        raise TaskFileError(f'{out_dir}: export folder does not exist')
    images = camera_images(manifest, root=out_dir)  # checks every path before anything is written
    written: dict[str, list[Path]] = {}
    ledger = Ledger.open(out_dir)

    def _write(rel: str, data: bytes) -> list[Path]:
        path = ledger.write(rel, data)
        return [] if path is None else [path]

    if 'label_studio' in tools:
        files: list[Path] = []
        videos: dict[str, str] = {}
        if video:
            for episode_id, frames in episode_sequences(manifest, root=out_dir).items():
                rel = video_path(episode_id, frames[0].sensor)
                fps = episode_fps(manifest, [f.t_s for f in frames])
                try:
                    files.append(write_episode_video(frames, root=out_dir, rel=rel, fps=fps))
                except OSError as err:  # a file where its folder belongs: the tasks go without this video
                    ledger.kept.append(f'{rel}: cannot be written ({err.strerror or err}): its timeline task has '
                                       'no video')
                    continue
                videos[episode_id] = rel
        image_tasks = label_studio_tasks(manifest, root=out_dir, base_url=base_url, document_root=document_root)
        timeline_tasks = label_studio_timeline_tasks(
            manifest, root=out_dir, base_url=base_url, document_root=document_root, videos=videos
        )
        files += [
            *_write('label_studio/tasks_images.json', _json_bytes(image_tasks)),
            *_write('label_studio/tasks_timeline.json', _json_bytes(timeline_tasks)),
            *_write('label_studio/config_images.xml', label_studio_image_config(taxonomy).encode('utf-8')),
            *_write('label_studio/config_timeline.xml', label_studio_timeline_config(taxonomy).encode('utf-8')),
        ]
        written['label_studio'] = files

    if 'cvat' in tools:
        spec = cvat_task(manifest, taxonomy, root=out_dir, copy_images=copy_images)
        files = []
        if copy_images:
            for image in images:
                files += _write(f'cvat/images/{_flat_name(image)}', (out_dir / image.file).read_bytes())
        files += [
            *_write('cvat/task.json', _json_bytes(spec)),
            *_write('cvat/labels.json', _json_bytes(spec['labels'])),
            *_write('cvat/image_list.txt', ''.join(f'{f}\n' for f in spec['image_files']).encode()),
        ]
        written['cvat'] = files

    if 'coco' in tools:
        coco = coco_skeleton(manifest, taxonomy, root=out_dir)
        written['coco'] = _write('coco/annotations.json', _json_bytes(coco))
    ledger.save()
    if notes is not None:
        notes.extend(ledger.kept)
    return written


__all__ = ['DEFAULT_BASE_URL', 'TOOLS', 'camera_images', 'coco_skeleton', 'cvat_task', 'episode_fps',
           'label_studio_image_config', 'label_studio_tasks', 'label_studio_timeline_config',
           'label_studio_timeline_tasks', 'write_task_files']
