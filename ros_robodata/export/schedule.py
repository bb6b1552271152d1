"""Which reference-camera frames an export takes: every Nth, one per time step, or those near events.

Frames are chosen online, while the bag streams: a scheduled time is settled as soon as the reference
frame after it has arrived (the nearest frame is one of the two around it), so at most one frame is held
back. Every chosen frame is a real image of the reference camera, never one interpolated between two.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ros_robodata.errors import RobodataError
from ros_robodata.vocabulary import EVENT_KINDS

MAX_EVERY_N = 1_000_000  # one frame in a million: a day of a 10 Hz camera

T = TypeVar('T')



@dataclass(frozen=True)
class ScheduleSpec:
    """Which frames of the reference camera to export: a labeling budget spent where it matters. No step at all
    means every reference frame (in the event windows, if any).

    Args:
        every_ns: one frame per this time step (ns); None: no time step.
        every_n: every Nth frame of the reference camera; None: no count step.
        around_events: only frames near these event kinds (grasp, release...), from the episode's events.json.
        window_ns: with `around_events`, how far either side of an event (ns).

    Raises:
        RobodataError: steps that exclude each other, a step not above 0, an unknown event kind, or a window
            without events (or events without a window).
    """

    every_ns: int | None = None
    every_n: int | None = None
    around_events: tuple[str, ...] = ()
    window_ns: int | None = None

    def __post_init__(self) -> None:
        if self.every_ns is not None and self.every_n is not None:
            raise RobodataError('--every and --every-n exclude each other: pick one')
        if self.every_ns is not None and self.every_ns <= 0:
            raise RobodataError('--every must be greater than 0')
        if self.every_n is not None and not 1 <= self.every_n <= MAX_EVERY_N:
            raise RobodataError(f'--every-n must be from 1 to {MAX_EVERY_N:,} (frames), got {self.every_n}')
        if unknown := [kind for kind in self.around_events if kind not in EVENT_KINDS]:
            raise RobodataError(f'--around-events: {", ".join(unknown)} is not an event kind (one of '
                                f'{", ".join(EVENT_KINDS)})')
        if self.around_events and self.every_n is not None:
            raise RobodataError('--around-events works with --every (time steps in the window), not --every-n')
        if self.around_events and (self.window_ns is None or self.window_ns <= 0):
            raise RobodataError('--around-events needs --window greater than 0 (e.g. --window 1s)')
        if not self.around_events and self.window_ns is not None:
            raise RobodataError('--window only applies with --around-events')

    @property
    def mode(self) -> str:
        """Which rule applies: 'around_events', 'every_n', 'every' or 'all'."""
        if self.around_events:
            return 'around_events'
        if self.every_n is not None:
            return 'every_n'
        return 'every' if self.every_ns is not None else 'all'

    def to_json(self) -> dict[str, Any]:
        """The schedule as the manifest records it (times in seconds), so a changed one redoes the export."""
        return {'mode': self.mode, 'every_s': None if self.every_ns is None else self.every_ns / 1e9,
                'every_n': self.every_n, 'around_events': list(self.around_events),
                'window_s': None if self.window_ns is None else self.window_ns / 1e9}


def event_targets(spec: ScheduleSpec, events: Iterable[tuple[str, int]]) -> tuple[list[int], list[int]]:
    """(event times of the wanted kinds, scheduled times around them at --every spacing), both sorted."""
    centres = sorted({t for kind, t in events if kind in spec.around_events})
    targets: set[int] = set()
    if spec.every_ns is not None and spec.window_ns is not None:
        steps = spec.window_ns // spec.every_ns
        for centre in centres:
            targets.update(centre + k * spec.every_ns for k in range(-steps, steps + 1))
    return centres, sorted(targets)


@dataclass
class FrameScheduler(Generic[T]):
    """Feed reference frames in arrival order with push(); get back the chosen ones, in order, as they settle.

    `events` are (kind, stamp_ns) from the episode's events.json; only used with --around-events.
    """

    spec: ScheduleSpec
    events: Sequence[tuple[str, int]] = ()
    _count: int = 0
    _prev: tuple[int, T, bool] | None = None  # (stamp, item, already chosen)
    _first: int | None = None
    _next_k: int = 0
    _targets: list[int] = field(default_factory=list)
    _centres: list[int] = field(default_factory=list)
    _ti: int = 0

    def __post_init__(self) -> None:
        if self.spec.around_events:
            self._centres, self._targets = event_targets(self.spec, self.events)

    @property
    def floor_ns(self) -> int | None:
        """No frame chosen from now on has an earlier stamp (stamps rise within a stream); None before any."""
        return None if self._prev is None else self._prev[0]

    def push(self, stamp_ns: int, item: T) -> list[T]:
        """One reference frame; returns the frames that are now known to be chosen (possibly this one)."""
        index = self._count
        self._count += 1
        if self._first is None:
            self._first = stamp_ns
        if self.spec.every_ns is None:
            chosen = self._takes_every_frame(index, stamp_ns)
            self._prev = (stamp_ns, item, chosen)
            return [item] if chosen else []
        out: list[T] = []
        current_chosen = False
        for target in self._due(stamp_ns):
            if target < self._first:
                continue  # before the reference camera started: nothing to show there
            if self._prev is not None and target - self._prev[0] <= stamp_ns - target:
                if not self._prev[2]:
                    self._prev = (self._prev[0], self._prev[1], True)
                    out.append(self._prev[1])
            else:
                current_chosen = True
        if current_chosen:
            out.append(item)
        self._prev = (stamp_ns, item, current_chosen)
        return out

    def finish(self) -> list[T]:
        """The stream ended: scheduled times after the last frame are past the recording and are skipped."""
        return []

    def _takes_every_frame(self, index: int, stamp_ns: int) -> bool:
        if self.spec.mode == 'every_n':
            assert self.spec.every_n is not None
            return index % self.spec.every_n == 0
        if self.spec.mode == 'around_events':
            assert self.spec.window_ns is not None
            return any(abs(stamp_ns - c) <= self.spec.window_ns for c in self._centres)
        return True

    def _due(self, stamp_ns: int) -> list[int]:
        """Scheduled times up to and including this stamp, not handed out before."""
        due: list[int] = []
        if self.spec.around_events:
            while self._ti < len(self._targets) and self._targets[self._ti] <= stamp_ns:
                due.append(self._targets[self._ti])
                self._ti += 1
            return due
        assert self._first is not None and self.spec.every_ns is not None
        while self._first + self._next_k * self.spec.every_ns <= stamp_ns:
            due.append(self._first + self._next_k * self.spec.every_ns)
            self._next_k += 1
        return due


def select_frames(stamps: Sequence[int], spec: ScheduleSpec, events: Sequence[tuple[str, int]] = ()) -> list[int]:
    """Indexes of the frames an export of these reference stamps takes (the streaming scheduler, all at once)."""
    scheduler: FrameScheduler[int] = FrameScheduler(spec, events)
    chosen: list[int] = []
    for i, stamp in enumerate(stamps):
        chosen.extend(scheduler.push(stamp, i))
    chosen.extend(scheduler.finish())
    return chosen
