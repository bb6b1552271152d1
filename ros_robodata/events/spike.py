"""Single gripper readings far off the fingers' path (a tracker that mis-read a marker, a bus glitch) are dropped.

Fingers have mass and a drive: they do not jump out and come back within one sample. A reading that leaves the
path the last readings were on (extrapolated at their speed) by more than the readings' own scatter is held until
the next reading says which it was: a spike when that one is back on the old path, a real change (the fingers met
something, reversed, sprang open) when it is not. Only a suspicious reading waits, and for one sample; every other
passes at once, so the detector's stamp order and its live latency are unchanged for a well-behaved driver.
The scatter is learnt from the readings' second differences (constant motion has none), robustly (a median),
so it needs no unit and no number from the profile.
"""

from __future__ import annotations

import math
import statistics
from collections import deque

from ros_robodata.signals.samples import GripperReading

# A reading this many scatter sigmas off the extrapolated path is suspicious.
GATE_SIGMAS = 6.0
# The reading after a suspicious one is back on the old path when it is within this share of the suspicious one's
# distance from it.
SPIKE_RETURN = 0.3
# Second differences kept for the scatter (a few seconds at 30-100 Hz).
SCATTER_SAMPLES = 64
# Below this many, no scatter is known yet: only a reading off the path by WARMUP_FLOORS floors is held.
SCATTER_MIN = 8
WARMUP_FLOORS = 3.0
# A second difference of noise n has sigma n*sqrt(6); the median of |N(0,1)| is 0.6745.
_D2_TO_SIGMA = 1.0 / (0.6745 * math.sqrt(6.0))
# The path is the straight line through this many readings (two alone make a noisy line to extrapolate).
PATH_READINGS = 4
# Extrapolating over a gap longer than this many typical periods says nothing: the reading is taken as it is.
GAP_PERIODS = 3.0


class GripperSpikeGate:
    """Feed `push` every gripper reading in stamp order; it returns the readings to pass on (none, one or two)."""

    def __init__(self, floor: float = 0.0) -> None:
        self._floor = floor  # no smaller jump is a spike worth a word (a share of the profile's stroke)
        self._path: deque[GripperReading] = deque(maxlen=PATH_READINGS)  # the last readings passed on
        self._d2: deque[float] = deque(maxlen=SCATTER_SAMPLES)
        self._periods: deque[int] = deque(maxlen=SCATTER_SAMPLES)
        self._held: GripperReading | None = None
        self.dropped = 0
        self.largest = 0.0  # the largest jump dropped, in the reading's units

    def _scatter(self) -> float | None:
        if len(self._d2) < SCATTER_MIN:
            return None
        return statistics.median(self._d2) * _D2_TO_SIGMA

    def _predict(self, stamp_ns: int) -> float | None:
        """Where the path of the last readings (a straight line fitted through them) is at `stamp_ns`; None when
        it cannot be told (too few readings since a gap, or a gap before `stamp_ns`)."""
        if len(self._path) < 2 or not self._periods:
            return None
        reach = GAP_PERIODS * statistics.median(self._periods)
        if stamp_ns - self._path[-1].stamp_ns > reach:
            return None
        points = [self._path[-1]]
        for r in reversed(list(self._path)[:-1]):
            if points[-1].stamp_ns - r.stamp_ns > reach:
                break
            points.append(r)
        if len(points) < 2:
            return None
        ts = [(r.stamp_ns - stamp_ns) / 1e9 for r in points]
        xs = [r.position for r in points]
        t_mean, x_mean = sum(ts) / len(ts), sum(xs) / len(xs)
        spread = sum((t - t_mean) ** 2 for t in ts)
        slope = sum((t - t_mean) * (x - x_mean) for t, x in zip(ts, xs, strict=True)) / spread
        return x_mean - slope * t_mean

    def _off_path(self, r: GripperReading) -> float:
        """How far `r` is off the path, in the reading's units (0 when nothing can be told)."""
        predicted = self._predict(r.stamp_ns)
        return 0.0 if predicted is None else abs(r.position - predicted)

    def _gate(self) -> float:
        """Off the path by more than this is suspicious; while the scatter is not known yet (a stream's first
        readings), WARMUP_FLOORS times the floor: a mis-read in the first second is no grasp either."""
        scatter = self._scatter()
        if scatter is None:
            return WARMUP_FLOORS * self._floor if self._floor > 0 else math.inf
        return max(GATE_SIGMAS * scatter, self._floor)

    def _accept(self, r: GripperReading) -> None:
        if self._path:
            last = self._path[-1]
            self._periods.append(r.stamp_ns - last.stamp_ns)
            if len(self._path) >= 2:
                a = self._path[-2]
                if r.stamp_ns - a.stamp_ns <= 2 * GAP_PERIODS * statistics.median(self._periods):
                    # second difference scaled to even spacing
                    t0, t1, t2 = a.stamp_ns, last.stamp_ns, r.stamp_ns
                    if t1 > t0 and t2 > t1:
                        s1 = (last.position - a.position) / (t1 - t0)
                        s2 = (r.position - last.position) / (t2 - t1)
                        self._d2.append(abs(s2 - s1) * (t2 - t0) / 2)
        self._path.append(r)

    def push(self, r: GripperReading) -> list[GripperReading]:
        """One reading in; the readings now known to be on the fingers' path, in stamp order."""
        if not math.isfinite(r.position):
            return [r]  # the detector says what it skips; a NaN is no position to judge
        out: list[GripperReading] = []
        held = self._held
        if held is not None:
            self._held = None
            away = self._off_path(held)
            # Back on the old path (within its scatter, or far nearer it than the held one was): a spike. A real
            # change (a stop on the part, a reversal, a spring open) goes on from where the held reading was.
            back = self._predict(r.stamp_ns) is not None and self._off_path(r) <= max(self._gate(), SPIKE_RETURN * away)
            # ... and off the straight line between its neighbours too: an accelerating stroke leaves the old
            # path's line smoothly, a mis-read jumps out of it and back.
            before = self._path[-1]
            share = (held.stamp_ns - before.stamp_ns) / max(1, r.stamp_ns - before.stamp_ns)
            if back and abs(held.position - (before.position + share * (r.position - before.position))) > self._gate():
                self.dropped += 1
                self.largest = max(self.largest, away)
            else:
                self._accept(held)
                out.append(held)
        if self._off_path(r) > self._gate():
            self._held = r
            return out
        self._accept(r)
        out.append(r)
        return out

    def flush(self) -> list[GripperReading]:
        """The end of the stream: a reading still held is passed on (nothing came to say it was a spike)."""
        held, self._held = self._held, None
        if held is None:
            return []
        self._accept(held)
        return [held]
