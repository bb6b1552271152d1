"""What the segmenter reports: an event in the episode, with the evidence that made it fire."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:  # 3.11's; the annotations below are never evaluated, so 3.10 runs this module too
    from typing import NotRequired


class EvidenceJson(TypedDict):
    """One signal behind an event, as events.json holds it (None for NaN or an infinity)."""

    signal: str
    value: float | None
    threshold: float | None


class _EventKeys(TypedDict, total=False):  # an event's keys written only sometimes, in their place
    t_s: float
    note: str


class EventJson(TypedDict):
    """One event in events.json (`Event.to_json`); `t_s` counts from the episode's start, when it is known."""

    kind: str
    t_ns: int
    t_s: NotRequired[float]
    confidence: float
    evidence: list[EvidenceJson]
    note: NotRequired[str]
    detected_after_s: float


class SegmentJson(TypedDict):
    """One subtask of events.json's timeline (`Segment.to_json`); the seconds when the episode's start is known."""

    name: str
    attempt: int
    start_ns: int
    end_ns: int
    start_s: NotRequired[float]
    end_s: NotRequired[float]


class SegmentResultJson(TypedDict):
    """`SegmentResult.to_json`: what events.json holds besides its format and episode id."""

    notes: NotRequired[list[str]]
    start_ns: int | None
    end_ns: int | None
    sources: list[str]
    thresholds: dict[str, float | None]
    skipped_samples: dict[str, int]
    inputs: list[str]
    calibration: NotRequired[dict[str, Any]]  # the strokes used: their own format (events/calibration.py)
    warnings: NotRequired[list[str]]
    events: list[EventJson]
    timeline: list[SegmentJson]


class _ResultKeys(TypedDict, total=False):  # a result's keys written only when they hold something, in their place
    notes: list[str]
    calibration: dict[str, Any]
    warnings: list[str]


@dataclass(frozen=True)
class Evidence:
    """One signal that crossed a threshold: `gripper.opening` at 0.43 against 0.05, say."""

    signal: str
    value: float
    threshold: float


@dataclass(frozen=True)
class Event:
    """Something that happened at `stamp_ns` (sensor clock); `detected_ns` is the stamp of the sample that
    confirmed it, so `detected_ns - stamp_ns` is how long the evidence took to become certain."""

    kind: str
    stamp_ns: int
    confidence: float
    evidence: tuple[Evidence, ...] = ()
    detected_ns: int = 0
    frame_id: str = ''
    note: str = ''

    def to_json(self, episode_start_ns: int | None = None) -> EventJson:
        at: _EventKeys = {} if episode_start_ns is None else {'t_s': round((self.stamp_ns - episode_start_ns) / 1e9, 4)}
        said: _EventKeys = {'note': self.note} if self.note else {}
        return {'kind': self.kind, 't_ns': self.stamp_ns, **at, 'confidence': round(self.confidence, 3),
                'evidence': [{'signal': e.signal, 'value': _finite(e.value), 'threshold': _finite(e.threshold)}
                             for e in self.evidence],
                **said, 'detected_after_s': round(max(0, self.detected_ns - self.stamp_ns) / 1e9, 4)}


def _finite(value: float) -> float | None:
    return round(float(value), 6) if value == value and abs(value) != float('inf') else None


@dataclass(frozen=True)
class Segment:
    """A stretch of the episode spent on one subtask (reach, grasp, transport, release, retreat)."""

    name: str
    start_ns: int
    end_ns: int
    attempt: int = 1

    def to_json(self, episode_start_ns: int | None = None) -> SegmentJson:
        out: SegmentJson = {'name': self.name, 'attempt': self.attempt, 'start_ns': self.start_ns,
                            'end_ns': self.end_ns}
        if episode_start_ns is not None:
            out['start_s'] = round((self.start_ns - episode_start_ns) / 1e9, 4)
            out['end_s'] = round((self.end_ns - episode_start_ns) / 1e9, 4)
        return out


@dataclass
class SegmentResult:
    """Everything the segmenter found in one episode or bag."""

    events: list[Event] = field(default_factory=list)
    timeline: list[Segment] = field(default_factory=list)
    start_ns: int | None = None
    end_ns: int | None = None
    sources: tuple[str, ...] = ()
    thresholds: dict[str, float] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # how the bag was read (damage: where reading stopped)
    inputs: list[str] = field(default_factory=list)  # what the signals were read from (the gripper's speed)
    warnings: list[str] = field(default_factory=list)  # what looks wrong with the input (no event where one was due)
    calibration: dict[str, Any] = field(default_factory=dict)  # the strokes used, and where they came from

    def to_json(self) -> SegmentResultJson:
        notes: _ResultKeys = {'notes': list(self.notes)} if self.notes else {}
        calibration: _ResultKeys = {'calibration': self.calibration} if self.calibration else {}
        warnings: _ResultKeys = {'warnings': list(self.warnings)} if self.warnings else {}
        return {
            **notes,
            'start_ns': self.start_ns,
            'end_ns': self.end_ns,
            'sources': list(self.sources),
            'thresholds': {k: _finite(v) for k, v in self.thresholds.items()},
            'skipped_samples': dict(self.skipped),
            'inputs': list(self.inputs),
            **calibration,
            **warnings,
            'events': [e.to_json(self.start_ns) for e in self.events],
            'timeline': [s.to_json(self.start_ns) for s in self.timeline],
        }
