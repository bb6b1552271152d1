"""A human label: what was marked, by whom, when, where it came from.

Every labeling tool (Label Studio, CVAT, a COCO file) says the same few things in its own shape; the importers
turn each into `Label`s so the store, the agreement figures and the machine-versus-human report read one shape.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any, TypedDict

from ros_robodata.errors import AnnotationError

SEGMENT = 'segment'  # a temporal span on the episode's timeline, with a class path
VERDICT = 'verdict'  # the episode's outcome as a reviewer judged it
BOX = 'box'  # an axis-aligned box on one camera frame, with a class path
POLYGON = 'polygon'  # a polygon on one camera frame, with a class path
TAG = 'tag'  # a whole-frame tag, with a class path
KINDS = (SEGMENT, VERDICT, BOX, POLYGON, TAG)

# The reviewer's verdict: the operator's outcomes (without 'unknown') plus 'unusable' (keep it out of training).
VERDICTS = ('success', 'failure', 'recovery', 'unusable')


@dataclass(frozen=True)
class Source:
    """Where a label came from: the tool, its project (or file), the task there and the item inside the task.

    (tool, project, task, item) names the label across pulls and imports: the same four again are the same label,
    changed or not."""

    tool: str
    project: str = ''
    task: str = ''
    item: str = ''

    def to_json(self) -> dict[str, str]:
        return {'tool': self.tool, 'project': self.project, 'task': self.task, 'item': self.item}


class OnFrame(TypedDict):
    """Where a box, polygon or tag label sits, as `Label` keyword arguments (`Label(..., **on_frame)`)."""

    frame: int
    frame_id: str
    sensor: str


@dataclass(frozen=True)
class Label:
    """One label of one episode. `value` is a class path (segment, box, polygon, tag) or a verdict.

    Frames are the source's own frame numbers (0-based) with the export's `frame_id` and `sensor` when known;
    boxes are pixels (x, y of the top-left corner, width, height); a `track` names one object across frames."""

    kind: str
    value: str
    annotator: str
    time: str
    source: Source
    start_s: float | None = None
    end_s: float | None = None
    frame: int | None = None
    frame_id: str = ''
    sensor: str = ''
    box: tuple[float, float, float, float] | None = None
    points: tuple[tuple[float, float], ...] = ()
    track: str = ''
    keyframe: bool = True
    occluded: bool = False
    confidence: float | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        where = f'{self.source.tool} {self.source.project} task {self.source.task or "-"}'
        if self.kind not in KINDS:
            raise AnnotationError(f'{where}: unknown label kind {self.kind!r} (expected {", ".join(KINDS)})')
        if not self.value:
            raise AnnotationError(f'{where}: a {self.kind} label without a class or verdict')
        if self.kind == VERDICT and self.value not in VERDICTS:
            raise AnnotationError(f'{where}: verdict {self.value!r} is not one of {", ".join(VERDICTS)}')
        if self.kind == SEGMENT and (self.start_s is None or self.end_s is None
                                     or not _finite(self.start_s, self.end_s) or self.end_s < self.start_s):
            raise AnnotationError(f'{where}: segment {self.value!r} needs a start before its end')
        if self.kind == BOX and (self.box is None or not _finite(*self.box) or self.box[2] < 0 or self.box[3] < 0):
            raise AnnotationError(f'{where}: box {self.value!r} needs finite x, y and a non-negative size')
        if self.kind == POLYGON and (len(self.points) < 3 or not _finite(*(c for p in self.points for c in p))):
            raise AnnotationError(f'{where}: polygon {self.value!r} needs at least 3 finite points')
        if self.kind in (BOX, POLYGON, TAG) and self.frame is None and not self.frame_id:
            raise AnnotationError(f'{where}: a {self.kind} label needs the frame it is on')
        if self.confidence is not None and not (0.0 <= self.confidence <= 1.0):
            raise AnnotationError(f'{where}: confidence {self.confidence} is not within 0..1')

    @property
    def key(self) -> str:
        """Stable name of this label across imports (its source's four names and its annotator: two people's
        labels are never the same label), short enough to read."""
        raw = json.dumps([self.source.tool, self.source.project, self.source.task, self.source.item, self.kind,
                          self.annotator])
        return hashlib.sha256(raw.encode()).hexdigest()[:16]

    def content(self) -> dict[str, Any]:
        """What the annotator said, without bookkeeping: two labels with the same key and content are one."""
        out = self.to_json()
        for bookkeeping in ('time', 'source'):
            out.pop(bookkeeping, None)
        return out

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {'kind': self.kind, 'value': self.value, 'annotator': self.annotator,
                               'time': self.time, 'source': self.source.to_json()}
        if self.kind == SEGMENT:
            assert self.start_s is not None and self.end_s is not None  # __post_init__ refuses a segment without
            out['start_s'], out['end_s'] = round(float(self.start_s), 4), round(float(self.end_s), 4)
        if self.kind in (BOX, POLYGON, TAG):
            out['frame'] = self.frame
            if self.frame_id:
                out['frame_id'] = self.frame_id
            if self.sensor:
                out['sensor'] = self.sensor
        if self.kind == BOX and self.box is not None:
            out['box'] = [round(float(v), 3) for v in self.box]
        if self.kind == POLYGON:
            out['points'] = [[round(float(x), 3), round(float(y), 3)] for x, y in self.points]
        if self.kind in (BOX, POLYGON):
            if self.track:
                out['track'] = self.track
            out['keyframe'] = self.keyframe
            out['occluded'] = self.occluded
        if self.confidence is not None:
            out['confidence'] = round(float(self.confidence), 4)
        if self.extra:
            out['extra'] = self.extra
        return out

    @classmethod
    def from_json(cls, data: Any, where: str) -> Label:
        """A label as annotations.json holds it; AnnotationError naming `where` when it is not one."""
        if not isinstance(data, dict):
            raise AnnotationError(f'{where}: not a label (not an object)')
        try:
            source = data.get('source') or {}
            box = data.get('box')
            return cls(
                kind=str(data['kind']), value=str(data['value']), annotator=str(data.get('annotator', '')),
                time=str(data.get('time', '')),
                source=Source(**{k: str(source.get(k, '')) for k in ('tool', 'project', 'task', 'item')}),
                start_s=_opt_float(data.get('start_s')), end_s=_opt_float(data.get('end_s')),
                frame=None if data.get('frame') is None else int(data['frame']),
                frame_id=str(data.get('frame_id', '')), sensor=str(data.get('sensor', '')),
                box=None if box is None else tuple(float(v) for v in box),  # type: ignore[arg-type]
                points=tuple((float(x), float(y)) for x, y in data.get('points') or ()),
                track=str(data.get('track', '')), keyframe=bool(data.get('keyframe', True)),
                occluded=bool(data.get('occluded', False)), confidence=_opt_float(data.get('confidence')),
                extra=dict(data.get('extra') or {}),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise AnnotationError(f'{where}: not a label ({type(err).__name__}: {err})') from None


def _finite(*values: float) -> bool:
    return all(isinstance(v, (int, float)) and math.isfinite(v) for v in values)


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


def class_path(name: str) -> str:
    """A class path as the taxonomy writes it, from the spellings tools use ('object.cube', ' object/cube ')."""
    return '/'.join(part.strip() for part in str(name).strip().replace('.', '/').split('/') if part.strip())
