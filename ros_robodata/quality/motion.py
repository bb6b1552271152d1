"""The arm's motion: NaN values, joint limits, velocity jumps, stuck encoders, idle time, smoothness, and a
bounded-memory copy of the trajectory for comparing demonstrations.

A policy learns the motion it is shown; jerky, idle or physically impossible stretches teach the wrong thing.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ros_robodata.quality.findings import ERROR, WARN, Finding, Ranges


@dataclass(frozen=True)
class JointLimit:
    lower: float
    upper: float


def limits_from_urdf(urdf: str) -> dict[str, JointLimit]:
    """Position limits of the revolute and prismatic joints of a URDF (continuous joints have none)."""
    try:
        root = ET.fromstring(urdf)
    except ET.ParseError:
        return {}
    out = {}
    for joint in root.iter('joint'):
        limit = joint.find('limit')
        if joint.get('type') in ('revolute', 'prismatic') and limit is not None:
            try:
                out[joint.get('name', '')] = JointLimit(float(limit.get('lower', 'nan')),
                                                        float(limit.get('upper', 'nan')))
            except ValueError:
                continue
    return out


@dataclass(frozen=True)
class MotionLimits:
    idle_speed: float = 0.01  # joint speed (rad/s or m/s) below which a joint is still
    idle_after_s: float = 3.0  # everything still this long is idle time
    stuck_after_s: float = 2.0  # a joint reporting the bit-identical value this long while others move is stuck
    limit_margin: float = 1e-3  # tolerance beyond a URDF limit
    velocity_jump_sigmas: float = 20.0  # a speed change this many typical changes in one sample is a jump
    min_velocity_jump: float = 0.5  # ... and at least this much (rad/s or m/s)
    trajectory_points: int = 2000  # at most this many samples of the trajectory are kept (memory bound)


_STILL_EVERY = 5  # samples between idle/stuck judgements


class Trajectory:
    """A decimated trajectory whose memory never grows past `capacity` samples: when full, every other sample is
    dropped and the stride doubles, so a long episode is kept as evenly as a short one."""

    def __init__(self, capacity: int = 2000) -> None:
        self.capacity = capacity
        self.times: list[int] = []
        self.rows: list[list[float]] = []
        self._stride = 1
        self._seen = 0

    def add(self, stamp_ns: int, row: Sequence[float]) -> None:
        if self._seen % self._stride == 0:
            self.times.append(stamp_ns)
            self.rows.append(list(row))
            if len(self.times) >= self.capacity:
                self.times, self.rows = self.times[::2], self.rows[::2]
                self._stride *= 2
        self._seen += 1

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return np.array(self.times, dtype=np.int64), np.array(self.rows, dtype=float)


class JointMotion:
    """Streaming motion checks over the arm joints of sensor_msgs/JointState messages."""

    def __init__(self, topic: str, joints: Sequence[str] | None, limits: MotionLimits = MotionLimits(),
                 joint_limits: dict[str, JointLimit] | None = None) -> None:
        self.topic = topic
        self.wanted = list(joints) if joints else None
        self.limits = limits
        self.joint_limits = joint_limits or {}
        self.names: list[str] = []
        self._index: list[int] | None = None
        self._names_seen: tuple[str, ...] | None = None
        self.trajectory = Trajectory(limits.trajectory_points)
        self._nan = Ranges()
        self._nan_joints: set[str] = set()
        self._beyond = Ranges()
        self._beyond_joints: set[str] = set()
        self._jumps = Ranges()
        self._idle = Ranges(join_ns=0)
        self._stuck: dict[str, Ranges] = {}
        self._last: tuple[int, list[float]] | None = None
        self._last_speed: list[float] | None = None
        self._speed_changes: list[float] = []
        self._typical_change = 0.0
        self._still_since: int | None = None
        self._same_since: list[int | None] = []
        self._moving_now = False
        self._still_from: tuple[int, list[float]] | None = None
        self._since_still_check = 0
        self.first_ns: int | None = None
        self.last_ns: int | None = None
        self.idle_ns = 0

    def add(self, stamp_ns: int, names: Sequence[str], position: Sequence[float]) -> list[str]:
        """One JointState; returns the checks that fired on it."""
        if self._names_seen != tuple(names):
            self._names_seen = tuple(names)
            wanted = self.wanted or list(names)
            self._index = [list(names).index(n) for n in wanted if n in names]
            self.names = [names[i] for i in self._index]
            self._same_since = [None] * len(self._index)
            self._last, self._last_speed, self._still_from = None, None, None
        assert self._index is not None
        if not self._index:
            return []
        q = [float(position[i]) if i < len(position) else math.nan for i in self._index]
        fired: list[str] = []
        if self.first_ns is None:
            self.first_ns = stamp_ns
        self.last_ns = stamp_ns
        if not all(map(math.isfinite, q)):
            bad = [n for n, v in zip(self.names, q, strict=True) if not math.isfinite(v)]
            self._nan.add(stamp_ns, len(bad))
            self._nan_joints.update(bad)
            return ['motion.nan']  # a NaN sample says nothing about speed or limits
        if self.joint_limits:
            for name, value in zip(self.names, q, strict=True):
                lim = self.joint_limits.get(name)
                if lim is not None and not (lim.lower - self.limits.limit_margin <= value
                                            <= lim.upper + self.limits.limit_margin):
                    excess = max(lim.lower - value, value - lim.upper)
                    self._beyond.add(stamp_ns, excess)
                    self._beyond_joints.add(name)
                    fired.append('motion.joint_limit')
        self.trajectory.add(stamp_ns, q)
        last = self._last
        self._last = (stamp_ns, q)
        if last is None or stamp_ns <= last[0]:
            return fired
        dt = (stamp_ns - last[0]) / 1e9
        speed = [(a - b) / dt for a, b in zip(q, last[1], strict=True)]
        self._check_jump(stamp_ns, speed, fired)
        # Idle time and stuck encoders live on second scales: judged every few samples, over that span.
        self._since_still_check += 1
        if self._still_from is None:
            self._still_from = (last[0], last[1])
        if self._since_still_check >= _STILL_EVERY:
            t0, q0 = self._still_from
            span = (stamp_ns - t0) / 1e9
            self._check_still(stamp_ns, [(a - b) / span for a, b in zip(q, q0, strict=True)], q, q0, t0)
            self._still_from, self._since_still_check = (stamp_ns, q), 0
        return fired

    def _check_jump(self, stamp_ns: int, speed: list[float], fired: list[str]) -> None:
        previous, self._last_speed = self._last_speed, speed
        if previous is None:
            return
        change = max(abs(a - b) for a, b in zip(speed, previous, strict=True))
        self._speed_changes.append(change)
        if len(self._speed_changes) >= 200:
            self._typical_change = float(np.median(self._speed_changes))
            self._speed_changes = self._speed_changes[-100:]
        limit = max(self.limits.min_velocity_jump, self.limits.velocity_jump_sigmas * self._typical_change)
        if self._typical_change > 0 and change > limit:
            self._jumps.add(stamp_ns, change)
            fired.append('motion.velocity_jump')

    def _check_still(self, stamp_ns: int, speed: list[float], q: list[float], previous: list[float],
                     since_ns: int) -> None:
        """Over the span since_ns..stamp_ns: did the arm move, did each joint's reading change at all?"""
        moving = [abs(s) > self.limits.idle_speed for s in speed]
        if any(moving):
            if self._still_since is not None:
                self._close_idle(stamp_ns)
            self._still_since = None
        elif self._still_since is None:
            self._still_since = since_ns
        stuck_ns = self.limits.stuck_after_s * 1e9
        for i, name in enumerate(self.names):
            if q[i] != previous[i]:
                self._same_since[i] = None
                continue
            since = self._same_since[i]
            if since is None:
                self._same_since[i] = since_ns
            elif stamp_ns - since > stuck_ns and any(m for j, m in enumerate(moving) if j != i):
                self._stuck.setdefault(name, Ranges()).add(since, (stamp_ns - since) / 1e9, end_ns=stamp_ns)

    def _close_idle(self, end_ns: int) -> None:
        since = self._still_since
        if since is not None and end_ns - since > self.limits.idle_after_s * 1e9:
            self._idle.add(since, (end_ns - since) / 1e9, end_ns=end_ns)
            self.idle_ns += end_ns - since

    def smoothness(self) -> float | None:
        """Log dimensionless jerk of the joint-space speed profile over the moving part of the episode
        (-ln of T^3 / v_peak^2 x integral of jerk^2): higher (closer to 0) is smoother; None if it never moved."""
        times, rows = self.trajectory.arrays()
        if len(times) < 11:
            return None
        # The speed profile from the kept (decimated) trajectory: the same shape at any episode length.
        t = (times[1:] - times[0]) / 1e9
        v = np.linalg.norm(np.diff(rows, axis=0), axis=1) / np.maximum(np.diff(times) / 1e9, 1e-9)
        # Resample onto an even grid at most 100 Hz, and low-pass lightly, so encoder quantization does not read
        # as jerk.
        n = int(min(len(t), max(10, t[-1] * 100)))
        grid = np.linspace(0.0, t[-1], n)
        v = np.interp(grid, t, v)
        k = max(1, n // 200)
        v = np.convolve(v, np.ones(2 * k + 1) / (2 * k + 1), mode='same')
        peak = float(v.max())
        moving = np.nonzero(v > 0.05 * peak)[0] if peak > 0 else np.array([], dtype=int)
        if peak <= self.limits.idle_speed or len(moving) < 10:
            return None
        a, b = moving[0], moving[-1] + 1
        dt = grid[1] - grid[0]
        jerk = np.gradient(np.gradient(v[a:b], dt), dt)
        duration = grid[b - 1] - grid[a]
        integral = float(np.sum(jerk ** 2) * dt)
        if integral <= 0 or duration <= 0:
            return None
        value = duration * duration * duration / (peak * peak) * integral  # `**` on a float can raise OverflowError
        return -math.log(value) if 0 < value < math.inf else None

    def findings(self) -> list[Finding]:
        if self._still_since is not None and self.last_ns is not None:
            self._close_idle(self.last_ns)
            self._still_since = None
        out: list[Finding] = []
        topic = self.topic
        if self._nan:
            out.append(self._nan.finding('motion.nan', ERROR, topic, f'{topic}: NaN/Inf positions in '
                                         f'{self._nan.count} sample(s) ({", ".join(sorted(self._nan_joints))})', 0.0))
        if self._beyond:
            out.append(self._beyond.finding('motion.joint_limit', ERROR, topic, f'{topic}: '
                                            f'{", ".join(sorted(self._beyond_joints))} beyond the URDF limits by up '
                                            f'to {self._beyond.worst:.3g}', self.limits.limit_margin))
        if self._jumps:
            out.append(self._jumps.finding('motion.velocity_jump', WARN, topic, f'{topic}: joint speed jumped by up '
                                           f'to {self._jumps.worst:.3g} in one sample ({self._jumps.count} time(s))',
                                           max(self.limits.min_velocity_jump,
                                               self.limits.velocity_jump_sigmas * self._typical_change)))
        for name, ranges in sorted(self._stuck.items()):
            out.append(ranges.finding('motion.stuck_joint', WARN, topic, f'{name} reported the same value for '
                                      f'{ranges.worst:.1f} s while other joints moved (a dead encoder?)',
                                      self.limits.stuck_after_s))
        if self._idle:
            out.append(self._idle.finding('motion.idle', WARN, topic, f'the arm stood still for '
                                          f'{self.idle_ns / 1e9:.1f} s in {len(self._idle.items)} stretch(es)',
                                          self.limits.idle_after_s))
        return out
