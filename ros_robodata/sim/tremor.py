"""Physiological hand tremor: band-limited (6-12 Hz) noise, so commands wobble like a person's hand."""

from __future__ import annotations

import numpy as np


class Tremor:
    """A few sinusoids per axis with random frequencies and phases; velocity of a sub-millimetre wobble."""

    def __init__(self, rng: np.random.Generator, axes: int = 4, amplitude_m: float = 0.0006, parts: int = 4) -> None:
        self._freq = rng.uniform(6.0, 12.0, size=(axes, parts))
        self._phase = rng.uniform(0.0, 2 * np.pi, size=(axes, parts))
        self._amp = amplitude_m * rng.uniform(0.3, 1.0, size=(axes, parts)) / parts

    def velocity(self, t: float) -> np.ndarray:
        """d/dt of the tremor displacement at time t, per axis."""
        w = 2 * np.pi * self._freq
        return (self._amp * w * np.cos(w * t + self._phase)).sum(axis=1)
