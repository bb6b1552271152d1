"""A scripted person doing pick-and-place: aims by eye at the object, hesitates, trembles, and sometimes fumbles.

The operator decides from what a person could see (hand and object poses, whether the fingers closed on
nothing, whether the object fell); it never decides the ground truth, which the cell reads from physics.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ros_robodata.sim.outcome_plan import FAILURE, MISS, SLIP, EpisodePlan
from ros_robodata.sim.scene import FINGER_CLOSED, FINGER_OPEN, MAX_GRIP_N, TABLE_TOP, SceneParams
from ros_robodata.sim.tremor import Tremor

CONTROL_DT = 0.01  # the operator acts at 100 Hz (the command stream's rate)


@dataclass
class Observation:
    """What the operator sees: TCP position and wrist yaw, finger opening, and the object's pose."""

    t: float
    tcp: np.ndarray
    yaw: float
    finger: float
    obj: np.ndarray
    obj_yaw: float


@dataclass
class Command:
    """End-effector velocity (x, y, z m/s; yaw rad/s) and gripper target with effort fraction 0..1."""

    velocity: np.ndarray
    gripper_position: float
    gripper_effort: float


def _wrap_quarter(yaw: float) -> float:
    """A box looks the same every 90 degrees: pick the nearest equivalent yaw."""
    return float((yaw + np.pi / 4) % (np.pi / 2) - np.pi / 4)


class ScriptedOperator:
    """State machine at 100 Hz: approach, descend, close, lift, transport, lower, open, retreat (and re-grasps)."""

    def __init__(self, plan: EpisodePlan, scene: SceneParams, rng: np.random.Generator) -> None:
        self.plan = plan
        self.scene = scene
        self._rng = rng
        self._tremor = Tremor(rng)
        self._speed = float(rng.uniform(0.12, 0.2))
        self._accel = float(rng.uniform(0.5, 0.9))
        self._mishap = plan.mishap
        self._vel = np.zeros(4)
        self._grip = FINGER_OPEN
        self._effort = 1.0
        self._state = 'start'
        self._goal = np.zeros(4)
        self._move_speed = self._speed
        self._entered = 0.0
        self._pause_until = 0.0
        self._hold_dz = 0.0
        self._transport_start = np.zeros(3)
        self.attempts = 0
        self.done_at: float | None = None

    @property
    def state(self) -> str:
        return self._state

    @property
    def done(self) -> bool:
        return self.done_at is not None

    # --- helpers -----------------------------------------------------------------------------------
    def _grasp_z(self) -> float:
        return TABLE_TOP + max(self.scene.target.half_height, 0.024)

    def _above_z(self) -> float:
        return TABLE_TOP + 2 * self.scene.target.half_height + 0.08

    def _enter(self, state: str, obs: Observation, goal: np.ndarray | None = None, hesitate: float = 0.3) -> None:
        self._state = state
        self._entered = obs.t
        if goal is not None:
            self._goal = goal
            self._move_speed = self._speed * float(self._rng.uniform(0.75, 1.25))
        if self._rng.random() < hesitate:
            self._pause_until = obs.t + float(self._rng.uniform(0.15, 0.6))

    def _pose(self, obs: Observation) -> np.ndarray:
        return np.array([*obs.tcp, obs.yaw])

    def _steer(self, obs: Observation) -> bool:
        """Bell-shaped approach to the goal with limited acceleration; True once there."""
        err = self._goal - self._pose(obs)
        dist = float(np.linalg.norm(err[:3]))
        want = np.zeros(4)
        if dist > 1e-6:
            speed = min(self._move_speed, np.sqrt(2 * self._accel * dist) * 0.8, 3.0 * dist)
            want[:3] = err[:3] / dist * speed
        want[3] = float(np.clip(3.0 * err[3], -1.0, 1.0))
        step = self._accel * CONTROL_DT
        self._vel[:3] += np.clip(want[:3] - self._vel[:3], -step, step)
        self._vel[3] = want[3]
        return (dist < 0.004 and abs(err[3]) < 0.03) or obs.t - self._entered > 6.0

    def _object_goal(self, obs: Observation, z: float) -> np.ndarray:
        yaw = _wrap_quarter(obs.obj_yaw)
        xy = obs.obj[:2].copy()
        if self._mishap == MISS:
            # Misjudged depth: aim beside the object along the gripper's x axis, so the fingers close on air.
            xy += (self.scene.target.half_size[0] + 0.03) * np.array([np.cos(yaw), np.sin(yaw)])
        return np.array([xy[0], xy[1], z, yaw])

    def _weak_effort(self) -> float:
        """A grip too light to carry the object (a third of what friction needs), for a slip."""
        t = self.scene.target
        needed = t.mass * 9.81 / (2 * t.friction)
        return float(min(1.0, needed / 3 / MAX_GRIP_N))

    def _after_mishap(self, obs: Observation) -> None:
        """A fumble: open and back off; then either try again (recovery plan) or give up (failure plan)."""
        self._mishap = None
        self._grip, self._effort = FINGER_OPEN, 1.0
        up = self._pose(obs)
        up[2] = self._above_z() + 0.03
        self._enter('back_off', obs, up, hesitate=1.0)

    # --- the script --------------------------------------------------------------------------------
    def act(self, obs: Observation) -> Command:
        """One 100 Hz tick: the command to send now."""
        if obs.t < self._pause_until or self.done:
            self._vel *= 0.8
        else:
            self._tick(obs)
        vel = self._vel + self._tremor.velocity(obs.t) * np.array([1.0, 1.0, 1.0, 0.0])
        return Command(vel.copy(), self._grip, self._effort)

    def _tick(self, obs: Observation) -> None:
        s = self._state
        if s == 'start':
            self.attempts += 1
            self._enter('approach', obs, self._object_goal(obs, self._above_z()), hesitate=0.8)
        elif s == 'approach':
            if self._steer(obs):
                self._enter('descend', obs, self._object_goal(obs, self._grasp_z()))
        elif s == 'descend':
            if self._steer(obs):
                self._vel[:] = 0
                self._grip, self._effort = FINGER_CLOSED, 1.0
                self._enter('close', obs, hesitate=0.2)
        elif s == 'close':
            self._vel[:] = 0
            if obs.t - self._entered > 0.6:
                if obs.finger < 0.004:  # closed on nothing
                    self._after_mishap(obs)
                else:
                    self._hold_dz = float(obs.tcp[2] - obs.obj[2])
                    goal = self._pose(obs)
                    goal[2] = self._grasp_z() + 0.1
                    self._enter('lift', obs, goal)
        elif s == 'lift':
            if self._steer(obs):
                zx, zy = self.scene.zone_center
                self._transport_start = obs.tcp.copy()
                self._enter('transport', obs, np.array([zx, zy, self._goal[2], self._goal[3]]))
        elif s == 'transport':
            arrived = self._steer(obs)
            if self._mishap == SLIP:
                total = np.linalg.norm(self._goal[:2] - self._transport_start[:2])
                if np.linalg.norm(obs.tcp[:2] - self._transport_start[:2]) > 0.3 * total:
                    self._effort = self._weak_effort()
            if (obs.tcp[2] - obs.obj[2]) - self._hold_dz > 0.02:  # the object fell out
                self._after_mishap(obs)
            elif arrived:
                goal = self._pose(obs)
                goal[2] = self._grasp_z() + 0.004
                self._enter('lower', obs, goal)
        elif s == 'lower':
            if self._steer(obs):
                self._vel[:] = 0
                self._grip = FINGER_OPEN
                self._enter('open', obs, hesitate=0.2)
        elif s == 'open':
            if obs.t - self._entered > 0.5:
                goal = self._pose(obs)
                goal[2] = self._above_z() + 0.05
                self._enter('retreat', obs, goal)
        elif s == 'retreat':
            if self._steer(obs):
                self._finish(obs)
        elif s == 'back_off' and self._steer(obs):
            if self.plan.outcome == FAILURE:
                self._finish(obs)
            else:
                self._state = 'start'

    def _finish(self, obs: Observation) -> None:
        self._vel[:] = 0
        self._state = 'done'
        self.done_at = obs.t
