"""How fast the fingers move: the JointState's own velocity while it can be trusted, else positions over stamps.

Drivers fill `velocity` in many ways: the real speed, nothing (an empty array), zeros whatever the fingers do, or
another unit than the position. A velocity that was never anything but zero while the positions move is no
measurement, so it is dropped at once; one that disagrees with the positions (sign, scale) in most of the samples
where the fingers clearly move is dropped after a few. The choice is kept for the episode and said once (`why`).
"""

from __future__ import annotations

import math
from collections import deque

# Positions are fitted over at least this much stamp time: at 500 Hz one sample step is mostly noise.
SPAN_NS = 30_000_000
# ... and through at least two readings (a 10 Hz bus's two span 0.1 s). A longer line through a noisy 30 Hz tracker's
# readings lowers the speed's noise but answers the stop late: the contact's stamp moved 100 ms (tried, left out).
MIN_READINGS = 2
# A reported speed more than this factor off the positions' (or of the other sign) disagrees: a unit or sign
# mistake is a factor of 57 (degrees), 100 (percent) or -1, while a stroke's acceleration is within this.
DISAGREE_FACTOR = 3.0
# This many disagreeing samples, and twice as many as agreeing ones, and the reported velocity is dropped.
DISAGREE_SAMPLES = 5

MESSAGE, POSITIONS = 'message', 'positions'


class FingerSpeed:
    """Feed `update` every gripper sample in stamp order (positions and speeds in stroke fractions)."""

    def __init__(self) -> None:
        self._recent: deque[tuple[int, float]] = deque()
        self._agree = 0
        self._disagree = 0
        self._nonzero = False  # the message's velocity was ever other than zero
        self.distrusted = ''  # why the message's velocity was dropped; '' while it is used (or never given)
        self.source = ''  # MESSAGE or POSITIONS: what the last sample's speed came from
        self.span_s = SPAN_NS / 1e9  # the stamp time the last derived speed spans
        self.noise_gain = math.sqrt(2) / self.span_s  # the derived speed's sigma per unit of position noise

    def rescale(self, factor: float, offset: float) -> None:
        """Positions re-expressed as factor * x + offset (the stroke was re-calibrated): the history moves with them."""
        self._recent = deque((t, factor * x + offset) for t, x in self._recent)

    def derived(self, last_step: bool = False) -> float | None:
        """The least-squares slope of positions over stamps across the span (or the last step only)."""
        if len(self._recent) < 2:
            return None
        if last_step:
            (t0, x0), (t1, x1) = self._recent[-2], self._recent[-1]
            return (x1 - x0) / ((t1 - t0) / 1e9)
        t_first = self._recent[0][0]
        ts = [(t - t_first) / 1e9 for t, _ in self._recent]
        xs = [x for _, x in self._recent]
        t_mean = sum(ts) / len(ts)
        x_mean = sum(xs) / len(xs)
        spread = sum((t - t_mean) ** 2 for t in ts)
        self.span_s = ts[-1]
        self.noise_gain = 1.0 / math.sqrt(spread)
        return sum((t - t_mean) * (x - x_mean) for t, x in zip(ts, xs, strict=True)) / spread

    @staticmethod
    def _agrees(reported: float, derived: float) -> bool:
        ratio = reported / derived
        return 1 / DISAGREE_FACTOR <= ratio <= DISAGREE_FACTOR

    def update(self, stamp_ns: int, x: float, reported: float, moving: float) -> float:
        """The speed to use at this sample; `reported` is the message's velocity (NaN when absent), `moving` the
        speed that counts as the fingers moving."""
        self._recent.append((stamp_ns, x))
        while len(self._recent) > MIN_READINGS and self._recent[1][0] <= stamp_ns - SPAN_NS:
            self._recent.popleft()
        derived = self.derived()
        self._nonzero = self._nonzero or (math.isfinite(reported) and reported != 0.0)
        if math.isfinite(reported) and not self.distrusted:
            if derived is not None and abs(derived) > 2 * moving:
                if reported == 0.0 and not self._nonzero:
                    self.distrusted = 'the message velocity is all zeros while the positions move'
                elif not (self._agrees(reported, derived) or self._agrees(reported, self.derived(True) or derived)):
                    self._disagree += 1
                    if self._disagree >= DISAGREE_SAMPLES and self._disagree > 2 * self._agree:
                        self.distrusted = ('the message velocity disagrees with the positions (sign or unit) '
                                           f'in {self._disagree} of {self._disagree + self._agree} moving samples')
                else:
                    self._agree += 1
            if not self.distrusted:
                self.source = MESSAGE
                return reported
        self.source = POSITIONS
        return derived if derived is not None else 0.0

    @property
    def why(self) -> str:
        """Said once per episode: where the gripper speed came from."""
        if self.source == MESSAGE:
            return 'gripper speed from the message velocity'
        if self.distrusted:
            return f'gripper speed from positions and stamps: {self.distrusted}'
        return 'gripper speed from positions and stamps (the message has no velocity)'
