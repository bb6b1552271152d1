"""The timing, sync, wrench and gripper checks over numpy arrays of a stream's samples: the offline twins of
StreamTiming.add, SyncWatch.reference/frame, WrenchWatch.add and EpisodeQuality's gripper motion.

Offline, those per-sample Python steps cost as much as reading the bag. Each function here moves the streaming
object's own state exactly as feeding it one sample at a time would (the findings and metrics come from the same
objects, through the same report): the common stretch of samples is done on whole arrays, and a sample where the
streaming logic branches on its own state (a possible clock jump, a force spike, a noise floor still filling)
goes through the streaming object itself. Range additions stay in sample order, so merged stretches are the same.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ros_robodata.quality.contact import MIN_SPIKE_N, SPIKE_SIGMAS, WrenchWatch
from ros_robodata.quality.findings import Ranges
from ros_robodata.quality.timing import StreamTiming, SyncWatch

if TYPE_CHECKING:
    from ros_robodata.profile.schema import GripperSpec

_SYNC_KEEP, _SYNC_CUT = 4096, 2048  # SyncWatch's reference window: over KEEP stamps, the oldest CUT go


def feed_timing(timing: StreamTiming, stamps: np.ndarray, receives: np.ndarray) -> None:
    """StreamTiming.add for each (stamp, receive) pair in order; a stamp of 0 is a message without one."""
    n = len(receives)
    if not n:
        return
    if timing.own_stalls is not None:  # a live monitor's deferred judgement: not an offline case
        for stamp, receive in zip(stamps.tolist(), receives.tolist(), strict=True):
            timing.add(stamp or None, receive)
        return
    if not timing.judged:
        timing.count += n
        if timing.first_receive is None:
            timing.first_receive = int(receives[0])
        timing.last_receive = int(receives[-1])
        return
    stamped = stamps != 0
    if not stamped.any():
        _timing_block(timing, stamps, receives, with_stamps=False)
        return
    if not stamped.all():  # some messages with and some without a stamp: rare enough to go one by one
        for stamp, receive in zip(stamps.tolist(), receives.tolist(), strict=True):
            timing.add(stamp or None, receive)
        return
    period = timing.period_ns
    jump_ns = max(timing.limits.clock_jump_s * 1e9, 10 * period) if period else timing.limits.clock_jump_s * 1e9
    pos = 0
    while pos < n:
        if timing.last_stamp is None or timing.last_receive is None:
            timing.add(int(stamps[pos]), int(receives[pos]))
            pos += 1
            continue
        s, r = stamps[pos:], receives[pos:]
        last = np.maximum.accumulate(np.concatenate(([timing.last_stamp], s[:-1])))
        step = s - last
        arrived = r - np.concatenate(([timing.last_receive], r[:-1]))
        maybe_jump = np.flatnonzero((step - arrived > jump_ns) | (step < -jump_ns))
        end = n if not len(maybe_jump) else pos + int(maybe_jump[0])
        if end > pos:
            _timing_block(timing, stamps[pos:end], receives[pos:end], with_stamps=True)
        if end < n:  # where the clock may have jumped, the streaming check judges against its own reference
            timing.add(int(stamps[end]), int(receives[end]))
        pos = end + 1


def _timing_block(timing: StreamTiming, s: np.ndarray, r: np.ndarray, *, with_stamps: bool) -> None:
    """Samples none of which can be a clock jump, after the stream's first stamp (or none with a stamp)."""
    lim = timing.limits
    timing.count += len(r)
    if timing.first_receive is None:
        timing.first_receive = int(r[0])
    previous = timing.last_receive
    timing.last_receive = int(r[-1])
    silent_ns = lim.silent_after_s * 1e9
    # the stream's first message has no gap before it
    prev_r = np.concatenate(([r[0] if previous is None else previous], r[:-1]))
    gaps = r - prev_r
    silent = gaps > silent_ns
    for i in np.flatnonzero(silent).tolist():
        timing._silent.add(int(prev_r[i]), int(gaps[i]) / 1e9, end_ns=int(r[i]))
    if not with_stamps:
        return
    latency = r - s
    latency_ms = latency / 1e6
    timing._latency_sum = float(np.add.accumulate(np.concatenate(([timing._latency_sum], latency_ms)))[-1])
    for i in np.flatnonzero(latency_ms > lim.max_latency_ms).tolist():
        timing._late.add(int(s[i]), float(latency_ms[i]))
    assert timing.last_stamp is not None
    last = np.maximum.accumulate(np.concatenate(([timing.last_stamp], s[:-1])))
    step = s - last
    for i in np.flatnonzero(step < 0).tolist():
        timing._backwards.add(int(s[i]), int(-step[i]) / 1e9)
    for i in np.flatnonzero(step == 0).tolist():
        timing._duplicates.add(int(s[i]), 0.0)
    period = timing.period_ns
    if period:
        for i in np.flatnonzero(step > lim.gap_periods * period).tolist():
            missing = round(int(step[i]) / period) - 1
            if missing >= 1:
                timing.lost += missing
                if not silent[i]:  # a silent topic's missing samples are that silence, said once
                    timing._gaps.add(int(last[i]), missing, end_ns=int(s[i]))
    forward = latency[step > 0].tolist()
    reference = timing._latency_ref
    for value in forward:  # the slowly followed typical latency, in the streaming check's own arithmetic
        reference = value if reference is None else reference + 0.01 * (value - reference)
    timing._latency_ref = reference
    timing.last_stamp = max(timing.last_stamp, int(s.max()))


def feed_sync(watch: SyncWatch, refs: np.ndarray, ref_seqs: np.ndarray, frames: np.ndarray,
              frame_seqs: np.ndarray) -> None:
    """SyncWatch.reference for each joint-state stamp and .frame for each camera stamp, in the order of their
    sequence numbers (the bag's order): a frame is paired only with the stamps that came before it."""
    kept = watch._reference
    ordered = (not len(refs)) or ((not kept or refs[0] >= kept[-1]) and bool(np.all(refs[1:] >= refs[:-1])))
    if not ordered:  # the reference clock went back: the streaming watch starts over where it did
        events = sorted([(int(q), 0, int(t)) for q, t in zip(ref_seqs, refs, strict=True)]
                        + [(int(q), 1, int(t)) for q, t in zip(frame_seqs, frames, strict=True)])
        for _, kind, stamp in events:
            if kind:
                watch.frame(stamp)
            else:
                watch.reference(stamp)
        return
    start = len(kept)
    every = np.concatenate((np.array(kept, dtype=np.int64), refs))
    before = np.searchsorted(ref_seqs, frame_seqs)  # references that arrived before each frame
    hi = start + before
    lo = hi - _window(start, before)
    i = np.clip(np.searchsorted(every, frames, side='left'), lo, hi)
    big = np.iinfo(np.int64).max
    left = np.where(i - 1 >= lo, np.abs(frames - every[np.maximum(i - 1, 0)]), big)
    right = np.where(i < hi, np.abs(frames - every[np.minimum(i, len(every) - 1)]), big)
    nearest = np.minimum(left, right)
    has = hi > lo
    for k in np.flatnonzero(has).tolist():
        skew_ms = int(nearest[k]) / 1e6
        watch.worst_ms = max(watch.worst_ms, skew_ms)
        if skew_ms > watch.max_skew_ms:
            watch._skewed.add(int(frames[k]), skew_ms)
    _sync_window(watch, every, start, len(refs))


def _window(start: int, appended: np.ndarray) -> np.ndarray:
    """How many stamps SyncWatch keeps after `appended` more were added to `start` kept ones."""
    total = start + appended
    first_cut = _SYNC_KEEP + 1 - start  # the append that first passes KEEP
    cycled = (_SYNC_KEEP - _SYNC_CUT + 1) + (appended - first_cut) % _SYNC_CUT
    return np.where(total <= _SYNC_KEEP, total, cycled)


def _sync_window(watch: SyncWatch, every: np.ndarray, start: int, appended: int) -> None:
    size = int(_window(start, np.array([appended]))[0])
    end = start + appended
    watch._reference = every[end - size:end].tolist()


def feed_wrench(watch: WrenchWatch, stamps: np.ndarray, forces: np.ndarray) -> None:
    """WrenchWatch.add for each (stamp, force) in order. The noise floor under the spike limit is refitted every
    few dozen samples: between refits the limit is fixed, so a run is judged at once, and a spike (which the
    floor does not learn from) goes through the streaming watch."""
    fx, fy, fz = forces[:, 0].tolist(), forces[:, 1].tolist(), forces[:, 2].tolist()
    sizes = np.array(list(map(math.hypot, fx, fy, fz)), dtype=float)  # math.hypot, as the streaming watch
    finite = np.isfinite(sizes)
    if not finite.all():  # a non-finite force is skipped without a trace, as add() does
        stamps, forces, sizes = stamps[finite], forces[finite], sizes[finite]
    n = len(sizes)
    noise = watch._noise
    # Each sample's change from the one before (spike or not): what the spike limit is held against.
    rise = np.abs(np.diff(np.concatenate(([np.nan if watch._last is None else watch._last], sizes))))
    pos = 0
    while pos < n:
        room = noise._every - noise._since
        if watch._last is None or noise._last is None or len(noise._diffs) < noise._every or room < 1:
            watch.add(int(stamps[pos]), tuple(forces[pos].tolist()))
            pos += 1
            continue
        limit = max(MIN_SPIKE_N, SPIKE_SIGMAS * noise.sigma)
        run = rise[pos:pos + room]
        spikes = np.flatnonzero(run > limit)
        end = pos + (int(spikes[0]) if len(spikes) else len(run))
        if end > pos:
            quiet = sizes[pos:end]
            watch.peak_n = max(watch.peak_n, float(quiet.max()))
            if watch.max_force_n is not None:
                for i in np.flatnonzero(quiet > watch.max_force_n).tolist():
                    watch._over.add(int(stamps[pos + i]), float(quiet[i]))
            watch._spike_limit = limit
            watch._last = float(quiet[-1])
            fed = noise.add_run(quiet)
            assert fed, 'a quiet run ends at the next refit'
        if end < pos + len(run):
            watch.add(int(stamps[end]), tuple(forces[end].tolist()))
            end += 1
        pos = end


def feed_gripper(gripper: GripperSpec, last: tuple[int, float] | None, moving: Ranges, stamps: np.ndarray,
                 positions: np.ndarray) -> tuple[int, float] | None:
    """EpisodeQuality's gripper motion (when the fingers move, a jolt of the wrist is no collision) over arrays;
    returns the last reading, as the streaming step keeps it."""
    ok = positions == positions
    stamps, positions = stamps[ok], positions[ok]
    if not len(stamps):
        return last
    stroke = abs(gripper.open_position - gripper.closed_position)
    if last is None:
        prev_t, prev_p = stamps[:-1], positions[:-1]
        t, p = stamps[1:], positions[1:]
    else:
        prev_t = np.concatenate(([last[0]], stamps[:-1]))
        prev_p = np.concatenate(([last[1]], positions[:-1]))
        t, p = stamps, positions
    forward = t > prev_t
    with np.errstate(divide='ignore', invalid='ignore'):
        speed = np.abs(p - prev_p) / stroke / ((t - prev_t) / 1e9)
    for i in np.flatnonzero(forward & (speed > 0.1)).tolist():
        moving.add(int(prev_t[i]), float(speed[i]), end_ns=int(t[i]))
    return int(stamps[-1]), float(positions[-1])

