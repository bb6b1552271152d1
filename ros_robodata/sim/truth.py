"""Ground truth from the physics engine: contacts, grasp, lift, release and the task's result.

Fed with physics readings only (contacts, poses, velocities), never with the operator's intent, so tests and
benchmarks can grade the segmenter and scorer against it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

DEBOUNCE = 10  # consecutive 500 Hz readings (20 ms) before a state change counts
LIFT_M = 0.01
FULLY_CLOSED = 0.004
CLOSING_SPEED = 0.1  # m/s of finger travel: the fingers are closing, not settling or jittering
OPEN = 0.036  # fingers at least this far apart count as open (re-arms 'closing')


@dataclass
class Reading:
    """One 500 Hz physics reading relevant to the task."""

    t: float
    left: bool
    right: bool
    finger: float
    obj: np.ndarray
    obj_vel: np.ndarray
    tcp_vel: np.ndarray
    finger_vel: float = 0.0
    on_support: bool = True  # the object touches the table (or anything but the fingers)


class _Debounced:
    """A boolean that flips only after DEBOUNCE agreeing readings; reports the time the run began."""

    def __init__(self) -> None:
        self.value = False
        self._run = 0
        self._since = 0.0

    def update(self, raw: bool, t: float) -> float | None:
        if raw == self.value:
            self._run = 0
            return None
        if self._run == 0:
            self._since = t
        self._run += 1
        if self._run >= DEBOUNCE:
            self.value, self._run = raw, 0
            return self._since
        return None


@dataclass
class GroundTruth:
    """Accumulates events while the episode runs and grades the end state."""

    rest_z: float
    zone_center: tuple[float, float]
    zone_radius: float
    events: list[tuple[float, str]] = field(default_factory=list)
    _contact: _Debounced = field(default_factory=_Debounced)
    _secured: _Debounced = field(default_factory=_Debounced)
    _lifted_this_grasp: bool = False
    _off_support_this_grasp: bool = False
    _support: _Debounced = field(default_factory=_Debounced)
    _closing: bool = True  # armed once the fingers have rested open (the start-up settling is not a stroke)
    _open_still: int = 0
    _closing_run: list[float] = field(default_factory=list)
    _closing_touched: bool = False
    _was_open: bool = True
    _last: Reading | None = None

    def update(self, r: Reading) -> None:
        """Feed one reading (500 Hz)."""
        self._last = r
        height = float(r.obj[2] - self.rest_z)
        t = self._contact.update(r.left or r.right, r.t)
        if t is not None:
            self.events.append((t, 'contact_begin' if self._contact.value else 'contact_end'))
        moving_with = float(np.linalg.norm(r.obj_vel - r.tcp_vel)) < 0.05
        t = self._secured.update(r.left and r.right and moving_with, r.t)
        if t is not None:
            if self._secured.value:
                self.events.append((t, 'secured'))
                self._lifted_this_grasp = self._off_support_this_grasp = False
            else:
                self.events.append((t, 'dropped' if height > 0.015 else 'released'))
        t = self._support.update(not r.on_support, r.t)
        if t is not None and self._support.value and self._secured.value and not self._off_support_this_grasp:
            self._off_support_this_grasp = True
            self.events.append((t, 'lift_off'))
        # Closing: an open gripper's fingers start moving together (once per open-to-closed stroke).
        # Re-armed after the fingers rested open for DEBOUNCE readings; three agreeing readings start a stroke.
        self._open_still = self._open_still + 1 if r.finger > OPEN and abs(r.finger_vel) < CLOSING_SPEED / 10 else 0
        if self._open_still >= DEBOUNCE:
            self._closing = False
        if self._closing or r.finger_vel > -CLOSING_SPEED:
            self._closing_run.clear()
        else:
            self._closing_run.append(r.t)
            if len(self._closing_run) == 3:
                self._closing = True
                self.events.append((self._closing_run[0], 'closing'))
        if self._secured.value and not self._lifted_this_grasp and height > LIFT_M:
            self._lifted_this_grasp = True
            self.events.append((r.t, 'lifted'))
        # A miss: the fingers went from open to fully closed without touching the object.
        if r.finger > 0.01:
            self._was_open, self._closing_touched = True, False
        self._closing_touched |= r.left or r.right
        if self._was_open and r.finger < FULLY_CLOSED:
            self._was_open = False
            if not self._closing_touched:
                self.events.append((r.t, 'missed'))

    def in_zone(self) -> bool:
        """The object rests, free of the fingers, on the table inside the target zone."""
        r = self._last
        if r is None:
            return False
        dxy = float(np.hypot(r.obj[0] - self.zone_center[0], r.obj[1] - self.zone_center[1]))
        resting = abs(float(r.obj[2] - self.rest_z)) < 0.005 and float(np.linalg.norm(r.obj_vel)) < 0.02
        return dxy < self.zone_radius and resting and not (r.left or r.right)

    def outcome(self) -> str:
        if not self.in_zone():
            return 'failure'
        fumbles = any(k in ('missed', 'dropped') for _, k in self.events)
        return 'recovery' if fumbles else 'success'

    def _first(self, kind: str) -> float | None:
        return next((round(t, 4) for t, k in self.events if k == kind), None)

    def _last_of(self, kind: str) -> float | None:
        return next((round(t, 4) for t, k in reversed(self.events) if k == kind), None)

    def report(self) -> dict:
        """JSON-ready summary; times are seconds from episode start."""
        r = self._last
        return {
            'outcome': self.outcome(),
            'success': self.in_zone(),
            'contact_begin_s': self._first('contact_begin'),
            'secured_s': self._first('secured'),
            'lift_off_s': self._first('lift_off'),
            'lifted_s': self._first('lifted'),
            'released_s': self._last_of('released'),
            'contact_end_s': self._last_of('contact_end'),
            'events': [{'t_s': round(t, 4), 'kind': k} for t, k in self.events],
            'object_final_xyz': [round(float(v), 5) for v in r.obj] if r is not None else None,
        }
