"""Pairing every other sensor to each exported frame: the sample nearest in header stamp, within a slop.

ApproximateTime semantics over a stream read once: each sensor keeps a short queue of recent samples
(from just before the earliest frame still open, minus the tolerance, up to now). A frame is settled
for a sensor when that sensor has shown a stamp past the frame's window (stamps rise within a topic),
when bag time has run `late_ns` past the window (the sensor went quiet), or when the bag ends. A
sensor with nothing inside the tolerance is reported unmatched with its nearest offset, never paired.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

DEFAULT_LATE_NS = 1_000_000_000


@dataclass(frozen=True)
class Sample:
    """One message of a sensor: header stamp, bag (receive) time, and whatever the caller keeps of it."""

    stamp_ns: int
    t_ns: int
    payload: Any


@dataclass(frozen=True)
class Match:
    """A sensor's partner for one frame; `sample` is None when nothing lay within the tolerance."""

    sensor: str
    sample: Sample | None
    offset_ns: int | None  # nearest sample's stamp minus the frame's (None: the sensor had no sample at all)

    @property
    def matched(self) -> bool:
        return self.sample is not None


@dataclass
class Frame:
    """A chosen reference frame waiting for its partners."""

    stamp_ns: int
    payload: Any
    matches: dict[str, Match] = field(default_factory=dict)


@dataclass
class _Queue:
    samples: deque[Sample] = field(default_factory=deque)
    latest_stamp: int | None = None
    dropped_stamp: int | None = None  # the newest stamp pruned: still the nearest for reporting offsets


class Synchronizer:
    """Open frames in, settled frames out (in the order they came in)."""

    def __init__(self, sensors: list[str], tolerance_ns: int, late_ns: int = DEFAULT_LATE_NS) -> None:
        self.sensors = list(sensors)
        self.tolerance_ns = int(tolerance_ns)
        self.late_ns = int(late_ns)
        self._queues = {s: _Queue() for s in self.sensors}
        self._pending: deque[Frame] = deque()
        self._floor: int | None = None
        self._now: int | None = None

    @property
    def pending(self) -> int:
        return len(self._pending)

    def buffered(self) -> dict[str, int]:
        """Samples held per sensor (memory stays bounded by the tolerance and the frames open)."""
        return {s: len(q.samples) for s, q in self._queues.items()}

    def set_floor(self, stamp_ns: int | None) -> None:
        """No frame opened later will have a stamp below this (the scheduler's held frame)."""
        self._floor = stamp_ns

    def add_frame(self, stamp_ns: int, payload: Any) -> None:
        self._pending.append(Frame(stamp_ns, payload))

    def add_sample(self, sensor: str, sample: Sample) -> None:
        queue = self._queues[sensor]
        queue.samples.append(sample)
        if queue.latest_stamp is None or sample.stamp_ns > queue.latest_stamp:
            queue.latest_stamp = sample.stamp_ns

    def advance(self, now_ns: int) -> list[Frame]:
        """Bag time has reached `now_ns`: the frames whose every partner is decided, and drop old samples."""
        self._now = now_ns if self._now is None else max(self._now, now_ns)
        settled: list[Frame] = []
        while self._pending and self._settle(self._pending[0], final=False):
            settled.append(self._pending.popleft())
        self._prune()
        return settled

    def finish(self) -> list[Frame]:
        """The bag ended: every open frame is settled with what there was."""
        settled = []
        while self._pending:
            frame = self._pending.popleft()
            self._settle(frame, final=True)
            settled.append(frame)
        return settled

    def _settle(self, frame: Frame, *, final: bool) -> bool:
        edge = frame.stamp_ns + self.tolerance_ns
        quiet = self._now is not None and self._now > edge + self.late_ns
        for sensor in self.sensors:
            if sensor in frame.matches:
                continue
            queue = self._queues[sensor]
            if final or quiet or (queue.latest_stamp is not None and queue.latest_stamp > edge):
                frame.matches[sensor] = self._nearest(sensor, frame.stamp_ns)
        return len(frame.matches) == len(self.sensors)

    def _nearest(self, sensor: str, stamp_ns: int) -> Match:
        queue = self._queues[sensor]
        best: Sample | None = None
        best_offset: int | None = None
        if queue.dropped_stamp is not None:
            best_offset = queue.dropped_stamp - stamp_ns
        for sample in queue.samples:
            offset = sample.stamp_ns - stamp_ns
            # ties go to the earlier sample: the same answer whichever order they were queued in
            if best_offset is None or abs(offset) < abs(best_offset) or (
                    abs(offset) == abs(best_offset) and offset < best_offset):
                best, best_offset = sample, offset
        if best is None or best_offset is None or abs(best_offset) > self.tolerance_ns:
            return Match(sensor, None, best_offset)
        return Match(sensor, best, best_offset)

    def _prune(self) -> None:
        floors = [f.stamp_ns for f in self._pending]
        if self._floor is not None:
            floors.append(self._floor)
        elif self._now is not None:
            floors.append(self._now - self.late_ns)
        if not floors:
            return
        limit = min(floors) - self.tolerance_ns
        for queue in self._queues.values():
            # older samples are out of every open frame's reach; the newest of them may still be the nearest
            while queue.samples and queue.samples[0].stamp_ns < limit:
                queue.dropped_stamp = queue.samples.popleft().stamp_ns
