"""Fault injection on produced samples, so the quality checks can be tested against known windows."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import cv2
import numpy as np

from ros_robodata.sim.sim_samples import DEFAULT_RATES_HZ, ImageSample, JointSample, Sample, WrenchSample

KINDS = ('blur', 'freeze', 'drop', 'silent', 'nan', 'spike', 'clock_jump', 'dark', 'repeat')


@dataclass(frozen=True)
class Fault:
    """One injected fault on one stream over [start_s, end_s) of sim time.

    magnitude: blur kernel size (px, odd), spike force (N), clock jump (s); fraction: share of messages dropped.
    """

    stream: str
    kind: str
    start_s: float
    end_s: float
    fraction: float = 0.5
    magnitude: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f'fault kind {self.kind!r} is not one of {", ".join(KINDS)}')
        if not self.end_s > self.start_s:
            raise ValueError(f'fault window [{self.start_s}, {self.end_s}) is empty')

    def active(self, t: float) -> bool:
        return self.start_s <= t < self.end_s


FAULT_SYNTAX = 'STREAM:KIND:START:END[:MAGNITUDE]'


def parse_fault(text: str) -> Fault:
    """A fault as the command line and the sim node's `faults` parameter write it, e.g. camera/wrist:blur:2:3
    (times in seconds of each episode); ValueError saying what is wrong."""
    parts = text.strip().split(':')
    if len(parts) not in (4, 5):
        raise ValueError(f'{text!r}: expected {FAULT_SYNTAX}')
    stream, kind = parts[0], parts[1]
    if stream not in DEFAULT_RATES_HZ:
        raise ValueError(f'{text!r}: unknown stream {stream!r} (one of {", ".join(DEFAULT_RATES_HZ)})')
    try:
        numbers = [float(v) for v in parts[2:]]
    except ValueError:
        raise ValueError(f'{text!r}: START, END and MAGNITUDE are numbers (seconds; px, N or s)') from None
    try:
        return Fault(stream, kind, numbers[0], numbers[1], magnitude=numbers[2] if len(numbers) > 2 else None)
    except ValueError as err:
        raise ValueError(f'{text!r}: {err}') from None


_DEFAULT_MAGNITUDE = {'blur': 21.0, 'spike': 250.0, 'clock_jump': 0.5}


class FaultInjector:
    """Applies faults in order; keeps what each needs (last good frame) and counts what it touched."""

    def __init__(self, faults: list[Fault] | None, rng: np.random.Generator) -> None:
        self.faults = list(faults or [])
        self._rng = rng
        self._last_frame: dict[str, np.ndarray] = {}
        self._frozen: dict[int, np.ndarray] = {}
        self._last_joints: dict[str, JointSample] = {}
        self.affected = [0] * len(self.faults)

    def apply(self, s: Sample) -> Sample | None:
        """The sample as published (a copy when changed), or None when it is not published."""
        t = s.stamp
        out = s
        for i, f in enumerate(self.faults):
            if f.stream != s.stream or not f.active(t):
                continue
            if f.kind == 'silent' or (f.kind == 'drop' and self._rng.random() < f.fraction):
                self.affected[i] += 1
                return None
            out = self._change(i, f, out)
        if isinstance(s.data, ImageSample):
            self._last_frame[s.stream] = s.data.rgb
        if isinstance(s.data, JointSample):
            self._last_joints[s.stream] = s.data
        return out

    def _change(self, i: int, f: Fault, s: Sample) -> Sample:
        mag = f.magnitude if f.magnitude is not None else _DEFAULT_MAGNITUDE.get(f.kind, 0.0)
        d = s.data
        if f.kind == 'clock_jump':
            s = copy.copy(s)
            s.stamp += mag
        elif f.kind == 'blur' and isinstance(d, ImageSample):
            k = int(mag) | 1
            s = copy.copy(s)
            s.data = ImageSample(cv2.GaussianBlur(d.rgb, (k, k), 0), d.frame_id)
        elif f.kind == 'freeze' and isinstance(d, ImageSample):
            frame = self._frozen.setdefault(i, self._last_frame.get(s.stream, d.rgb))
            s = copy.copy(s)
            s.data = ImageSample(frame, d.frame_id)
        elif f.kind == 'nan' and isinstance(d, JointSample):
            pos = d.position.copy()
            pos[0] = np.nan
            s = copy.copy(s)
            s.data = JointSample(d.names, pos, d.velocity, d.effort)
        elif f.kind == 'dark' and isinstance(d, ImageSample):  # a lamp went off, the exposure did not follow
            s = copy.copy(s)
            s.data = ImageSample((d.rgb.astype(np.float32) * 0.08).astype(np.uint8), d.frame_id)
        elif (f.kind == 'repeat' and isinstance(d, JointSample) and s.stream in self._last_joints
              and self._rng.random() < f.fraction):  # the driver re-publishes its previous sample, new stamp
            previous = self._last_joints[s.stream]
            s = copy.copy(s)
            s.data = JointSample(d.names, previous.position.copy(), previous.velocity.copy(), previous.effort.copy())
        elif f.kind == 'spike' and isinstance(d, WrenchSample):
            s = copy.copy(s)
            s.data = WrenchSample(d.force + np.array([mag, 0.0, 0.5 * mag]), d.torque + 0.05 * mag, d.frame_id)
        else:
            return s
        self.affected[i] += 1
        return s

    def report(self) -> list[dict]:
        """The injected windows, for the episode's ground truth."""
        return [
            {'stream': f.stream, 'kind': f.kind, 'start_s': f.start_s, 'end_s': f.end_s, 'affected': n}
            for f, n in zip(self.faults, self.affected, strict=True)
        ]
