"""A take's conditions measured live at the rig, against what the shot list intended.

Readings arrive one at a time (a lux meter's sensor_msgs/Illuminance, a rangefinder's sensor_msgs/Range, a face's
orientation from the camera); each goes to the protocol's factors it measures: a factor in lux is the light, one
in ft, m or cm the distance, a categorical factor whose levels are face orientations (front, left, ...) the
orientation. Any other factor (an expression, a gesture) is "not measured": nothing at the rig reads it.

Live, the latest reading of each factor (one at most STALE_S old) is compared with the take's intended level: a
reading in another level or bin is out of spec, flagged on the keys screen and /diagnostics. When the take stops
its measured value is the median of the readings while it ran, in the factor's unit, with a verdict against the
intended level ('within', 'outside') or 'not measured' and why.

Light estimated from a camera's frames (its `lux_calibration`, see capture/lux_calibration.py) is used only when no
meter reading came: the take's entry then says `estimated` with the fit's error. The camera itself is checked
against the protocol's `camera:` requirement (resolution from CameraInfo, rate from the frames that arrive): a
camera below it flags the take ('camera' in the flags and in the take's measured conditions, 'outside').
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass
from typing import Any

from ros_robodata.capture.protocol import Factor, Protocol
from ros_robodata.capture.take_conditions import ORIENTATIONS
from ros_robodata.capture.take_record import NOT_MEASURED, Measurement, TakeRecord, measurement
from ros_robodata.errors import RobodataError

__all__ = ['CAMERA', 'DISTANCE', 'ILLUMINANCE', 'ORIENTATION', 'RATE_SLACK', 'STALE_S', 'Flag', 'TakeCheck',
           'camera_value', 'factor_kind', 'rig_sources', 'take_record']

DISTANCE, ILLUMINANCE, ORIENTATION = 'distance', 'illuminance', 'orientation'
CAMERA = 'camera'  # what the camera delivers: '1920x1080 at 30 Hz' (`camera_value`)
RATE_SLACK = 0.9  # a camera delivering at least this fraction of the protocol's min_rate_hz meets it (a 30 Hz
# camera measured over a few seconds reads 29.x; one that drops every other frame reads 15)
_CAMERA = re.compile(r'(\d+)x(\d+)(?: at ([0-9.]+) Hz)?')


def camera_value(width: int, height: int, rate_hz: float | None) -> str:
    """A camera reading as TakeCheck takes it: '1920x1080 at 29.9 Hz' (no rate when unknown)."""
    return f'{width}x{height}' + (f' at {rate_hz:.1f} Hz' if rate_hz is not None else '')
STALE_S = 2.0  # a live reading older than this says nothing about the take now
_METRES_TO = {'m': 1.0, 'cm': 100.0, 'ft': 1 / 0.3048}


def factor_kind(factor: Factor) -> str | None:
    """What measures a factor: DISTANCE (ft, m, cm), ILLUMINANCE (lux), ORIENTATION (levels that are face
    orientations), None when nothing at the rig does."""
    if factor.unit in _METRES_TO:
        return DISTANCE
    if factor.unit == 'lux':
        return ILLUMINANCE
    if factor.levels and set(factor.levels) <= set(ORIENTATIONS):
        return ORIENTATION
    return None


def rig_sources(protocol: Protocol, illuminance: str, distance: str, camera: str = '') -> dict[str, str]:
    """What at the rig reads each kind of condition the protocol uses: kind -> the sources, named as a take records
    them ('/range (sensor_msgs/Range) or /camera/image_raw (faces)').

    Args:
        protocol: the protocol.
        illuminance: the lux meter's topic (sensor_msgs/Illuminance).
        distance: the rangefinder's topic (sensor_msgs/Range).
        camera: the camera's image topic, whose faces give distance and orientation; '' when none.
    """
    kinds = {k for f in protocol.factors if (k := factor_kind(f)) is not None}
    sources: dict[str, list[str]] = {}
    if ILLUMINANCE in kinds:
        sources[ILLUMINANCE] = [f'{illuminance} (sensor_msgs/Illuminance)']
    if DISTANCE in kinds:
        sources[DISTANCE] = [f'{distance} (sensor_msgs/Range)']
    if camera:
        for kind in (DISTANCE, ORIENTATION):
            if kind in kinds:
                sources.setdefault(kind, []).append(f'{camera} (faces)')
    return {kind: ' or '.join(names) for kind, names in sources.items()}


@dataclass(frozen=True)
class Flag:
    """One factor out of spec: the level intended and the value measured (in the factor's unit)."""

    factor: str
    intended: str
    measured: float | str
    unit: str = ''

    @property
    def text(self) -> str:
        """'illuminance: intended 100-500 lux, measured 42 lux'."""
        unit = f' {self.unit}' if self.unit else ''
        value = f'{self.measured:.3g}' if isinstance(self.measured, float) else self.measured
        return f'{self.factor}: intended {self.intended}{unit}, measured {value}{unit}'


@dataclass
class _Reading:
    value: float | str
    at: float
    source: str


class TakeCheck:
    """The readings of one session, per kind; the take's when one is recording. Not thread-safe.

    Args:
        protocol: the protocol the session captures to.
        available: kind -> what at the rig reads it ('/illuminance (sensor_msgs/Illuminance)'); a kind not
            listed is "nothing at the rig measures it". None: every kind the protocol uses, sources unnamed.
    """

    def __init__(self, protocol: Protocol, available: dict[str, str] | None = None) -> None:
        self.protocol = protocol
        self.available = available if available is not None else {k: '' for k in self.measured_kinds()}
        self._latest: dict[str, _Reading] = {}
        self._take: dict[str, list[float | str]] = {}
        self._sources: dict[str, set[str]] = {}
        self._notes: dict[str, str] = {}
        self.recording = False
        self.estimated: dict[str, str] = {}  # a source whose lux is estimated -> the fit's error
        self._latest_estimate: _Reading | None = None
        self._take_estimates: list[float] = []
        self._camera: _Reading | None = None  # the latest camera reading
        self._take_camera: list[str] = []

    def estimate_lux_from(self, source: str, error: str) -> None:
        """Readings of ILLUMINANCE from `source` are estimates (a camera's lux_calibration), used only when no
        meter reading came, and marked with `error` ('+-12% (fit of 9 takes)')."""
        self.estimated[source] = error
        if ILLUMINANCE in self.available:
            named = self.available[ILLUMINANCE]
            self.available[ILLUMINANCE] = f'{named} or {source}, estimated' if named else f'{source}, estimated'

    def camera_problem(self, value: str) -> str:
        """Why a camera reading ('640x480 at 30.0 Hz') falls short of the protocol's camera requirement, '' when
        it meets it (or the protocol requires nothing)."""
        match = _CAMERA.fullmatch(value)
        if match is None:
            raise RobodataError(f'camera reading {value!r}: expected WIDTHxHEIGHT at RATE Hz')
        need = self.protocol.camera
        problems = []
        if need.min_resolution is not None:
            width, height = int(match[1]), int(match[2])
            if width < need.min_resolution[0] or height < need.min_resolution[1]:
                problems.append(f'{width}x{height} below {need.min_resolution[0]}x{need.min_resolution[1]}')
        if need.min_rate_hz is not None and match[3] is not None and float(match[3]) < RATE_SLACK * need.min_rate_hz:
            problems.append(f'{float(match[3]):.1f} Hz below {need.min_rate_hz:g} Hz')
        return ', '.join(problems)

    def _required(self) -> str:
        need = self.protocol.camera
        parts = [f'{need.min_resolution[0]}x{need.min_resolution[1]}'] if need.min_resolution else []
        if need.min_rate_hz is not None:
            parts.append(f'{need.min_rate_hz:g} Hz')
        return 'at least ' + ' at '.join(parts) if parts else 'any'

    def measured_kinds(self) -> list[str]:
        """The kinds of reading this protocol uses (the node subscribes only to those)."""
        return sorted({k for f in self.protocol.factors if (k := factor_kind(f)) is not None})

    def add(self, kind: str, value: float | str, source: str, now: float) -> None:
        """One reading: metres for DISTANCE, lux for ILLUMINANCE, a face orientation for ORIENTATION.

        Args:
            kind: DISTANCE, ILLUMINANCE or ORIENTATION.
            value: the reading.
            source: where it came from ('/illuminance (sensor_msgs/Illuminance)'), recorded with the take.
            now: the time it arrived, seconds on any steady clock (the one passed to `flags`).

        Raises:
            RobodataError: an unknown kind, or a number that is not a finite, non-negative reading.
        """
        if kind == CAMERA:
            if not isinstance(value, str):
                raise RobodataError(f'camera reading {value!r}: expected WIDTHxHEIGHT at RATE Hz')
            self.camera_problem(value)  # one clear error for a malformed reading
            self._camera = _Reading(value, now, source)
            if self.recording:
                self._take_camera.append(value)
            return
        if kind not in (DISTANCE, ILLUMINANCE, ORIENTATION):
            raise RobodataError(f'unknown reading {kind!r}: expected {DISTANCE}, {ILLUMINANCE}, {ORIENTATION} or '
                                f'{CAMERA}')
        if isinstance(value, str) != (kind == ORIENTATION):
            raise RobodataError(f'{kind} reading {value!r}: expected ' + ('a face orientation' if kind == ORIENTATION
                                                                          else 'a number'))
        if not isinstance(value, str) and not (math.isfinite(value) and value >= 0):
            return  # a rangefinder's inf (nothing in range) or NaN: no reading, not a wrong one
        if kind == ILLUMINANCE and source in self.estimated:
            self._latest_estimate = _Reading(value, now, source)
            if self.recording and not isinstance(value, str):
                self._take_estimates.append(float(value))
            return
        self._latest[kind] = _Reading(value, now, source)
        if self.recording:
            self._take.setdefault(kind, []).append(value)
            self._sources.setdefault(kind, set()).add(source)

    def note(self, kind: str, text: str) -> None:
        """Why a source gave no reading of `kind` just now ('distance not measured: face 9 px wide'): the last one
        is kept with a take that got no reading of it."""
        self._notes[kind] = text

    def start(self) -> None:
        """A take started: its readings from now."""
        self._take, self._sources, self._notes = {}, {}, {}
        self._take_estimates, self._take_camera = [], []
        self.recording = True

    def _in_unit(self, factor: Factor, value: float | str) -> float | str:
        if isinstance(value, str):
            return value
        return value * _METRES_TO[factor.unit] if factor.unit in _METRES_TO else float(value)

    def flags(self, intended: dict[str, str], now: float) -> list[Flag]:
        """The factors whose latest reading (at most STALE_S old) falls outside the intended level or bin.

        Args:
            intended: factor -> level or bin label of the take shown or recording.
            now: the time, on the clock given to `add`.
        """
        out = []
        for factor in self.protocol.factors:
            kind = factor_kind(factor)
            reading = self._latest.get(kind) if kind else None
            if kind == ILLUMINANCE and (reading is None or now - reading.at > STALE_S):
                reading = self._latest_estimate  # no meter reading now: the camera's estimate, if any
            if reading is None or now - reading.at > STALE_S or factor.name not in intended:
                continue
            value = self._in_unit(factor, reading.value)
            if factor.level_of(value) != intended[factor.name]:
                out.append(Flag(factor.name, intended[factor.name], value, factor.unit))
        camera = self._camera
        if camera is not None and now - camera.at <= STALE_S and isinstance(camera.value, str) \
                and self.camera_problem(camera.value):
            out.append(Flag(CAMERA, self._required(), camera.value))
        return out

    def stop(self, intended: dict[str, str]) -> tuple[dict[str, Measurement], dict[str, dict[str, Any]]]:
        """The take stopped: per factor, what capture.json keeps (value, verdict against the protocol's levels) and
        what episode.yaml's `capture.measured` shows (value, unit, the level it fell in, verdict against the
        intended level, the source or why it was not measured).

        Args:
            intended: factor -> level or bin label the take was meant to have.
        """
        self.recording = False
        record: dict[str, Measurement] = {}
        shown: dict[str, dict[str, Any]] = {}
        for factor in self.protocol.factors:
            kind = factor_kind(factor)
            values = self._take.get(kind, []) if kind else []
            estimate = ''
            if kind == ILLUMINANCE and not values and self._take_estimates:
                values, estimate = list(self._take_estimates), '; '.join(sorted(set(self.estimated.values())))
            if kind is None or not values:
                if kind is None or kind not in self.available:
                    why = f'nothing at the rig measures {factor.name}'
                else:
                    source = self.available[kind]
                    why = f'no {kind} reading{" from " + source if source else ""} while the take ran'
                    if kind in self._notes:
                        why += f' (last: {self._notes[kind]})'
                record[factor.name] = measurement(factor, None)
                shown[factor.name] = {'verdict': NOT_MEASURED, 'why': why}
                continue
            value = self._median(factor, values)
            level = factor.level_of(value)
            record[factor.name] = measurement(factor, value)
            if estimate:
                record[factor.name]['estimated'] = estimate
            entry: dict[str, Any] = {'value': value}
            if factor.unit:
                entry['unit'] = factor.unit
            entry['level'] = level if level is not None else 'none of the protocol\'s'
            sources = sorted(self.estimated) if estimate else sorted(self._sources[kind])
            entry.update(verdict='within' if level == intended.get(factor.name) else 'outside',
                         readings=len(values), source=', '.join(sources))
            if estimate:
                entry['estimated'] = estimate
            shown[factor.name] = entry
        if self._take_camera and (self.protocol.camera.min_resolution or self.protocol.camera.min_rate_hz):
            seen = self._take_camera[-1]
            problem = self.camera_problem(seen)
            record[CAMERA] = {'value': seen, 'verdict': 'outside' if problem else 'within'}
            shown[CAMERA] = {'value': seen, 'required': self._required(),
                             'verdict': 'outside' if problem else 'within'}
            if problem:
                shown[CAMERA]['why'] = problem
        return record, shown

    def _median(self, factor: Factor, values: list[float | str]) -> float | str:
        if isinstance(values[0], str):
            return max(set(values), key=lambda v: (values.count(v), v))  # the orientation seen most often
        numbers = [float(self._in_unit(factor, v)) for v in values]
        return round(statistics.median(numbers), 3)


def take_record(protocol: Protocol, participant: str, number: int, intended: dict[str, str],
                measured: dict[str, Measurement]) -> TakeRecord:
    """capture.json for a take (what `robodata coverage` counts).

    Args:
        protocol: the protocol.
        participant: the participant's pseudonymous id ('' when nobody).
        number: the take's number.
        intended: factor -> level or bin label.
        measured: per factor, from `TakeCheck.stop`.
    """
    return {'protocol': protocol.name, 'protocol_sha256': protocol.sha256, 'participant': participant,
            'take': number, 'intended': dict(intended), 'measured': measured}
