"""The wrist wrench: collisions (a force spike the demonstration should not contain) and force limits."""

from __future__ import annotations

import math
from collections.abc import Callable

from ros_robodata.events.noise import NoiseFloor
from ros_robodata.quality.findings import ERROR, INFO, WARN, Finding, Ranges

# A change between two samples this many noise sigmas is a spike, not motion or grasping ...
SPIKE_SIGMAS = 40.0
# ... and at least this much (N): below it no collision matters to a policy.
MIN_SPIKE_N = 10.0
# A drop this soon after a rise is the spike coming back down, not a contact letting go.
SPIKE_RETURN_NS = 100_000_000


class WrenchWatch:
    """Streaming force checks of geometry_msgs/WrenchStamped."""

    def __init__(self, topic: str, max_force_n: float | None) -> None:
        self.topic = topic
        self.max_force_n = max_force_n
        self.peak_n = 0.0
        self._noise = NoiseFloor()
        self._last: float | None = None
        self._over = Ranges()
        self._spikes: list[tuple[int, float]] = []  # (stamp, signed change): a rise or a drop
        self._spike_limit = MIN_SPIKE_N
        self.last_spike_ns = 0

    def add(self, stamp_ns: int, force: tuple[float, float, float]) -> list[str]:
        size = math.hypot(*force)  # never OverflowError: a damaged message's 1e200 N is just huge
        if not math.isfinite(size):
            return []
        fired = []
        self.peak_n = max(self.peak_n, size)
        if self.max_force_n is not None and size > self.max_force_n:
            self._over.add(stamp_ns, size)
            fired.append('contact.force_limit')
        last, self._last = self._last, size
        if last is not None:
            change = size - last
            self._spike_limit = max(MIN_SPIKE_N, SPIKE_SIGMAS * self._noise.sigma)
            if abs(change) > self._spike_limit:
                if len(self._spikes) < 10_000:
                    self._spikes.append((stamp_ns, change))
                if change > 0:  # a sudden rise is what a collision looks like; a drop is a contact letting go
                    self.last_spike_ns = stamp_ns
                    fired.append('contact.force_spike')
            else:
                self._noise.add(size)
        return fired

    def findings(self, excused: Callable[[int], bool] | None = None) -> list[Finding]:
        """`excused(stamp)`: True when the gripper itself was moving then (fingers slamming shut on an object
        jolt the wrist too; that is grasping, not a collision)."""
        out = []
        rises, drops = Ranges(), Ranges()
        last_rise = None
        for stamp, change in self._spikes:
            if excused is not None and excused(stamp):
                continue
            if change > 0:
                rises.add(stamp, change)
                last_rise = stamp
            elif last_rise is None or stamp - last_rise > SPIKE_RETURN_NS:  # not a spike's own way back down
                drops.add(stamp, -change)
        if self._over:
            out.append(self._over.finding('contact.force_limit', ERROR, self.topic, f'wrist force up to '
                                          f'{self._over.worst:.0f} N (limit {self.max_force_n:g} N) in '
                                          f'{len(self._over.items)} stretch(es)', self.max_force_n or 0.0))
        if rises:
            out.append(rises.finding('contact.force_spike', WARN, self.topic, f'wrist force rose by up to '
                                     f'{rises.worst:.0f} N in one sample ({rises.count} time(s)): a collision or a '
                                     'hard knock?', self._spike_limit))
        if drops:
            out.append(drops.finding('contact.force_drop', INFO, self.topic, f'wrist force dropped by up to '
                                     f'{drops.worst:.0f} N in one sample ({drops.count} time(s)): a contact let go '
                                     '(an object released, slipped or knocked away)', self._spike_limit))
        return out
