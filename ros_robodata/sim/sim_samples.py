"""Plain sample types the simulated cell produces; a node turns each into its ROS message."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

JOINT_STATES = 'joint_states'
GRIPPER = 'gripper'
WRENCH = 'wrench'
COMMAND = 'command'
CAMERA_WRIST = 'camera/wrist'
CAMERA_SCENE = 'camera/scene'
LIDAR_SCENE = 'lidar/scene'

# Stream names follow the robot profile's roles (config/sim_cell.yaml), so a node can map them.
DEFAULT_RATES_HZ: dict[str, float] = {
    JOINT_STATES: 500.0,
    GRIPPER: 100.0,
    WRENCH: 500.0,
    COMMAND: 100.0,
    CAMERA_WRIST: 30.0,
    CAMERA_SCENE: 30.0,
    LIDAR_SCENE: 10.0,
}


@dataclass
class JointSample:
    """Joint state; NaN may appear when a fault injects it."""

    names: list[str]
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray


@dataclass
class WrenchSample:
    """Wrist force (N) and torque (N m) in the sensor frame `frame_id`."""

    force: np.ndarray
    torque: np.ndarray
    frame_id: str = 'ft_sensor'


@dataclass
class CommandSample:
    """What the operator sent: end-effector velocity (world frame) and the gripper command."""

    linear: np.ndarray
    angular: np.ndarray
    gripper_position: float
    gripper_max_effort: float
    frame_id: str = 'world'


@dataclass
class ImageSample:
    """An RGB8 frame (H x W x 3, uint8) from one camera."""

    rgb: np.ndarray
    frame_id: str


@dataclass
class CloudSample:
    """LiDAR points as float32 N x 4 (x, y, z, intensity), in `frame_id` (world)."""

    points: np.ndarray
    frame_id: str = 'world'


Payload = JointSample | WrenchSample | CommandSample | ImageSample | CloudSample


@dataclass
class Sample:
    """One message-to-be: the stream it belongs to, its header stamp (s of sim time) and payload."""

    stream: str
    stamp: float
    data: Payload
    seq: int = field(default=0)
