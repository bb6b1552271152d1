"""What one take captured to a protocol records: capture.json in the episode's folder.

A take names the protocol it was captured to (name and the SHA-256 of the file), the participant (a pseudonymous
id from participants.yaml), its take number, the conditions intended for it (per factor, a level or bin label, or
a number) and, per factor, what was measured, with a verdict: 'within' (the value falls in one of the protocol's
levels or bins), 'outside' (it falls in none) or 'not measured'. The sidecar sits beside episode.yaml and travels
with the episode folder.

    {"protocol": "hri_expressions", "protocol_sha256": "...", "participant": "P-0001", "take": 1,
     "intended": {"distance": "3-6", "expression": "smile"},
     "measured": {"distance": {"value": 4.2, "verdict": "within"},
                  "illuminance": {"value": 240, "verdict": "within", "estimated": "+-12% (fit of 9 takes)"},
                  "expression": {"value": null, "verdict": "not measured"},
                  "camera": {"value": "1920x1080 at 30.0 Hz", "verdict": "within"}}}

`measured` may hold entries that are not factors: `camera` (the camera against the protocol's requirement) and
`repetitions` (a gesture take's repetitions and their regularity); one 'outside' takes the take out of spec.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, TypedDict

from ros_robodata import untrusted
from ros_robodata.capture.protocol import Factor
from ros_robodata.errors import DatasetError
from ros_robodata.files import write_json

__all__ = ['CAPTURE_FILE', 'NOT_MEASURED', 'VERDICTS', 'Measurement', 'TakeRecord', 'measurement', 'read_take',
           'write_take']

CAPTURE_FILE = 'capture.json'
NOT_MEASURED = 'not measured'
VERDICTS = ('within', 'outside', NOT_MEASURED)
_SHA256 = re.compile(r'[0-9a-f]{64}')
_KEYS = ('protocol', 'protocol_sha256', 'participant', 'take', 'intended', 'measured')


class _Measured(TypedDict):
    value: float | str | None
    verdict: str


class Measurement(_Measured, total=False):
    """One factor as measured: the value (a number in the factor's unit, or a level; None when not measured) and
    the verdict ('within', 'outside' or 'not measured'); `estimated` when the value is an estimate, not a reading
    (light from a camera's lux calibration), with the estimate's error ('+-12% (fit of 9 takes)')."""

    estimated: str


class TakeRecord(TypedDict):
    """capture.json: the protocol (name, sha256), participant id, take number, intended and measured conditions."""

    protocol: str
    protocol_sha256: str
    participant: str
    take: int
    intended: dict[str, str | float]
    measured: dict[str, Measurement]


def measurement(factor: Factor, value: float | str | None) -> Measurement:
    """A measured value with its verdict against the factor's levels or bins.

    Args:
        factor: the protocol's factor.
        value: the number measured (a numeric factor) or the level seen; None when it was not measured.
    """
    if value is None:
        return {'value': None, 'verdict': NOT_MEASURED}
    return {'value': value, 'verdict': 'within' if factor.level_of(value) is not None else 'outside'}


def _bad(path: Path, key: str, reason: str) -> DatasetError:
    return DatasetError(f'{path}: {key}: {reason}')


def _condition(value: object) -> bool:
    return (isinstance(value, str) and bool(value.strip())) or (
        isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value))


def _check(data: object, path: Path) -> TakeRecord:
    """`data` as a take record, or one line naming the key at fault."""
    if not isinstance(data, dict):
        raise DatasetError(f'{path}: expected a take record (a mapping with {", ".join(_KEYS)})')
    for key in data:
        if key not in _KEYS:
            raise _bad(path, str(key), f'unknown key; allowed: {", ".join(_KEYS)}')
    for key in _KEYS:
        if key not in data:
            raise _bad(path, key, 'required key is missing')
    if not isinstance(data['protocol'], str) or not data['protocol'].strip():
        raise _bad(path, 'protocol', 'expected the protocol\'s name')
    if not isinstance(data['protocol_sha256'], str) or not _SHA256.fullmatch(data['protocol_sha256']):
        raise _bad(path, 'protocol_sha256', 'expected the protocol file\'s SHA-256 (64 hex digits)')
    if not isinstance(data['participant'], str):
        raise _bad(path, 'participant', 'expected a pseudonymous id (text; "" when nobody)')
    take = data['take']
    if isinstance(take, bool) or not isinstance(take, int) or take < 1:
        raise _bad(path, 'take', f'expected a take number of 1 or more, got {take!r}')
    intended = data['intended']
    if not isinstance(intended, dict):
        raise _bad(path, 'intended', 'expected a mapping of factor to level, bin or number')
    for factor, value in intended.items():
        if not _condition(value):
            raise _bad(path, f'intended.{factor}', f'expected a level, a bin or a number, got {value!r}')
    measured = data['measured']
    if not isinstance(measured, dict):
        raise _bad(path, 'measured', 'expected a mapping of factor to {value, verdict}')
    for factor, entry in measured.items():
        at = f'measured.{factor}'
        if not isinstance(entry, dict) or not {'value', 'verdict'} <= set(entry) <= {'value', 'verdict', 'estimated'}:
            raise _bad(path, at, 'expected {value: ..., verdict: within|outside|not measured[, estimated: error]}')
        if 'estimated' in entry and not (isinstance(entry['estimated'], str) and entry['estimated'].strip()):
            raise _bad(path, f'{at}.estimated', 'expected the estimate\'s error as text')
        if entry['verdict'] not in VERDICTS:
            raise _bad(path, f'{at}.verdict', f'expected one of {", ".join(VERDICTS)}, got {entry["verdict"]!r}')
        if (entry['value'] is None) != (entry['verdict'] == NOT_MEASURED):
            raise _bad(path, at, 'a value needs a verdict of within or outside; no value means "not measured"')
        if entry['value'] is not None and not _condition(entry['value']):
            raise _bad(path, f'{at}.value', f'expected a number or a level, got {entry["value"]!r}')
    record: Any = data
    return record  # checked above, key by key


def read_take(folder: Path) -> TakeRecord | None:
    """The episode's take record, or None when it has no capture.json.

    Args:
        folder: the episode's folder.

    Raises:
        DatasetError: capture.json is unreadable or not a take record (one line naming the key).
    """
    path = folder / CAPTURE_FILE
    if not path.exists():
        return None
    return _check(untrusted.read_json(path, DatasetError), path)


def write_take(folder: Path, record: TakeRecord) -> Path:
    """Write (or replace) the episode's take record, checked first; returns its path.

    Args:
        folder: the episode's folder.
        record: the take record.

    Raises:
        DatasetError: the record is not a valid take record (nothing is written).
        FileWriteError: the file cannot be written.
    """
    path = folder / CAPTURE_FILE
    write_json(path, dict(_check(dict(record), path)))
    return path
