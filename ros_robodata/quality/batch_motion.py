"""The arm's motion checks over arrays of joint samples: the offline twin of JointMotion.add (and .command).

A run of samples is judged on whole arrays when the streaming check's state is settled: the stream has a
previous sample and speed, no repeated sample is pending (before the task's typical motion is known, the speed
changes are kept for later as the streaming check keeps them). Inside the run, what the streaming check does per
sample (speeds, the running medians it refreshes every so many samples, the idle and stuck judgements every few
samples) is done on arrays in the same arithmetic; a sample where the
streaming check branches on rare state (NaN, a joint beyond its limit, a repeated reading while moving, a stamp
not after the last, a change of joint names) goes through JointMotion.add itself, as do the first samples of a
stream. Commands (a leader arm) are handed to the check in the bag's order, before any joint sample that arrived
after them is judged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np

from ros_robodata.quality.batch_commands import CommandFeed
from ros_robodata.quality.motion import _STILL_EVERY as STILL_EVERY
from ros_robodata.quality.motion import EARLY_KEPT, START_SETTLE_S, JointMotion


@dataclass
class MotionRun:
    """Joint samples of one layout in the bag's order: sequence numbers, names, stamps, positions (n x names)."""

    seqs: np.ndarray
    names: tuple[str, ...]
    stamps: np.ndarray
    positions: np.ndarray


def feed_motion(motion: JointMotion, runs: list[MotionRun], commands: list[MotionRun]) -> None:
    """JointMotion.add for every joint sample and .command for every command sample, in sequence order."""
    feed = CommandFeed(motion, commands) if commands else None
    advance = feed.advance if feed is not None else lambda seq: None

    for run in runs:
        n, pos = len(run.stamps), 0
        while pos < n:
            done = 0
            if _settled(motion, run.names):
                index = motion._index or []
                if max(index) < run.positions.shape[1]:
                    done = _settled_run(motion, run.stamps[pos:], run.positions[pos:, index], run.seqs[pos:],
                                        advance)
            if done == 0:  # the streaming check itself: a start, a name change, NaN, a limit, a repeat
                advance(int(run.seqs[pos]))
                motion.add(int(run.stamps[pos]), run.names, run.positions[pos].tolist())
                done = 1
            pos += done
    if feed is not None:
        feed.finish()


def _settled(motion: JointMotion, names: tuple[str, ...]) -> bool:
    """Whether the streaming check's state lets a run be judged on arrays (see the module's docstring)."""
    j = len(motion._index or ())
    return (motion._names_seen == names and j > 0 and motion._last is not None and motion._last_speed is not None
            and motion._pending_repeat is None
            and len(motion._seen) == j and len(motion._joint_changes) == j)


def _first_irregular(motion: JointMotion, t: np.ndarray, q: np.ndarray) -> int:
    """The first sample the streaming check must judge itself: NaN, beyond a URDF limit, a stamp not after the
    last; len(t) when none."""
    assert motion._last is not None
    bad = ~np.isfinite(q).all(axis=1)
    bad |= np.diff(np.concatenate(([motion._last[0]], t))) <= 0
    margin = motion.limits.limit_margin
    for i, name in enumerate(motion.names):
        lim = motion.joint_limits.get(name)
        if lim is not None:
            bad |= ~((lim.lower - margin <= q[:, i]) & (q[:, i] <= lim.upper + margin))
    hits = np.flatnonzero(bad)
    return int(hits[0]) if len(hits) else len(t)


def _refreshed(kept: list[Any], values: list[Any], refresh: Callable[[list[Any]], Any], current: Any, *,
               full: int = 200, keep: int = 100, dtype: Any = float) -> tuple[list[Any], np.ndarray]:
    """A running statistic JointMotion refreshes every so many samples (at `full` kept, then keeping the last
    `keep`): the kept list after `values`, and the statistic after each value."""
    out = np.empty(len(values), dtype=dtype)
    k = 0
    while k < len(values):
        need = max(1, full - len(kept))
        if k + need > len(values):
            kept.extend(values[k:])
            out[k:] = current
            break
        kept.extend(values[k:k + need])
        out[k:k + need - 1] = current
        current = refresh(kept)
        kept = kept[-keep:]
        out[k + need - 1] = current
        k += need
    return kept, out


def _as_of(slot: np.ndarray, values: np.ndarray, before: float) -> np.ndarray:
    """Per sample, the statistic after the last active sample up to it (`slot`, -1: none yet: `before`)."""
    if not len(values):
        return np.full(len(slot), before)
    return np.where(slot >= 0, values[np.maximum(slot, 0)], before)


def _median(values: list[float]) -> float:
    """np.median's value (the middle one, or the mean of the two middle ones) of a short list of finite numbers,
    without numpy's per-call cost: the same arithmetic, (a + b) / 2 in float64."""
    ordered = sorted(values)
    n = len(ordered)
    return float(ordered[n // 2]) if n % 2 else (float(ordered[n // 2 - 1]) + float(ordered[n // 2])) / 2


def _p95(values: list[float]) -> float:
    return float(np.percentile(values, 95))


def _settled_run(motion: JointMotion, t: np.ndarray, q: np.ndarray, seqs: np.ndarray,
                 advance: Callable[[int], None]) -> int:
    """Judge the leading samples the streaming check would judge without branching on rare state; returns how
    many (0: the first sample must go through JointMotion.add)."""
    assert motion._last is not None and motion._last_speed is not None
    lim = motion.limits
    n = _first_irregular(motion, t, q)
    if n == 0:
        return 0
    t, q = t[:n], q[:n]
    last_t, last_q = motion._last
    prev_t = np.concatenate(([last_t], t[:-1]))
    prev_q = np.vstack((np.asarray(last_q, dtype=float)[None, :], q[:-1]))
    step = t - prev_t
    speed = (q - prev_q) / (step / 1e9)[:, None]
    moving = (np.abs(speed) > lim.idle_speed).any(axis=1)
    moving_before = np.concatenate(([motion._moving_now], moving[:-1]))
    repeat = np.flatnonzero((q == prev_q).all(axis=1) & moving_before)  # a repeated reading while moving
    if len(repeat):
        return _settled_run(motion, t[:int(repeat[0])], q[:int(repeat[0])], seqs, advance) if repeat[0] else 0
    prev_speed = np.vstack((np.asarray(motion._last_speed, dtype=float)[None, :], speed[:-1]))
    changes = np.abs(speed - prev_speed)
    change = changes.max(axis=1)
    fastest = np.abs(speed).max(axis=1)
    active = moving | (np.abs(prev_speed).max(axis=1) > lim.idle_speed)
    # The running statistics the jump limit is built from, as they stood at each sample.
    where = np.flatnonzero(active)
    changes_kept, typical_active = _refreshed(list(motion._speed_changes), change[where].tolist(), _median,
                                              motion._typical_change)
    speeds_kept, peak_active = _refreshed(list(motion._speeds), fastest[where].tolist(), _p95, motion._peak_speed)
    slot = np.searchsorted(where, np.arange(n), side='right') - 1  # the last active sample at or before each
    typical = _as_of(slot, typical_active, motion._typical_change)
    peak = _as_of(slot, peak_active, motion._peak_speed)
    # From here on the run is committed: the state moves as n calls of JointMotion.add would move it.
    periods, period = _periods(motion, step.tolist())
    motion._speed_changes, motion._speeds = changes_kept, speeds_kept
    for kept, column in zip(motion._joint_changes, changes[where].T, strict=True):
        room = 5000 - len(kept)
        if room > 0:
            kept.extend(column[:room].tolist())
    limit = np.maximum(np.maximum(lim.min_velocity_jump, lim.velocity_jump_sigmas * typical),
                       lim.velocity_jump_of_peak * peak)
    _judge(motion, t, step, change, changes, limit, period, typical, peak)
    motion._periods, motion._period = periods, int(period[-1])
    motion._typical_change, motion._peak_speed = float(typical[-1]), float(peak[-1])
    _trajectory(motion, t, q)
    diff = q - prev_q
    for i in range(q.shape[1]):
        low, high = motion._seen[i]
        column = q[:, i]
        low = min(low, float(column.min())) if column.min() < low else low
        high = max(high, float(column.max())) if column.max() > high else high
        motion._seen[i] = (low, high)
        if not motion._changed[i] and bool((diff[:, i] != 0).any()):
            motion._changed[i] = True
    travel = np.add.accumulate(np.vstack((np.asarray(motion._travel, dtype=float)[None, :], np.abs(diff))), axis=0)
    motion._travel = travel[-1].tolist()
    motion._moving_now = bool(moving[-1])
    motion._moving_samples += int(moving.sum())
    motion._last_speed = speed[-1].tolist()
    motion._last = (int(t[-1]), q[-1].tolist())
    motion.last_ns = int(t[-1])
    _still(motion, t, q, prev_t, prev_q, seqs, advance)
    return n


def _judge(motion: JointMotion, t: np.ndarray, step: np.ndarray, change: np.ndarray, changes: np.ndarray,
           limit: np.ndarray, period: np.ndarray, typical: np.ndarray, peak: np.ndarray) -> None:
    """JointMotion._check_jump's judgements over the run: where the typical change is not known yet (0: most of
    an episode whose joints mostly hold their speed), the speed changes kept for later (past the stream's first
    START_SETTLE_S, up to EARLY_KEPT); where it is, those kept judged first, then each sample beyond the limit."""
    known = typical > 0
    edges = np.flatnonzero(np.diff(known.astype(np.int8))) + 1
    bounds = [0, *edges.tolist(), len(t)]
    assert motion.first_ns is not None
    for a, b in pairwise(bounds):
        if not known[a]:
            room = EARLY_KEPT - len(motion._early)
            if room <= 0:
                continue
            # int - int compared with the float 5e8 as the streaming check compares them
            settled = [a + i for i, d in enumerate((t[a:b] - motion.first_ns).tolist()) if not d < START_SETTLE_S * 1e9]
            for k in settled[:room]:
                motion._early.append((int(t[k]), float(change[k]), int(step[k]), changes[k].tolist()))
            continue
        if motion._early:
            motion._period, motion._typical_change, motion._peak_speed = (int(period[a]), float(typical[a]),
                                                                          float(peak[a]))
            motion._judge_early()
        for k in (a + np.flatnonzero(change[a:b] > limit[a:b])).tolist():
            motion._period, motion._typical_change, motion._peak_speed = (int(period[k]), float(typical[k]),
                                                                          float(peak[k]))
            motion._judge_jump(int(t[k]), float(change[k]), int(step[k]), changes[k].tolist(), [])


def _periods(motion: JointMotion, steps: list[int]) -> tuple[list[int], np.ndarray]:
    """The stamp steps JointMotion keeps for its typical period (median of 50, refreshed every 25), and the
    period as it stood at each sample."""
    return _refreshed(list(motion._periods), steps, lambda kept: int(_median(kept)), motion._period,
                      full=50, keep=25, dtype=np.int64)


def _trajectory(motion: JointMotion, t: np.ndarray, q: np.ndarray) -> None:
    """Trajectory.add for each sample: the samples its stride keeps are appended a slice at a time, up to where it
    fills and halves."""
    tr = motion.trajectory
    k, n = 0, len(t)
    while k < n:
        skip = (-tr._seen) % tr._stride
        if k + skip >= n:
            tr._seen += n - k
            return
        first = k + skip
        room = tr.capacity - len(tr.times)  # appends until it is full
        picked = range(first, n, tr._stride)[:room]
        tr.times.extend(t[picked.start:picked.stop:picked.step].tolist())
        tr.rows.extend(q[picked.start:picked.stop:picked.step].tolist())
        last = picked[-1]
        tr._seen += last + 1 - k
        k = last + 1
        if len(tr.times) >= tr.capacity:
            tr.times, tr.rows = tr.times[::2], tr.rows[::2]
            tr._stride *= 2
        elif k < n:  # the rest of the run falls between kept samples
            tr._seen += n - k
            return


def _still(motion: JointMotion, t: np.ndarray, q: np.ndarray, prev_t: np.ndarray, prev_q: np.ndarray,
           seqs: np.ndarray, advance: Callable[[int], None]) -> None:
    """The idle and stuck judgements JointMotion makes every few samples over the span since the last one."""
    count, since = motion._since_still_check, motion._still_from
    if since is None:
        since = (int(prev_t[0]), prev_q[0].tolist())
    points = np.arange(max(0, STILL_EVERY - 1 - count), len(t), STILL_EVERY)
    if not len(points):
        motion._still_from, motion._since_still_check = since, count + len(t)
        return
    at_t, at_q = t[points], q[points]
    from_t = np.concatenate(([since[0]], at_t[:-1]))
    from_q = np.vstack((np.asarray(since[1], dtype=float)[None, :], at_q[:-1]))
    speed = (at_q - from_q) / ((at_t - from_t) / 1e9)[:, None]
    same = (at_q == from_q).any(axis=1).tolist()
    moving = (np.abs(speed) > motion.limits.idle_speed).any(axis=1).tolist()
    stamps, starts = at_t.tolist(), from_t.tolist()
    for k in range(len(points)):
        t0 = starts[k]
        if same[k]:  # a joint held its value: the streaming judgement, stuck spans and all
            advance(int(seqs[points[k]]))
            motion._check_still(stamps[k], speed[k].tolist(), at_q[k].tolist(), from_q[k].tolist(), t0)
            continue
        motion.end_stretches(stamps[k])  # every joint changed: only idle is judged
        if moving[k]:
            if motion._still_since is not None:
                motion._close_idle(stamps[k])
            motion._still_since = None
        elif motion._still_since is None:
            motion._still_since = t0
    motion._still_from = (stamps[-1], at_q[-1].tolist())
    motion._since_still_check = len(t) - 1 - int(points[-1])
