"""The gripper's effective stroke, found from where its fingers (or its command) actually rest.

A profile is written from a datasheet: `open_position` and `closed_position` say the units and which way is
closed, not where this unit's fingers really go. A low-cost arm calibrated to open to 40 of its documented 0..100,
a servo whose pads meet at 228 of a 0..255 register, a profile typed in millimetres for a driver in metres: the
detector's thresholds are shares of the stroke, so they must be shares of the stroke the fingers really travel.

Where the fingers dwell tells it:
- the open end is the most open rest seen (a run of samples within a few noise widths of each other for a while;
  its mean is robust to the noise, and a single outlier breaks a run rather than making one);
- the closed end is the profile's, unless the fingers were seen closed on nothing somewhere else: where they
  came to rest after an object slipped out, or after a close the detector knows was a miss (the detector says
  so, `closed_on_nothing`), or at rest beyond the profile's closed position. Where the fingers stop on an object
  says nothing of the closed end, so resting positions alone never move it inwards.
Before the episode has shown anything, the prior is used: the profile's values, or what earlier episodes of the
same session or dataset found (`pooled`). Causal: an estimate at a sample depends on the samples before it
only, so the live segmenter and the offline pass, given the same prior and samples, use the same stroke.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeGuard

# A rest lasts at least this long and this many samples ...
DWELL_S = 0.25
DWELL_SAMPLES = 4
# ... within this share of the nominal stroke of its running mean (or 4 noise sigmas, when more).
DWELL_BAND = 0.01
# The open end is never put closer to closed than this share of the nominal stroke (a gripper parked closed for
# the whole episode says nothing of where it opens to).
MIN_SHARE = 0.2
# A closed end learnt from a close on nothing is only believed within this share of the nominal stroke from the
# profile's closed position (farther, the fingers were on something after all).
CLOSED_BAND = 0.25
# A rest while holding nothing this close to the profile's closed position (a share of the stroke seen) is the
# gripper parked closed: where it closes to on nothing.
PARKED_SHARE = 0.15
# A change of the stroke smaller than this share of the stroke in use is not worth re-scaling for.
RESCALE_SHARE = 0.03
# The observed stroke is reported when it is under this share of the profile's, or reaches beyond it by more
# than OUTSIDE_SHARE of it.
UNDER_SHARE = 0.5
UNDER_HALF = "under half of the profile's"  # how report() says it (calibration.py recognises it)
OUTSIDE_SHARE = 0.1

PROFILE, EPISODE = 'profile', 'episode'


@dataclass(frozen=True)
class Stroke:
    """Where a channel is closed and where it rests fully open, in its own units, and where that came from
    (`profile`, `episode`: its own samples, or a prior's: `session`, `dataset`)."""

    closed: float
    open: float
    source: str = PROFILE

    @property
    def span(self) -> float:
        """open - closed, signed (negative when closing increases the value)."""
        return self.open - self.closed

    def fraction(self, value: float) -> float:
        """0 closed .. 1 open."""
        return (value - self.closed) / self.span

    def to_json(self) -> dict[str, Any]:
        return {'closed': _round(self.closed), 'open': _round(self.open), 'source': self.source}

    @classmethod
    def from_json(cls, doc: Any) -> Stroke | None:
        """A stroke as to_json wrote it; None when `doc` is not one."""
        if not isinstance(doc, dict):
            return None
        closed, opened, source = doc.get('closed'), doc.get('open'), doc.get('source', PROFILE)
        if not (_number(closed) and _number(opened)) or closed == opened or not isinstance(source, str):
            return None
        return cls(float(closed), float(opened), source)


def _number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _round(value: float) -> float:
    return float(f'{value:.6g}')


@dataclass(frozen=True)
class Observed:
    """What one episode showed of a channel's travel, in its own units: the most open rest, the most closed
    rest, and where it was seen closed on nothing (None: not seen). Pooled over episodes into a prior."""

    most_open: float | None = None
    most_closed: float | None = None
    empty_closed: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: None if v is None else _round(v) for k, v in
                (('most_open', self.most_open), ('most_closed', self.most_closed),
                 ('empty_closed', self.empty_closed))}

    @classmethod
    def from_json(cls, doc: Any) -> Observed:
        if not isinstance(doc, dict):
            return cls()
        values = [doc.get(k) for k in ('most_open', 'most_closed', 'empty_closed')]
        return cls(*(float(v) if _number(v) else None for v in values))


class StrokeWatch:
    """Feed `add` every sample of one channel in stamp order; `stroke` is the estimate so far.

    `nominal` is the profile's (closed, open); `prior` what earlier episodes found (None: the profile's). A rest
    counts as soon as it has lasted DWELL_S, so the stroke is known before the next stroke starts from it."""

    def __init__(self, nominal: Stroke, prior: Stroke | None = None) -> None:
        self.nominal = nominal
        self.prior = prior or nominal
        self._sign = 1.0 if nominal.span > 0 else -1.0
        self._band = DWELL_BAND * abs(nominal.span)
        self._run_n = 0
        self._run_sum = 0.0
        self._run_from = 0
        self._most_open: float | None = None  # the most open rest's mean, in units
        self._most_closed: float | None = None
        self._empty: list[float] = []  # where the fingers rested closed on nothing
        self._idle_closed: float | None = None  # the most closed rest while holding nothing
        self.samples = 0
        self.noise = 0.0

    def set_noise(self, sigma: float) -> None:
        """The channel's sample noise (its own units): a rest's band is at least four of it."""
        self.noise = sigma

    def add(self, stamp_ns: int, value: float, *, idle: bool = False) -> bool:
        """One sample; True when the estimate moved by more than RESCALE_SHARE of the stroke in use. `idle`: the
        fingers hold nothing now (a rest near the closed end is then the gripper parked closed on nothing)."""
        if not math.isfinite(value):
            return False
        self.samples += 1
        band = max(self._band, 4.0 * self.noise)
        if self._run_n and abs(value - self._run_sum / self._run_n) > band:
            self._run_n, self._run_sum = 0, 0.0
        if not self._run_n:
            self._run_from = stamp_ns
        self._run_n += 1
        self._run_sum += value
        if self._run_n < DWELL_SAMPLES or stamp_ns - self._run_from < DWELL_S * 1e9:
            return False
        return self._moved(lambda: self._rest_at(self._run_sum / self._run_n, idle))

    def resting_at(self) -> float | None:
        """The mean of the rest under way, once it counts as one; None while the channel moves."""
        if self._run_n < DWELL_SAMPLES:
            return None
        return self._run_sum / self._run_n

    def closed_on_nothing(self, value: float) -> bool:
        """The detector knows the fingers rest closed on nothing here (after a slip, or a miss): where they close
        to. True when that moved the estimate."""
        beyond = (value - self.nominal.closed) * self._sign
        if not math.isfinite(value) or beyond > CLOSED_BAND * abs(self.nominal.span):
            return False
        return self._moved(lambda: self._empty.append(value))

    def _moved(self, change: Any) -> bool:
        before = self.stroke
        change()
        after = self.stroke
        return abs(after.open - before.open) > RESCALE_SHARE * abs(before.span) or \
            abs(after.closed - before.closed) > RESCALE_SHARE * abs(before.span)

    def _rest_at(self, centre: float, idle: bool) -> None:
        if self._most_open is None or (centre - self._most_open) * self._sign > 0:
            self._most_open = centre
        if self._most_closed is None or (self._most_closed - centre) * self._sign > 0:
            self._most_closed = centre
        if idle and (self._idle_closed is None or (self._idle_closed - centre) * self._sign > 0):
            self._idle_closed = centre

    @property
    def closed_known(self) -> bool:
        """Whether the closed end in use was seen (this episode closed on nothing or parked closed) or pooled from
        earlier episodes, rather than taken from the profile's nominal value."""
        return bool(self._empty) or self._parked() is not None or self.prior.source != PROFILE

    @property
    def observed(self) -> Observed:
        return Observed(self._most_open, self._most_closed, statistics.median(self._empty) if self._empty else None)

    @property
    def stroke(self) -> Stroke:
        """The stroke to use now. Closed: where the fingers were seen closed on nothing (this episode, else the
        prior's), or rested beyond the profile's closed position; else the profile's. Open: the most open rest of
        this episode or of the prior, whichever is more open (never closer to closed than MIN_SHARE of the
        nominal stroke); before any rest, the prior's."""
        nominal, prior = self.nominal, self.prior
        closed = statistics.median(self._empty) if self._empty else self._parked() or prior.closed
        if self._most_closed is not None and (closed - self._most_closed) * self._sign > self._band:
            closed = self._most_closed
        if self._most_open is None and not self._empty and closed == prior.closed:
            return prior
        most_open = self._most_open if self._most_open is not None else prior.open
        if prior.source != PROFILE and (prior.open - most_open) * self._sign > 0:
            most_open = prior.open  # earlier episodes saw it open further than this one has so far
        floor = closed + MIN_SHARE * nominal.span
        opened = most_open if (most_open - floor) * self._sign > 0 else floor
        return Stroke(closed, opened, EPISODE if prior.source == PROFILE else f'{EPISODE}+{prior.source}')

    def _parked(self) -> float | None:
        """The most closed rest while the fingers held nothing, when it lies within PARKED_SHARE of the stroke
        seen from the profile's closed position: the gripper parked closed on nothing, so it closes to there."""
        if self._idle_closed is None or self._most_open is None:
            return None
        span = self._most_open - self.nominal.closed
        inside = (self._idle_closed - self.nominal.closed) * self._sign
        if span * self._sign <= 0 or not 0 < inside <= PARKED_SHARE * abs(span):
            return None
        return self._idle_closed

    def report(self) -> str:
        """One line when the stroke the fingers travel is under half of the profile's or reaches outside it;
        '' otherwise (or while nothing was seen)."""
        if self._most_open is None:
            return ''
        nominal, used = self.nominal, self.stroke
        seen = [v for v in (self._most_open, self._most_closed, *self._empty) if v is not None]
        lo, hi = min(seen), max(seen)
        n_lo, n_hi = sorted((nominal.closed, nominal.open))
        span = abs(nominal.span)
        if abs(used.span) < UNDER_SHARE * span:
            why = f'{UNDER_HALF} {n_lo:g}..{n_hi:g}'
        elif lo < n_lo - OUTSIDE_SHARE * span or hi > n_hi + OUTSIDE_SHARE * span:
            why = f"outside the profile's {n_lo:g}..{n_hi:g}"
        else:
            return ''
        return (f'rested between {lo:.4g} and {hi:.4g}, {why}: used closed {used.closed:.4g} / open '
                f'{used.open:.4g} (a calibration that opens only part-way, or another unit in the profile?)')


def pooled(nominal: Stroke, observations: Iterable[Observed], source: str) -> Stroke | None:
    """A prior from what several episodes showed: the median of their most open rests, and the median of where
    they closed on nothing (else the profile's closed position). None when no episode showed a rest."""
    seen = list(observations)
    opens = [o.most_open for o in seen if o.most_open is not None]
    if not opens:
        return None
    empties = [o.empty_closed for o in seen if o.empty_closed is not None]
    closed = statistics.median(empties) if empties else nominal.closed
    opened = statistics.median(opens)
    sign = 1.0 if nominal.span > 0 else -1.0
    floor = closed + MIN_SHARE * nominal.span
    if (opened - floor) * sign <= 0:
        opened = floor
    return Stroke(closed, opened, source)


def differs(a: Stroke, b: Stroke) -> bool:
    """Whether two strokes would scale the signal differently enough to change what the detector reads."""
    span = max(abs(a.span), abs(b.span))
    return abs(a.closed - b.closed) > RESCALE_SHARE * span or abs(a.open - b.open) > RESCALE_SHARE * span
