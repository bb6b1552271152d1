"""Picking the queue: informativeness plus diversity, greedily, deterministically.

Each candidate's informativeness is the weighted sum of its signals (signals.py). Picks are made one at a time: the
next pick is the candidate with the highest informativeness + WEIGHTS['diversity'] x its distance to the nearest
episode already picked, relative to the typical distance between candidates (k-center greedy on the trajectory
embedding, capped at 1). So ten near-identical doubtful demonstrations do not fill the queue: once one is picked,
the others lose their diversity share to episodes unlike anything picked. Ties go to the smaller episode id; no
randomness anywhere, so the same inputs give the same queue. In a dataset of several robots, distances are taken
between episodes of one robot only (their trajectories are of other joints): an episode is unlike what was picked of
its own robot, relative to the typical distance between its robot's candidates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ros_robodata.selection.signals import WEIGHTS, Signal


@dataclass(frozen=True)
class Pick:
    episode_id: str
    rank: int
    priority: float
    signals: dict[str, Signal]

    def contributions(self) -> dict[str, float]:
        return {name: round(WEIGHTS[name] * s.value, 4) for name, s in self.signals.items()}

    def reasons(self) -> list[str]:
        """The sentences of the signals that contributed, largest contribution first."""
        ranked = sorted(((WEIGHTS[n] * s.value, n, s.why) for n, s in self.signals.items() if s.value > 0 and s.why),
                        key=lambda x: (-x[0], x[1]))
        return [why for _, _, why in ranked]


def standardized(vectors: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Vectors of one length made comparable: each dimension centred and scaled by its spread across episodes (a
    dimension that never varies is dropped); vectors of another length than the most common one are left out."""
    if not vectors:
        return {}
    sizes = [v.size for v in vectors.values()]
    size = max(set(sizes), key=lambda s: (sizes.count(s), s))
    names = sorted(n for n, v in vectors.items() if v.size == size)
    matrix = np.stack([vectors[n] for n in names])
    spread = matrix.std(axis=0)
    keep = spread > 1e-9
    if not keep.any():
        return {n: np.zeros(1) for n in names}
    matrix = (matrix[:, keep] - matrix[:, keep].mean(axis=0)) / spread[keep]
    return {n: row / np.sqrt(keep.sum()) for n, row in zip(names, matrix, strict=True)}


@dataclass
class _Robot:
    """One robot's embedded candidates (their rows in `points`), their places among all candidates, the typical
    distance between them and each one's distance to the nearest of them picked so far."""

    members: list[str]
    points: np.ndarray
    where: np.ndarray
    typical: float
    nearest: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.nearest = np.full(len(self.members), np.inf)


def pick(candidates: dict[str, dict[str, Signal]], embedding: dict[str, np.ndarray], budget: int,
         robots: Mapping[str, str] | None = None) -> list[Pick]:
    """The `budget` best candidates in pick order. Candidates without an embedding get no diversity share.
    `robots`: each candidate's robot, in a dataset of several; diversity is then measured among a robot's own."""
    names = sorted(candidates)
    informative = np.array([sum(WEIGHTS[k] * s.value for k, s in candidates[n].items()) for n in names])
    embedded = [n for n in names if n in embedding]
    place = {n: i for i, n in enumerate(names)}
    robot_of = {n: (robots or {}).get(n, '') for n in embedded}
    groups = {}
    for robot in sorted(set(robot_of.values())):
        members = [n for n in embedded if robot_of[n] == robot]
        points = np.stack([embedding[n] for n in members])
        groups[robot] = _Robot(members, points, np.array([place[n] for n in members], dtype=int),
                               _typical_distance(points))
    taken = np.zeros(len(names), dtype=bool)
    out: list[Pick] = []
    for rank in range(1, min(budget, len(names)) + 1):
        diversity = np.zeros(len(names))
        for each in groups.values():
            if each.typical > 0:
                diversity[each.where] = np.minimum(1.0, each.nearest / each.typical)  # inf (none picked) counts 1
        priority = informative + WEIGHTS['diversity'] * diversity
        priority[taken] = -np.inf
        best = int(np.argmax(np.round(priority, 9)))  # first of equals: names are sorted, so the smaller id
        taken[best] = True
        name = names[best]
        signals = dict(candidates[name])
        group = groups.get(robot_of.get(name, ''))
        if name in robot_of and group is not None and group.typical > 0:
            row = group.members.index(name)
            d = group.nearest[row]
            mine = f' of {robot_of[name]}' if len(groups) > 1 else ''
            signals['diversity'] = Signal(round(float(diversity[best]), 6), f'the first pick{mine}' if not
                                          np.isfinite(d) else f'unlike the episodes{mine} picked before it (distance '
                                          f'{d / group.typical:.2f}x the typical one)')
            group.nearest = np.minimum(group.nearest, np.linalg.norm(group.points - group.points[row], axis=1))
        out.append(Pick(name, rank, round(float(priority[best]), 4), signals))
    return out


def _typical_distance(points: np.ndarray) -> float:
    """The median distance between two candidates (on at most 400 of them, evenly spaced: the same every run)."""
    if len(points) < 2:
        return 0.0
    sample = points[np.linspace(0, len(points) - 1, min(len(points), 400)).astype(int)]
    d = np.linalg.norm(sample[:, None, :] - sample[None, :, :], axis=2)
    upper = d[np.triu_indices(len(sample), 1)]
    return float(np.median(upper)) if upper.size else 0.0
