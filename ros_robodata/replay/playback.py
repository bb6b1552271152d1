"""Where a replay is in its bag and when each message is due on the wall clock: rate, pause, seek.

Bag time runs `rate` times as fast as the wall clock from an anchor (a bag time and the wall time it was
reached); pausing, seeking and a new rate each set a new anchor, so nothing drifts however often the reviewer
presses keys. One lock guards the state: the player's services, the terminal and the publishing thread all
change it.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence

from ros_robodata.errors import ReplayError

# Rates the +/- keys step through (a ladder, as video players have it): any rate can still be set by service.
RATE_STEPS = (0.05, 0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 4.0, 8.0, 16.0)
# n/p put the replay this long before an event, so the reviewer sees it happen.
EVENT_LEAD_NS = 1_000_000_000
# p within this long after an event's lead-in goes to the one before it (as a music player's back key does).
_BACK_GRACE_NS = 500_000_000


def check_rate(rate: float) -> float:
    if not (isinstance(rate, (int, float)) and math.isfinite(rate) and rate > 0):
        raise ReplayError(f'rate {rate!r} is not a positive number (1.0 is recorded time, 2.0 twice as fast)')
    return float(rate)


def step_rate(rate: float, up: bool) -> float:
    """The next rate of the ladder above (or below) `rate`; the ladder's end stays."""
    if up:
        return next((r for r in RATE_STEPS if r > rate + 1e-9), RATE_STEPS[-1])
    return next((r for r in reversed(RATE_STEPS) if r < rate - 1e-9), RATE_STEPS[0])


class PlaybackClock:
    """The bag time of a replay now, and how long until a bag time is due. Thread-safe."""

    def __init__(self, start_ns: int, end_ns: int, *, rate: float = 1.0, paused: bool = False,
                 wall_ns: Callable[[], int] = time.monotonic_ns) -> None:
        """The clock stands at `start_ns` until start()."""
        self.begin_ns, self.end_ns = start_ns, end_ns
        self._wall = wall_ns
        self._rate = check_rate(rate)
        self._paused = paused
        self._running = False  # bag time stands still until start()
        self._anchor_bag = start_ns
        self._anchor_wall = wall_ns()
        self.changed = threading.Condition()
        self.generation = 0  # counts seeks: a reader positioned before one starts over
        self.origin_ns = start_ns  # where the read of this generation starts (the last seek's target)

    # -- reading ---------------------------------------------------------------------------------------------------

    @property
    def rate(self) -> float:
        return self._rate

    @property
    def paused(self) -> bool:
        return self._paused

    def now(self) -> int:
        """The bag time being played (stands still while paused)."""
        with self.changed:
            return self._now()

    def _now(self) -> int:
        if self._paused or not self._running:
            return self._anchor_bag
        return self._anchor_bag + round((self._wall() - self._anchor_wall) * self._rate)

    def due_in(self, bag_ns: int) -> int | None:
        """Wall nanoseconds until `bag_ns` is due (<= 0: now or late); None while paused."""
        with self.changed:
            if self._paused or not self._running:
                return None
            return round((bag_ns - self._anchor_bag) / self._rate) - (self._wall() - self._anchor_wall)

    # -- changing --------------------------------------------------------------------------------------------------

    def _anchor(self, bag_ns: int) -> None:
        self._anchor_bag, self._anchor_wall = bag_ns, self._wall()
        self.changed.notify_all()

    def pause(self) -> bool:
        """True when this paused it (False: it was paused already)."""
        with self.changed:
            if self._paused:
                return False
            self._anchor(self._now())
            self._paused = True
            return True

    def resume(self) -> bool:
        with self.changed:
            if not self._paused:
                return False
            self._paused = False
            self._anchor(self._anchor_bag)
            return True

    def toggle(self) -> bool:
        """Pause or resume; True when it is paused afterwards."""
        with self.changed:
            paused = not self._paused
        if paused:
            self.pause()
        else:
            self.resume()
        return paused

    def set_rate(self, rate: float) -> None:
        rate = check_rate(rate)
        with self.changed:
            self._anchor(self._now())
            self._rate = rate

    def seek(self, bag_ns: int) -> int:
        """Go to `bag_ns` (held within the bag's span); returns where the replay now is."""
        with self.changed:
            target = min(max(int(bag_ns), self.begin_ns), self.end_ns)
            self.generation += 1
            self.origin_ns = target
            self._anchor(target)
            return target

    def start(self) -> None:
        """Bag time starts running now (from where it stands): the replay's first message is due at once."""
        with self.changed:
            self._running = True
            self._anchor(self._anchor_bag)

    def reached(self, bag_ns: int) -> None:
        """A message at `bag_ns` went out ahead of its time (play_next while paused): the replay is there now."""
        with self.changed:
            self._anchor(max(bag_ns, self._anchor_bag))

    def wait(self, timeout_s: float) -> None:
        """Sleep until `timeout_s` passes or anything changes (a pause, a seek, a new rate)."""
        with self.changed:
            self.changed.wait(timeout_s)


def next_event(events_ns: Sequence[int], now_ns: int) -> int | None:
    """Where `n` goes: EVENT_LEAD_NS before the first event that has not been reached, None after the last."""
    for stamp in events_ns:
        if stamp > now_ns + EVENT_LEAD_NS:
            return stamp - EVENT_LEAD_NS
    return None


def previous_event(events_ns: Sequence[int], now_ns: int) -> int | None:
    """Where `p` goes: the lead-in of the event before the one being watched, None before the first."""
    for stamp in reversed(events_ns):
        if stamp - EVENT_LEAD_NS < now_ns - _BACK_GRACE_NS:
            return stamp - EVENT_LEAD_NS
    return None
