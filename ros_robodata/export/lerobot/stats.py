"""Per-feature statistics as LeRobot computes them, so a policy normalises our export exactly as it would one
LeRobot wrote: min, max, mean, std (population), count and the q01/q10/q50/q90/q99 quantiles LeRobot estimates from a
5000-bin histogram; image features over a sample of each episode's frames, per channel, scaled to [0, 1], shaped
(3, 1, 1). Episodes' statistics are pooled by count (LeRobot's aggregate_stats)."""

from __future__ import annotations

from typing import Any

import numpy as np

QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99)
HISTOGRAM_BINS = 5000


def quantile_key(q: float) -> str:
    return f'q{round(q * 100):02d}'


def _histogram_quantiles(values: np.ndarray, weights: np.ndarray | None = None) -> list[float]:
    """Quantiles of one channel read off a histogram between its min and max, linearly inside the bin; `weights`:
    how often each value occurs (the same histogram as of the repeated values)."""
    edges = np.linspace(values.min() - 1e-10, values.max() + 1e-10, HISTOGRAM_BINS + 1)
    counts = np.cumsum(np.histogram(values, bins=edges, weights=weights)[0])
    total = counts[-1]
    out = []
    for q in QUANTILES:
        target = q * total
        i = int(np.searchsorted(counts, target))
        if i == 0:
            out.append(float(edges[0]))
        elif i >= len(counts):
            out.append(float(edges[-1]))
        else:
            before, inside = counts[i - 1], counts[i] - counts[i - 1]
            out.append(float(edges[i]) if inside == 0 else
                       float(edges[i] + (target - before) / inside * (edges[i + 1] - edges[i])))
    return out


def vector_stats(values: np.ndarray) -> dict[str, np.ndarray]:
    """Statistics of an (n, d) or (n,) array over its rows; a 1-D column keeps shape (1,) values, as LeRobot's."""
    rows = values.reshape(len(values), -1).astype(np.float64)
    return _stats(rows, len(values))


def image_stats(frames: np.ndarray) -> dict[str, np.ndarray]:
    """Statistics of sampled (n, h, w, 3) uint8 frames, per channel in [0, 1], shaped (3, 1, 1). Counted per pixel
    value (256 of them) rather than per pixel: the same numbers, a hundred times less work."""
    channels = frames.shape[-1]
    levels = np.arange(256, dtype=np.float64)
    counts = [np.bincount(frames[..., c].reshape(-1), minlength=256).astype(np.float64) for c in range(channels)]
    total = counts[0].sum()
    mean = np.array([(levels * c).sum() / total for c in counts])
    squares = np.array([(levels ** 2 * c).sum() / total for c in counts])
    present = [levels[c > 0] for c in counts]
    out = {'min': np.array([p.min() for p in present]), 'max': np.array([p.max() for p in present]), 'mean': mean,
           'std': np.sqrt(np.maximum(0.0, squares - mean ** 2)), 'count': np.array([len(frames)])}
    quantiles = np.array([_histogram_quantiles(p, c[c > 0]) for p, c in zip(present, counts, strict=True)])
    for i, q in enumerate(QUANTILES):
        out[quantile_key(q)] = quantiles[:, i]
    return {k: v if k == 'count' else (v / 255.0).reshape(-1, 1, 1) for k, v in out.items()}


def _stats(rows: np.ndarray, count: int) -> dict[str, np.ndarray]:
    mean = rows.mean(axis=0)
    out = {'min': rows.min(axis=0), 'max': rows.max(axis=0), 'mean': mean,
           'std': np.sqrt(np.maximum(0.0, (rows ** 2).mean(axis=0) - mean ** 2)), 'count': np.array([count])}
    if len(rows) < 2:
        quantiles = [mean.copy() for _ in QUANTILES]
    else:
        per_column = np.array([_histogram_quantiles(rows[:, j]) for j in range(rows.shape[1])])
        quantiles = [per_column[:, i] for i in range(len(QUANTILES))]
    for q, value in zip(QUANTILES, quantiles, strict=True):
        out[quantile_key(q)] = value
    return out


def sample_indices(length: int) -> list[int]:
    """Which of an episode's frames feed its image statistics: LeRobot's count (100 up to ~500 frames, then
    length**0.75, at most 10000), spread evenly from the first to the last."""
    wanted = max(min(100, length), min(int(length ** 0.75), 10_000))
    return np.round(np.linspace(0, length - 1, wanted)).astype(int).tolist()


def downsample(frame: np.ndarray) -> np.ndarray:
    """Frames of 300 px or more are strided down towards 150 px before their statistics, as LeRobot does."""
    height, width = frame.shape[:2]
    if max(height, width) < 300:
        return frame
    step = int(width / 150) if width > height else int(height / 150)
    return frame[::step, ::step]


def aggregate(per_episode: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Pool episodes' statistics: min of mins, max of maxes, count-weighted mean, the pooled variance and
    count-weighted quantiles."""
    counts = np.stack([s['count'] for s in per_episode]).astype(np.float64)
    total = counts.sum(axis=0)
    means = np.stack([s['mean'] for s in per_episode])
    weights = counts.reshape(counts.shape + (1,) * (means.ndim - counts.ndim))
    mean = (means * weights).sum(axis=0) / total
    variance = ((np.stack([s['std'] for s in per_episode]) ** 2 + (means - mean) ** 2) * weights).sum(axis=0) / total
    out = {'min': np.min(np.stack([s['min'] for s in per_episode]), axis=0),
           'max': np.max(np.stack([s['max'] for s in per_episode]), axis=0),
           'mean': mean, 'std': np.sqrt(variance), 'count': total.astype(np.int64)}
    for q in QUANTILES:
        key = quantile_key(q)
        out[key] = (np.stack([s[key] for s in per_episode]) * weights).sum(axis=0) / total
    return out


def to_json(stats: dict[str, np.ndarray]) -> dict[str, Any]:
    return {k: np.asarray(v).tolist() for k, v in stats.items()}
