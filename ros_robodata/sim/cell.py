"""The simulated teleop cell: physics at 1 kHz, a scripted operator, sensor samples at the robot's real rates.

Simulated time only; a node paces it. Use:

    with SimCell(seed=3, episode_index=3) as cell:
        while not cell.finished:
            for s in cell.step_until(cell.time + 0.01):   # or the sim time the node's clock says
                publish(s.stream, s.stamp, s.data)        # stamps are episode-relative sim seconds
        truth = cell.ground_truth()

`step_until` returns every sample that fell due up to that time, ordered by stamp, each stream on its own
fixed grid (sample n of a stream at rate r is taken at the first physics step at or after n / r).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import mujoco
import numpy as np

from ros_robodata.sim import sim_samples as S
from ros_robodata.sim.faults import Fault, FaultInjector
from ros_robodata.sim.operator import CONTROL_DT, Command, Observation, ScriptedOperator
from ros_robodata.sim.outcome_plan import plan_for
from ros_robodata.sim.scene import (
    ARM_JOINTS,
    FINGER_JOINT,
    FINGER_OPEN,
    MAX_GRIP_N,
    TABLE_TOP,
    TARGET,
)
from ros_robodata.sim.scene_assets import CAMERAS as _CAMERAS
from ros_robodata.sim.scene_assets import SceneAssets, prepare_scene
from ros_robodata.sim.sensors import Lidar
from ros_robodata.sim.truth import GroundTruth, Reading

MODES = ('teleop', 'kinesthetic')
_TRUTH_DT = 0.002
_HOME = np.array([0.35, 0.0, 0.75, 0.0])
# Kinesthetic teaching: the person's hand as a spring-damper on the gantry axes (x, y, z); the light wrist keeps
# its servos, because an explicit hand force at 500 Hz is unstable on its tiny inertia.
_HAND_KP = np.array([2000.0, 2000.0, 2000.0])
_HAND_KD = np.array([150.0, 150.0, 150.0])


# Going home between episodes, as a person resets the arm: no faster than this, and gently.
_HOME_SPEED = 0.15
_HOME_ACCEL = 0.5
_AT_HOME_M = 0.003
PHASES = ('hold', 'script', 'home')  # waiting for the start key, acting the episode out, going home


@dataclass(frozen=True)
class ArmState:
    """The robot where one cell ended, for the next to start from (a rig does not teleport): every joint that is
    not a free object (the fingers' mirror joint too), by name, and what its servos were told."""

    joints: dict[str, tuple[float, float]]  # name -> (position, velocity)
    controls: dict[str, float]  # actuator name -> setpoint
    target: np.ndarray  # the arm servos' setpoint (x, y, z, yaw): the arm sags below it under gravity


def _yaw(quat: np.ndarray) -> float:
    w, x, y, z = quat
    return float(math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z)))


class SimCell:
    """One episode of the cell. `streams` limits what is produced (rendering is the costly part)."""

    def __init__(
        self,
        seed: int,
        episode_index: int = 0,
        mode: str = 'teleop',
        faults: list[Fault] | None = None,
        *,
        streams: Iterable[str] | None = None,
        rates: dict[str, float] | None = None,
        image_size: tuple[int, int] = (320, 240),
        max_duration_s: float = 45.0,
        settle_s: float = 0.5,
        timestep: float = 0.001,
        start_state: ArmState | None = None,
        wait_for_begin: bool = False,
        assets: SceneAssets | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f'mode {mode!r} is not one of {", ".join(MODES)}')
        self.seed, self.episode_index, self.mode = seed, episode_index, mode
        _, rng_plan, rng_op, rng_fault, rng_sensor, _ = np.random.default_rng(seed).spawn(6)
        if assets is None or assets.seed != seed or assets.model.opt.timestep != timestep:
            assets = prepare_scene(seed, streams=streams, image_size=image_size, timestep=timestep)
        self.scene = assets.scene
        self.plan = plan_for(episode_index, rng_plan)
        self.operator = ScriptedOperator(self.plan, self.scene, rng_op)
        self.rates = {**S.DEFAULT_RATES_HZ, **(rates or {})}
        self.streams = list(self.rates) if streams is None else [s for s in streams if s in self.rates]
        self._faults = FaultInjector(faults, rng_fault)
        self.max_duration_s, self.settle_s = max_duration_s, settle_s

        self.model = assets.model
        self.data = mujoco.MjData(self.model)
        m, d = self.model, self.data
        self._dt = timestep
        self._arm_q = np.array([m.joint(j).qposadr[0] for j in ARM_JOINTS])
        self._arm_v = np.array([m.joint(j).dofadr[0] for j in ARM_JOINTS])
        self._finger_q = int(m.joint(FINGER_JOINT).qposadr[0])
        self._finger_v = int(m.joint(FINGER_JOINT).dofadr[0])
        self._finger_act = int(m.actuator('act_finger').id)
        obj = m.joint(f'{TARGET}_free')
        self._obj_q, self._obj_v = int(obj.qposadr[0]), int(obj.dofadr[0])
        self._obj_geom = int(m.geom(f'{TARGET}_geom').id)
        self._fingers = (int(m.geom('finger_left_geom').id), int(m.geom('finger_right_geom').id))
        self._finger_bodies = {int(m.geom_bodyid[g]) for g in self._fingers}

        mujoco.mj_forward(m, d)
        self._tcp_z0 = float(d.site('tcp').xpos[2])
        self._target = _HOME.copy()
        d.qpos[self._arm_q[:4]] = self._joint_goal(self._target)
        d.qpos[self._finger_q] = FINGER_OPEN
        d.ctrl[:4] = d.qpos[self._arm_q[:4]]
        d.ctrl[self._finger_act] = FINGER_OPEN
        if start_state is not None:  # where the previous episode left the robot
            for name, (position, velocity) in start_state.joints.items():
                joint = m.joint(name)
                d.qpos[joint.qposadr[0]], d.qvel[joint.dofadr[0]] = position, velocity
            for name, value in start_state.controls.items():
                d.ctrl[m.actuator(name).id] = value
            self._target = start_state.target.copy()
        if mode == 'kinesthetic':  # the gantry is back-drivable: its position servos are off, the hand moves it
            m.actuator_gainprm[:3, 0] = 0.0
            m.actuator_biasprm[:3, :3] = 0.0
        mujoco.mj_forward(m, d)
        self.phase = 'hold' if wait_for_begin else 'script'
        self._begun_at: float | None = None if wait_for_begin else 0.0
        self._home_vel = np.zeros(4)

        self._cmd = Command(np.zeros(4), FINGER_OPEN, 1.0)
        self._truth = GroundTruth(float(d.qpos[self._obj_q + 2]), self.scene.zone_center, self.scene.zone_radius)
        self._cameras = assets.cameras if any(s in _CAMERAS for s in self.streams) else None
        if self._cameras is None:
            assets.close()
        self._lidar = Lidar(m, d, rng_sensor) if S.LIDAR_SCENE in self.streams else None
        self._step = 0
        self._counts = dict.fromkeys(self.streams, 0)
        self._next_ctrl = 0
        self._next_truth = 0

    # --- timing ------------------------------------------------------------------------------------
    @property
    def timestep(self) -> float:
        """Physics step (s)."""
        return self._dt

    @property
    def time(self) -> float:
        """Sim seconds since the episode began."""
        return self._step * self._dt

    @property
    def finished(self) -> bool:
        """The operator is done and things settled, or the episode ran too long (never before it began)."""
        if self._begun_at is None:
            return False
        done_at = self.operator.done_at
        return (done_at is not None and self.time >= done_at + self.settle_s) or \
            self.time - self._begun_at >= self.max_duration_s

    def begin(self) -> None:
        """The operator starts acting the episode out (a cell made with wait_for_begin holds until then)."""
        if self.phase == 'hold':
            self.phase, self._begun_at = 'script', self.time

    def go_home(self) -> None:
        """The episode is over: the arm goes back to its home pose with the fingers open."""
        self.phase = 'home'

    @property
    def at_home(self) -> bool:
        d = self.data
        pose = np.array([*d.site('tcp').xpos, d.qpos[self._arm_q[3]]])
        still = float(np.linalg.norm(d.qvel[self._arm_v[:3]])) < 0.005
        return bool(np.linalg.norm(pose - _HOME) < _AT_HOME_M and still)

    def arm_state(self) -> ArmState:
        d = self.data
        m = self.model
        joints = {m.joint(j).name: (float(d.qpos[m.jnt_qposadr[j]]), float(d.qvel[m.jnt_dofadr[j]]))
                  for j in range(m.njnt) if m.jnt_type[j] != mujoco.mjtJoint.mjJNT_FREE}
        controls = {m.actuator(i).name: float(d.ctrl[i]) for i in range(m.nu)}
        return ArmState(joints, controls, self._target.copy())

    def _steps(self, t: float) -> int:
        return math.ceil(t / self._dt - 1e-6)

    def step_until(self, t_s: float) -> list[S.Sample]:
        """Advance physics to sim time t_s; the samples that fell due on the way (faults applied)."""
        end = self._steps(t_s)
        out: list[S.Sample] = []
        while self._step <= end:
            due = [s for s in self.streams if self._steps(self._counts[s] / self.rates[s]) <= self._step]
            if self._next_ctrl <= self._step:
                self._control()
                self._next_ctrl = self._step + self._steps(CONTROL_DT)
            if self._next_truth <= self._step:
                self._observe_truth()
                if self.mode == 'kinesthetic':
                    self._hand_force()
                self._next_truth = self._step + self._steps(_TRUTH_DT)
            for stream in due:
                sample = S.Sample(stream, round(self.time, 6), self._measure(stream), self._counts[stream])
                self._counts[stream] += 1
                published = self._faults.apply(sample)
                if published is not None:
                    out.append(published)
            if self._step == end:
                break
            nxt = min(
                [self._next_ctrl, self._next_truth, end]
                + [self._steps(self._counts[s] / self.rates[s]) for s in self.streams]
            )
            n = max(1, nxt - self._step)
            mujoco.mj_step(self.model, self.data, nstep=n)
            self._step += n
        out.sort(key=lambda s: s.stamp)
        return out

    # --- the operator's side -----------------------------------------------------------------------
    def _observe(self) -> Observation:
        d = self.data
        q = d.qpos[self._arm_q]
        tcp = d.site('tcp').xpos.copy()
        obj = d.qpos[self._obj_q : self._obj_q + 7]
        return Observation(self.time, tcp, float(q[3]), float(d.qpos[self._finger_q]), obj[:3].copy(), _yaw(obj[3:]))

    def _joint_goal(self, target: np.ndarray) -> np.ndarray:
        return np.array([target[0], target[1], target[2] - self._tcp_z0, target[3]])

    def _control(self) -> None:
        """100 Hz: the operator's command moves the setpoint (teleop device or the person's hand)."""
        obs = self._observe()
        self._cmd = self.operator.act(obs) if self.phase == 'script' else self._homing(obs)
        actual = np.array([*obs.tcp, obs.yaw])
        self._target = np.clip(self._target + self._cmd.velocity * CONTROL_DT, actual - 0.05, actual + 0.05)
        d = self.data
        d.ctrl[:4] = self._joint_goal(self._target)
        d.ctrl[4:6] = 0.0
        d.ctrl[self._finger_act] = self._cmd.gripper_position
        f = max(0.05, self._cmd.gripper_effort) * MAX_GRIP_N
        self.model.actuator_forcerange[self._finger_act] = (-f, f)

    def _homing(self, obs: Observation) -> Command:
        """Towards the home pose with limited speed and acceleration, fingers open (also while holding)."""
        err = _HOME - np.array([*obs.tcp, obs.yaw])
        dist = float(np.linalg.norm(err[:3]))
        want = np.zeros(4)
        if dist > 1e-6:
            want[:3] = err[:3] / dist * min(_HOME_SPEED, np.sqrt(2 * _HOME_ACCEL * dist) * 0.8, 3.0 * dist)
        want[3] = float(np.clip(3.0 * err[3], -1.0, 1.0))
        step = _HOME_ACCEL * CONTROL_DT
        self._home_vel[:3] += np.clip(want[:3] - self._home_vel[:3], -step, step)
        self._home_vel[3] = want[3]
        return Command(self._home_vel.copy(), FINGER_OPEN, 1.0)

    def _hand_force(self) -> None:
        d = self.data
        err = self._joint_goal(self._target)[:3] - d.qpos[self._arm_q[:3]]
        d.qfrc_applied[self._arm_v[:3]] = _HAND_KP * err - _HAND_KD * d.qvel[self._arm_v[:3]]

    # --- frames ------------------------------------------------------------------------------------
    def frame_poses(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Where the frames the cell's messages name are in `world` now: position and quaternion (x, y, z, w).
        Camera frames follow ROS's optical convention (z along the view, y down); MuJoCo's cameras look down -z."""
        d = self.data
        optical = np.diag([1.0, -1.0, -1.0])
        poses = {'base_link': (np.zeros(3), np.eye(3)), 'ft_sensor': (d.site('ft_site').xpos, d.site('ft_site').xmat)}
        for name in ('wrist', 'scene'):
            poses[f'camera_{name}'] = (d.cam(name).xpos, d.cam(name).xmat.reshape(3, 3) @ optical)
        out = {}
        for frame, (position, rotation) in poses.items():
            quat = np.zeros(4)
            mujoco.mju_mat2Quat(quat, np.ascontiguousarray(rotation, dtype=np.float64).reshape(9))
            out[frame] = (np.array(position, dtype=float), np.array([quat[1], quat[2], quat[3], quat[0]]))
        return out

    # --- physics readings --------------------------------------------------------------------------
    def _observe_truth(self) -> None:
        d = self.data
        geoms = d.contact.geom[: d.ncon]
        touching = [
            bool(
                np.any(
                    ((geoms[:, 0] == g) & (geoms[:, 1] == self._obj_geom))
                    | ((geoms[:, 1] == g) & (geoms[:, 0] == self._obj_geom))
                )
            )
            for g in self._fingers
        ]
        others = geoms[(geoms[:, 0] == self._obj_geom) | (geoms[:, 1] == self._obj_geom)].ravel()
        others = others[others != self._obj_geom]
        on_support = any(int(self.model.geom_bodyid[g]) not in self._finger_bodies for g in others)
        self._truth.update(
            Reading(
                t=self.time,
                left=touching[0],
                right=touching[1],
                finger=float(d.qpos[self._finger_q]),
                obj=d.qpos[self._obj_q : self._obj_q + 3].copy(),
                obj_vel=d.qvel[self._obj_v : self._obj_v + 3].copy(),
                tcp_vel=d.qvel[self._arm_v[:3]].copy(),
                finger_vel=float(d.qvel[self._finger_v]),
                on_support=on_support,
            )
        )

    def _measure(self, stream: str) -> S.Payload:
        d = self.data
        if stream == S.JOINT_STATES:
            effort = d.qfrc_actuator[self._arm_v] + d.qfrc_applied[self._arm_v]
            return S.JointSample(list(ARM_JOINTS), d.qpos[self._arm_q].copy(), d.qvel[self._arm_v].copy(), effort)
        if stream == S.GRIPPER:
            return S.JointSample(
                [FINGER_JOINT],
                d.qpos[[self._finger_q]].copy(),
                d.qvel[[self._finger_v]].copy(),
                d.actuator_force[[self._finger_act]].copy(),
            )
        if stream == S.WRENCH:
            return S.WrenchSample(d.sensor('ft_force').data.copy(), d.sensor('ft_torque').data.copy())
        if stream == S.COMMAND:
            v = self._cmd.velocity
            return S.CommandSample(
                v[:3].copy(),
                np.array([0.0, 0.0, v[3]]),
                self._cmd.gripper_position,
                self._cmd.gripper_effort * MAX_GRIP_N,
            )
        if stream in _CAMERAS:
            assert self._cameras is not None
            name = _CAMERAS[stream]
            return S.ImageSample(self._cameras.render(d, name), f'camera_{name}')
        assert self._lidar is not None
        return S.CloudSample(self._lidar.scan(d))

    # --- results -----------------------------------------------------------------------------------
    def ground_truth(self) -> dict:
        """The episode as the physics saw it (JSON-ready), plus the scene drawn and the faults injected."""
        t = self.scene.target
        report = self._truth.report()
        report.update(
            {
                'seed': self.seed,
                'episode_index': self.episode_index,
                'mode': self.mode,
                'duration_s': round(self.time, 4),
                'begun_s': round(self._begun_at, 4) if self._begun_at is not None else None,  # the script's start
                'object': {
                    'shape': t.shape,
                    'half_size_m': list(t.half_size),
                    'mass_kg': t.mass,
                    'friction': t.friction,
                    'start_xy': list(t.pos),
                    'yaw': t.yaw,
                },
                'zone': {
                    'center_xy': list(self.scene.zone_center),
                    'radius_m': self.scene.zone_radius,
                    'table_z': TABLE_TOP,
                },
                'script': {
                    'planned_outcome': self.plan.outcome,
                    'mishap': self.plan.mishap,
                    'attempts': self.operator.attempts,
                },
                'faults': self._faults.report(),
            }
        )
        return report

    def close(self) -> None:
        if self._cameras is not None:
            self._cameras.close()
            self._cameras = None

    def __enter__(self) -> SimCell:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
