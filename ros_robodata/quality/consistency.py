"""Consistency across demonstrations of one task: which episodes move unlike the others, and is the outcome mix sane.

A policy learns from what the demonstrations share, so a demo that takes a different path (a detour, a wrong
object, a half-finished attempt) is noise unless someone looks at it. The arm trajectory of each episode is
resampled on its own time axis, scaled per joint and compared with multivariate DTW, which forgives a demo for
being slower or pausing but not for going somewhere else. Each episode gets its distance to the task's medoid
(the most central demo), scaled by the task's typical distance, and a robust z-score; outliers are the demos far
out on both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from dtaidistance import dtw_ndim

from ros_robodata.vocabulary import FAILURE, OUTCOMES, RECOVERY, SUCCESS, UNKNOWN

# A MAD times this estimates the standard deviation of normally distributed data.
_MAD_TO_STD = 1.4826
# An outlier must also be this many times farther than the typical demo, so a task of near-identical demos
# (tiny MAD) does not flag sensor noise.
_MIN_OUTLIER_RATIO = 1.5
# Statistics over distances need at least this many episodes per task.
_MIN_EPISODES = 3
# A joint whose pooled std is below this (1 mrad or 1 mm: ROS joint states are in SI units) is held still and
# only jitters; scaling its jitter to unit variance would weigh servo noise like real motion.
_STILL_STD = 1e-3



@dataclass(frozen=True)
class Consistency:
    """How one episode compares with the other demonstrations of its task."""

    episode_id: str
    task: str
    distance: float  # DTW distance to the task's medoid (on the standardized trajectories)
    normalized: float  # distance / median distance of the task's episodes (1.0 = typical); nan if < 3 episodes
    robust_z: float  # (distance - median) / (1.4826 * MAD); nan if < 3 episodes or MAD == 0
    outlier: bool  # robust_z > z_limit and normalized > 1.5
    medoid_id: str
    is_medoid: bool


def resample_trajectory(times_ns: np.ndarray, positions: np.ndarray, points: int = 200) -> np.ndarray:
    """Joint positions linearly resampled to `points` samples evenly spaced from the first to the last stamp.

    Resampling on each episode's own time span removes the overall speed, so DTW only has to absorb the
    uneven parts (pauses, hesitation). Rows with a NaN (dropped samples, injected faults) are skipped.
    """
    if points < 2:
        raise ValueError(f'points must be 2 or more, got {points}')
    times = np.asarray(times_ns).reshape(-1)
    values = np.asarray(positions, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    if values.ndim != 2:
        raise ValueError(f'positions must be N x J (samples x joints), got shape {values.shape}')
    if len(times) != len(values):
        raise ValueError(f'{len(times)} stamps for {len(values)} rows of positions: they must match')
    keep = np.isfinite(values).all(axis=1) & np.isfinite(times.astype(np.float64))
    times, values = times[keep], values[keep]
    if len(times) < 2:
        raise ValueError(f'need at least 2 samples with finite joint positions to resample, got {len(times)} '
                         f'(of {len(keep)})')
    order = np.argsort(times, kind='stable')
    times, values = times[order], values[order]
    # Offsets from the first stamp keep nanosecond epochs exact before going to float.
    offsets = (times - times[0]).astype(np.float64)
    offsets, first = np.unique(offsets, return_index=True)
    values = values[first]
    if len(offsets) < 2:
        raise ValueError('all samples with finite joint positions share one stamp: no time span to resample')
    grid = np.linspace(0.0, offsets[-1], points)
    return np.column_stack([np.interp(grid, offsets, values[:, j]) for j in range(values.shape[1])])


def standardize(trajectories: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each joint (column) z-scaled with the mean and std pooled over all the trajectories.

    DTW adds squared differences across joints, so without this a prismatic joint in mm would drown the
    revolute ones in rad. Pooling (not per episode) keeps real differences in range between episodes.
    A joint that never moves (pooled std under 1e-3, i.e. servo jitter) gets std 1: centred, not blown up.
    """
    arrays = {key: _as_matrix(key, value) for key, value in trajectories.items()}
    if not arrays:
        return {}
    widths = {a.shape[1] for a in arrays.values()}
    if len(widths) > 1:
        raise ValueError(f'trajectories have different numbers of joints ({sorted(widths)}): they cannot be compared')
    pooled = np.concatenate(list(arrays.values()), axis=0)
    mean = np.nanmean(pooled, axis=0)
    std = np.nanstd(pooled, axis=0)
    std = np.where(np.isfinite(std) & (std >= _STILL_STD), std, 1.0)
    mean = np.where(np.isfinite(mean), mean, 0.0)
    return {key: (a - mean) / std for key, a in arrays.items()}


def task_consistency(trajectories: dict[str, np.ndarray], task: str, *, z_limit: float = 3.5,
                     window: float | None = 0.1) -> dict[str, Consistency]:
    """Each episode's DTW distance to the task's medoid, how unusual it is, and whether it is an outlier.

    `trajectories` maps episode id to a points x J array (resampled, and standardized if the joints mix
    units). `window` bounds the warp to that fraction of the length (Sakoe-Chiba band): a demo may lag or
    lead, but matching the start of one with the end of another is not similarity. None: unconstrained.
    """
    ids = list(trajectories)
    if not ids:
        return {}
    series = [np.ascontiguousarray(_as_matrix(i, trajectories[i]), dtype=np.float64) for i in ids]
    widths = {s.shape[1] for s in series}
    if len(widths) > 1:
        raise ValueError(f'task {task!r}: trajectories have different numbers of joints ({sorted(widths)})')
    for episode, s in zip(ids, series, strict=True):
        if not np.isfinite(s).all():
            raise ValueError(f'task {task!r}, episode {episode!r}: the trajectory holds NaN or inf; '
                             'resample it first (resample_trajectory drops such rows)')
        if len(s) < 2:
            raise ValueError(f'task {task!r}, episode {episode!r}: the trajectory has fewer than 2 points')
    if len(ids) == 1:
        return {ids[0]: Consistency(ids[0], task, 0.0, math.nan, math.nan, False, ids[0], True)}

    band = None
    if window is not None:
        if window <= 0:
            raise ValueError(f'window must be a positive fraction of the length or None, got {window}')
        # dtaidistance allows shifts up to band - 1 samples.
        band = math.ceil(window * max(len(s) for s in series)) + 1
    matrix = np.asarray(dtw_ndim.distance_matrix_fast(series, window=band, use_c=True), dtype=np.float64)
    matrix = np.where(np.isfinite(matrix), matrix, matrix.T)  # in case only one triangle came back
    np.fill_diagonal(matrix, 0.0)
    medoid = int(np.argmin(matrix.sum(axis=1)))
    medoid_id = ids[medoid]

    if len(ids) < _MIN_EPISODES:
        # Two demos: neither is more central, so both sit at the distance between them.
        d = float(matrix[0, 1])
        return {i: Consistency(i, task, d, math.nan, math.nan, False, medoid_id, i == medoid_id) for i in ids}

    distances = matrix[medoid]
    median = float(np.median(distances))
    mad = float(np.median(np.abs(distances - median)))
    out: dict[str, Consistency] = {}
    for k, episode in enumerate(ids):
        d = float(distances[k])
        normalized = d / median if median > 0 else math.nan
        robust_z = (d - median) / (_MAD_TO_STD * mad) if mad > 0 else math.nan
        outlier = bool(robust_z > z_limit and normalized > _MIN_OUTLIER_RATIO)  # False when either is nan
        out[episode] = Consistency(episode, task, d, normalized, robust_z, outlier, medoid_id, k == medoid)
    return out


def dataset_consistency(trajectories: dict[str, tuple[str, np.ndarray]], **kw: Any) -> dict[str, Consistency]:
    """Consistency of every episode within its own task; tasks are never compared with each other.

    Standardization is per task, so one task's large motions do not flatten another's. `kw` goes to
    task_consistency (z_limit, window). The result keeps the input's episode order.
    """
    by_task: dict[str, dict[str, np.ndarray]] = {}
    for episode, (task, trajectory) in trajectories.items():
        by_task.setdefault(task, {})[episode] = trajectory
    results: dict[str, Consistency] = {}
    for task, group in by_task.items():
        results.update(task_consistency(standardize(group), task, **kw))
    return {episode: results[episode] for episode in trajectories}


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


def _as_matrix(key: str, value: Any) -> np.ndarray:
    """A trajectory as a 2-D float array (a 1-D one is a single joint)."""
    array = np.asarray(value, dtype=np.float64)
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2:
        raise ValueError(f'episode {key!r}: a trajectory must be points x joints, got shape {array.shape}')
    return array

