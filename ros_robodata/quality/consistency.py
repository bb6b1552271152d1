"""Consistency across demonstrations of one task: which episodes move unlike the others, and is the outcome mix sane.

A policy learns from what the demonstrations share, so a demo that takes a different path (a detour, a wrong
object, a half-finished attempt, a recording played backwards) is noise unless someone looks at it.

What is compared is what the task moves. Each episode is resampled on its own time axis (its overall speed is
gone), the arm joints that do not move within the demonstrations are left out of the path (an idle arm's resting
pose drifts through a session; it is a separate, cheap check), and the rest is compared in one common scale, so a
0.4 rad detour counts the same on whichever joint. Positions and their rates along the path both enter the
multivariate DTW: it forgives a demo for lingering somewhere, the rates make a path run backwards far.

There is no single reference: each episode is judged by its distance to its nearest few demonstrations, so a task
done in several valid ways (modes) keeps each way, and a session whose demos drift slowly keeps its neighbours;
an outlier is far from every mode. A flagged episode says against which demo, in which joints and where in its
course it differs most.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


def _load_dtw() -> Any:
    """dtaidistance's n-dimensional DTW, loaded without tqdm: dtaidistance imports it only for progress bars we
    never ask for (show_progress), and it costs every scoring run ~0.1 s of start (it reads package metadata).
    A tqdm already loaded by the caller is used as it is."""
    blocked = 'tqdm' not in sys.modules
    if blocked:
        sys.modules['tqdm'] = None  # type: ignore[assignment]  # `import tqdm` raises ImportError: optional there
    try:
        from dtaidistance import dtw_ndim
    finally:
        if blocked and sys.modules.get('tqdm') is None:
            del sys.modules['tqdm']
    return dtw_ndim


dtw_ndim = _load_dtw()


def _openmp() -> bool:
    """Whether dtaidistance's compiled library runs the distance matrix on every core (OpenMP): the same
    numbers, about half the wall time on two cores; a build without it computes the matrix on one."""
    omp = getattr(dtw_ndim.dtw, 'dtw_cc_omp', None)
    try:
        return omp is not None and bool(omp.is_openmp_supported())
    except (AttributeError, TypeError):
        return False


_PARALLEL = _openmp()

# A MAD times this estimates the standard deviation of normally distributed data.
_MAD_TO_STD = 1.4826
# An outlier is also this many times farther than the typical demo: near-identical demos do not flag noise.
_MIN_OUTLIER_RATIO = 1.5
# Statistics over distances need at least this many episodes per task.
_MIN_EPISODES = 3
# ... and a spread (a MAD) from fewer than this many demos is too rough to hold an outlier against its episode:
# below it an outlier is said (and ranked for review) but is no warning.
WARN_MIN_DEMOS = 8
# An arm joint moving less than this fraction of the task's most moving joint (typical spread within a demo, the
# same units: the arm's joints are all rad, or all degrees) is idle in this task.
_IDLE_FRACTION = 0.1
# A demo's motion starts when the arm is this fraction of its largest excursion from its start pose (ends alike).
_EDGE_FRACTION = 0.05
# Stretches of the course judged on their own as well, and how much more unusual one must be than the whole
# demo would need to be (five looks at one demo find a high z more often than one).
_PHASES = 5
_PHASE_EXTRA_Z = 2.0
# Five spreads estimated from a handful of demos are too rough to judge by: the stretches are judged from this many.
_MIN_EPISODES_PER_PHASE = 10
# The span of a demo that is reported as where it differs most (a fraction of its course).
_SPAN = 0.2


@dataclass(frozen=True)
class Consistency:
    """How one episode compares with the other demonstrations of its task."""

    episode_id: str
    task: str
    distance: float  # mean DTW distance to its nearest demonstrations (task-scaled)
    normalized: float  # distance / the task's median of it (1.0 = typical); nan if < 3 episodes
    robust_z: float  # (distance - median) / (1.4826 * MAD); nan if < 3 episodes or MAD == 0
    outlier: bool  # robust_z > z_limit and normalized > 1.5
    medoid_id: str  # the task's most central demo
    is_medoid: bool
    reference_id: str = ''  # the nearest demo that is not an outlier: what it is explained against
    far_joints: tuple[str, ...] = ()  # the joints that made it far, most first
    far_span: tuple[float, float] | None = None  # where in its whole course (fractions 0..1) it differs most
    rest_offsets: dict[str, float] = field(default_factory=dict)  # idle joints resting far from the task's usual
    idle_joints: tuple[str, ...] = ()  # left out of the path: they do not move in this task

    def explanation(self) -> str:
        """One line: against which demo, which joints, where."""
        parts = []
        if self.far_joints:
            parts.append(', '.join(self.far_joints))
        if self.far_span is not None:
            parts.append(f'at {self.far_span[0]:.0%}-{self.far_span[1]:.0%} of its course')
        if self.reference_id:
            parts.append(f'against {self.reference_id}')
        return ' '.join(parts)


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


@dataclass(frozen=True)
class _Columns:
    """Which columns of a task's trajectories are compared, and in what scale."""

    moving: np.ndarray  # arm column indices that move in the task
    idle: np.ndarray  # arm column indices that do not
    gripper: np.ndarray  # gripper (or hand) column indices that move in the task
    arm_scale: float  # the arm's typical motion within a demo (its units)
    gripper_scale: float  # the gripper's, in its own units


def _group(spread: np.ndarray, columns: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """A group of columns in one unit (the arm; the gripper or hand): those that move in the task, those idle in
    it, and the group's typical motion within a demo."""
    if not len(columns):
        return columns, columns, 1.0
    typical = np.median(spread[:, columns], axis=0)
    most = float(typical.max())
    if most <= 0:
        return columns[:0], columns, 1.0
    moving = columns[typical >= _IDLE_FRACTION * most]
    idle = columns[typical < _IDLE_FRACTION * most]
    scale = float(np.median(np.sqrt(np.mean(spread[:, moving] ** 2, axis=1))))
    return moving, idle, scale if scale > 0 else 1.0


def _columns(series: list[np.ndarray], width: int, gripper: Sequence[int]) -> _Columns:
    spread = np.array([np.std(s, axis=0) for s in series])  # episodes x columns: motion within each demo
    grip = np.array(sorted({g for g in gripper if 0 <= g < width}), dtype=int)
    arm = np.array([c for c in range(width) if c not in set(grip.tolist())], dtype=int)
    moving, idle, arm_scale = _group(spread, arm)
    grip, _, grip_scale = _group(spread, grip)  # a hand's still fingers add nothing, nor are they a rest pose
    return _Columns(moving, idle, grip, arm_scale, grip_scale)


def _active(series: np.ndarray, cols: _Columns) -> tuple[np.ndarray, tuple[float, float]]:
    """The demo from leaving its start pose to reaching its end pose, resampled to as many points, and where it lies
    in the whole course (0..1): a wait at either end is no part of the motion, and would shift it."""
    whole = (0.0, 1.0)
    if not len(cols.moving):
        return series, whole
    arm = series[:, cols.moving]
    left = np.linalg.norm(arm - arm[0], axis=1)
    arrive = np.linalg.norm(arm - arm[-1], axis=1)
    threshold = _EDGE_FRACTION * max(float(left.max()), float(arrive.max()))
    if threshold <= 0:
        return series, whole
    moved = np.flatnonzero(left > threshold)
    still = np.flatnonzero(arrive > threshold)
    begin = max(0, int(moved[0]) - 1) if len(moved) else 0
    end = min(len(series) - 1, int(still[-1]) + 1) if len(still) else len(series) - 1
    if end - begin < 0.1 * len(series):
        return series, whole
    stretch = resample_trajectory(np.arange(begin, end + 1), series[begin:end + 1], len(series))
    return stretch, (begin / (len(series) - 1), end / (len(series) - 1))


def _despike(values: np.ndarray, width: int = 5) -> np.ndarray:
    """A running median over `width` points: a one-sample glitch of an encoder is not a motion."""
    if len(values) < width:
        return values
    half = width // 2
    padded = np.pad(values, ((half, half), (0, 0)), mode='edge')
    return np.median(np.lib.stride_tricks.sliding_window_view(padded, width, axis=0), axis=-1)


def _features(series: np.ndarray, cols: _Columns, relative: bool) -> np.ndarray:
    """Positions of what the task moves in the task's scale, then their rates along the path (per 1/points)."""
    arm = series[:, cols.moving]
    if relative:
        arm = arm - arm.mean(axis=0)
    # The gripper weighs as one joint, however many channels it has (a hand may have ten).
    grip = series[:, cols.gripper] / (cols.gripper_scale * math.sqrt(max(1, len(cols.gripper))))
    position = _despike(np.hstack([arm / cols.arm_scale, grip]))
    # Rates of a lightly smoothed path: sensor noise differentiated would otherwise be most of every distance.
    width = max(1, len(series) // 40)
    kernel = np.ones(width) / width
    padded = np.pad(position, ((width, width), (0, 0)), mode='edge')
    smooth = np.column_stack([np.convolve(padded[:, c], kernel, mode='same')[width:-width]
                              for c in range(position.shape[1])])
    rate = np.gradient(smooth, axis=0) * (len(series) / (2 * math.pi))
    return np.ascontiguousarray(np.hstack([position, rate]), dtype=np.float64)


def task_consistency(trajectories: dict[str, np.ndarray], task: str, *, names: Sequence[str] | None = None,
                     gripper: Sequence[str] = (), relative: bool = False, z_limit: float = 3.5,
                     window: float | None = 0.1, neighbours: int | None = None) -> dict[str, Consistency]:
    """Each episode's DTW distance to its nearest demonstrations of the task, how unusual that is, whether it is an
    outlier, and what made it far.

    `trajectories` maps episode id to a points x J array, resampled (resample_trajectory) in the robot's units.
    `names` names the J columns; `gripper` those of them that are the gripper (their own units, scaled on their
    own). `relative`: each demo's mean pose is taken off the arm (a task done wherever the object happens to be).
    `window` bounds the warp to that fraction of the length (Sakoe-Chiba band): a demo may lag or lead, but
    matching the start of one with the end of another is not similarity. `neighbours`: how many nearest demos an
    episode is measured against (default about 5% of the task, at least 2).
    """
    ids = list(trajectories)
    if not ids:
        return {}
    series = [np.ascontiguousarray(_as_matrix(i, trajectories[i]), dtype=np.float64) for i in ids]
    widths = {s.shape[1] for s in series}
    if len(widths) > 1:
        raise ValueError(f'task {task!r}: trajectories have different numbers of joints ({sorted(widths)})')
    width = widths.pop()
    names = [str(n) for n in names] if names is not None else [f'joint {j}' for j in range(width)]
    if len(names) != width:
        raise ValueError(f'task {task!r}: {len(names)} joint names for {width} columns')
    for episode, s in zip(ids, series, strict=True):
        if not np.isfinite(s).all():
            raise ValueError(f'task {task!r}, episode {episode!r}: the trajectory holds NaN or inf; '
                             'resample it first (resample_trajectory drops such rows)')
        if len(s) < 2:
            raise ValueError(f'task {task!r}, episode {episode!r}: the trajectory has fewer than 2 points')
    if len(ids) == 1:
        return {ids[0]: Consistency(ids[0], task, 0.0, math.nan, math.nan, False, ids[0], True)}

    cols = _columns(series, width, [names.index(g) for g in gripper if g in names])
    idle_names = tuple(names[c] for c in cols.idle)
    if not len(cols.moving) and not len(cols.gripper):
        # Nothing moves in any demo: there is no path to compare.
        return {i: Consistency(i, task, 0.0, math.nan, math.nan, False, ids[0], k == 0, idle_joints=idle_names)
                for k, i in enumerate(ids)}
    active = [_active(s, cols) for s in series]
    features = [_features(a, cols, relative) for a, _ in active]
    band = None
    if window is not None:
        if window <= 0:
            raise ValueError(f'window must be a positive fraction of the length or None, got {window}')
        band = math.ceil(window * max(len(s) for s in series)) + 1  # dtaidistance shifts up to band - 1 samples
    matrix = np.asarray(dtw_ndim.distance_matrix_fast(features, window=band, use_c=True, parallel=_PARALLEL),
                        dtype=np.float64)
    matrix = np.where(np.isfinite(matrix), matrix, matrix.T)  # in case only one triangle came back
    np.fill_diagonal(matrix, 0.0)
    medoid = int(np.argmin(matrix.sum(axis=1)))
    medoid_id = ids[medoid]
    if len(ids) < _MIN_EPISODES:
        d = float(matrix[0, 1])  # two demos: neither is more central
        return {i: Consistency(i, task, d, math.nan, math.nan, False, medoid_id, i == medoid_id,
                               idle_joints=idle_names) for i in ids}

    k = neighbours if neighbours is not None else max(2, round(0.05 * len(ids)))
    k = max(1, min(k, len(ids) - 1))
    others = matrix + np.diag(np.full(len(ids), np.inf))
    order = np.argsort(others, axis=1)[:, :k]
    distances = np.median(np.take_along_axis(others, order, axis=1), axis=1)
    normalized, robust_z = _unusual(distances)
    if _PHASES > 1 and len(ids) >= _MIN_EPISODES_PER_PHASE:
        # The same per stretch of the course: a detour in one phase is not diluted by the rest of the demo.
        profiles = _phase_profiles(features, order, band)
        for w in range(_PHASES):
            n_w, z_w = _unusual(profiles[:, w])
            worse = np.nan_to_num(z_w, nan=-np.inf) - _PHASE_EXTRA_Z > np.nan_to_num(robust_z, nan=-np.inf)
            normalized = np.where(worse, n_w, normalized)
            robust_z = np.where(worse, z_w - _PHASE_EXTRA_Z, robust_z)
    outliers = (robust_z > z_limit) & (normalized > _MIN_OUTLIER_RATIO)  # False when either is nan
    rest = _rest_offsets(series, cols.idle, names, z_limit)
    typical = [j for j in range(len(ids)) if not outliers[j]]
    out: dict[str, Consistency] = {}
    for j, episode in enumerate(ids):
        reference, far_span = '', None
        far_joints: tuple[str, ...] = ()
        if outliers[j] and typical:
            r = min((t for t in typical if t != j), key=lambda t: matrix[j, t], default=None)
            if r is not None:
                reference = ids[r]
                far_joints, (a, b) = _where_far(features[j], features[r], cols, names, band)
                begin, end = active[j][1]  # the stretch compared, put back in the whole course
                far_span = (begin + a * (end - begin), begin + b * (end - begin))
        out[episode] = Consistency(episode, task, float(distances[j]), float(normalized[j]), float(robust_z[j]),
                                   bool(outliers[j]), medoid_id, j == medoid, reference, far_joints, far_span,
                                   rest.get(j, {}), idle_names)
    return out


def _unusual(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each value over the median (1.0 = typical) and its robust z; nan where the spread gives no scale."""
    median = float(np.median(values))
    mad = float(np.median(np.abs(values - median)))
    normalized = values / median if median > 0 else np.full(len(values), math.nan)
    robust_z = (values - median) / (_MAD_TO_STD * mad) if mad > 0 else np.full(len(values), math.nan)
    return normalized, robust_z


def _aligned(episode: np.ndarray, other: np.ndarray, band: int | None) -> tuple[np.ndarray, np.ndarray]:
    """The DTW warping path between two demos (pairs of indices) and the squared difference of each feature along
    it."""
    steps = np.array(dtw_ndim.warping_path(episode, other, window=band, use_c=True))
    return steps, (episode[steps[:, 0]] - other[steps[:, 1]]) ** 2


def _phase_profiles(features: list[np.ndarray], order: np.ndarray, band: int | None) -> np.ndarray:
    """Per episode and stretch of its course (_PHASES equal parts), the DTW cost against its nearest demos there
    (the median over them), aligned on each warping path."""
    out = np.zeros((len(features), _PHASES))
    for j, near in enumerate(order):
        costs = []
        for r in near:
            steps, diff = _aligned(features[j], features[r], band)
            cost = diff.sum(axis=1)
            part = np.minimum(steps[:, 0] * _PHASES // len(features[j]), _PHASES - 1)
            costs.append(np.sqrt(np.bincount(part, weights=cost, minlength=_PHASES)))
        out[j] = np.median(costs, axis=0)
    return out


def _where_far(episode: np.ndarray, reference: np.ndarray, cols: _Columns, names: list[str], band: int | None
               ) -> tuple[tuple[str, ...], tuple[float, float]]:
    """Aligned on the DTW path: the joints with the largest share of the cost, and the stretch of the episode's
    course (a fifth of it) where the cost gathers."""
    steps, diff = _aligned(episode, reference, band)
    joints = [*cols.moving.tolist(), *cols.gripper.tolist()]
    per_joint = diff[:, :len(joints)] + diff[:, len(joints):]
    share = per_joint.sum(axis=0) / max(per_joint.sum(), 1e-12)
    order = np.argsort(-share)
    far = tuple(names[joints[c]] for c in order[:3] if share[c] >= 0.2) or (names[joints[order[0]]],)
    cost = np.zeros(len(episode))
    np.add.at(cost, steps[:, 0], per_joint.sum(axis=1))
    span = max(1, round(_SPAN * len(episode)))
    windowed = np.convolve(cost, np.ones(span), mode='valid')
    start = int(np.argmax(windowed))
    return far, (start / len(episode), (start + span) / len(episode))


def _rest_offsets(series: list[np.ndarray], idle: np.ndarray, names: list[str], z_limit: float
                  ) -> dict[int, dict[str, float]]:
    """Idle joints whose resting pose in an episode is far from the task's usual one (joint units): worth a word,
    not a flag, since a pose that does not move in the task does not change what a policy learns from it."""
    if not len(idle):
        return {}
    rests = np.array([np.median(s[:, idle], axis=0) for s in series])  # episodes x idle joints
    noise = np.median([np.std(s[:, idle], axis=0) for s in series], axis=0)
    centre = np.median(rests, axis=0)
    mad = np.median(np.abs(rests - centre), axis=0)
    spread = np.maximum(_MAD_TO_STD * mad, 3 * noise)
    out: dict[int, dict[str, float]] = {}
    for e, row in enumerate(rests):
        far = np.abs(row - centre) > z_limit * np.where(spread > 0, spread, np.inf)
        if far.any():
            out[e] = {names[idle[c]]: round(float(row[c] - centre[c]), 6) for c in np.flatnonzero(far)}
    return out


def dataset_consistency(trajectories: dict[str, tuple[str, np.ndarray]], **kw: Any) -> dict[str, Consistency]:
    """Consistency of every episode within its own task; tasks are never compared with each other (each has its
    own moving joints and scale). `kw` goes to task_consistency. The result keeps the input's episode order."""
    by_task: dict[str, dict[str, np.ndarray]] = {}
    for episode, (task, trajectory) in trajectories.items():
        by_task.setdefault(task, {})[episode] = trajectory
    results: dict[str, Consistency] = {}
    for task, group in by_task.items():
        results.update(task_consistency(group, task, **kw))
    return {episode: results[episode] for episode in trajectories}


def _as_matrix(key: str, value: Any) -> np.ndarray:
    """A trajectory as a 2-D float array (a 1-D one is a single joint)."""
    array = np.asarray(value, dtype=np.float64)
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2:
        raise ValueError(f'episode {key!r}: a trajectory must be points x joints, got shape {array.shape}')
    return array

