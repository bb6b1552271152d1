"""The outcome mix of a dataset: how success / failure / recovery labels are spread, and what a trainer should
know about it (no recoveries, mostly failures, unlabelled episodes)."""

from __future__ import annotations

from dataclasses import dataclass

from ros_robodata.vocabulary import FAILURE, OUTCOMES, RECOVERY, SUCCESS, UNKNOWN

__all__ = ['OutcomeMix', 'outcome_mix']


@dataclass(frozen=True)
class OutcomeMix:
    """How the outcome labels of a dataset are spread, and what about the mix a trainer should know."""

    counts: dict[str, int]  # success / failure / recovery / unknown
    ratios: dict[str, float]  # over labelled episodes (unknown excluded); empty if none is labelled
    warnings: list[str]  # one line each


def outcome_mix(outcomes: dict[str, str]) -> OutcomeMix:
    """Count the outcome labels and warn about mixes that make a poor training set.

    A dataset with no recoveries never shows a policy how to get out of a slip; one made mostly of
    recoveries or failures teaches the mistake. Labels other than success/failure/recovery count as unknown.
    """
    counts = dict.fromkeys(OUTCOMES, 0)
    unrecognized: set[str] = set()
    for label in outcomes.values():
        name = str(label or '').strip().lower()
        if name in (SUCCESS, FAILURE, RECOVERY):
            counts[name] += 1
        else:
            counts[UNKNOWN] += 1
            if name and name != UNKNOWN:
                unrecognized.add(str(label))
    labelled = counts[SUCCESS] + counts[FAILURE] + counts[RECOVERY]
    ratios = {k: counts[k] / labelled for k in (SUCCESS, FAILURE, RECOVERY)} if labelled else {}

    warnings: list[str] = []
    if labelled >= 5 and counts[RECOVERY] == 0:
        warnings.append('no recovery demonstrations: a policy never sees how to recover from a slip')
    if ratios.get(RECOVERY, 0.0) > 0.5:
        warnings.append(f'recoveries dominate ({ratios[RECOVERY]:.0%}): most demonstrations begin with a mistake, '
                        'so a policy may learn to fumble first')
    if ratios.get(FAILURE, 0.0) > 0.3:
        warnings.append(f'failures are {ratios[FAILURE]:.0%} of the data: leave them out of training or '
                        'condition on the outcome, or a policy imitates them')
    if counts[UNKNOWN]:
        line = f'{counts[UNKNOWN]} episode(s) have no outcome label'
        if unrecognized:
            line += f' (unrecognized: {", ".join(sorted(repr(u) for u in unrecognized))})'
        warnings.append(line)
    return OutcomeMix(counts, ratios, warnings)
