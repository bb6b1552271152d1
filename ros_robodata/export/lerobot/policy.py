"""Which episodes go into a training set, and into which split: the curation policy of `robodata export lerobot`.

Every choice is deterministic (the same dataset and policy give the same export) and every episode left out is
left out for a reason the dataset card lists.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any

from ros_robodata.errors import RobodataError
from ros_robodata.vocabulary import OUTCOMES, RECOVERY, SUCCESS

NEVER = ('recording', 'discarded', 'rejected')  # not demonstrations anyone should train on


@dataclass(frozen=True)
class Policy:
    """The options of `robodata export lerobot` that choose and cut episodes: the curation that decides what a
    policy is trained on, the same for the same dataset.

    Args:
        min_score: keep only episodes whose quality score is at least this (0..1); None: no floor.
        outcomes: the outcomes kept (success and recovery by default).
        recovery_ratio: the wanted (low, high) share of recoveries among the episodes kept; None: any.
        trim_idle: cut the idle start and end the quality checks found.
        exclude_flagged: cut the windows the quality checks flagged (an episode cut in the middle becomes several).
        split: (name, share) per split by episode, the shares adding up to 1, e.g. (('train', 0.9), ('val', 0.1)).
    """

    min_score: float | None = None
    outcomes: tuple[str, ...] = (SUCCESS, RECOVERY)
    recovery_ratio: tuple[float, float] | None = None  # wanted share of recoveries among the episodes kept
    trim_idle: bool = False
    exclude_flagged: bool = False
    split: tuple[tuple[str, float], ...] = (('train', 1.0),)

    def check(self) -> None:
        """Refuse a policy that cannot be applied, before any episode is read.

        Raises:
            RobodataError: an unknown outcome, a score floor or ratio outside 0..1, or shares not adding up to 1.
        """
        if unknown := [o for o in self.outcomes if o not in OUTCOMES]:
            raise RobodataError(f'--outcomes: {", ".join(unknown)} not among {", ".join(OUTCOMES)}')
        if self.min_score is not None and not 0 <= self.min_score <= 1:
            raise RobodataError(f'--min-score must be within 0..1, got {self.min_score}')
        if self.recovery_ratio is not None:
            low, high = self.recovery_ratio
            if not 0 <= low <= high <= 1:
                raise RobodataError(f'--recovery-ratio LOW:HIGH needs 0 <= LOW <= HIGH <= 1, got {low}:{high}')
        if not self.split or abs(sum(s for _, s in self.split) - 1) > 1e-6:
            raise RobodataError('--split: the shares must add up to 1 (e.g. train:0.9,val:0.1)')

    def to_json(self) -> dict[str, Any]:
        """The policy as plain data, for the dataset card and the export's metadata."""
        return {'min_score': self.min_score, 'outcomes': list(self.outcomes),
                'recovery_ratio': list(self.recovery_ratio) if self.recovery_ratio else None,
                'trim_idle': self.trim_idle, 'exclude_flagged': self.exclude_flagged, 'split': dict(self.split)}


def parse_split(text: str) -> tuple[tuple[str, float], ...]:
    """'train:0.9,val:0.1' -> (('train', 0.9), ('val', 0.1))."""
    out = []
    for part in text.split(','):
        name, _, share = part.partition(':')
        try:
            out.append((name.strip(), float(share)))
        except ValueError:
            raise RobodataError(f'--split: {part!r} is not NAME:SHARE (e.g. train:0.9,val:0.1)') from None
        if not name.strip() or not math.isfinite(out[-1][1]) or out[-1][1] < 0:
            raise RobodataError(f'--split: {part!r} is not NAME:SHARE with a share >= 0')
    if len({n for n, _ in out}) != len(out):
        raise RobodataError(f'--split: a split named twice in {text!r}')
    return tuple(out)


def parse_ratio(text: str) -> tuple[float, float]:
    low, sep, high = text.partition(':')
    try:
        if not sep:
            raise ValueError
        return float(low), float(high)
    except ValueError:
        raise RobodataError(f'--recovery-ratio: {text!r} is not LOW:HIGH (e.g. 0.1:0.3)') from None


@dataclass
class Candidate:
    """An episode as the policy sees it."""

    episode_id: str
    outcome: str
    status: str
    score: float | None


@dataclass
class Selection:
    """The episodes kept, in export order, their split, and why each other one was left out."""

    kept: list[str] = field(default_factory=list)
    split_of: dict[str, str] = field(default_factory=dict)
    left_out: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _rank(episode_id: str, salt: str = '') -> str:
    return hashlib.sha256(f'{salt}{episode_id}'.encode()).hexdigest()


def select(candidates: list[Candidate], policy: Policy) -> Selection:
    """Apply the policy: statuses never exported, the outcomes wanted, the score floor, then the recovery ratio
    (too few: a warning saying how many to record; too many: the surplus left out, chosen by a hash of their
    ids), then the split by episode, in the order of a hash of each id (not of when it was recorded, so
    every split sees every session), the same for the same episodes."""
    policy.check()
    out = Selection()
    pool = []
    for c in candidates:
        if c.status in NEVER:
            out.left_out[c.episode_id] = f'status {c.status}'
        elif c.outcome not in policy.outcomes:
            out.left_out[c.episode_id] = f'outcome {c.outcome} (the policy keeps {", ".join(policy.outcomes)})'
        elif policy.min_score is not None and c.score is None:
            out.left_out[c.episode_id] = 'no score (run robodata score)'
        elif policy.min_score is not None and c.score is not None and c.score < policy.min_score:
            out.left_out[c.episode_id] = f'score {c.score:.2f} < {policy.min_score:g}'
        else:
            pool.append(c)
    if policy.recovery_ratio is not None:
        pool = _balance(pool, policy.recovery_ratio, out)
    ids = sorted(c.episode_id for c in pool)
    ranked = sorted(ids, key=_rank)
    bounds, start = [], 0.0
    for name, share in policy.split:
        start += share
        bounds.append((name, round(start * len(ranked))))
    taken = 0
    for name, end in bounds:
        for episode_id in sorted(ranked[taken:end]):
            out.split_of[episode_id] = name
            out.kept.append(episode_id)
        taken = end
    return out


def recovery_counts(others: int, recoveries: int, ratio: tuple[float, float]) -> tuple[int, int]:
    """(recoveries to keep, more to record) for the share of recoveries among `others + recoveries` to fall within
    `ratio` (low, high): r / (n + r) >= low  <=>  r >= low * n / (1 - low), and <= high likewise. Shared by the
    export's curation and `robodata approve`."""
    low, high = ratio
    keep = (math.floor(high * others / (1 - high)) if high < 1 else recoveries)
    needed = (math.ceil(low * others / (1 - low)) - recoveries) if low < 1 else others
    return min(keep, recoveries), max(0, needed)


def _balance(pool: list[Candidate], ratio: tuple[float, float], out: Selection) -> list[Candidate]:
    low, high = ratio
    recoveries = [c for c in pool if c.outcome == RECOVERY]
    others = [c for c in pool if c.outcome != RECOVERY]
    total = len(pool)
    share = len(recoveries) / total if total else 0.0
    keep, needed = recovery_counts(len(others), len(recoveries), ratio)
    if total and share < low:
        out.warnings.append(f'recoveries are {len(recoveries)} of {total} ({share:.0%}), under the {low:.0%} wanted: '
                            f'record about {needed} more recovery demonstration(s)')
    elif share > high:
        ranked = sorted(recoveries, key=lambda c: _rank(c.episode_id, 'recovery'))
        for c in ranked[keep:]:
            out.left_out[c.episode_id] = f'recovery over the policy\'s {high:.0%} cap on recoveries'
        out.warnings.append(f'recoveries were {len(recoveries)} of {total} ({share:.0%}), over the {high:.0%} cap: '
                            f'{len(recoveries) - keep} left out')
        recoveries = ranked[:keep]
    return others + recoveries
