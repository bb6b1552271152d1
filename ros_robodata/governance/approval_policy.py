"""An approval policy: the written criteria `robodata approve` admits episodes by.

A data lead writes it once per task or release (YAML, `config/policies/*.yaml`); it is checked like a robot profile,
one line per mistake, before any episode is judged, and its sha256 goes with every decision so a decision can be
traced to the exact text that made it.
"""

from __future__ import annotations

import difflib
import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ros_robodata import untrusted
from ros_robodata.errors import RobodataError
from ros_robodata.paths import config_path
from ros_robodata.vocabulary import EVENT_KINDS, OUTCOMES

__all__ = ['ApprovalPolicy', 'PolicyError', 'load_approval_policy']

REVIEW_VERDICTS = (*OUTCOMES, 'unusable', 'disputed')  # what reviewers may say (annotations.json)

_KEYS = {
    'name': 'a name for the policy (text)',
    'description': 'what it is for (text)',
    'min_score': 'the lowest quality score admitted, 0..1',
    'no_error_findings': 'true: an episode with an error finding is rejected',
    'require_review': "true: an episode nobody reviewed is rejected",
    'reviewed_outcomes': 'the reviewers\' verdicts admitted when there is one (a list)',
    'outcomes': 'the outcomes admitted (the reviewers\' verdict where there is one, else the operator\'s; a list)',
    'required_events': 'event kinds every admitted episode must have in its events.json (a list)',
    'recovery_share': 'the share of recoveries wanted among the admitted, [low, high]',
}


class PolicyError(RobodataError):
    """An approval policy that cannot be applied: one line per mistake."""


@dataclass(frozen=True)
class ApprovalPolicy:
    """Criteria an episode must meet to be approved; None or empty: not asked.

    Args:
        name: the policy's name (the file's stem when not given).
        min_score: the lowest quality score admitted (0..1).
        no_error_findings: reject an episode with any error finding.
        require_review: reject an episode no reviewer gave a verdict on.
        reviewed_outcomes: the reviewers' verdicts admitted when there is one.
        outcomes: the outcomes admitted: the reviewers' verdict where there is one, else the operator's.
        required_events: event kinds an admitted episode must have.
        recovery_share: (low, high) share of recoveries among the admitted: over high, the surplus is rejected
            (chosen by a hash of the ids: the same every run); under low, a warning says how many to record.
        sha256: the hash of the policy file's bytes ('' for a policy built in code).
        description: what the policy is for.
    """

    name: str
    min_score: float | None = None
    no_error_findings: bool = False
    require_review: bool = False
    reviewed_outcomes: tuple[str, ...] = ()
    outcomes: tuple[str, ...] = ()
    required_events: tuple[str, ...] = ()
    recovery_share: tuple[float, float] | None = None
    sha256: str = ''
    description: str = ''

    def to_json(self) -> dict[str, Any]:
        """The policy as plain data, for a decision's record, the audit and a release manifest."""
        return {'name': self.name, 'sha256': self.sha256, 'min_score': self.min_score,
                'no_error_findings': self.no_error_findings, 'require_review': self.require_review,
                'reviewed_outcomes': list(self.reviewed_outcomes), 'outcomes': list(self.outcomes),
                'required_events': list(self.required_events),
                'recovery_share': list(self.recovery_share) if self.recovery_share else None}


def load_approval_policy(path: str | Path) -> ApprovalPolicy:
    """An approval policy from its YAML file, every mistake found before any episode is judged.

    Args:
        path: the policy file.

    Raises:
        PolicyError: the file cannot be read, or holds mistakes (each named on its own line: the key, what it
            holds, what it should hold).
    """
    path = _shipped_or_given(Path(path))
    if not path.is_file():
        raise PolicyError(f'{path}: no such policy file (see config/policies/ for examples)')
    data = untrusted.read_yaml(path, PolicyError)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise PolicyError(f'{path}: a policy is a mapping of criteria ({", ".join(_KEYS)})')
    mistakes: list[str] = []
    for key in data:
        if key not in _KEYS:
            close = difflib.get_close_matches(str(key), list(_KEYS), n=1)
            mistakes.append(f'{key!r} is not a policy key' + (f' (did you mean {close[0]!r}?)' if close else
                                                               f' (known: {", ".join(_KEYS)})'))
    policy = ApprovalPolicy(
        name=_text(data, 'name', mistakes) or path.stem,
        description=_text(data, 'description', mistakes),
        min_score=_score(data, mistakes),
        no_error_findings=_flag(data, 'no_error_findings', mistakes),
        require_review=_flag(data, 'require_review', mistakes),
        reviewed_outcomes=_choices(data, 'reviewed_outcomes', REVIEW_VERDICTS, mistakes),
        outcomes=_choices(data, 'outcomes', OUTCOMES, mistakes),
        required_events=_choices(data, 'required_events', EVENT_KINDS, mistakes),
        recovery_share=_share(data, mistakes),
        sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
    )
    if not mistakes and not any((policy.min_score is not None, policy.no_error_findings, policy.require_review,
                                 policy.reviewed_outcomes, policy.outcomes, policy.required_events,
                                 policy.recovery_share)):
        mistakes.append('no criterion: it would approve every episode (write at least one of '
                        f'{", ".join(k for k in _KEYS if k not in ("name", "description"))})')
    if mistakes:
        count = f'{len(mistakes)} mistakes: ' if len(mistakes) > 1 else ''
        raise PolicyError(f'{path}: {count}' + '; '.join(mistakes))
    return policy


def _shipped_or_given(given: Path) -> Path:
    """`given`, or the shipped policy it names when it is not here (`config/policies/NAME.yaml` as the docs write it,
    run from anywhere)."""
    if given.exists() or given.is_absolute() or given.parts[:2] != ('config', 'policies') or len(given.parts) != 3:
        return given
    try:
        return config_path(f'policies/{given.name}')
    except RobodataError:
        return given


def _text(data: dict[str, Any], key: str, mistakes: list[str]) -> str:
    value = data.get(key, '')
    if not isinstance(value, str):
        mistakes.append(f'{key}: expected text, got {value!r}')
        return ''
    return value


def _flag(data: dict[str, Any], key: str, mistakes: list[str]) -> bool:
    value = data.get(key, False)
    if not isinstance(value, bool):
        mistakes.append(f'{key}: expected true or false, got {value!r}')
        return False
    return value


def _score(data: dict[str, Any], mistakes: list[str]) -> float | None:
    value = data.get('min_score')
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        mistakes.append(f'min_score: expected a number within 0..1, got {value!r}')
        return None
    return float(value)


def _choices(data: dict[str, Any], key: str, allowed: tuple[str, ...], mistakes: list[str]) -> tuple[str, ...]:
    value = data.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        mistakes.append(f'{key}: expected a list of names ({", ".join(allowed)}), got {value!r}')
        return ()
    if unknown := [v for v in value if v not in allowed]:
        mistakes.append(f'{key}: {", ".join(map(repr, unknown))} not among {", ".join(allowed)}')
        return ()
    return tuple(value)


def _share(data: dict[str, Any], mistakes: list[str]) -> tuple[float, float] | None:
    value = data.get('recovery_share')
    if value is None:
        return None
    ok = (isinstance(value, list) and len(value) == 2
          and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value)
          and 0 <= value[0] <= value[1] <= 1)
    if not ok:
        mistakes.append(f'recovery_share: expected [low, high] with 0 <= low <= high <= 1, got {value!r}')
        return None
    return float(value[0]), float(value[1])
