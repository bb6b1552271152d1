"""What `review push` sends: one timeline task per episode, with the machine's opinion as predictions.

A task plays the episode's reference camera as a video (frames exported into the media folder, encoded by the
frame exporter's own task writers) and carries the episode id, its task, the operator's label and the frame
times; the labeling config is the taxonomy's timeline config plus the episode verdict (success / failure /
recovery / unusable). Predictions: the segmenter's subtasks and events as timeline ranges of the taxonomy class
named after them, and the success verdict of `robodata score`. Frame times are in events.json's time base (the
reference camera's stamps), so a reviewer's segment and a machine event compare directly.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ros_robodata import untrusted
from ros_robodata.dataset.copies import record_copy
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.label import VERDICTS
from ros_robodata.dataset.targets import Item, prepare
from ros_robodata.errors import RobodataError
from ros_robodata.export.export_plan import ExportOptions
from ros_robodata.export.frames_run import export_items
from ros_robodata.export.schedule import ScheduleSpec
from ros_robodata.labeling.label_studio_labels import VERDICT_CONTROL
from ros_robodata.labeling.label_studio_tasks import (
    episode_sequences,
    label_studio_image_config,
    label_studio_tasks,
    label_studio_timeline_config,
    video_path,
    write_episode_video,
)
from ros_robodata.labeling.task_frames import DEFAULT_BASE_URL, episode_fps
from ros_robodata.labeling.taxonomy import Taxonomy
from ros_robodata.profile import Profile

MODEL_VERSION = 'robodata-segmenter'


def review_config(taxonomy: Taxonomy) -> str:
    """The timeline config of the taxonomy, with the operator's label shown and the episode verdict to choose."""
    view = ET.fromstring(label_studio_timeline_config(taxonomy))
    ET.SubElement(view, 'Header', {'value': 'Operator said: $outcome', 'size': '6'})
    choices = ET.SubElement(view, 'Choices', {'name': VERDICT_CONTROL, 'toName': 'video', 'choice': 'single',
                                              'showInline': 'true'})
    for verdict in VERDICTS:
        ET.SubElement(choices, 'Choice', {'value': verdict})
    ET.indent(view, space='  ')
    return ET.tostring(view, encoding='unicode') + '\n'


def _class_for(name: str, taxonomy: Taxonomy) -> str | None:
    """The temporal class named after a machine event kind or subtask (its last path segment)."""
    for cls in taxonomy.with_kind('temporal'):
        if cls.name == name:
            return cls.path
    return None


def _frame_number(times: Sequence[float], t_s: float) -> int:
    """Label Studio's 1-based frame number nearest to `t_s`."""
    i = bisect_left(times, t_s)
    if i > 0 and (i == len(times) or abs(times[i - 1] - t_s) <= abs(times[i] - t_s)):
        i -= 1
    return i + 1


def predictions(events_doc: Mapping[str, Any] | None, quality: Mapping[str, Any] | None, times: Sequence[float],
                taxonomy: Taxonomy) -> list[dict[str, Any]]:
    """The machine's subtasks, events and success verdict as one Label Studio prediction ([] if it has none)."""
    result: list[dict[str, Any]] = []
    start_ns = (events_doc or {}).get('start_ns')
    for n, segment in enumerate((events_doc or {}).get('timeline') or ()):
        cls = _class_for(str(segment.get('name')), taxonomy)
        if cls is None or not isinstance(start_ns, int):
            continue
        a, b = ((int(segment[k]) - start_ns) / 1e9 for k in ('start_ns', 'end_ns'))
        result.append(_range(f'subtask{n}', cls, _frame_number(times, a), _frame_number(times, b)))
    for n, event in enumerate((events_doc or {}).get('events') or ()):
        cls = _class_for(str(event.get('kind')), taxonomy)
        if cls is None or not isinstance(start_ns, int):
            continue
        frame = _frame_number(times, (int(event['t_ns']) - start_ns) / 1e9)
        result.append(_range(f'event{n}', cls, frame, frame))
    success = (quality or {}).get('success')
    if isinstance(success, Mapping) and isinstance(success.get('success'), bool):
        result.append({'id': 'verdict', 'from_name': VERDICT_CONTROL, 'to_name': 'video', 'type': 'choices',
                       'value': {'choices': ['success' if success['success'] else 'failure']}})
    return [{'model_version': MODEL_VERSION, 'result': result}] if result else []


def _range(result_id: str, cls: str, start: int, end: int) -> dict[str, Any]:
    return {'id': result_id, 'from_name': 'timeline', 'to_name': 'video', 'type': 'timelinelabels',
            'value': {'ranges': [{'start': start, 'end': max(start, end)}], 'timelinelabels': [cls]}}


def _read(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = untrusted.read_json(path)
    except RobodataError:
        return None
    return data if isinstance(data, dict) else None


def media_url(media_dir: Path, rel: str, document_root: Path) -> str:
    target = (media_dir / rel).resolve()
    root = document_root.resolve()
    if not target.is_relative_to(root):
        raise RobodataError(f'{target}: outside the document root {root}: Label Studio serves local files only '
                            'from below LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT (pass --document-root)')
    return DEFAULT_BASE_URL + target.relative_to(root).as_posix()


def timeline_tasks(dataset: Dataset, episode_ids: Sequence[str], *, media_dir: Path, document_root: Path,
                   every_ns: int, taxonomy: Taxonomy,
                   progress: Callable[[Iterable[Any]], Iterator[Any]] | None = None,
                   media: ExportOptions | None = None) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """(task specs for the bridge, episode -> why it was not made) for the episodes, media written into
    `media_dir` (frames, then one MP4 per episode); `media` says which cameras and how (pii, faces blurred), its
    schedule replaced by one frame every `every_ns`."""
    groups, skipped = _by_robot(dataset, episode_ids, _every(media, every_ns))
    specs = []
    for profile, items, options in groups:  # each robot's episodes with its own profile and cameras
        result = export_items(items, profile, media_dir, options, name=dataset.name, progress=progress)
        skipped.update(result.failed)
        specs.extend(_timeline_specs(dataset, result.manifest, media_dir, document_root, taxonomy))
    if groups:
        record_copy(dataset.root, 'review_media', media_dir, [str(s['episode']) for s in specs],
                    ('label_studio/videos/{id}',))
    for episode_id in episode_ids:
        if episode_id not in {s['episode'] for s in specs} and episode_id not in skipped:
            skipped[episode_id] = 'no camera frame exported'
    return specs, skipped


def _timeline_specs(dataset: Dataset, manifest: dict[str, Any], media_dir: Path, document_root: Path,
                    taxonomy: Taxonomy) -> list[dict[str, Any]]:
    """One timeline task spec per episode of an export's manifest, its video written into `media_dir`."""
    stamps = {f['frame_id']: f for f in manifest['frames']}
    specs = []
    for episode_id, frames in episode_sequences(manifest, root=media_dir).items():
        episode = dataset.episode(episode_id)
        folder = dataset.episode_dir(episode_id)
        events_doc = _read(folder / 'events.json')
        start_ns = (events_doc or {}).get('start_ns')
        times = []
        for frame in frames:
            entry = stamps.get(frame.frame_id, {})
            stamp = ((entry.get('sensors') or {}).get(frame.sensor) or {}).get('stamp_ns')
            times.append(round((stamp - start_ns) / 1e9, 4) if isinstance(stamp, int) and isinstance(start_ns, int)
                         else frame.t_s)
        rel = video_path(episode_id, frames[0].sensor)
        write_episode_video(frames, root=media_dir, rel=rel, fps=episode_fps(manifest, [f.t_s for f in frames]))
        data = {'video': media_url(media_dir, rel, document_root), 'episode_id': episode_id, 'dataset': dataset.name,
                'task': episode.task, 'outcome': episode.outcome, 'operator': episode.operator,
                'sensor': frames[0].sensor, 'fps': episode_fps(manifest, [f.t_s for f in frames]),
                'frame_ids': [f.frame_id for f in frames], 't_s': times}
        specs.append({'key': f'{dataset.name}/{episode_id}/timeline', 'episode': episode_id, 'data': data,
                      'predictions': predictions(events_doc, _read(folder / 'quality.json'), times, taxonomy)})
    return specs


def _by_robot(dataset: Dataset, episode_ids: Sequence[str], media: ExportOptions
              ) -> tuple[list[tuple[Profile, list[Item], ExportOptions]], dict[str, str]]:
    """The episodes (those with a bag) by robot, each group with its own profile and the media options its cameras
    allow, and per episode left out why (no bag; in a dataset of several robots, a robot without the cameras).

    Raises:
        RobodataError: no robot of the episodes has a camera.
    """
    work = prepare(dataset)
    chosen = set(episode_ids)
    picked = {item.name for item in work.items if item.name in chosen}
    skipped = {e: 'no bag' for e in episode_ids if e not in picked}
    if not any(group.profile.topics.cameras for group in work.robots):
        raise RobodataError(f'{dataset.root}: the robot profile has no camera: nothing to show in a timeline task')
    out = []
    for group in work.robots:
        items = [item for item in group.items if item.name in chosen]
        names = [c.name for c in group.profile.topics.cameras]
        cameras = tuple(c for c in media.cameras if c in names) if work.mixed else media.cameras
        why = 'its robot profile has no camera' if not names else \
            f'its robot has none of the cameras {",".join(media.cameras)}' if media.cameras and not cameras else ''
        if why:
            skipped.update({item.name: f'{group.name}: {why}' for item in items})
        elif items:
            out.append((group.profile, items, replace(media, cameras=cameras)))
    return out, skipped


def _every(media: ExportOptions | None, every_ns: int) -> ExportOptions:
    """The media's export options, one frame every `every_ns`."""
    return replace(media or ExportOptions(), schedule=ScheduleSpec(every_ns=every_ns))


def frames_config(taxonomy: Taxonomy) -> str:
    """The labeling config of the frame tasks: the taxonomy's boxes, polygons, keypoints and tags."""
    return label_studio_image_config(taxonomy)


def frame_tasks(dataset: Dataset, episode_ids: Sequence[str], *, media_dir: Path, document_root: Path,
                every_ns: int, media: ExportOptions | None = None) -> list[dict[str, Any]]:
    """Task specs for one image task per exported camera frame of the episodes (every `every_ns`), media in
    `media_dir` (which cameras and how: `media`); the key is the frame id and camera, so a push again finds the
    same task."""
    groups, _ = _by_robot(dataset, episode_ids, _every(media, every_ns))
    root = document_root.resolve()
    base = DEFAULT_BASE_URL + media_dir.resolve().relative_to(root).as_posix() + '/'
    specs = []
    for profile, items, options in groups:  # each robot's episodes with its own profile and cameras
        result = export_items(items, profile, media_dir, options, name=dataset.name)
        for task in label_studio_tasks(result.manifest, root=media_dir, base_url=base, document_root=media_dir):
            data = dict(task['data'], dataset=dataset.name)
            specs.append({'key': f'{dataset.name}/{data["frame_id"]}/{data["sensor"]}', 'episode': data['episode_id'],
                          'data': data, 'predictions': []})
    return specs
