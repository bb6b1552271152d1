"""What a quality check reports: which check, how bad, on which topic, when, the worst value and the limit."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ros_robodata.quality.quality_format import FindingJson

INFO, WARN, ERROR = 'info', 'warn', 'error'
SEVERITIES = (INFO, WARN, ERROR)  # info: worth knowing, not a data fault (costs the score nothing)


@dataclass(frozen=True)
class Finding:
    """One check that fired. `ranges` are [start, end] header-stamp intervals (ns) where it fired, samples closer
    than half a second merged into one stretch; `count` is how many samples or frames fired in them. An
    episode-level finding (a missing outcome) has none. In JSON, `ranges_s` count from the episode's first header
    stamp, as every time in quality.json and events.json does."""

    check: str  # dotted: timing.gap, image.blur, motion.nan, contact.force_spike, completeness.outcome, ...
    severity: str  # info | warn | error
    topic: str  # the topic or signal it is about ('' for the episode)
    message: str  # one line a person reads
    value: float = float('nan')  # the worst value seen
    threshold: float = float('nan')  # the limit it crossed
    ranges: tuple[tuple[int, int], ...] = ()
    count: int = 1  # how many samples (or frames) fired; `ranges` merges them into stretches (len(ranges) of them)

    def to_json(self, episode_start_ns: int | None = None) -> FindingJson:
        out: FindingJson = {'check': self.check, 'severity': self.severity, 'topic': self.topic,
                            'message': self.message, 'value': _number(self.value),
                            'threshold': _number(self.threshold), 'count': self.count,
                            'stretches': len(self.ranges), 'ranges_ns': [list(r) for r in self.ranges]}
        if episode_start_ns is not None:
            out['ranges_s'] = [list(span) for span in self.ranges_s(episode_start_ns)]
        return out

    def ranges_s(self, episode_start_ns: int) -> list[tuple[float, float]]:
        """Its stretches in seconds from the episode's start, to the millisecond (as quality.json holds them)."""
        return [(round((a - episode_start_ns) / 1e9, 3), round((b - episode_start_ns) / 1e9, 3))
                for a, b in self.ranges]

    @classmethod
    def from_json(cls, data: FindingJson) -> Finding:
        return cls(check=data['check'], severity=data['severity'], topic=data['topic'], message=data['message'],
                   value=_float(data.get('value')), threshold=_float(data.get('threshold')),
                   ranges=tuple((int(a), int(b)) for a, b in data.get('ranges_ns', [])), count=int(data['count']))


def _number(value: float) -> float | None:
    return round(float(value), 6) if value == value and abs(value) != float('inf') else None


def _float(value: Any) -> float:
    return float('nan') if value is None else float(value)


@dataclass
class Ranges:
    """Collects the stamps at which a check fired into merged intervals, and the worst value.

    Samples closer than `join_ns` join one interval, so a blurry stretch of frames is one range, not thirty.
    """

    join_ns: int = 500_000_000
    items: list[list[int]] = field(default_factory=list)
    count: int = 0
    worst: float = float('nan')

    def add(self, stamp_ns: int, value: float, worse: str = 'max', end_ns: int | None = None) -> None:
        end = stamp_ns if end_ns is None else end_ns
        if self.items and stamp_ns - self.items[-1][1] <= self.join_ns:
            self.items[-1][1] = max(self.items[-1][1], end)
        else:
            self.items.append([stamp_ns, end])
        self.count += 1
        if self.worst != self.worst or (value > self.worst if worse == 'max' else value < self.worst):
            self.worst = value

    def __bool__(self) -> bool:
        return self.count > 0

    def finding(self, check: str, severity: str, topic: str, message: str, threshold: float) -> Finding:
        return Finding(check, severity, topic, message, self.worst, threshold,
                       tuple((a, b) for a, b in self.items), self.count)
