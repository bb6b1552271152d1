"""The wrist's load: what the wrench reads beyond the free wrist, and, during one grasp, when the object leaves
its support (lift) and whether it then falls out of the grip (slip).

Plain floats on the per-sample path: a wrist F/T sensor runs at 500 Hz to a few kHz, and offline a whole
dataset streams through here.
"""

from __future__ import annotations

import math
from collections import deque
from statistics import median

import numpy as np

from ros_robodata.events.noise import NoiseFloor

Vec = tuple[float, float, float]

# Thresholds sit this many noise sigmas above the sensor's noise floor ...
NOISE_SIGMAS = 6.0
# ... a push sustained over three samples needs fewer (a single sample beyond 4.5 sigmas is one in 300 000).
TOUCH_SIGMAS = 4.5
# ... and never below what a wrist F/T sensor resolves in practice.
MIN_FORCE_N = 0.5
# The baseline is the median of the first samples (a knock at start-up does not stick) ...
WARMUP_SAMPLES = 100
# ... and then follows slow drift (temperature, cable) with this time constant while the wrist is free.
BASELINE_TAU_S = 1.0
# Short and long median windows: a 20 ms median for edges, a 50 ms one for levels.
SHORT_S = 0.02
LONG_S = 0.05
# After the load starts to change, wait this long to see the level it settles to.
SETTLE_S = 0.1
# The carried load is measured over this long once the lift's transient is over.
CARRY_S = 0.3
# A median of ~10 samples has about 0.4 of one sample's noise: thresholds on medians scale with it.
MEDIAN_NOISE = 0.4


def _dot(a: Vec, b: Vec) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


class WristLoad:
    """The wrench minus the free wrist's baseline, with the sensor's noise floor."""

    def __init__(self, fixed_threshold: float | None = None) -> None:
        self.fixed_threshold = fixed_threshold
        self.baseline: Vec | None = None
        self._start: list[Vec] = []
        self._noise = (NoiseFloor(), NoiseFloor(), NoiseFloor())
        self.history: deque[tuple[int, float]] = deque(maxlen=1000)  # (stamp, |load|)
        self._last_ns: int | None = None

    @property
    def threshold(self) -> float:
        """A load (N) above this is more than noise: from the profile, else from the measured noise floor."""
        if self.fixed_threshold is not None:
            return self.fixed_threshold
        return max(MIN_FORCE_N, NOISE_SIGMAS * max(n.sigma for n in self._noise))

    def add(self, t: int, force: Vec, *, free: bool, follow: bool) -> tuple[Vec, float] | None:
        """One reading: (load, |load|), or None while the baseline warms up. `free`: nothing touches the wrist,
        so the noise floor and baseline learn from it; `follow`: the baseline may move (slowly unless free)."""
        dt = (t - self._last_ns) / 1e9 if self._last_ns is not None else 0.0
        self._last_ns = t
        if free:
            for value, noise in zip(force, self._noise, strict=True):
                noise.add(value)
        b = self.baseline
        if b is None:
            self._start.append(force)
            if len(self._start) >= WARMUP_SAMPLES:
                self.baseline = tuple(float(v) for v in np.median(np.array(self._start), axis=0))  # type: ignore[assignment]
                self._start = []
            return None
        load = (force[0] - b[0], force[1] - b[1], force[2] - b[2])
        size = math.sqrt(_dot(load, load))
        self.history.append((t, size))
        if follow and dt > 0:
            k = min(1.0, dt / (BASELINE_TAU_S if free else 30 * BASELINE_TAU_S))
            self.baseline = (b[0] + k * load[0], b[1] + k * load[1], b[2] + k * load[2])
        return load, size

    def weight_axis(self) -> Vec | None:
        """Which way the tool's weight pulls in the sensor frame; None when the sensor is tared (near zero)."""
        b = self.baseline
        if b is None:
            return None
        size = math.sqrt(_dot(b, b))
        return (b[0] / size, b[1] / size, b[2] / size) if size > 2 * self.threshold else None

    def peak(self, since_ns: int, until_ns: int) -> float:
        return max((size for t, size in self.history if since_ns <= t <= until_ns), default=0.0)

    def rose(self, since_ns: int, until_ns: int, run: int = 3, reference_ns: int = 300_000_000) -> int | None:
        """The first stamp in [since, until] from which the load stood clearly above what it was just before
        `since` (its median over `reference_ns`, by six of that stretch's noise sigmas and MIN_FORCE_N) for `run`
        samples in a row: a finger pushing the object before the other arrives. None when it did not."""
        before = [size for t, size in self.history if since_ns - reference_ns <= t < since_ns]
        if len(before) < 5:
            return None
        level = median(before)
        sigma = 1.4826 * median(abs(v - level) for v in before)
        threshold = level + max(MIN_FORCE_N, TOUCH_SIGMAS * sigma)
        start: int | None = None
        above = 0
        for t, size in self.history:
            if t < since_ns or t > until_ns:
                continue
            if size > threshold:
                start = start if start is not None else t
                above += 1
                if above >= run:
                    return start
            else:
                start, above = None, 0
        return None

class _Window:
    """Values of the last `span_s` seconds and their median."""

    def __init__(self, span_s: float) -> None:
        self.span_ns = int(span_s * 1e9)
        self.items: deque[tuple[int, float]] = deque()

    def add(self, t: int, value: float) -> None:
        self.items.append((t, value))
        while self.items[0][0] < t - self.span_ns:
            self.items.popleft()

    def median(self) -> float:
        return median(v for _, v in self.items)

    def middle_ns(self) -> int:
        return self.items[len(self.items) // 2][0]

    def spread(self) -> float:
        """Robust sigma of the values (median absolute deviation)."""
        centre = self.median()
        return 1.4826 * median(abs(v - centre) for _, v in self.items)


class GraspLoad:
    """One grasp's load. Before the lift: the load along the weight settles above the noise (untared sensor),
    or steps to a new steady level (tared). After: the carried level, and when it was last still carried."""

    def __init__(self, axis: Vec | None, threshold: float) -> None:
        self.axis = axis
        self.threshold = threshold
        self.edge_threshold = max(MIN_FORCE_N, MEDIAN_NOISE * threshold)
        self.lifted = False
        self.carried = 0.0
        self.carrying_ns: int | None = None  # the last time the 50 ms median was still at least 3/4 carried
        self._short = _Window(SHORT_S)
        self._long = _Window(LONG_S)
        self._since_lift: deque[tuple[int, float]] = deque(maxlen=2000)
        self._candidate: list[tuple[int, float]] = []
        self._candidate_vecs: list[tuple[int, Vec]] = []
        self._hold: deque[Vec] = deque(maxlen=200)
        self._hold_ref: Vec | None = None
        self._carry: list[float] = []
        self._carry_from = 0
        self._carry_until = 0

    def add(self, t: int, load: Vec, size: float) -> tuple[int, float] | None:
        """Feed one load; returns (stamp, level) when the lift is recognised."""
        if self.lifted:
            self._after_lift(t, _dot(load, self.axis) if self.axis is not None else size)
            return None
        if self.axis is not None:
            return self._lift_along_weight(t, _dot(load, self.axis))
        return self._lift_step(t, load)

    def _lift_along_weight(self, t: int, along: float) -> tuple[int, float] | None:
        self._short.add(t, along)
        level = self._short.median()
        if level <= self.edge_threshold:
            self._candidate = []
            return None
        self._candidate.append((self._short.middle_ns(), level))
        if t - self._candidate[0][0] < SETTLE_S * 1e9:
            return None
        settled = median(v for _, v in self._candidate[-max(3, len(self._candidate) // 5):])
        at = next(ts for ts, v in self._candidate if v >= settled - self.edge_threshold)
        return self._lift(t, at, settled)

    def _lift_step(self, t: int, load: Vec) -> tuple[int, float] | None:
        """Tared sensor: the weight's direction is unknown; look for the load to step to a new steady level."""
        if not self._candidate_vecs:
            if len(self._hold) >= 10:
                if self._hold_ref is None or len(self._hold) % 10 == 0:
                    self._hold_ref = tuple(float(v) for v in np.median(np.array(self._hold), axis=0))  # type: ignore[assignment]
                ref = self._hold_ref
                assert ref is not None
                if math.dist(load, ref) > 2 * self.threshold:
                    self._candidate_vecs = [(t, load)]
                    return None
            self._hold.append(load)
            return None
        self._candidate_vecs.append((t, load))
        if t - self._candidate_vecs[0][0] < SETTLE_S * 1e9:
            return None
        ref = self._hold_ref
        assert ref is not None
        tail = np.array([v for _, v in self._candidate_vecs[-max(5, len(self._candidate_vecs) // 5):]])
        level = tuple(float(v) for v in np.median(tail, axis=0))
        if math.dist(level, ref) <= 2 * self.threshold:  # a knock, not a new level
            self._candidate_vecs = []
            return None
        at = next(ts for ts, v in self._candidate_vecs if math.dist(v, level) < self.threshold)
        return self._lift(t, at, math.sqrt(_dot(level, level)))  # type: ignore[arg-type]

    def _lift(self, now: int, at: int, level: float) -> tuple[int, float]:
        self.lifted, self.carried, self.carrying_ns = True, level, now
        # The level right after the lift still carries its acceleration: measure it again once that is over.
        self._carry_from, self._carry_until = now + int(0.1e9), now + int((0.1 + CARRY_S) * 1e9)
        return at, level

    def _after_lift(self, t: int, value: float) -> None:
        self._long.add(t, value)
        self._since_lift.append((t, value))
        if self._carry_from <= t < self._carry_until:
            self._carry.append(value)
        elif t >= self._carry_until and self._carry:
            self.carried = median(self._carry)
            self._carry = []
        if self._long.median() >= 0.75 * self.carried:
            self.carrying_ns = self._long.middle_ns()

    @property
    def telling(self) -> bool:
        """The carried object is heavy enough for the wrist to tell it from no object."""
        return self.lifted and self.carried > self.edge_threshold

    def level(self) -> float:
        """The 50 ms median of the carried load now."""
        return self._long.median() if self._long.items else self.carried

    def quiet_since(self) -> int | None:
        """After a slip: the start of the 50 ms window in which the load is back to none and steady (nothing rubs
        on the fingers any more); None while it is not."""
        if len(self._long.items) < 5 or self._long.items[-1][0] - self._long.items[0][0] < 0.8 * self._long.span_ns:
            return None
        if abs(self._long.median()) < self.edge_threshold and self._long.spread() < self.edge_threshold / 2:
            return self._long.items[0][0]
        return None

    def level_before(self, before_ns: int) -> float | None:
        """The median load over the 50 ms that ended 20 ms before `before_ns` (before an opening moved it)."""
        values = [v for ts, v in self._since_lift if before_ns - 70_000_000 <= ts < before_ns - 20_000_000]
        return median(values) if len(values) >= 3 else None
