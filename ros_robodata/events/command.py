"""The operator's gripper command against the fingers: what a position-controlled gripper with no effort signal
cannot say by itself.

A leader arm's gripper, a trigger or a gripper command topic, in stroke fractions like the fingers (0 closed,
1 open). The profile's `gripper.command` values give its units and direction; where the command really travels is
found from where it rests (stroke.py), as for the fingers: a leader handle calibrated to 0..40 of a documented
0..100 presses just as hard. While the fingers stand still:
- the command asks for the fingers clearly more closed than they are: something blocks them (contact, a grasp);
- the command stands where the fingers are: the operator paused (a staged close), nothing touched.
A follower tracks its leader with an offset of its own (calibration, a spring): the gap is measured from the
offset seen while the fingers were free and still.
"""

from __future__ import annotations

import math
from collections import deque

from ros_robodata.events.noise import NoiseFloor
from ros_robodata.events.stroke import Stroke, StrokeWatch

# The command must ask for at least this share of the stroke more closure than the fingers have to mean a block.
PRESS_MARGIN = 0.04
# A command older than this (stamp time) says nothing about now: the leader stopped publishing.
FRESH_NS = 500_000_000
# The follower's offset is learnt only from a command that stood within this share of its stroke for this long.
STEADY_SHARE = 0.02
STEADY_NS = 300_000_000


class GripperCommandWatch:
    """Feed `add` the command samples and `free` the fingers' position while they move freely or rest open."""

    def __init__(self, nominal: Stroke, prior: Stroke | None = None, *, shared: Stroke | None = None) -> None:
        """`shared`: the command is in the fingers' own units (the profile gives both the same range): it is read
        on the fingers' calibrated stroke, given here and by `use_stroke`, instead of calibrating its own."""
        self.calibration = StrokeWatch(nominal, prior)
        self.shared = shared is not None
        self.stroke = shared if shared is not None else self.calibration.stroke
        self._pending = False
        self._stamp: int | None = None
        self.raw = math.nan  # the latest command in its own units
        self.value = math.nan  # ... and in stroke fractions
        self._recent: deque[tuple[int, float]] = deque(maxlen=64)  # (stamp, raw)
        self._offset = 0.0  # fingers minus command while free and still: the median of the recent gaps
        self._gaps: deque[float] = deque(maxlen=31)
        self._gap_noise = NoiseFloor()
        self.samples = 0

    def add(self, stamp_ns: int, value: float) -> None:
        if not math.isfinite(value) or (self._stamp is not None and stamp_ns <= self._stamp):
            return
        self._pending |= self.calibration.add(stamp_ns, value) and not self.shared
        self._stamp = stamp_ns
        self.raw = value
        self.value = self.stroke.fraction(value)
        self._recent.append((stamp_ns, value))
        self.samples += 1

    def recalibrate(self) -> bool:
        """Take up what the command's rests said of its stroke (called while nothing is being judged); True when
        the stroke changed. The follower's offset is learnt again in the new scale."""
        if not self._pending:
            return False
        self._pending = False
        stroke = self.calibration.stroke
        if stroke == self.stroke:
            return False
        self.stroke = stroke
        self.value = stroke.fraction(self.raw) if math.isfinite(self.raw) else math.nan
        self.forget_offset()
        return True

    def use_stroke(self, stroke: Stroke) -> None:
        """The fingers' stroke, for a command in their units (see `shared`)."""
        if self.shared and stroke != self.stroke:
            self.stroke = stroke
            self.value = stroke.fraction(self.raw) if math.isfinite(self.raw) else math.nan
            self.forget_offset()

    def forget_offset(self) -> None:
        """The fingers' or the command's scale changed: the offset between them is learnt again."""
        self._offset, self._gap_noise = 0.0, NoiseFloor()
        self._gaps.clear()

    def fresh(self, now_ns: int) -> bool:
        return self._stamp is not None and abs(now_ns - self._stamp) <= FRESH_NS

    def steady(self, now_ns: int) -> bool:
        """The command is fresh and has stood still for STEADY_NS: what the fingers do now answers it (a follower
        lags its leader, so a moving command says nothing of the offset)."""
        if not self.fresh(now_ns) or not self._recent:
            return False
        last = self._recent[-1][1]
        band = STEADY_SHARE * abs(self.stroke.span)
        for stamp, raw in reversed(self._recent):
            if abs(raw - last) > band:
                return False
            if stamp <= now_ns - STEADY_NS:
                return True
        return False

    def free(self, x: float) -> None:
        """The fingers at rest and unblocked: learn the follower's offset from its command."""
        if not math.isfinite(self.value):
            return
        gap = x - self.value
        self._gap_noise.add(gap)
        self._gaps.append(gap)
        self._offset = sorted(self._gaps)[len(self._gaps) // 2]

    @property
    def offset(self) -> float:
        """The follower's fingers minus the command while free and still (stroke fractions)."""
        return self._offset

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

    def closing_speed(self) -> float:
        """How fast the command closes now (stroke fractions a second, over its last two samples); 0 when not
        known."""
        if len(self._recent) < 2:
            return 0.0
        (t0, a), (t1, b) = self._recent[-2], self._recent[-1]
        return (self.stroke.fraction(a) - self.stroke.fraction(b)) / ((t1 - t0) / 1e9) if t1 > t0 else 0.0

    def asks_open(self, x: float) -> bool:
        """The command asks for the fingers more open than `x` by the margin (the operator opening)."""
        return math.isfinite(self.value) and self.value + self._offset > x + self.margin

    def opened_since(self, since_ns: int, x_ref: float) -> int | None:
        """When, at or after `since_ns`, the command first asked for the fingers more open than `x_ref` (where
        they held) by the margin: the operator let go; None if it did not."""
        for stamp, raw in self._recent:
            if stamp >= since_ns and self.stroke.fraction(raw) + self._offset > x_ref + self.margin:
                return stamp
        return None
