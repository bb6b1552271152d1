"""`robodata select`: the review queue of a dataset, written where the rest of the review loop finds it.

    DATASET/review/queue.json        the ranked picks with each signal's value, weight, contribution and sentence,
                                     the episodes filtered out and why, the weights and inputs used
    DATASET/review/embeddings.json   trajectory vectors by bag checksum (a cache: deleting it costs a re-read)
    catalog.sqlite                   review_rank, review_priority, review_reason per episode (the index; rebuilt
                                     from queue.json by `robodata catalog rebuild`)
    audit.jsonl                      one `select_review` line per run: who, when, budget, the picks

queue.json holds no time and lists everything sorted, so the same inputs give the same bytes.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ros_robodata import untrusted
from ros_robodata.cluster import Executor
from ros_robodata.dataset.audit import append_audit
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.embodiments import embodiment_of, embodiments, holds_several
from ros_robodata.dataset.targets import Filters, TargetLike, as_target, need, select, why_none
from ros_robodata.errors import DatasetError, RobodataError
from ros_robodata.files import write_json
from ros_robodata.profile import Profile
from ros_robodata.selection.embedding import embeddings
from ros_robodata.selection.evidence import Evidence, read_evidence
from ros_robodata.selection.queue_format import QueueEntry, QueueInputs, ReviewQueue
from ros_robodata.selection.rank import Pick, pick, standardized
from ros_robodata.selection.reviewed import reviewed_verdict, reviewer_disagreements
from ros_robodata.selection.signals import MIN_SCORE, WEIGHTS, episode_signals, typical_confidence, unusable
from ros_robodata.selection.uncertainty import load_uncertainty, scaled

REVIEW_DIR = 'review'
QUEUE_FILE = 'queue.json'
QUEUE_FORMAT = 'ros_robodata.review_queue/1'
DEFAULT_BUDGET = '10%'
_BUDGET = re.compile(r'^\s*(?:(\d+)|(\d+(?:\.\d+)?)\s*%)\s*$')


def parse_budget(text: str, considered: int) -> int:
    """`N` episodes, or `P%` of the episodes considered (rounded up, at least 1 when any is considered)."""
    m = _BUDGET.match(str(text))
    if m is None:
        raise RobodataError(f'--budget: {text!r} is neither a number of episodes (20) nor a share of them (10%)')
    if m.group(1) is not None:
        count = int(m.group(1))
        if count < 1:
            raise RobodataError('--budget: at least 1 episode')
        return count
    share = float(m.group(2))
    if not 0 < share <= 100:
        raise RobodataError(f'--budget: {text!r}: a share is over 0% and at most 100%')
    return max(1, math.ceil(share / 100 * considered - 1e-9)) if considered else 0


@dataclass
class SelectRun:
    """What `robodata select` decided: the picks in order, what was filtered out and why, and the document written
    to review/queue.json (`queue`).

    Args:
        picks: the episodes to review, best first, each with its priority and the signals behind it.
        excluded: per episode filtered out (unusable, unscored, already reviewed), why.
        queue: the review queue document, as review/queue.json holds it.
        path: where the queue was written; None when nothing was written.
        notes: what the user should know (files not read, diversity not used...).
    """

    picks: list[Pick]
    excluded: dict[str, str]
    queue: ReviewQueue
    path: Path | None
    notes: list[str] = field(default_factory=list)


def select_for_review(target: TargetLike, *, budget: str | int = DEFAULT_BUDGET,
                      uncertainty: str | Path | None = None, filters: Filters | None = None,
                      include_reviewed: bool = False, min_score: float = MIN_SCORE, write: bool = True,
                      who: str | None = None,
                      progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
                      executor: Executor | None = None) -> SelectRun:
    """Rank a scored dataset's episodes for review and keep the best `budget` (N, or P% of the episodes
    considered): filtered first (unusable, unscored, already reviewed: each with its reason), then picked by
    informativeness and diversity (rank.py). With `write`, queue.json, the catalog's review columns and an audit
    line are written; the uncertainty file is read before anything is.

    Args:
        target: a Dataset, or the path to one (selection ranks its episodes against each other).
        budget: how many to pick: a number of episodes (20), or a share of those considered ('10%').
        uncertainty: a CSV or JSON file of per-episode model uncertainty, which raises an episode's priority.
        filters: which episodes of the dataset are considered (task, outcome, status, since).
        include_reviewed: consider episodes already reviewed too (never those found unusable).
        min_score: the quality score under which an episode is unusable and left out (0..1).
        write: store queue.json, the catalog's review columns and an audit line; False only computes the queue.
        who: who asked, for the audit log; None: the current user.
        progress: wraps the bags read for trajectories to show progress.
        executor: where the trajectories are read (local processes, a Ray cluster); here when None.

    Raises:
        DatasetError: the dataset is read-only (with `write`), or review/ is not a folder.
        RobodataError: the target is not a dataset, the budget, min_score or uncertainty file cannot be used, or
            no episode is there to select from or none is scored.
    """
    resolved = need(as_target(target), 'dataset', hint='selection ranks the episodes of a dataset against each other')
    dataset = resolved.dataset
    assert dataset is not None
    scores = load_uncertainty(uncertainty) if uncertainty is not None else None
    if write and dataset.catalog.read_only:
        raise DatasetError(f'{dataset.root}: the dataset is read-only here: the queue cannot be stored (copy it '
                           'somewhere writable, or add --dry-run to see the queue without storing it)')
    if not 0 <= min_score <= 1:
        raise RobodataError(f'--min-score: {min_score} is not between 0 and 1')
    items = select(resolved, filters, need_bag=False)
    if not items:
        raise RobodataError(f'{dataset.root}: no episode to select from: '
                             f'{why_none(resolved, filters, need_bag=False)}')
    count = budget if isinstance(budget, int) else parse_budget(str(budget), len(items))
    if count < 1:
        raise RobodataError('--budget: at least 1 episode')
    notes: list[str] = []
    evidence: dict[str, Evidence] = {}
    excluded: dict[str, str] = {}
    disputed, note = reviewer_disagreements(dataset.root / REVIEW_DIR)
    notes.extend([note] if note else [])
    for item in items:
        episode = item.episode
        assert episode is not None
        folder = dataset.episode_dir(item.name)
        e = read_evidence(folder, item.name, episode.task, episode.outcome, episode.status)
        e.reviewed, note = reviewed_verdict(folder)
        notes.extend(e.notes + ([note] if note else []))
        if item.name in disputed:  # low agreement puts the episode back in the queue
            e.reviewed, e.reviewers_disagree = None, disputed[item.name]
        why = unusable(e, min_score)
        if why is None and e.reviewed is not None and (e.reviewed == 'unusable' or not include_reviewed):
            why = f'already reviewed (verdict {e.reviewed})'
        if why is None and not dataset.bag_files(item.name):
            why = 'no bag'
        if why is not None:
            excluded[item.name] = why
        else:
            evidence[item.name] = e
    if not any(e.scored for e in evidence.values()) and not any(
            not why.startswith('not scored') for why in excluded.values()):
        raise RobodataError(f'{dataset.root}: no episode is scored: run `robodata score {dataset.root}` first '
                            '(selection ranks by what it found)')
    placed = None
    if scores is not None:
        placed = scaled(scores, sorted(evidence))
        unknown = sorted(set(scores) - {i.name for i in items})
        if unknown:
            notes.append(f'{uncertainty}: {len(unknown)} episode(s) not among those considered, ignored: '
                         f'{", ".join(unknown[:5])}{" ..." if len(unknown) > 5 else ""}')
        missing = sorted(set(evidence) - set(scores))
        if missing:
            notes.append(f'{uncertainty}: no score for {len(missing)} candidate(s) (their uncertainty counts 0): '
                         f'{", ".join(missing[:5])}{" ..." if len(missing) > 5 else ""}')
    typical = typical_confidence(list(evidence.values()))
    no_score = (0.0, 'no uncertainty score for it')
    candidates = {n: episode_signals(e, uncertainty=None if placed is None else placed.get(n, no_score),
                                     min_score=min_score, typical=typical) for n, e in evidence.items()}
    vectors: dict[str, Any] = {}
    placed_vectors: dict[str, Any] = {}
    robots = _robots(dataset, sorted(candidates)) if dataset.has_profile else {}
    for profile, names in robots.values():  # each robot's trajectories with its profile, compared among its own
        found, embed_notes = embeddings([(n, dataset.bag_dir(n), dataset.episode(n).bag_sha256) for n in names],
                                        profile, dataset.root / REVIEW_DIR if write else None, progress=progress,
                                        executor=executor)
        notes.extend(embed_notes)
        vectors.update(found)
        placed_vectors.update(standardized(found))
    if candidates and not dataset.has_profile:
        notes.append('no robot profile in dataset.yaml: trajectories not read, diversity not used')
    if candidates and not vectors and dataset.has_profile:
        notes.append('no trajectory in any candidate\'s bag: diversity not used')
    several = {n: robot for robot, (_, names) in robots.items() for n in names} if len(robots) > 1 else None
    picks = pick(candidates, placed_vectors, count, several)
    queue = _document(dataset, str(budget), count, items, picks, excluded, evidence, scores, uncertainty,
                      filters, include_reviewed, min_score, notes)
    path = None
    if write:
        path = _write(dataset, queue, picks, excluded, who)
    return SelectRun(picks, excluded, queue, path, notes)


def _robots(dataset: Dataset, names: list[str]) -> dict[str, tuple[Profile, list[str]]]:
    """The candidates by robot (embodiment name), each with the profile its trajectories are read with: one group
    with the dataset's profile unless the dataset holds several robots."""
    if not holds_several(dataset):
        return {dataset.profile.robot.name: (dataset.profile, names)} if names else {}
    known = embodiments(dataset)
    out: dict[str, tuple[Profile, list[str]]] = {}
    for name in names:
        embodiment = embodiment_of(dataset, dataset.episode(name), known)
        out.setdefault(embodiment.name, (embodiment.profile, []))[1].append(name)
    return out


def _document(dataset: Dataset, asked: str, count: int, items: list[Any], picks: list[Pick], excluded: dict[str, str],
              evidence: dict[str, Evidence], scores: dict[str, float] | None, uncertainty: str | Path | None,
              filters: Filters | None, include_reviewed: bool, min_score: float, notes: list[str]) -> ReviewQueue:
    inputs: QueueInputs = {'filters': {k: v for k, v in (filters or Filters()).__dict__.items() if v is not None},
                           'include_reviewed': include_reviewed, 'min_score': min_score}
    if scores is not None and uncertainty is not None:
        inputs['uncertainty'] = {'file': str(uncertainty), 'episodes': len(scores),
                                 'sha256': hashlib.sha256(Path(uncertainty).read_bytes()).hexdigest()}
    queue: list[QueueEntry] = []
    for p in picks:
        e = evidence[p.episode_id]
        queue.append({
            'rank': p.rank, 'episode_id': p.episode_id, 'task': e.task, 'outcome': e.outcome,
            'score': None if e.score is None else round(e.score, 4), 'priority': p.priority,
            'reasons': p.reasons(),
            'signals': {name: {'value': round(s.value, 4), 'weight': WEIGHTS[name],
                               'contribution': p.contributions()[name], 'why': s.why}
                        for name, s in sorted(p.signals.items())},
        })
    return {'format': QUEUE_FORMAT, 'dataset': dataset.name, 'budget': {'asked': asked, 'episodes': count},
            'considered': len(items), 'candidates': len(evidence), 'picked': len(picks), 'weights': dict(WEIGHTS),
            'inputs': inputs, 'queue': queue,
            'excluded': [{'episode_id': n, 'reason': why} for n, why in sorted(excluded.items())],
            'notes': sorted(set(notes))}


def _write(dataset: Dataset, queue: ReviewQueue, picks: list[Pick], excluded: dict[str, str],
           who: str | None) -> Path:
    """queue.json, then the catalog's review columns, then the audit line."""
    dataset.catalog.check_room()
    folder = dataset.root / REVIEW_DIR
    if folder.exists() and not folder.is_dir():
        raise DatasetError(f'{folder}: not a folder: move it away so the review queue can be stored there')
    folder.mkdir(exist_ok=True)
    path = folder / QUEUE_FILE
    write_json(path, queue, durable=True)
    dataset.catalog.set_review({p.episode_id: (p.rank, p.priority, (p.reasons() or [''])[0]) for p in picks},
                               excluded)
    append_audit(dataset.audit_path, 'select_review', None, who, budget=queue['budget'], picked=[p.episode_id for p
                                                                                                in picks],
                 excluded=len(excluded))
    return path


def read_queue(dataset: Dataset) -> ReviewQueue | None:
    """review/queue.json as written by select, None when there is none; RobodataError when it is not one."""
    path = dataset.root / REVIEW_DIR / QUEUE_FILE
    if not path.exists():
        return None
    data = untrusted.read_json(path)
    if not isinstance(data, dict) or data.get('format') != QUEUE_FORMAT or not isinstance(data.get('queue'), list):
        raise RobodataError(f'{path}: not a review queue robodata select wrote')
    # Its format and a list of entries, as checked: a reader of the entries checks what it reads of them (the file
    # may have been edited by hand).
    return cast(ReviewQueue, data)
