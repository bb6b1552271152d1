"""Noise floors measured from the signal itself, so thresholds follow the sensor instead of a tuned constant."""

from __future__ import annotations

from collections import deque

import numpy as np

_MAD_TO_SIGMA = 1.4826
_MEAN_TO_SIGMA = 1.2533  # sqrt(pi / 2): a normal variable's sigma over its mean absolute value

STEP_SEEN = 3  # a quantisation step is believed once changes that small were seen this often


class NoiseFloor:
    """Robust sigma of a signal's sample-to-sample jitter over a recent window.

    Uses the median absolute first difference, which ignores slow motion (a moving arm, a gripper's stroke) and
    occasional spikes, and sees only the sensor's own jitter. Recomputed every `every` samples.
    """

    def __init__(self, window: int = 400, every: int = 50) -> None:
        self._diffs: deque[float] = deque(maxlen=window)
        self._last: float | None = None
        self._every = every
        self._since = 0
        self.sigma = 0.0
        self.step = 0.0  # a quantised signal's smallest step (0 when the signal is not quantised)

    def add(self, value: float) -> None:
        if self._last is not None:
            self._diffs.append(abs(value - self._last))
            self._since += 1
            if self._since >= self._every or len(self._diffs) < self._every:
                self._refit()
        self._last = value

    def add_run(self, values: np.ndarray) -> bool:
        """Values in a row that end at most at the next refit, fed at once (the offline checks' batch path);
        the same state as add() one by one. False, with nothing fed, when they cannot be (no previous value,
        the window still filling, or the run passing a refit)."""
        n = len(values)
        if self._last is None or len(self._diffs) < self._every or self._since + n > self._every:
            return False
        if n:
            chain = np.empty(n + 1)
            chain[0] = self._last
            chain[1:] = values
            self._diffs.extend(np.abs(np.diff(chain)).tolist())
            self._since += n
            self._last = float(values[-1])
            if self._since >= self._every:
                self._refit()
        return True

    def _refit(self) -> None:
        self._since = 0
        # A difference of two samples has sqrt(2) times one sample's sigma. A quantised signal that jitters
        # by one step now and then has a median difference of zero: its mean difference says its noise.
        diffs = np.fromiter(self._diffs, dtype=float)
        median = float(np.median(diffs))
        if median > 0:
            self.sigma, self.step = median * _MAD_TO_SIGMA / np.sqrt(2), 0.0
        else:  # the jitter of one or two quantisation steps, not a motion that slipped in
            moved = diffs[diffs > 0]
            # Its step: the smallest change, once it recurred (one change alone may be a motion).
            step = float(moved.min()) if moved.size else 0.0
            self.step = step if np.count_nonzero(moved <= 1.5 * step) >= STEP_SEEN else 0.0
            jitter = diffs[diffs <= 2 * step] if moved.size else diffs
            self.sigma = float(np.mean(jitter)) * _MEAN_TO_SIGMA / np.sqrt(2)

    def scale(self, factor: float) -> None:
        """The signal's unit changed by `factor` (a stroke re-calibrated): what was learnt is kept, in the new unit."""
        k = abs(factor)
        self._diffs = deque((d * k for d in self._diffs), maxlen=self._diffs.maxlen)
        self.sigma *= k
        self.step *= k
        self._last = None

    def reset_last(self) -> None:
        """Forget the previous value (after a gap), so the jump across the gap is not taken for noise."""
        self._last = None
