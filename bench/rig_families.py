"""Two test rigs built unlike the simulated cell (ros_robodata/sim, MuJoCo physics, 100 Hz effort-reporting
parallel gripper in metres), for the segmenter's accuracy beyond the rig it was first written on.

Each is a small kinematic model stepped at 1 kHz with its own ground truth, sampled the way its driver would
publish it, then fed through the Segmenter exactly as a bag would be (profile, topics, stamp order):

- `leader_follower`: a low-cost arm's position-controlled gripper that follows a leader arm (LeRobot-style):
  30 Hz, 0..100 units (0 closed), no effort, velocity zero-filled or absent, the leader's gripper as the command
  channel (a JointState). Operators close in stages (a pause on the way), miss, and let objects slip (the
  fingers then close on nothing, the leader still closed).
- `compliant`: a compliant gripper in radians that closes towards larger values (0 open, 0.8 closed), 100 Hz with
  a correct velocity and no effort, a wrist F/T at 250 Hz and a std_msgs/Float64 trigger (0 open, 1 closed) at
  50 Hz. Place-downs unload the wrist 30-60 ms before the fingers open; slips drop the load while the trigger
  stays closed; bumps knock the wrist while nothing is held.

Truth kinds are the simulated cell's (closing, contact_begin, secured, lift_off, released, contact_end, missed,
dropped) plus `bump` (a collision).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ros_robodata.events.segmenter import COMMAND, GRIPPER, WRENCH, Segmenter
from ros_robodata.profile import Profile, profile_from_dict
from ros_robodata.signals.samples import GripperReading, WrenchReading

SCENARIOS = ('success', 'staged', 'miss', 'slip', 'bump')


@dataclass
class RigEpisode:
    family: str
    seed: int
    scenario: str
    gripper: list[GripperReading] = field(default_factory=list)
    command: list[GripperReading] = field(default_factory=list)
    wrench: list[WrenchReading] = field(default_factory=list)
    truth: list[tuple[int, str]] = field(default_factory=list)


def _profile(family: str) -> Profile:
    """The rig as its team would describe it."""
    if family == 'leader_follower':
        data: dict[str, Any] = {
            'robot': {'name': 'so_arm_like'},
            'topics': {
                'joint_states': {'topic': '/follower/joint_states', 'type': 'sensor_msgs/msg/JointState'},
                'actions': {'topic': '/leader/joint_states', 'type': 'sensor_msgs/msg/JointState'},
                'gripper': {'topic': '/follower/joint_states', 'type': 'sensor_msgs/msg/JointState',
                            'joint': 'gripper', 'open_position': 100.0, 'closed_position': 0.0,
                            'command': {'topic': '/leader/joint_states', 'joint': 'gripper',
                                        'open_position': 100.0, 'closed_position': 0.0}}}}
    else:
        data = {
            'robot': {'name': 'compliant_gripper_arm'},
            'topics': {
                'gripper': {'topic': '/gripper/joint_states', 'type': 'sensor_msgs/msg/JointState',
                            'joint': 'finger', 'open_position': 0.0, 'closed_position': 0.8,
                            'command': {'topic': '/gripper/trigger', 'open_position': 0.0, 'closed_position': 1.0}},
                'wrench': {'topic': '/ft/wrench', 'type': 'geometry_msgs/msg/WrenchStamped'},
                'extra': [{'topic': '/gripper/trigger', 'type': 'std_msgs/msg/Float64'}]}}
    return profile_from_dict(data, source=f'<{family}>')


def profile(family: str, *, command: bool = True) -> Profile:
    """The family's robot profile; `command=False` leaves the command channel out (the fingers alone)."""
    data = _profile(family).to_dict()
    if not command:
        data['topics']['gripper'].pop('command', None)
    return profile_from_dict(data, source=f'<{family}{"" if command else ", no command"}>')


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


class _Script:
    """The operator's command over time: piecewise ramps in the command's own units."""

    def __init__(self, start: float) -> None:
        self.points: list[tuple[float, float]] = [(0.0, start)]

    def ramp(self, t: float, to: float, speed: float) -> float:
        """Hold the last value until t, then move to `to` at `speed` per second; returns when it arrives."""
        last = self.points[-1][1]
        self.points.append((t, last))
        end = t + abs(to - last) / speed
        self.points.append((end, to))
        return end

    def at(self, t: np.ndarray) -> np.ndarray:
        times, values = zip(*self.points, strict=True)
        return np.interp(t, times, values)


def _follow(cmd: np.ndarray, dt: float, tau: float, vmax: float, blocked: np.ndarray, direction: float,
            start: float) -> np.ndarray:
    """A position-controlled finger: first-order lag with a speed limit, stopped by the object (`blocked`: the
    position the fingers cannot pass, NaN when nothing is between them; `direction` +1 when closing increases
    the position). A little compliance: pressing harder squeezes 2% of the remaining command further."""
    x = np.empty_like(cmd)
    pos = start
    for i, c in enumerate(cmd):
        v = max(-vmax, min(vmax, (c - pos) / tau))
        pos += v * dt
        b = blocked[i]
        if not math.isnan(b):
            stop = b + 0.02 * (c - b) if (c - b) * direction > 0 else b
            if (pos - stop) * direction > 0:
                pos = stop
        x[i] = pos
    return x


def _onsets(x: np.ndarray, t: np.ndarray, direction: float, threshold: float) -> list[float]:
    """Where the fingers start moving in `direction` (after standing still) by more than threshold per s."""
    v = np.gradient(x, t)
    moving = (v * direction) > threshold
    starts = np.flatnonzero(moving[1:] & ~moving[:-1]) + 1
    return [float(t[i]) for i in starts]


def leader_follower(seed: int, scenario: str, *, pause_s: float | None = None) -> RigEpisode:
    """`pause_s`: the staged close's pause, instead of a random 0.3-0.9 s."""
    rng = np.random.default_rng([1, seed, SCENARIOS.index(scenario)])
    dt = 0.001
    duration = 9.0
    t = np.arange(0.0, duration, dt)
    open_at = rng.uniform(60.0, 95.0)
    width = rng.uniform(20.0, 45.0) if scenario != 'miss' else math.nan
    closed_at = rng.uniform(0.0, 4.0)
    script = _Script(open_at)
    close_t = rng.uniform(1.0, 2.5)
    speed = rng.uniform(80.0, 200.0)
    if scenario == 'staged' or rng.random() < 0.4:
        mid = (width if not math.isnan(width) else 15.0) + rng.uniform(10.0, 20.0)
        mid = min(mid, open_at - 10.0)
        pause_from = script.ramp(close_t, mid, speed)
        pause = rng.uniform(0.3, 0.9)
        closed_t = script.ramp(pause_from + (pause if pause_s is None else pause_s), closed_at, speed)
    else:
        closed_t = script.ramp(close_t, closed_at, speed)
    hold = rng.uniform(1.5, 3.0)
    slip_t = closed_t + rng.uniform(0.6, 1.2) if scenario == 'slip' else math.inf
    script.ramp(closed_t + hold + (1.0 if scenario == 'slip' else 0.0), open_at, rng.uniform(100.0, 250.0))
    cmd = script.at(t)
    blocked = np.where(t < slip_t, width, math.nan)
    x = _follow(cmd, dt, 0.07, 180.0, blocked, -1.0, open_at)
    truth = _finger_truth(t, x, cmd, width, slip_t, closing=-1.0, stroke=100.0, closed_end=0.0)
    ep = RigEpisode('leader_follower', seed, scenario, truth=truth)
    zero_filled = seed % 2 == 0  # half the episodes carry a velocity array of zeros, the rest none at all
    stamps = np.arange(0.02, duration, 1 / 30)
    stamps = stamps + rng.normal(0.0, 0.002, stamps.size)
    for s in stamps:
        i = min(int(s / dt), t.size - 1)
        stamp = int(s * 1e9)
        if rng.random() >= 0.02:  # 2% of the follower's samples are lost
            pos = round(x[i] + rng.normal(0.0, 0.15), 1)
            ep.gripper.append(GripperReading(stamp, pos, 0.0 if zero_filled else math.nan, math.nan))
        ep.command.append(GripperReading(stamp + 1000, round(cmd[i] + rng.normal(0.0, 0.1), 1)))
    return ep


def _finger_truth(t: np.ndarray, x: np.ndarray, cmd: np.ndarray, width: float, slip_t: float, *, closing: float,
                  stroke: float, closed_end: float) -> list[tuple[int, str]]:
    """Physics truth from the fingers' path: closing onsets, contact with the object, secured, released, missed
    or dropped."""
    out: list[tuple[int, str]] = []
    moving = 0.05 * stroke  # per second: what counts as the fingers moving in the model's noiseless path
    closes = _onsets(x, t, closing, moving)
    if closes:
        out.append((_ns(closes[0]), 'closing'))
    margin = 0.05 * stroke
    if math.isnan(width):
        reach = np.flatnonzero(np.abs(x - closed_end) <= margin)
        if reach.size:
            out.append((_ns(t[reach[0]]), 'missed'))
        return out
    at_object = np.flatnonzero((x - width) * closing >= -1e-6 * stroke)
    if at_object.size:
        contact = float(t[at_object[0]])
        out += [(_ns(contact), 'contact_begin'), (_ns(contact), 'secured')]
    if math.isfinite(slip_t):
        out += [(_ns(slip_t), 'dropped')]
        return out
    if at_object.size:  # released: the fingers leave the object (past the squeeze their compliance gave)
        off = np.flatnonzero(((x - width) * closing < -0.005 * stroke) & (t > t[at_object[0]]))
        if off.size:
            out += [(_ns(t[off[0]]), 'released'), (_ns(t[off[0]]), 'contact_end')]
    return out


def compliant(seed: int, scenario: str) -> RigEpisode:
    rng = np.random.default_rng([2, seed, SCENARIOS.index(scenario)])
    dt = 0.001
    duration = 10.0
    t = np.arange(0.0, duration, dt)
    width = rng.uniform(0.3, 0.6) if scenario != 'miss' else math.nan
    script = _Script(0.0)  # the trigger: 0 open, 1 closed
    close_t = rng.uniform(1.2, 2.5)
    closed_t = script.ramp(close_t, 1.0, rng.uniform(4.0, 10.0))
    lift_t = closed_t + rng.uniform(0.3, 0.8)
    place_t = lift_t + rng.uniform(1.5, 3.0)
    unload_s = rng.uniform(0.02, 0.04)
    slip_t = lift_t + rng.uniform(0.6, 1.2) if scenario == 'slip' else math.inf
    open_cmd_t = place_t + unload_s + rng.uniform(0.0, 0.02) if scenario != 'slip' else slip_t + rng.uniform(0.6, 1.0)
    script.ramp(open_cmd_t, 0.0, rng.uniform(6.0, 12.0))
    trigger = script.at(t)
    cmd = 0.8 * trigger  # the fingers' set point in radians
    blocked = np.where(t < slip_t, width, math.nan)
    x = _follow(cmd, dt, 0.03, 2.5, blocked, 1.0, 0.0)
    truth = _finger_truth(t, x, cmd, width, slip_t, closing=1.0, stroke=0.8, closed_end=0.8)
    ep = RigEpisode('compliant', seed, scenario, truth=truth)
    # The wrist: the gripper's own weight, the arm's accelerations, the object's weight once lifted.
    mass = rng.uniform(0.25, 0.8)
    load = np.zeros_like(t)
    if not math.isnan(width) and scenario != 'miss':
        load += 9.81 * mass * np.clip((t - lift_t) / 0.05, 0.0, 1.0)
        if math.isfinite(slip_t):
            load *= np.clip(1.0 - (t - slip_t) / 0.01, 0.0, 1.0)
        else:
            load *= np.clip(1.0 - (t - place_t) / unload_s, 0.0, 1.0)
        ep.truth.append((_ns(lift_t), 'lift_off'))
    phase = rng.uniform(0, 2 * math.pi, 3)
    motion = 0.3 * np.stack([np.sin(2 * math.pi * 0.7 * t + phase[k]) for k in range(3)], axis=1)
    force = np.array([0.5, -0.3, -6.0]) + motion
    force[:, 2] -= load
    if scenario == 'bump':
        bump_t = rng.uniform(0.4, close_t - 0.4)
        length = rng.uniform(0.04, 0.15)
        size = rng.uniform(12.0, 40.0)
        direction = rng.normal(size=3)
        direction /= np.linalg.norm(direction)
        inside = (t >= bump_t) & (t < bump_t + length)
        force[inside] += size * np.outer(np.sin(math.pi * (t[inside] - bump_t) / length), direction)
        ep.truth.append((_ns(bump_t), 'bump'))
    for s in np.arange(0.004, duration, 1 / 250):
        i = min(int(s / dt), t.size - 1)
        f = force[i] + rng.normal(0.0, 0.1, 3)
        ep.wrench.append(WrenchReading(_ns(s), (float(f[0]), float(f[1]), float(f[2])), (0.0, 0.0, 0.0), 'ft'))
    v = np.gradient(x, t)
    for s in np.arange(0.01, duration, 1 / 100):
        i = min(int(s / dt), t.size - 1)
        if rng.random() >= 0.02:
            ep.gripper.append(GripperReading(_ns(s), float(x[i] + rng.normal(0.0, 0.002)),
                                             float(v[i] + rng.normal(0.0, 0.02)), math.nan))
    for s in np.arange(0.015, duration, 1 / 50):
        i = min(int(s / dt), t.size - 1)
        ep.command.append(GripperReading(_ns(s), float(trigger[i])))
    return ep


FAMILIES = {'leader_follower': leader_follower, 'compliant': compliant}


def segment(ep: RigEpisode, *, use_gripper: bool = True, use_wrench: bool = True, command: bool = True
            ) -> Segmenter:
    """The episode through the Segmenter as a bag would go (its rig's profile, roles, stamp order), finished."""
    seg = Segmenter(profile(ep.family, command=command), use_gripper=use_gripper, use_wrench=use_wrench)
    feed = sorted([(r.stamp_ns, 0, GRIPPER, r) for r in ep.gripper] + [(r.stamp_ns, 1, COMMAND, r) for r in ep.command]
                  + [(r.stamp_ns, 2, WRENCH, r) for r in ep.wrench], key=lambda item: item[:2])
    for stamp, _, role, reading in feed:
        if role in seg.sources:
            seg.add(role, reading, stamp)
    seg.finish()
    return seg
