"""Per-topic figures of one episode: counts, rates, and samples lost on the way.

Loss is judged by header stamps, the only evidence a stream of anonymous CDR messages carries:
a gap longer than 1.5 sample periods means round(gap / period) - 1 samples never arrived. The
period is the profile's expected rate or, without one, learnt from the stream itself. What the
recorder itself had to drop is counted separately.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ros_robodata.signals.cdr import header_stamp_ns

GAP_FACTOR = 1.5
_LEARN_SAMPLES = 20
GAPS_KEPT = 20  # where samples went missing: the first gaps of an episode, enough to find them in the bag


@dataclass
class TopicStats:
    topic: str
    msgtype: str
    expected_rate_hz: float | None = None
    stamped: bool = False
    latched: bool = False
    count: int = 0
    bytes: int = 0
    first_t_ns: int | None = None
    last_t_ns: int | None = None
    last_stamp_ns: int | None = None
    min_stamp_ns: int | None = None
    max_stamp_ns: int | None = None
    missing_by_stamp: int = 0
    gaps: int = 0
    out_of_order: int = 0
    duplicate_stamps: int = 0
    dropped_by_recorder: int = 0
    latency_sum_ns: int = 0
    latency_max_ns: int = 0
    latency_samples: int = 0
    window_count: int = 0
    window_missing: int = 0
    gap_stamps: list[tuple[int, int, int]] = field(default_factory=list)  # (stamp before, stamp after, missing)
    window_gap: tuple[int, int] | None = None  # the stamps around the last gap since the last window
    _intervals: list[int] = field(default_factory=list)
    _learnt_period_ns: float | None = None

    @property
    def period_ns(self) -> float | None:
        if self.expected_rate_hz:
            return 1e9 / self.expected_rate_hz
        return self._learnt_period_ns

    def update(self, t_ns: int, data: builtins.bytes | memoryview) -> None:  # `bytes` here is the count field
        """Account one received message (receive time t_ns, its CDR bytes)."""
        self.count += 1
        self.window_count += 1
        self.bytes += len(data)
        if self.first_t_ns is None:
            self.first_t_ns = t_ns
        self.last_t_ns = t_ns
        if not self.stamped or self.latched:
            return
        stamp = header_stamp_ns(data)
        if stamp is None or stamp == 0:
            return  # unstamped publisher: nothing to judge by
        latency = t_ns - stamp
        if 0 <= latency < 60_000_000_000:  # same clock (not sim time against wall time)
            self.latency_sum_ns += latency
            self.latency_max_ns = max(self.latency_max_ns, latency)
            self.latency_samples += 1
        if self.min_stamp_ns is None or stamp < self.min_stamp_ns:
            self.min_stamp_ns = stamp
        if self.max_stamp_ns is None or stamp > self.max_stamp_ns:
            self.max_stamp_ns = stamp
        previous, self.last_stamp_ns = self.last_stamp_ns, stamp
        if previous is None:
            return
        interval = stamp - previous
        if interval < 0:
            self.out_of_order += 1
            return
        if interval == 0:
            self.duplicate_stamps += 1
            return
        if self._learnt_period_ns is None and not self.expected_rate_hz:
            self._intervals.append(interval)
            if len(self._intervals) >= _LEARN_SAMPLES:
                self._learnt_period_ns = float(sorted(self._intervals)[len(self._intervals) // 2])
            return
        period = self.period_ns
        if period and interval > GAP_FACTOR * period:
            missing = max(1, round(interval / period) - 1)
            self.gaps += 1
            self.missing_by_stamp += missing
            self.window_missing += missing
            self.window_gap = (previous, stamp)
            if len(self.gap_stamps) < GAPS_KEPT:
                self.gap_stamps.append((previous, stamp, missing))

    def take_window(self) -> tuple[int, int, tuple[int, int] | None]:
        """(received, missing, stamps around the last gap) since the last call: what live diagnostics report."""
        window = (self.window_count, self.window_missing, self.window_gap)
        self.window_count = self.window_missing = 0
        self.window_gap = None
        return window

    @property
    def measured_rate_hz(self) -> float | None:
        if self.count < 2 or self.first_t_ns is None or self.last_t_ns is None or self.last_t_ns == self.first_t_ns:
            return None
        return (self.count - 1) * 1e9 / (self.last_t_ns - self.first_t_ns)

    @property
    def lost(self) -> int:
        return self.missing_by_stamp + self.dropped_by_recorder

    def summary(self) -> dict[str, Any]:
        """What episode.yaml keeps for this topic."""
        rate = self.measured_rate_hz
        return {
            'type': self.msgtype,
            'count': self.count,
            'bytes': self.bytes,
            'rate_hz': None if rate is None else round(rate, 3),
            'expected_rate_hz': self.expected_rate_hz,
            'latched': self.latched,
        }

    def loss(self, start_stamp_ns: int | None = None) -> dict[str, Any]:
        """What episode.yaml keeps of what went missing; gap times in seconds after start_stamp_ns when given."""
        mean = self.latency_sum_ns / self.latency_samples / 1e6 if self.latency_samples else None
        origin = start_stamp_ns or 0
        return {
            'missing_by_stamp': self.missing_by_stamp,
            'gaps': self.gaps,
            'gaps_at': [{'after_s': round((before - origin) / 1e9, 6), 'before_s': round((after - origin) / 1e9, 6),
                         'missing': missing} for before, after, missing in self.gap_stamps],
            'dropped_by_recorder': self.dropped_by_recorder,
            'out_of_order_stamps': self.out_of_order,
            'duplicate_stamps': self.duplicate_stamps,
            'latency_ms_mean': None if mean is None else round(mean, 3),
            'latency_ms_max': round(self.latency_max_ns / 1e6, 3) if self.latency_samples else None,
        }


def stamp_range(stats: Iterable[TopicStats]) -> tuple[int | None, int | None]:
    """Earliest and latest header stamp over the stamped, unlatched topics (sensor time, not receive time)."""
    lows = [s.min_stamp_ns for s in stats if s.min_stamp_ns is not None]
    highs = [s.max_stamp_ns for s in stats if s.max_stamp_ns is not None]
    return (min(lows) if lows else None, max(highs) if highs else None)
