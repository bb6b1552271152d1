"""The operator's gripper command against the fingers: what a position-controlled gripper with no effort signal
cannot say by itself.

A leader arm's gripper, a trigger or a gripper command topic, in stroke fractions like the fingers (0 closed,
1 open, from the profile's `gripper.command` values). While the fingers stand still:
- the command asks for the fingers clearly more closed than they are: something blocks them (contact, a grasp);
- the command stands where the fingers are: the operator paused (a staged close), nothing touched.
A follower tracks its leader with an offset of its own (calibration, a spring): the gap is measured from the
offset seen while the fingers were free and still.
"""

from __future__ import annotations

import math
from collections import deque

from ros_robodata.events.noise import NoiseFloor

# The command must ask for at least this share of the stroke more closure than the fingers have to mean a block.
PRESS_MARGIN = 0.1
# A command older than this (stamp time) says nothing about now: the leader stopped publishing.
FRESH_NS = 500_000_000


class GripperCommandWatch:
    """Feed `add` the command samples and `free` the fingers' position while they move freely or rest open."""

    def __init__(self, open_value: float, closed_value: float) -> None:
        self._closed = closed_value
        self._stroke = open_value - closed_value
        self._stamp: int | None = None
        self.value = math.nan  # the latest command, in stroke fractions
        self._recent: deque[tuple[int, float]] = deque(maxlen=64)
        self._offset = 0.0  # fingers minus command while free and still
        self._offset_set = False
        self._gap_noise = NoiseFloor()
        self.samples = 0

    def add(self, stamp_ns: int, value: float) -> None:
        if not math.isfinite(value) or (self._stamp is not None and stamp_ns <= self._stamp):
            return
        self._stamp = stamp_ns
        self.value = (value - self._closed) / self._stroke
        self._recent.append((stamp_ns, self.value))
        self.samples += 1

    def fresh(self, now_ns: int) -> bool:
        return self._stamp is not None and abs(now_ns - self._stamp) <= FRESH_NS

    def free(self, x: float) -> None:
        """The fingers at rest and unblocked: learn the follower's offset from its command."""
        if not math.isfinite(self.value):
            return
        gap = x - self.value
        self._gap_noise.add(gap)
        self._offset = gap if not self._offset_set else self._offset + 0.05 * (gap - self._offset)
        self._offset_set = True

    @property
    def margin(self) -> float:
        return max(PRESS_MARGIN, 3.0 * self._gap_noise.sigma)

    def pressing(self, x: float, now_ns: int) -> float | None:
        """How much more closed than the fingers the command is (stroke fractions) when it presses them shut
        beyond the margin; None when it does not, or says nothing now."""
        if not self.fresh(now_ns):
            return None
        gap = x - self.value - self._offset
        return gap if gap > self.margin else None

    def opened_since(self, since_ns: int, x_ref: float) -> int | None:
        """When, at or after `since_ns`, the command first asked for the fingers more open than `x_ref` (where
        they held) by the margin: the operator let go; None if it did not."""
        for stamp, value in self._recent:
            if stamp >= since_ns and value + self._offset > x_ref + self.margin:
                return stamp
        return None
