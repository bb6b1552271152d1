"""The team's own policy's doubt about each episode (`robodata select --uncertainty FILE`): real active learning.

Ensemble disagreement or action-prediction loss come per episode or per frame, in whatever scale the team's
training code prints. Per-frame scores are summed up per episode as the mean of the top tenth of its frames
(where the policy is unsure, not the average of a mostly easy episode, and not one frame's outlier). Selection
places each episode between the least and the most uncertain of the candidates (0..1): the units are the team's.

Accepted files:
    CSV with a header naming `episode` (or `episode_id`) and `score` (or `uncertainty`, `loss`, `disagreement`);
        any other column (frame, t_s) is ignored; several rows of one episode are its frames.
    JSON: {"<episode>": number or [numbers per frame], ...}, or a list of {"episode": ..., "score": ...} objects.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ros_robodata import untrusted
from ros_robodata.errors import RobodataError

_EPISODE_KEYS = ('episode', 'episode_id')
_SCORE_KEYS = ('score', 'uncertainty', 'loss', 'disagreement')
TOP_FRACTION = 0.1


def load_uncertainty(path: str | Path) -> dict[str, float]:
    """Per episode one score (per-frame scores summed up as the module says); one clear line for a file that is
    not one of the accepted shapes, names the row or key at fault."""
    path = Path(path)
    if not path.is_file():
        raise RobodataError(f'{path}: no such file (--uncertainty takes a CSV or JSON file of per-episode or '
                            'per-frame scores)')
    if path.suffix.lower() == '.json':
        frames = _from_json(path, untrusted.read_json(path))
    else:
        frames = _from_csv(path, untrusted.read_text(path))
    if not frames:
        raise RobodataError(f'{path}: holds no score')
    return {episode: _summed_up(values) for episode, values in sorted(frames.items())}


def _summed_up(values: list[float]) -> float:
    top = sorted(values, reverse=True)[:max(1, math.ceil(TOP_FRACTION * len(values)))]
    return float(np.mean(top))


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool):
        raise RobodataError(f'{where}: {value!r} is not a number')
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise RobodataError(f'{where}: {value!r} is not a number') from None
    if not math.isfinite(number):
        raise RobodataError(f'{where}: {value!r} is not a finite number')
    return number


def _from_csv(path: Path, text: str) -> dict[str, list[float]]:
    rows = csv.reader(io.StringIO(text))
    header = next(rows, None)
    if header is None:
        raise RobodataError(f'{path}: empty')
    names = [h.strip().lower() for h in header]
    episode_col = next((names.index(k) for k in _EPISODE_KEYS if k in names), None)
    score_col = next((names.index(k) for k in _SCORE_KEYS if k in names), None)
    if episode_col is None or score_col is None:
        raise RobodataError(f'{path}: line 1: the header must name an episode column ({" or ".join(_EPISODE_KEYS)}) '
                            f'and a score column ({", ".join(_SCORE_KEYS)}); it names {", ".join(names) or "nothing"}')
    out: dict[str, list[float]] = {}
    for number, row in enumerate(rows, 2):
        if not row or not any(cell.strip() for cell in row) or row[0].lstrip().startswith('#'):
            continue
        if len(row) <= max(episode_col, score_col):
            raise RobodataError(f'{path}: line {number}: {len(row)} column(s), the header has {len(names)}')
        episode = row[episode_col].strip()
        if not episode:
            raise RobodataError(f'{path}: line {number}: no episode')
        out.setdefault(episode, []).append(_number(row[score_col].strip(), f'{path}: line {number}'))
    return out


def _from_json(path: Path, data: Any) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    if isinstance(data, dict):
        for episode, value in data.items():
            values: Iterable[Any] = value if isinstance(value, list) else [value]
            out[str(episode)] = [_number(v, f'{path}: {episode}') for v in values]
            if not out[str(episode)]:
                raise RobodataError(f'{path}: {episode}: an empty list of scores')
        return out
    if isinstance(data, list):
        for index, entry in enumerate(data):
            where = f'{path}: entry {index}'
            if not isinstance(entry, dict):
                raise RobodataError(f'{where}: not an object with an episode and a score')
            episode = next((entry[k] for k in _EPISODE_KEYS if k in entry), None)
            key = next((k for k in _SCORE_KEYS if k in entry), None)
            if not isinstance(episode, str) or not episode or key is None:
                raise RobodataError(f'{where}: needs an episode ({" or ".join(_EPISODE_KEYS)}) and a score '
                                    f'({", ".join(_SCORE_KEYS)})')
            out.setdefault(episode, []).append(_number(entry[key], where))
        return out
    raise RobodataError(f'{path}: neither an object of episode scores nor a list of them')


def scaled(scores: dict[str, float], episodes: list[str]) -> dict[str, tuple[float, str]]:
    """Each of `episodes` with a score: (where it lies between the least and the most uncertain of them, 0..1, the
    sentence saying so). Magnitude is kept (one episode far above the rest stands out alone); the units are the
    team's, so only the range among the episodes compared matters. Episodes without a score are left out."""
    have = [e for e in episodes if e in scores]
    if not have:
        return {}
    low, high = min(scores[e] for e in have), max(scores[e] for e in have)
    out = {}
    for e in have:
        value = 1.0 if high == low else (scores[e] - low) / (high - low)
        where = 'the highest' if value >= 1.0 else f'{100 * value:.0f}% of the way from the lowest {low:.3g} to the ' \
                f'highest {high:.3g}'
        out[e] = (round(value, 6), f'the policy\'s uncertainty {scores[e]:.3g}: {where} among these episodes')
    return out
