"""Where a closing stroke met the object or reached its rest, read off the path of the fingers and of their effort:
pure functions of (stamp, value) samples, apart from the state machine that feeds them."""

from __future__ import annotations

from collections.abc import Iterable


def effort_shift(efforts: list[tuple[int, float]], since_ns: int, sigma: float) -> int | None:
    """Where the effort's level rose for good within the samples from `since_ns` on, against its level while the
    fingers closed freely before (Page's CUSUM: drift of one noise sigma, alarm at five): a finger pushing the
    object along before the other arrives raises the effort by a friction force that no single sample shows."""
    free = [e for ts, e in efforts if ts < since_ns]
    if len(free) < 5 or sigma <= 0:
        return None
    level = sorted(free)[len(free) // 2]
    total, began = 0.0, None
    for ts, e in efforts:
        if ts < since_ns:
            continue
        total = max(0.0, total + (e - level - sigma))
        if total == 0.0:
            began = None
        elif began is None:
            began = ts
        if total > 5 * sigma:
            return began
    return None


def fit_line(points: list[tuple[int, float]]) -> tuple[float, float]:
    """Least-squares (slope per ns, value at the first point's stamp) through (stamp, value) points; a single
    point is a level line."""
    t0 = points[0][0]
    if len(points) == 1:
        return 0.0, points[0][1]
    ts = [p[0] - t0 for p in points]
    xs = [p[1] for p in points]
    mt, mx = sum(ts) / len(ts), sum(xs) / len(xs)
    var = sum((a - mt) ** 2 for a in ts)
    slope = sum((a - mt) * (b - mx) for a, b in zip(ts, xs, strict=True)) / var if var else 0.0
    return slope, mx - slope * mt


def reached(path: Iterable[tuple[int, float]], level: float, default: int) -> int:
    """When a closing path first came down to `level` (interpolated between samples): a miss is stamped where the
    fingers reach the rest they close to on nothing, not where their stroke began to slow."""
    before: tuple[int, float] | None = None
    for t, x in path:
        if x <= level:
            if before is None or before[1] <= x:
                return t
            return int(before[0] + (t - before[0]) * (before[1] - level) / (before[1] - x))
        before = (t, x)
    return default


def knee(fast: list[tuple[int, float]], slow: list[tuple[int, float]]) -> tuple[int, float] | None:
    """Where a closing stroke met the object: the meeting point of the line through its last samples at speed
    and the line through the samples after it slowed (at 10 Hz a single sample spans the whole stop, so the
    last sample's own speed says little of when the fingers arrived). None when there are not enough samples."""
    if len(fast) < 2 or not slow:
        return None
    a1, b1 = fit_line(fast)
    a2, b2 = fit_line(slow)
    t1, t2 = fast[0][0], slow[0][0]
    if a1 >= a2:  # the closing line must be the steeper one (it falls faster than what came after)
        return None
    # a1 (t - t1) + b1 = a2 (t - t2) + b2
    at = (b2 - b1 + a1 * t1 - a2 * t2) / (a1 - a2)
    at = min(max(at, fast[-1][0]), slow[0][0])
    return int(at), a1 * (at - t1) + b1
