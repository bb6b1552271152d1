"""Machine versus human: how the segmenter's events and the success verdict agree with reviewed labels.

Per event kind: a machine event is confirmed when a reviewer's segment of the class named after it (the class
whose last path segment is the kind: `grasp` -> `manipulation/grasp`) covers its time, give or take `tolerance_s`;
a reviewed segment is missed when no machine event of that kind falls in it. Precision and recall per kind say how
far to trust each event kind. The segmenter's subtask timeline is compared by temporal IoU with the segments of the
same name. The success verdict (quality.json) and the operator's outcome are each compared with the reviewed
verdict. Only episodes a human labeled count; a kind no reviewer's class is named after is listed as not checked.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ros_robodata import untrusted
from ros_robodata.dataset.label import SEGMENT, VERDICT, Label
from ros_robodata.errors import RobodataError
from ros_robodata.review.agreement import temporal_iou


@dataclass
class KindAgreement:
    """One event kind: machine events confirmed / not, reviewed segments found / missed."""

    kind: str
    classes: list[str] = field(default_factory=list)
    machine_events: int = 0
    confirmed: int = 0
    reviewed_segments: int = 0
    found: int = 0

    @property
    def precision(self) -> float | None:
        return self.confirmed / self.machine_events if self.machine_events else None

    @property
    def recall(self) -> float | None:
        return self.found / self.reviewed_segments if self.reviewed_segments else None

    def to_json(self) -> dict[str, Any]:
        return {'kind': self.kind, 'classes': self.classes, 'machine_events': self.machine_events,
                'confirmed': self.confirmed, 'reviewed_segments': self.reviewed_segments, 'found': self.found,
                'precision': _r(self.precision), 'recall': _r(self.recall)}


@dataclass
class MachineReport:
    """The comparison over the reviewed episodes of a dataset."""

    episodes: int = 0
    kinds: dict[str, KindAgreement] = field(default_factory=dict)
    unchecked_kinds: dict[str, int] = field(default_factory=dict)  # kind -> machine events with no class to check
    subtask_ious: dict[str, list[float]] = field(default_factory=dict)  # per subtask name, one per episode
    verdicts_compared: int = 0
    verdicts_agreeing: int = 0
    operator_compared: int = 0
    operator_agreeing: int = 0
    disagreements: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {'episodes': self.episodes, 'kinds': [k.to_json() for k in self.kinds.values()],
                'unchecked_kinds': self.unchecked_kinds,
                'subtask_iou': {k: round(sum(v) / len(v), 4) for k, v in self.subtask_ious.items()},
                'success_verdict': {'compared': self.verdicts_compared, 'agreeing': self.verdicts_agreeing,
                                    'agreement': _r(self.verdicts_agreeing / self.verdicts_compared
                                                    if self.verdicts_compared else None)},
                'operator_outcome': {'compared': self.operator_compared, 'agreeing': self.operator_agreeing,
                                     'agreement': _r(self.operator_agreeing / self.operator_compared
                                                     if self.operator_compared else None)},
                'disagreements': self.disagreements}


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _machine(events_doc: Mapping[str, Any]) -> tuple[list[tuple[str, float]], dict[str, list[tuple[float, float]]]]:
    """(kind, t_s) of each machine event and the subtask spans by name, in seconds from events.json's start."""
    start = events_doc.get('start_ns')
    events = []
    for e in events_doc.get('events') or ():
        t_s = e.get('t_s')
        if t_s is None and isinstance(start, int):
            t_s = (int(e['t_ns']) - start) / 1e9
        if t_s is not None:
            events.append((str(e['kind']), float(t_s)))
    spans: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for s in events_doc.get('timeline') or ():
        if 'start_s' in s and 'end_s' in s:
            spans[str(s['name'])].append((float(s['start_s']), float(s['end_s'])))
        elif isinstance(start, int):
            spans[str(s['name'])].append(((int(s['start_ns']) - start) / 1e9, (int(s['end_ns']) - start) / 1e9))
    return events, spans


def _reviewed_verdict(labels: Sequence[Label]) -> str:
    latest: dict[str, str] = {}
    for label in labels:
        if label.kind == VERDICT:
            latest[label.annotator] = label.value
    values = set(latest.values())
    return values.pop() if len(values) == 1 else ''  # disputed or none: not a reference


def compare(labels: Sequence[Label], events_doc: Mapping[str, Any] | None, *, machine_success: bool | None,
            operator_outcome: str, report: MachineReport, episode_id: str, tolerance_s: float = 0.25) -> None:
    """Add one reviewed episode to `report`."""
    report.episodes += 1
    segments: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for label in labels:
        if label.kind == SEGMENT:
            segments[label.value].append((float(label.start_s), float(label.end_s)))  # type: ignore[arg-type]
    by_leaf: dict[str, list[str]] = defaultdict(list)
    for value in segments:
        by_leaf[value.rsplit('/', 1)[-1]].append(value)
    if events_doc is not None and segments:
        events, spans = _machine(events_doc)
        kinds = {k for k, _ in events} | {leaf for leaf in by_leaf}
        for kind in sorted(kinds):
            classes = by_leaf.get(kind, [])
            mine = [t for k, t in events if k == kind]
            if not classes:
                report.unchecked_kinds[kind] = report.unchecked_kinds.get(kind, 0) + len(mine)
                continue
            entry = report.kinds.setdefault(kind, KindAgreement(kind))
            entry.classes = sorted(set(entry.classes) | set(classes))
            theirs = [span for c in classes for span in segments[c]]
            entry.machine_events += len(mine)
            entry.confirmed += sum(1 for t in mine if any(s - tolerance_s <= t <= e + tolerance_s for s, e in theirs))
            entry.reviewed_segments += len(theirs)
            entry.found += sum(1 for s, e in theirs if any(s - tolerance_s <= t <= e + tolerance_s for t in mine))
        for name, machine_spans in spans.items():
            if name in by_leaf:
                human = [span for c in by_leaf[name] for span in segments[c]]
                report.subtask_ious.setdefault(name, []).append(temporal_iou(machine_spans, human))
    verdict = _reviewed_verdict(labels)
    if verdict:
        if machine_success is not None and verdict != 'unusable':
            report.verdicts_compared += 1
            agrees = machine_success == (verdict in ('success', 'recovery'))
            report.verdicts_agreeing += agrees
            if not agrees:
                report.disagreements.append({'episode': episode_id, 'machine_success': machine_success,
                                             'reviewed': verdict})
        if operator_outcome in ('success', 'failure', 'recovery'):
            report.operator_compared += 1
            report.operator_agreeing += operator_outcome == verdict
            if operator_outcome != verdict:
                report.disagreements.append({'episode': episode_id, 'operator': operator_outcome,
                                             'reviewed': verdict})


def machine_report(dataset: Any, labels_by_episode: Mapping[str, Sequence[Label]], *,
                   tolerance_s: float = 0.25) -> MachineReport:
    """The comparison over every episode with labels (their events.json and quality.json as robodata wrote them)."""
    report = MachineReport()
    for episode_id, labels in sorted(labels_by_episode.items()):
        folder: Path = dataset.episode_dir(episode_id)
        events_doc = _read(folder / 'events.json')
        quality = _read(folder / 'quality.json') or {}
        success = (quality.get('success') or {}).get('success') if isinstance(quality.get('success'), dict) else None
        compare(labels, events_doc, machine_success=success if isinstance(success, bool) else None,
                operator_outcome=dataset.episode(episode_id).outcome, report=report, episode_id=episode_id,
                tolerance_s=tolerance_s)
    return report


def _read(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = untrusted.read_json(path)
    except RobodataError:
        return None
    return data if isinstance(data, dict) else None
