"""`robodata approve`: judge episodes against a written policy, approve those it admits, reject the rest with reasons.

A decision changes the episode's status (approved / rejected), keeps what it rests on in episode.yaml (`decision`)
and appends one audit line, so who approved what, under which policy text and why, can be shown later. Released and
retired episodes are frozen and never re-judged; an episode already decided the same way under the same policy is
left alone (no audit line for nothing).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ros_robodata.dataset.catalog import CatalogRow
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.embodiments import profile_of
from ros_robodata.errors import RobodataError
from ros_robodata.events.offline import EVENTS_FILE, read_events_file
from ros_robodata.export.lerobot.policy import recovery_counts
from ros_robodata.governance.approval_policy import ApprovalPolicy
from ros_robodata.vocabulary import OUTCOMES, RECOVERY

__all__ = ['ApprovalRun', 'Decision', 'approve', 'judge']

APPROVED, REJECTED, UNCHANGED = 'approved', 'rejected', 'unchanged'
FROZEN = ('released', 'retired')  # a release is immutable; a retired episode has no data left to judge


@dataclass(frozen=True)
class Decision:
    """What the policy made of one episode.

    Args:
        episode_id: the episode.
        before: its lifecycle state before (recorded, scored, reviewed, approved...).
        verdict: approved, rejected, or unchanged (frozen, still recording, or already decided so).
        reasons: why it was rejected (empty when approved), or why it was left unchanged.
    """

    episode_id: str
    before: str
    verdict: str
    reasons: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {'episode': self.episode_id, 'before': self.before, 'verdict': self.verdict,
                'reasons': list(self.reasons)}


@dataclass
class ApprovalRun:
    """Every decision of one `robodata approve`, and what the policy warns of for the whole set."""

    policy: ApprovalPolicy
    dry_run: bool
    decisions: list[Decision] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def count(self, verdict: str) -> int:
        """How many decisions had this verdict."""
        return sum(d.verdict == verdict for d in self.decisions)

    def to_json(self) -> dict[str, Any]:
        return {'policy': self.policy.to_json(), 'dry_run': self.dry_run,
                'approved': self.count(APPROVED), 'rejected': self.count(REJECTED),
                'unchanged': self.count(UNCHANGED), 'warnings': self.warnings,
                'decisions': [d.to_json() for d in self.decisions]}


def judge(dataset: Dataset, row: CatalogRow, policy: ApprovalPolicy) -> list[str]:
    """Why the policy does not admit this episode (its catalog row and events.json); [] when it does. The recovery
    share is a criterion of the set, applied by approve().

    Args:
        dataset: the episode's dataset (for its events.json).
        row: the episode's catalog row.
        policy: the criteria.
    """
    reasons = []
    if row.status in ('interrupted', 'incomplete'):
        reasons.append(f'status {row.status}: the recording is not whole')
    if policy.min_score is not None:
        if row.score is None:
            reasons.append('no score (run robodata score)')
        elif row.score < policy.min_score:
            reasons.append(f'score {row.score:.2f} < {policy.min_score:g}')
    if policy.no_error_findings and int(row.scores.get('errors') or 0) > 0:
        checks = ', '.join(row.scores.get('checks') or []) or 'see quality.json'
        reasons.append(f'{row.scores["errors"]} error finding(s) ({checks})')
    verdict = row.reviewed_outcome
    if policy.require_review and not verdict:
        reasons.append('not reviewed (the policy asks for a reviewers\' verdict)')
    if verdict and policy.reviewed_outcomes and verdict not in policy.reviewed_outcomes:
        reasons.append(f'reviewers said {verdict} (the policy admits {", ".join(policy.reviewed_outcomes)})')
    outcome = verdict if verdict in OUTCOMES else row.outcome
    if policy.outcomes and outcome not in policy.outcomes:
        whose = 'reviewed' if verdict in OUTCOMES else 'operator\'s'
        reasons.append(f'{whose} outcome {outcome} (the policy admits {", ".join(policy.outcomes)})')
    if policy.required_events:
        reasons.extend(_missing_events(dataset, dataset.episode_dir(row.id) / EVENTS_FILE, policy.required_events))
    return reasons


def _missing_events(dataset: Dataset, path: Path, required: tuple[str, ...]) -> list[str]:
    if not path.is_file():
        topics = profile_of(dataset, dataset.episode(path.parent.name)).topics if dataset.has_profile else None
        if topics is not None and topics.gripper is None and topics.wrench is None:
            return [f'no events can be found: the robot profile names no gripper or wrench, and the policy requires '
                    f'{", ".join(required)} (add them to the profile, or drop required_events)']
        return [f'no {EVENTS_FILE} (run robodata segment): the policy requires {", ".join(required)}']
    try:
        doc = read_events_file(path)
    except RobodataError as err:
        return [f'{EVENTS_FILE} unreadable ({err})']
    found = {e['kind'] for e in doc['events']}
    return [f'no {kind} event' for kind in required if kind not in found]


def approve(dataset: Dataset, rows: list[CatalogRow], policy: ApprovalPolicy, *, who: str | None = None,
            why: str = '', dry_run: bool = False) -> ApprovalRun:
    """Judge `rows` against `policy`; approve the admitted, reject the rest, each with its reasons.

    Args:
        dataset: the dataset the rows are from.
        rows: the episodes to judge (the command's filters chose them).
        policy: the criteria.
        who: who approves, for episode.yaml and the audit; None: the current user.
        why: why, kept with every decision.
        dry_run: decide, change nothing.

    Raises:
        DatasetError: a decision cannot be written (read-only dataset, full disk, audit not writable): decisions
            already written stay, each with its audit line.
    """
    run = ApprovalRun(policy, dry_run)
    judged: dict[str, list[str]] = {}
    for row in rows:
        if row.state in FROZEN:
            note = f'in release {row.in_release}: a release is frozen' if row.state == 'released' else 'retired'
            run.decisions.append(Decision(row.id, row.state, UNCHANGED, (note,)))
        elif row.status == 'recording':
            run.decisions.append(Decision(row.id, row.state, UNCHANGED, ('still recording',)))
        else:
            judged[row.id] = judge(dataset, row, policy)
    by_id = {row.id: row for row in rows}
    if policy.recovery_share is not None:
        _cap_recoveries(judged, by_id, policy.recovery_share, run.warnings)
    stamp = time.strftime('%Y-%m-%dT%H:%M:%S%z')
    for episode_id, reasons in judged.items():
        row = by_id[episode_id]
        verdict = REJECTED if reasons else APPROVED
        if _same(dataset, row, verdict, reasons, policy):
            run.decisions.append(Decision(episode_id, row.state, UNCHANGED, (f'already {verdict} by this policy',)))
            continue
        run.decisions.append(Decision(episode_id, row.state, verdict, tuple(reasons)))
        if not dry_run:
            dataset.decide(episode_id, verdict, {'verdict': verdict, 'policy': policy.name,
                                                 'policy_sha256': policy.sha256, 'reasons': reasons, 'why': why,
                                                 'time': stamp}, who)
    run.decisions.sort(key=lambda d: d.episode_id)
    return run


def _same(dataset: Dataset, row: CatalogRow, verdict: str, reasons: list[str], policy: ApprovalPolicy) -> bool:
    if row.status != verdict:
        return False
    decision = dataset.episode(row.id).decision
    return decision.get('policy_sha256') == policy.sha256 and decision.get('reasons') == reasons


def _cap_recoveries(judged: dict[str, list[str]], rows: dict[str, CatalogRow], share: tuple[float, float],
                    warnings: list[str]) -> None:
    """Over the wanted share of recoveries among the admitted: reject the surplus (chosen by a hash of their ids,
    the same every run); under it: a warning saying how many more to record."""
    low, high = share
    admitted = [i for i, reasons in judged.items() if not reasons]
    recoveries = [i for i in admitted if _outcome(rows[i]) == RECOVERY]
    others = len(admitted) - len(recoveries)
    if not admitted:
        return
    have = len(recoveries) / len(admitted)
    keep, needed = recovery_counts(others, len(recoveries), share)
    if have > high:
        ranked = sorted(recoveries, key=lambda i: hashlib.sha256(f'recovery{i}'.encode()).hexdigest())
        for episode_id in ranked[keep:]:
            judged[episode_id].append(f'recovery over the policy\'s {high:.0%} share of recoveries')
        warnings.append(f'recoveries were {len(recoveries)} of {len(admitted)} admitted ({have:.0%}), over the '
                        f'{high:.0%} wanted: {len(recoveries) - keep} rejected')
    elif have < low:
        warnings.append(f'recoveries are {len(recoveries)} of {len(admitted)} admitted ({have:.0%}), under the '
                        f'{low:.0%} wanted: record about {needed} more recovery demonstration(s)')


def _outcome(row: CatalogRow) -> str:
    return row.reviewed_outcome if row.reviewed_outcome in OUTCOMES else row.outcome
