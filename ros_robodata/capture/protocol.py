"""A capture protocol (config/protocols/*.yaml): what a studio session must record, and how many takes of each.

A protocol names factors, each either categorical (`levels`: face orientations, expressions, gestures) or numeric
with a unit (`bins` of [low, high) ranges: distance in ft or m, illuminance in lux; the last bin also holds its high
end), how many takes each combination needs (`takes_per_cell` for every combination, or a `design` listing the
combinations wanted), what the camera must deliver, which participant groups must be covered and, for gestures,
how often a take repeats the gesture. Every mistake is one line naming the file and the key at fault.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ros_robodata import untrusted
from ros_robodata.errors import RobodataError
from ros_robodata.paths import config_path

__all__ = ['SHIPPED_PROTOCOLS', 'UNITS', 'Camera', 'Cell', 'Factor', 'ParticipantTargets', 'Protocol', 'Repetition',
           'load_protocol']

UNITS = ('ft', 'm', 'cm', 'lux', 'deg', 's')
SHIPPED_PROTOCOLS = ('hri_expressions', 'hri_gestures')
_TOP_KEYS = ('name', 'description', 'factors', 'takes_per_cell', 'design', 'camera', 'participants', 'repetition')
_NAME = re.compile(r'[a-z0-9_]+')


class _Bad(Exception):
    """One mistake: the dotted key at fault and why."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(reason)
        self.key = key
        self.reason = reason


@dataclass(frozen=True)
class Factor:
    """One condition a take varies: categorical (`levels`) or numeric (`bins` in `unit`).

    Args:
        name: the factor's name (lowercase letters, digits, _).
        levels: the categories, in protocol order; empty for a numeric factor.
        bins: the numeric [low, high) ranges, in increasing order; the last one includes its high end.
        unit: the unit of a numeric factor (one of UNITS); '' for a categorical one.
    """

    name: str
    levels: tuple[str, ...] = ()
    bins: tuple[tuple[float, float], ...] = ()
    unit: str = ''

    @property
    def numeric(self) -> bool:
        """True for a factor measured as a number (bins), False for a categorical one."""
        return bool(self.bins)

    @property
    def labels(self) -> tuple[str, ...]:
        """The names of its cells' coordinates: the levels, or each bin as 'low-high' ('3-6')."""
        return self.levels or tuple(f'{low:g}-{high:g}' for low, high in self.bins)

    def level_of(self, value: object) -> str | None:
        """The level or bin label `value` falls in (a number for a numeric factor, or one of its labels), or None
        when it falls in none."""
        if isinstance(value, str):
            return value if value in self.labels else None
        if not self.numeric or isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        last = len(self.bins) - 1
        for i, (low, high) in enumerate(self.bins):
            if low <= value < high or (i == last and value == high):
                return self.labels[i]
        return None


@dataclass(frozen=True)
class Cell:
    """One combination of levels (factor -> level or bin label, in factor order) and the takes it needs."""

    conditions: tuple[tuple[str, str], ...]
    required: int

    @property
    def key(self) -> str:
        """The combination as text, 'distance=3-6 expression=smile'."""
        return ' '.join(f'{f}={v}' for f, v in self.conditions)


@dataclass(frozen=True)
class Camera:
    """What the camera must deliver: at least this resolution (width, height) and frame rate; None: no minimum."""

    min_resolution: tuple[int, int] | None = None
    min_rate_hz: float | None = None


@dataclass(frozen=True)
class ParticipantTargets:
    """Who must take part: consent required or not, and `per_group` participants in each demographic group."""

    consent_required: bool = True
    per_group: int = 1
    groups: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class Repetition:
    """A take repeats its gesture `count` times, `interval_s` seconds apart."""

    count: int
    interval_s: float


@dataclass(frozen=True)
class Protocol:
    """A loaded, checked protocol.

    Args:
        name: the protocol's name (the file's stem unless it says otherwise).
        path: the file it was read from.
        sha256: the SHA-256 of that file's bytes (a take names the protocol version it was captured to).
        description: free text.
        factors: the factors in file order.
        cells: every combination wanted with its takes, in protocol order (factorial order, or the design's).
        camera: the camera requirements.
        participants: the participant requirements.
        repetition: how a gesture repeats within a take; None when the protocol does not say.
    """

    name: str
    path: Path
    sha256: str
    description: str
    factors: tuple[Factor, ...]
    cells: tuple[Cell, ...]
    camera: Camera
    participants: ParticipantTargets
    repetition: Repetition | None = None

    def factor(self, name: str) -> Factor | None:
        """The factor called `name`, or None."""
        return next((f for f in self.factors if f.name == name), None)

    @property
    def required_takes(self) -> int:
        """Takes the whole protocol needs."""
        return sum(c.required for c in self.cells)


def load_protocol(source: str | os.PathLike[str]) -> Protocol:
    """A protocol from a YAML file, or a shipped one by name (`hri_expressions`: config/protocols/NAME.yaml).

    Args:
        source: a path to a protocol file, or the name of a shipped protocol.

    Raises:
        RobodataError: the file is missing or unreadable, or one line FILE: key: what is wrong.
    """
    path = Path(source)
    if not path.exists() and _NAME.fullmatch(str(source)):
        try:
            path = config_path(f'protocols/{source}.yaml')
        except RobodataError:
            close = difflib.get_close_matches(str(source), SHIPPED_PROTOCOLS, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ''
            raise RobodataError(f'protocol {str(source)!r}: no such file, nor a shipped protocol{hint}; shipped: '
                                f'{", ".join(SHIPPED_PROTOCOLS)}') from None
    text = untrusted.read_text(path, RobodataError)
    data = untrusted.read_yaml(path, RobodataError)
    try:
        return _protocol(data, path, hashlib.sha256(text.encode('utf-8')).hexdigest())
    except _Bad as bad:
        raise RobodataError(f'{path}: {bad.key}: {bad.reason}' if bad.key else f'{path}: {bad.reason}') from None


def _show(value: object) -> str:
    if isinstance(value, Mapping):
        return 'a mapping'
    if isinstance(value, list):
        return 'a list'
    if value is None:
        return 'null'
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + '...'


def _mapping(value: object, key: str, allowed: tuple[str, ...] | None) -> Mapping[str, Any]:
    """`value` as a mapping of string keys, every key one of `allowed` (a close match suggested) when given."""
    if not isinstance(value, Mapping):
        raise _Bad(key, f'expected a mapping, got {_show(value)}')
    for k in value:
        if not isinstance(k, str):
            raise _Bad(key, f'keys must be text, got {_show(k)}')
        if allowed is not None and k not in allowed:
            close = difflib.get_close_matches(k, allowed, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ''
            raise _Bad(_join(key, k), f'unknown key{hint}; allowed: {", ".join(allowed)}')
    return value


def _join(key: str, sub: str) -> str:
    return f'{key}.{sub}' if key else sub


def _positive_int(value: object, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _Bad(key, f'expected a whole number of 1 or more, got {_show(value)}')
    return value


def _number(value: object, key: str, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _Bad(key, f'expected a number, got {_show(value)}')
    if positive and value <= 0:
        raise _Bad(key, f'must be greater than 0, got {value:g}')
    return float(value)


def _names(value: object, key: str, what: str) -> tuple[str, ...]:
    """A non-empty list of distinct, non-empty texts."""
    if not isinstance(value, list):
        raise _Bad(key, f'expected a list of {what}s, got {_show(value)}')
    if not value:
        raise _Bad(key, f'is empty: list at least one {what}')
    seen: list[str] = []
    for i, item in enumerate(value):
        if isinstance(item, bool) or not isinstance(item, (str, int, float)) or not str(item).strip():
            raise _Bad(f'{key}[{i}]', f'expected a {what} name, got {_show(item)}')
        if str(item) in seen:
            raise _Bad(f'{key}[{i}]', f'{what} {str(item)!r} is listed twice')
        seen.append(str(item))
    return tuple(seen)


def _bins(value: object, key: str) -> tuple[tuple[float, float], ...]:
    if not isinstance(value, list):
        raise _Bad(key, f'expected a list of [low, high] ranges, got {_show(value)}')
    if not value:
        raise _Bad(key, 'is empty: list at least one [low, high] range')
    bins: list[tuple[float, float]] = []
    for i, item in enumerate(value):
        at = f'{key}[{i}]'
        if not isinstance(item, list) or len(item) != 2:
            raise _Bad(at, f'expected a [low, high] range, got {_show(item)}')
        low, high = _number(item[0], at), _number(item[1], at)
        if low >= high:
            raise _Bad(at, f'[{low:g}, {high:g}]: low must be below high')
        if bins:
            prev_low, prev_high = bins[-1]
            if low < prev_low:
                raise _Bad(at, f'[{low:g}, {high:g}] comes after [{prev_low:g}, {prev_high:g}]: list the bins in '
                               'increasing order')
            if low < prev_high:
                raise _Bad(at, f'[{low:g}, {high:g}] overlaps [{prev_low:g}, {prev_high:g}]: a value would fall in '
                               'both (bins are [low, high): start this one at or after the previous high)')
        bins.append((low, high))
    return tuple(bins)


def _factor(name: object, value: object, key: str) -> Factor:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise _Bad(key, f'factor name {_show(name)}: use lowercase letters, digits and _ only')
    spec = _mapping(value, key, ('levels', 'bins', 'unit'))
    if 'levels' in spec and ('bins' in spec or 'unit' in spec):
        raise _Bad(key, 'give levels (categorical) or bins with a unit (numeric), not both')
    if 'levels' in spec:
        return Factor(name, levels=_names(spec['levels'], f'{key}.levels', 'level'))
    if 'bins' not in spec:
        raise _Bad(key, 'give levels (categorical, e.g. [front, left]) or bins with a unit (numeric, e.g. '
                        'bins: [[3, 6], [6, 10]], unit: ft)')
    unit = spec.get('unit')
    if unit is None:
        raise _Bad(f'{key}.unit', f'required with bins: one of {", ".join(UNITS)}')
    if unit not in UNITS:
        close = difflib.get_close_matches(str(unit), UNITS, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ''
        raise _Bad(f'{key}.unit', f'unknown unit {_show(unit)}{hint}; known: {", ".join(UNITS)}')
    return Factor(name, bins=_bins(spec['bins'], f'{key}.bins'), unit=str(unit))


def _design(value: object, factors: tuple[Factor, ...]) -> tuple[Cell, ...]:
    if not isinstance(value, list):
        raise _Bad('design', f'expected a list of combinations, got {_show(value)}')
    if not value:
        raise _Bad('design', 'is empty: list at least one combination')
    names = tuple(f.name for f in factors)
    cells: list[Cell] = []
    seen: dict[tuple[tuple[str, str], ...], int] = {}
    for i, row in enumerate(value):
        at = f'design[{i}]'
        if isinstance(row, Mapping):
            for k in row:
                if k not in (*names, 'takes'):
                    close = difflib.get_close_matches(str(k), names, n=1)
                    hint = f" (did you mean '{close[0]}'?)" if close else ''
                    raise _Bad(f'{at}.{k}', f'unknown factor{hint}; factors: {", ".join(names)}')
        row = _mapping(row, at, (*names, 'takes'))
        conditions = []
        for f in factors:
            if f.name not in row:
                raise _Bad(at, f'factor {f.name!r} is missing: every combination names a level of every factor')
            level = row[f.name]
            label = f.level_of(level if f.numeric else str(level))
            if label is None:
                close = difflib.get_close_matches(str(level), f.labels, n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ''
                raise _Bad(f'{at}.{f.name}', f'no level {_show(level)}{hint}; levels: {", ".join(f.labels)}')
            conditions.append((f.name, label))
        combo = tuple(conditions)
        if combo in seen:
            raise _Bad(at, f'the same combination as design[{seen[combo]}]: give it more takes there instead')
        seen[combo] = i
        takes = _positive_int(row['takes'], f'{at}.takes') if 'takes' in row else 1
        cells.append(Cell(combo, takes))
    return tuple(cells)


def _camera(value: object) -> Camera:
    spec = _mapping(value, 'camera', ('min_resolution', 'min_rate_hz'))
    resolution = None
    if 'min_resolution' in spec:
        raw = spec['min_resolution']
        if not isinstance(raw, list) or len(raw) != 2:
            raise _Bad('camera.min_resolution', f'expected [width, height] in pixels, got {_show(raw)}')
        resolution = (_positive_int(raw[0], 'camera.min_resolution[0]'),
                      _positive_int(raw[1], 'camera.min_resolution[1]'))
    rate = _number(spec['min_rate_hz'], 'camera.min_rate_hz', positive=True) if 'min_rate_hz' in spec else None
    return Camera(resolution, rate)


def _participants(value: object) -> ParticipantTargets:
    spec = _mapping(value, 'participants', ('consent_required', 'per_group', 'groups'))
    consent = spec.get('consent_required', True)
    if not isinstance(consent, bool):
        raise _Bad('participants.consent_required', f'expected true or false, got {_show(consent)}')
    per_group = _positive_int(spec['per_group'], 'participants.per_group') if 'per_group' in spec else 1
    groups = _mapping(spec.get('groups') or {}, 'participants.groups', None)
    out = []
    for name, levels in groups.items():
        if not _NAME.fullmatch(name):
            raise _Bad(f'participants.groups.{name}', 'use lowercase letters, digits and _ only')
        out.append((name, _names(levels, f'participants.groups.{name}', 'group')))
    return ParticipantTargets(consent, per_group, tuple(out))


def _protocol(data: object, path: Path, sha256: str) -> Protocol:
    top = _mapping(data, '', _TOP_KEYS)
    name = top.get('name', path.stem)
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise _Bad('name', f'{_show(name)}: use lowercase letters, digits and _ only')
    description = top.get('description', '')
    if not isinstance(description, str):
        raise _Bad('description', f'expected text, got {_show(description)}')
    if 'factors' not in top:
        raise _Bad('factors', 'required key is missing')
    raw_factors = _mapping(top['factors'], 'factors', None)
    if not raw_factors:
        raise _Bad('factors', 'is empty: name at least one factor')
    factors = tuple(_factor(k, v, f'factors.{k}') for k, v in raw_factors.items())
    if ('takes_per_cell' in top) == ('design' in top):
        raise _Bad('', 'give takes_per_cell (every combination of the levels) or design (a list of combinations), '
                       'one of the two')
    if 'design' in top:
        cells = _design(top['design'], factors)
    else:
        takes = _positive_int(top['takes_per_cell'], 'takes_per_cell')
        cells = tuple(Cell(tuple(zip((f.name for f in factors), combo, strict=True)), takes)
                      for combo in itertools.product(*(f.labels for f in factors)))
    repetition = None
    if 'repetition' in top:
        spec = _mapping(top['repetition'], 'repetition', ('count', 'interval_s'))
        for k in ('count', 'interval_s'):
            if k not in spec:
                raise _Bad(f'repetition.{k}', 'required key is missing')
        repetition = Repetition(_positive_int(spec['count'], 'repetition.count'),
                                _number(spec['interval_s'], 'repetition.interval_s', positive=True))
    return Protocol(name=name, path=path, sha256=sha256, description=description, factors=factors, cells=cells,
                    camera=_camera(top.get('camera') or {}), participants=_participants(top.get('participants') or {}),
                    repetition=repetition)
