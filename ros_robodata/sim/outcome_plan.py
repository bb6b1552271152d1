"""Which outcome an episode is scripted for, drawn so every block of 6 episodes has a failure and a recovery."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SUCCESS, FAILURE, RECOVERY = 'success', 'failure', 'recovery'
MISS, SLIP = 'miss', 'slip'


@dataclass(frozen=True)
class EpisodePlan:
    """The operator's intent: the outcome to act out and, for failures/recoveries, how the first grasp goes wrong."""

    outcome: str
    mishap: str | None = None  # 'miss' (fingers close beside the object) | 'slip' (grip loosens in transport)


def plan_for(episode_index: int, rng: np.random.Generator) -> EpisodePlan:
    """Episode index modulo 6 fixes the outcome (2 -> failure, 4 -> recovery, others success); the seed picks the
    mishap. So any 6 consecutive episodes (the demo's default, seeds 0..5) hold 4 successes, 1 failure, 1 recovery.
    """
    slot = episode_index % 6
    mishap = MISS if rng.random() < 0.5 else SLIP
    if slot == 2:
        return EpisodePlan(FAILURE, mishap)
    if slot == 4:
        return EpisodePlan(RECOVERY, mishap)
    return EpisodePlan(SUCCESS)
