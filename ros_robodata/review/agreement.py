"""How far annotators agree, per task (episode) and per annotator, and which tasks need another look.

Figures: temporal IoU of the same class's segments between two annotators; Cohen's kappa (two annotators) and
Fleiss' kappa (any number) on episode verdicts and on the classes of boxes two annotators drew on the same object;
box IoU of those boxes; and, within one annotator's track of one object, how smoothly its box moves from one frame
to the next (IoU of consecutive boxes: a box that jumps is a slip of the hand or a swapped identity).
A task under a threshold is flagged with its reason; `write_disagreements` puts the flagged tasks in
review/disagreements.json, which the review queue reads to send them back to a human.
"""

from __future__ import annotations

import itertools
import json
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ros_robodata.dataset.label import BOX, SEGMENT, VERDICT, Label
from ros_robodata.files import write_json

DISAGREEMENTS_FILE = 'disagreements.json'
DISAGREEMENTS_FORMAT = 'ros_robodata.disagreements'


@dataclass(frozen=True)
class Thresholds:
    """Below these a task goes back to the queue."""

    temporal_iou: float = 0.5
    box_iou: float = 0.5
    track_iou: float = 0.3  # consecutive boxes of one object overlapping less than this: a jump
    match_iou: float = 0.3  # two annotators' boxes overlapping at least this are the same object


# -- the measures ----------------------------------------------------------------------------------

def _merge(spans: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _length(spans: Sequence[tuple[float, float]]) -> float:
    return sum(end - start for start, end in spans)


def temporal_iou(a: Iterable[tuple[float, float]], b: Iterable[tuple[float, float]]) -> float:
    """Intersection over union of two sets of time spans (each merged first); 1.0 when both are empty."""
    ma, mb = _merge(a), _merge(b)
    union = _length(_merge([*ma, *mb]))
    if union <= 0:
        return 1.0 if not ma and not mb else 0.0
    inter = sum(max(0.0, min(e1, e2) - max(s1, s2)) for s1, e1 in ma for s2, e2 in mb)
    return inter / union


def box_iou(a: Sequence[float], b: Sequence[float]) -> float:
    """IoU of two (x, y, width, height) boxes."""
    ix = max(0.0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = a[2] * a[3] + b[2] * b[3] - inter
    return inter / union if union > 0 else 0.0


def cohen_kappa(pairs: Sequence[tuple[str, str]]) -> float | None:
    """Cohen's kappa of two raters over items rated by both; None with no item; 1.0 when both always agree on one
    category (no chance to disagree is no disagreement)."""
    if not pairs:
        return None
    n = len(pairs)
    observed = sum(1 for a, b in pairs if a == b) / n
    first, second = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    expected = sum(first[c] * second[c] for c in set(first) | set(second)) / (n * n)
    if expected >= 1.0:
        return 1.0 if observed >= 1.0 else 0.0
    return (observed - expected) / (1.0 - expected)


def fleiss_kappa(items: Sequence[Sequence[str]]) -> float | None:
    """Fleiss' kappa over items each rated by two or more raters (the number may vary per item: each item's
    agreement is over its own raters); None with no such item."""
    rated = [list(r) for r in items if len(r) >= 2]
    if not rated:
        return None
    totals: Counter[str] = Counter()
    agreement = []
    for ratings in rated:
        counts = Counter(ratings)
        totals.update(counts)
        k = len(ratings)
        agreement.append((sum(c * c for c in counts.values()) - k) / (k * (k - 1)))
    p_bar = sum(agreement) / len(agreement)
    all_ratings = sum(totals.values())
    p_e = sum((c / all_ratings) ** 2 for c in totals.values())
    if p_e >= 1.0:
        return 1.0 if p_bar >= 1.0 else 0.0
    return (p_bar - p_e) / (1.0 - p_e)


# -- per task and per annotator --------------------------------------------------------------------

@dataclass
class TaskAgreement:
    """One episode's figures; `reasons` say why it goes back to the queue (empty: it does not)."""

    episode_id: str
    annotators: list[str]
    verdicts: dict[str, str] = field(default_factory=dict)
    temporal_iou: dict[str, float] = field(default_factory=dict)  # per class, mean over annotator pairs
    box_iou: float | None = None  # mean IoU of matched boxes across annotators
    box_class_agreement: float | None = None  # share of matched boxes given the same class
    unmatched_boxes: int = 0
    track_min_iou: dict[str, float] = field(default_factory=dict)  # per annotator/track: worst consecutive IoU
    reasons: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {'episode': self.episode_id, 'annotators': self.annotators, 'verdicts': self.verdicts,
                'temporal_iou': {k: round(v, 4) for k, v in self.temporal_iou.items()},
                'box_iou': None if self.box_iou is None else round(self.box_iou, 4),
                'box_class_agreement': None if self.box_class_agreement is None else round(self.box_class_agreement, 4),
                'unmatched_boxes': self.unmatched_boxes,
                'track_min_iou': {k: round(v, 4) for k, v in self.track_min_iou.items()},
                'reasons': self.reasons}


@dataclass
class Agreement:
    """Every task's figures, the kappas over the dataset and each annotator's agreement with the others."""

    tasks: dict[str, TaskAgreement]
    verdict_cohen: dict[str, float | None]  # 'a|b' -> kappa over episodes both gave a verdict
    verdict_fleiss: float | None
    box_class_cohen: dict[str, float | None]
    box_class_fleiss: float | None
    annotators: dict[str, dict[str, Any]]
    thresholds: Thresholds

    @property
    def flagged(self) -> list[TaskAgreement]:
        return [t for t in self.tasks.values() if t.reasons]

    def to_json(self) -> dict[str, Any]:
        def r(v: float | None) -> float | None:
            return None if v is None else round(v, 4)
        return {'thresholds': self.thresholds.__dict__,
                'verdict_cohen_kappa': {k: r(v) for k, v in self.verdict_cohen.items()},
                'verdict_fleiss_kappa': r(self.verdict_fleiss),
                'box_class_cohen_kappa': {k: r(v) for k, v in self.box_class_cohen.items()},
                'box_class_fleiss_kappa': r(self.box_class_fleiss),
                'annotators': self.annotators,
                'tasks': [t.to_json() for t in self.tasks.values()]}


def _latest_verdicts(labels: Iterable[Label]) -> dict[str, str]:
    out: dict[str, str] = {}
    for label in labels:
        if label.kind == VERDICT:
            out[label.annotator] = label.value
    return out


def _frame_key(label: Label) -> tuple[str, str]:
    return (label.sensor, label.frame_id or str(label.frame))


def _match_boxes(a: list[Label], b: list[Label], min_iou: float) -> tuple[list[tuple[Label, Label, float]], int]:
    """Greedy one-to-one matching by IoU (best pairs first); returns the matches and how many boxes were left."""
    candidates = sorted(((box_iou(x.box, y.box), i, j) for i, x in enumerate(a) for j, y in enumerate(b)  # type: ignore[arg-type]
                         if box_iou(x.box, y.box) >= min_iou), reverse=True)  # type: ignore[arg-type]
    used_a: set[int] = set()
    used_b: set[int] = set()
    matches = []
    for iou, i, j in candidates:
        if i not in used_a and j not in used_b:
            used_a.add(i)
            used_b.add(j)
            matches.append((a[i], b[j], iou))
    return matches, len(a) + len(b) - 2 * len(matches)


ClassPair = tuple[str, str, str, str]  # annotator a, annotator b, the class a gave, the class b gave


def task_agreement(episode_id: str, labels: Sequence[Label],
                   thresholds: Thresholds) -> tuple[TaskAgreement, list[ClassPair]]:
    """One episode's figures, and its matched box pairs (annotator a, annotator b, class a, class b) for kappa."""
    annotators = sorted({label.annotator for label in labels})
    task = TaskAgreement(episode_id, annotators, verdicts=_latest_verdicts(labels))
    if len(set(task.verdicts.values())) > 1:
        task.reasons.append('verdicts differ: ' + ', '.join(f'{a} {v}' for a, v in sorted(task.verdicts.items())))

    segments: dict[str, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    for label in labels:
        if label.kind == SEGMENT:
            segments[label.value][label.annotator].append((float(label.start_s), float(label.end_s)))  # type: ignore[arg-type]
    segment_annotators = sorted({a for per in segments.values() for a in per})
    for value, per in sorted(segments.items()):
        pairs = list(itertools.combinations(segment_annotators, 2))
        if not pairs:
            continue
        task.temporal_iou[value] = sum(temporal_iou(per.get(a, []), per.get(b, [])) for a, b in pairs) / len(pairs)
        if task.temporal_iou[value] < thresholds.temporal_iou:
            task.reasons.append(f'{value}: temporal IoU {task.temporal_iou[value]:.2f} < {thresholds.temporal_iou}')

    boxes: dict[tuple[str, str], dict[str, list[Label]]] = defaultdict(lambda: defaultdict(list))
    tracks: dict[str, list[Label]] = defaultdict(list)
    for label in labels:
        if label.kind == BOX:
            boxes[_frame_key(label)][label.annotator].append(label)
            if label.track:
                tracks[f'{label.annotator}/{label.track}'].append(label)
    ious, same_class, unmatched = [], [], 0
    class_pairs: list[tuple[str, str, str, str]] = []
    for by_annotator in boxes.values():
        for a, b in itertools.combinations(sorted(by_annotator), 2):
            matches, left = _match_boxes(by_annotator[a], by_annotator[b], thresholds.match_iou)
            unmatched += left
            for x, y, iou in matches:
                ious.append(iou)
                same_class.append(x.value == y.value)
                class_pairs.append((a, b, x.value, y.value))
    if ious:
        task.box_iou = sum(ious) / len(ious)
        task.box_class_agreement = sum(same_class) / len(same_class)
        if task.box_iou < thresholds.box_iou:
            task.reasons.append(f'boxes: mean IoU across annotators {task.box_iou:.2f} < {thresholds.box_iou}')
        if task.box_class_agreement < 1.0:
            task.reasons.append(f'boxes: {sum(not s for s in same_class)} of {len(same_class)} matched boxes given '
                                'different classes')
    task.unmatched_boxes = unmatched
    for name, track in sorted(tracks.items()):
        ordered = sorted(track, key=lambda label: label.frame or 0)
        consecutive = [box_iou(p.box, q.box) for p, q in itertools.pairwise(ordered)  # type: ignore[arg-type]
                       if (q.frame or 0) - (p.frame or 0) == 1]
        if consecutive:
            task.track_min_iou[name] = min(consecutive)
            if task.track_min_iou[name] < thresholds.track_iou:
                jumps = sum(1 for v in consecutive if v < thresholds.track_iou)
                task.reasons.append(f'track {name}: the box jumps between consecutive frames {jumps} time(s) '
                                    f'(IoU down to {task.track_min_iou[name]:.2f})')
    return task, class_pairs


def agreement(labels_by_episode: Mapping[str, Sequence[Label]], thresholds: Thresholds | None = None) -> Agreement:
    """The figures over a dataset's current labels (see the module docstring)."""
    thresholds = thresholds or Thresholds()
    tasks: dict[str, TaskAgreement] = {}
    class_pairs: list[tuple[str, str, str, str]] = []
    for episode_id, labels in sorted(labels_by_episode.items()):
        if not labels:
            continue
        task, pairs = task_agreement(episode_id, labels, thresholds)
        tasks[episode_id] = task
        class_pairs.extend(pairs)
    raters = sorted({a for t in tasks.values() for a in t.verdicts})
    verdict_cohen = {}
    for a, b in itertools.combinations(raters, 2):
        votes = [(t.verdicts[a], t.verdicts[b]) for t in tasks.values() if a in t.verdicts and b in t.verdicts]
        if votes:
            verdict_cohen[f'{a}|{b}'] = cohen_kappa(votes)
    verdict_fleiss = fleiss_kappa([list(t.verdicts.values()) for t in tasks.values()])
    by_pair: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for a, b, ca, cb in class_pairs:
        by_pair[f'{a}|{b}'].append((ca, cb))
    box_cohen = {pair: cohen_kappa(values) for pair, values in sorted(by_pair.items())}
    box_fleiss = fleiss_kappa([[ca, cb] for _, _, ca, cb in class_pairs])
    return Agreement(tasks, verdict_cohen, verdict_fleiss, box_cohen, box_fleiss,
                     _per_annotator(tasks), thresholds)


def _per_annotator(tasks: Mapping[str, TaskAgreement]) -> dict[str, dict[str, Any]]:
    """Each annotator: tasks labeled, share of their verdicts matching the others' majority, tasks flagged."""
    out: dict[str, dict[str, Any]] = {}
    for task in tasks.values():
        for annotator in task.annotators:
            entry = out.setdefault(annotator, {'tasks': 0, 'verdicts_compared': 0, 'verdicts_agreeing': 0,
                                               'flagged_tasks': 0})
            entry['tasks'] += 1
            entry['flagged_tasks'] += bool(task.reasons)
            others = [v for a, v in task.verdicts.items() if a != annotator]
            if annotator in task.verdicts and others:
                entry['verdicts_compared'] += 1
                majority = Counter(others).most_common(1)[0][0]
                entry['verdicts_agreeing'] += task.verdicts[annotator] == majority
    for entry in out.values():
        compared = entry['verdicts_compared']
        entry['verdict_agreement'] = round(entry['verdicts_agreeing'] / compared, 4) if compared else None
    return out


def write_disagreements(review_dir: Path, result: Agreement) -> Path:
    """review/disagreements.json: the flagged tasks with their reasons (what the review queue reads)."""
    review_dir.mkdir(parents=True, exist_ok=True)
    path = review_dir / DISAGREEMENTS_FILE
    doc = {'format': DISAGREEMENTS_FORMAT, 'version': 1,
           'thresholds': result.thresholds.__dict__,
           'episodes': [{'episode': t.episode_id, 'annotators': t.annotators, 'reasons': t.reasons}
                        for t in result.flagged]}
    previous = None
    if path.is_file():
        try:
            previous = json.loads(path.read_text(encoding='utf-8'))
        except (OSError, ValueError):
            previous = None
    if previous is not None and {k: v for k, v in previous.items() if k != 'written'} == doc:
        return path  # nothing changed: the file (and its time) stays as it was
    doc['written'] = time.strftime('%Y-%m-%dT%H:%M:%S%z')
    write_json(path, doc)
    return path
