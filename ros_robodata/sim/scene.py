"""The cell's MJCF, generated from per-episode parameters so every episode's world differs by seed."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ARM_JOINTS = ['joint1', 'joint2', 'joint3', 'joint4', 'joint5', 'joint6']
FINGER_JOINT = 'finger_joint'
FINGER_OPEN = 0.04
FINGER_CLOSED = 0.0
TABLE_TOP = 0.4
GANTRY_Z = 1.0
# TCP (midpoint of the finger pads) below the wrist when joint3 = 0: wrist offset + palm + finger.
TCP_BELOW_GANTRY = 0.14
MAX_GRIP_N = 20.0
TARGET = 'target'


@dataclass(frozen=True)
class ObjectSpec:
    """One free object on the table."""

    name: str
    shape: str  # 'box' | 'cylinder'
    half_size: tuple[float, float, float]  # box half extents; cylinder: (radius, radius, half height)
    mass: float
    friction: float
    pos: tuple[float, float]
    yaw: float

    @property
    def half_height(self) -> float:
        return self.half_size[2]


@dataclass(frozen=True)
class SceneParams:
    """What varies per episode: the object to move, distractors and the target zone."""

    target: ObjectSpec
    distractors: tuple[ObjectSpec, ...]
    zone_center: tuple[float, float]
    zone_radius: float


def sample_scene(rng: np.random.Generator) -> SceneParams:
    """Draw an episode's world; the object starts at y < 0 and the zone sits at y > 0 (transport across)."""
    half = float(rng.uniform(0.015, 0.022))
    target = ObjectSpec(
        name=TARGET,
        shape='box',
        half_size=(half, half, float(rng.uniform(0.02, 0.03))),
        mass=float(rng.uniform(0.05, 0.25)),
        friction=float(rng.uniform(0.7, 1.2)),
        pos=(float(rng.uniform(0.42, 0.55)), float(rng.uniform(-0.2, -0.1))),
        yaw=float(rng.uniform(-0.4, 0.4)),
    )
    distractors = []
    for i, x in enumerate((0.25, 0.75)):
        shape = 'cylinder' if rng.random() < 0.5 else 'box'
        r = float(rng.uniform(0.015, 0.025))
        distractors.append(
            ObjectSpec(
                name=f'distractor{i}',
                shape=shape,
                half_size=(r, r, float(rng.uniform(0.02, 0.04))),
                mass=float(rng.uniform(0.05, 0.3)),
                friction=float(rng.uniform(0.5, 1.2)),
                pos=(x + float(rng.uniform(-0.03, 0.03)), float(rng.uniform(-0.25, 0.25))),
                yaw=float(rng.uniform(-np.pi, np.pi)),
            )
        )
    zone = (float(rng.uniform(0.45, 0.55)), float(rng.uniform(0.12, 0.2)))
    return SceneParams(target=target, distractors=tuple(distractors), zone_center=zone, zone_radius=0.05)


def _object_xml(o: ObjectSpec, rgba: str) -> str:
    z = TABLE_TOP + o.half_height + 0.0005
    qw, qz = np.cos(o.yaw / 2), np.sin(o.yaw / 2)
    if o.shape == 'box':
        geom = f'type="box" size="{o.half_size[0]:.5f} {o.half_size[1]:.5f} {o.half_size[2]:.5f}"'
    else:
        geom = f'type="cylinder" size="{o.half_size[0]:.5f} {o.half_size[2]:.5f}"'
    return (
        f'<body name="{o.name}" pos="{o.pos[0]:.5f} {o.pos[1]:.5f} {z:.5f}" quat="{qw:.6f} 0 0 {qz:.6f}">'
        f'<freejoint name="{o.name}_free"/>'
        f'<geom name="{o.name}_geom" {geom} mass="{o.mass:.5f}" friction="{o.friction:.4f} 0.005 0.0001"'
        f' rgba="{rgba}" condim="4"/></body>'
    )


def build_mjcf(p: SceneParams, timestep: float = 0.001) -> str:
    """The whole cell as an MJCF string: table, xyz gantry with a 3-axis wrist, gripper, F/T site, cameras."""
    objects = _object_xml(p.target, '0.85 0.2 0.15 1') + ''.join(
        _object_xml(o, c) for o, c in zip(p.distractors, ('0.2 0.4 0.85 1', '0.9 0.8 0.2 1'), strict=True)
    )
    zx, zy = p.zone_center
    nc = 'contype="0" conaffinity="0"'
    return f"""
<mujoco model="sim_cell">
  <compiler angle="radian" autolimits="true"/>
  <option timestep="{timestep}" integrator="implicitfast" cone="elliptic" impratio="10"/>
  <visual><quality shadowsize="0" offsamples="0"/><global offwidth="1280" offheight="960"/></visual>
  <default><geom solref="0.004 1" solimp="0.95 0.99 0.001"/></default>
  <worldbody>
    <light pos="0.5 0 2.5" dir="0 0 -1" diffuse="0.8 0.8 0.8"/>
    <light pos="0.5 -1 2" dir="0 0.5 -1" diffuse="0.4 0.4 0.4"/>
    <geom name="floor" type="plane" size="2 2 0.1" rgba="0.35 0.35 0.38 1"/>
    <geom name="table" type="box" pos="0.5 0 {TABLE_TOP / 2}" size="0.4 0.4 {TABLE_TOP / 2}"
          rgba="0.6 0.45 0.3 1" friction="0.6 0.005 0.0001"/>
    <geom name="zone" type="cylinder" pos="{zx:.5f} {zy:.5f} {TABLE_TOP + 0.0005}" size="{p.zone_radius} 0.0005"
          rgba="0.2 0.8 0.3 1" {nc}/>
    <camera name="scene" pos="0.5 -0.95 1.05" xyaxes="1 0 0 0 0.55 0.83" fovy="55"/>
    <site name="lidar" pos="0.05 -0.55 0.9" size="0.02"/>
    <body name="carriage_x" pos="0 0 {GANTRY_Z}" gravcomp="1">
      <joint name="joint1" type="slide" axis="1 0 0" range="0.1 0.9" damping="5"/>
      <geom type="box" size="0.03 0.45 0.02" mass="2" rgba="0.3 0.3 0.3 1" {nc}/>
      <body name="carriage_y" gravcomp="1">
        <joint name="joint2" type="slide" axis="0 1 0" range="-0.4 0.4" damping="5"/>
        <geom type="box" size="0.04 0.04 0.03" mass="1" rgba="0.4 0.4 0.4 1" {nc}/>
        <body name="column" gravcomp="1">
          <joint name="joint3" type="slide" axis="0 0 1" range="-0.55 0.05" damping="5"/>
          <geom type="box" pos="0 0 0.2" size="0.015 0.015 0.25" mass="1" rgba="0.5 0.5 0.5 1" {nc}/>
          <body name="wrist_yaw" pos="0 0 -0.05" gravcomp="1">
            <joint name="joint4" type="hinge" axis="0 0 1" range="-3.1 3.1" damping="0.5"/>
            <geom type="cylinder" size="0.025 0.01" mass="0.2" rgba="0.2 0.2 0.25 1" {nc}/>
            <body name="wrist_pitch" gravcomp="1">
              <joint name="joint5" type="hinge" axis="0 1 0" range="-1.5 1.5" damping="0.5"/>
              <geom type="sphere" size="0.015" mass="0.1" {nc}/>
              <body name="wrist_roll" gravcomp="1">
                <joint name="joint6" type="hinge" axis="1 0 0" range="-1.5 1.5" damping="0.5"/>
                <geom type="sphere" size="0.012" mass="0.1" {nc}/>
                <body name="gripper" pos="0 0 -0.02">
                  <site name="ft_site" size="0.01"/>
                  <geom name="palm" type="box" pos="0 0 -0.02" size="0.02 0.06 0.01" mass="0.3"
                        rgba="0.15 0.15 0.15 1"/>
                  <camera name="wrist" pos="0.06 0 -0.01" xyaxes="0 -1 0 1 0 0" fovy="75"/>
                  <site name="tcp" pos="0 0 -0.07" size="0.005"/>
                  <body name="finger_left" pos="0 0.006 -0.07">
                    <joint name="{FINGER_JOINT}" type="slide" axis="0 1 0" range="0 {FINGER_OPEN}" damping="2"/>
                    <geom name="finger_left_geom" type="box" size="0.01 0.006 0.025" pos="0 0 0.005" mass="0.05"
                          friction="0.6 0.005 0.0001" condim="4" rgba="0.8 0.8 0.8 1"/>
                  </body>
                  <body name="finger_right" pos="0 -0.006 -0.07">
                    <joint name="finger_joint_mirror" type="slide" axis="0 -1 0" range="0 {FINGER_OPEN}"
                           damping="2"/>
                    <geom name="finger_right_geom" type="box" size="0.01 0.006 0.025" pos="0 0 0.005" mass="0.05"
                          friction="0.6 0.005 0.0001" condim="4" rgba="0.8 0.8 0.8 1"/>
                  </body>
                </body>
              </body>
            </body>
          </body>
        </body>
      </body>
    </body>
    {objects}
  </worldbody>
  <contact><exclude body1="finger_left" body2="finger_right"/></contact>
  <equality>
    <joint joint1="{FINGER_JOINT}" joint2="finger_joint_mirror" polycoef="0 1 0 0 0" solref="0.005 1"/>
  </equality>
  <actuator>
    <position name="act1" joint="joint1" kp="6000" kv="600"/>
    <position name="act2" joint="joint2" kp="6000" kv="600"/>
    <position name="act3" joint="joint3" kp="6000" kv="600"/>
    <position name="act4" joint="joint4" kp="60" kv="4"/>
    <position name="act5" joint="joint5" kp="60" kv="4"/>
    <position name="act6" joint="joint6" kp="60" kv="4"/>
    <position name="act_finger" joint="{FINGER_JOINT}" kp="2000" kv="20" forcerange="-{MAX_GRIP_N} {MAX_GRIP_N}"
              ctrlrange="0 {FINGER_OPEN}"/>
  </actuator>
  <sensor>
    <force name="ft_force" site="ft_site"/>
    <torque name="ft_torque" site="ft_site"/>
  </sensor>
</mujoco>
"""
