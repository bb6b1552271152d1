"""Label Studio's JSON export (and what `review pull` fetches): tasks with their annotations, into `Label`s.

A task names its episode in `data.episode_id` (the tasks robodata pushes and exports do); its result items become
labels by type: `timelinelabels` ranges -> segments (frame numbers through the task's `t_s`, else its `fps`),
`choices` named `verdict` -> the episode verdict, `choices` of a taxonomy attribute (`attribute_*`, per region) ->
nothing yet, other `choices` -> per-frame tags, `rectanglelabels` /
`polygonlabels` (percent of the image) -> boxes / polygons in pixels, `videorectangle` -> a box per keyframe.
Cancelled (skipped) annotations give no labels.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ros_robodata.dataset.label import BOX, POLYGON, SEGMENT, TAG, VERDICT, Label, OnFrame, Source, class_path
from ros_robodata.errors import AnnotationError

TOOL = 'label_studio'
VERDICT_CONTROL = 'verdict'
ATTRIBUTE_CONTROL = 'attribute_'  # the per-region Choices label_studio_tasks writes for taxonomy attributes


def labels_from_tasks(tasks: Any, *, project: str, where: str,
                      annotator_of: Callable[[Any], str] | None = None) -> dict[str, list[Label]]:
    """Labels per episode id from a list of Label Studio tasks (export JSON); AnnotationError on the first thing
    that is not one, naming the task."""
    if not isinstance(tasks, list):
        raise AnnotationError(f'{where}: a Label Studio export is a JSON list of tasks')
    out: dict[str, list[Label]] = {}
    for n, task in enumerate(tasks):
        at = f'{where}: task {n}'
        if not isinstance(task, Mapping) or not isinstance(task.get('data'), Mapping):
            raise AnnotationError(f'{at}: not a Label Studio task (no data object)')
        at = f'{where}: task {task.get("id", n)}'
        episode_id = task['data'].get('episode_id')
        if not isinstance(episode_id, str) or not episode_id:
            raise AnnotationError(f'{at}: no data.episode_id: cannot tell which episode it labels')
        annotations = task.get('annotations') or []
        if not isinstance(annotations, list):
            raise AnnotationError(f'{at}: annotations is not a list')
        labels = out.setdefault(episode_id, [])
        for annotation in annotations:
            labels.extend(_annotation_labels(task, annotation, project=project, where=at, annotator_of=annotator_of))
    return out


def _annotator(annotation: Mapping[str, Any]) -> str:
    who = annotation.get('completed_by')
    if isinstance(who, Mapping):
        return str(who.get('email') or who.get('username') or who.get('id') or 'unknown')
    return f'label_studio_user_{who}' if who is not None else 'unknown'


def _annotation_labels(task: Mapping[str, Any], annotation: Any, *, project: str, where: str,
                       annotator_of: Callable[[Any], str] | None) -> list[Label]:
    if not isinstance(annotation, Mapping):
        raise AnnotationError(f'{where}: an annotation is not an object')
    if annotation.get('was_cancelled'):
        return []
    results = annotation.get('result')
    if not isinstance(results, list):
        raise AnnotationError(f'{where}: annotation {annotation.get("id")} has no result list')
    annotator = annotator_of(annotation.get('completed_by')) if annotator_of else _annotator(annotation)
    when = str(annotation.get('updated_at') or annotation.get('created_at') or '')
    data = task['data']
    labels: list[Label] = []
    for k, result in enumerate(results):
        at = f'{where}: annotation {annotation.get("id")} result {k}'
        if not isinstance(result, Mapping) or not isinstance(result.get('value'), Mapping):
            raise AnnotationError(f'{at}: not a result item (no value object)')
        item = f'{annotation.get("id")}/{result.get("id", k)}'
        source = Source(TOOL, project, str(task.get('id', '')), item)
        labels.extend(_result_labels(result, data, annotator, when, source, at))
    return labels


def _result_labels(result: Mapping[str, Any], data: Mapping[str, Any], annotator: str, when: str, source: Source,
                   where: str) -> list[Label]:
    kind, value = result.get('type'), result['value']
    try:
        if kind == 'timelinelabels':
            classes = value.get('timelinelabels') or []
            ranges = value.get('ranges') or []
            out = []
            for r, span in enumerate(ranges):
                start, end = _frame_time(data, span['start']), _frame_time(data, span['end'])
                for c in classes:
                    item = source.item if len(ranges) * len(classes) == 1 else f'{source.item}/{r}/{c}'
                    out.append(Label(SEGMENT, class_path(c), annotator, when, _with_item(source, item),
                                     start_s=start, end_s=end))
            return out
        if kind == 'choices':
            choices = value.get('choices') or []
            if str(result.get('from_name', '')).startswith(ATTRIBUTE_CONTROL):
                return []  # a region's taxonomy attribute (gaze of a smile): not a label of its own, not kept yet
            if result.get('from_name') == VERDICT_CONTROL:
                if len(choices) != 1:
                    raise AnnotationError(f'{where}: a verdict needs exactly one choice, got {choices!r}')
                return [Label(VERDICT, str(choices[0]), annotator, when, source)]
            return [Label(TAG, class_path(c), annotator, when, _with_item(source, f'{source.item}/{c}'),
                          frame=_frame_index(data), frame_id=str(data.get('frame_id', '')),
                          sensor=str(data.get('sensor', '')))
                    for c in choices]
        if kind in ('rectanglelabels', 'polygonlabels'):
            width, height = float(result['original_width']), float(result['original_height'])
            classes = value.get(kind) or []
            on_frame: OnFrame = {'frame': _frame_index(data), 'frame_id': str(data.get('frame_id', '')),
                                 'sensor': str(data.get('sensor', ''))}
            if kind == 'rectanglelabels':
                box = (value['x'] * width / 100, value['y'] * height / 100, value['width'] * width / 100,
                       value['height'] * height / 100)
                return [Label(BOX, class_path(c), annotator, when, source, box=box, **on_frame) for c in classes]
            points = tuple((x * width / 100, y * height / 100) for x, y in value['points'])
            return [Label(POLYGON, class_path(c), annotator, when, source, points=points, **on_frame)
                    for c in classes]
        if kind == 'videorectangle':
            width, height = float(result.get('original_width') or 100), float(result.get('original_height') or 100)
            out = []
            for entry in value.get('sequence') or ():
                if not entry.get('enabled', True):
                    continue
                frame = int(entry['frame']) - 1
                box = (entry['x'] * width / 100, entry['y'] * height / 100, entry['width'] * width / 100,
                       entry['height'] * height / 100)
                for c in value.get('labels') or ():
                    out.append(Label(BOX, class_path(c), annotator, when,
                                     _with_item(source, f'{source.item}/{frame}/{c}'), frame=frame, box=box,
                                     track=source.item, frame_id=_frame_id(data, frame)))
            return out
    except AnnotationError:
        raise
    except (KeyError, TypeError, ValueError, IndexError) as err:
        raise AnnotationError(f'{where}: {kind} result unreadable ({type(err).__name__}: {err})') from None
    return []  # other result types (text areas, ratings) carry nothing robodata keeps


def _with_item(source: Source, item: str) -> Source:
    return Source(source.tool, source.project, source.task, item)


def _frame_index(data: Mapping[str, Any]) -> int:
    """An image task's frame index, from its frame id `<episode>/<index>` (0 when it has none)."""
    tail = str(data.get('frame_id', '')).rsplit('/', 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _frame_id(data: Mapping[str, Any], frame: int) -> str:
    ids = data.get('frame_ids')
    return str(ids[frame]) if isinstance(ids, list) and 0 <= frame < len(ids) else ''


def _frame_time(data: Mapping[str, Any], frame: Any) -> float:
    """Episode time of Label Studio's 1-based frame number: the task's `t_s` list, else frame / `fps`."""
    number = int(frame)
    times = data.get('t_s')
    if isinstance(times, list) and times:
        return float(times[min(max(number - 1, 0), len(times) - 1)])
    fps = float(data.get('fps') or 0)
    if fps <= 0:
        raise ValueError('the task has neither t_s nor fps to turn frame numbers into time')
    return (number - 1) / fps
