"""A simulated episode straight into a rosbag2, without ROS: for tests and benchmarks of the offline tools.

Writes the joint, gripper, wrench and command streams (and, on request, the cameras and the LiDAR) as the
recorder would store them from the `sim_cell` node: topics from the profile, header stamps `start_ns` + sim
time, receive time 1 ms after the sample was taken (so a clock-jump fault moves stamps, not arrivals).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ros_robodata.bag.image import encode_image
from ros_robodata.bag.pointcloud import encode_pointcloud, pointfield_list
from ros_robodata.bag.types import header, typestore
from ros_robodata.bag.writer import BagWriter
from ros_robodata.profile import Profile
from ros_robodata.sim import sim_samples as S
from ros_robodata.sim.cell import SimCell

_TYPES = {S.JOINT_STATES: 'sensor_msgs/msg/JointState', S.GRIPPER: 'sensor_msgs/msg/JointState',
          S.WRENCH: 'geometry_msgs/msg/WrenchStamped', S.COMMAND: 'geometry_msgs/msg/TwistStamped',
          S.CAMERA_WRIST: 'sensor_msgs/msg/Image', S.CAMERA_SCENE: 'sensor_msgs/msg/Image',
          S.LIDAR_SCENE: 'sensor_msgs/msg/PointCloud2'}
_RECEIVE_DELAY_NS = 1_000_000


def _topics(profile: Profile, cameras: bool, lidar: bool) -> dict[str, str]:
    t = profile.topics
    assert t.joint_states is not None  # a profile for the simulated arm records its joint states
    out = {S.JOINT_STATES: t.joint_states.topic}
    if cameras:
        for cam in t.cameras:
            if f'camera/{cam.name}' in (S.CAMERA_WRIST, S.CAMERA_SCENE) and cam.type == _TYPES[S.CAMERA_WRIST]:
                out[f'camera/{cam.name}'] = cam.topic
    if lidar:
        for scanner in t.lidars:
            if f'lidar/{scanner.name}' == S.LIDAR_SCENE and scanner.type == _TYPES[S.LIDAR_SCENE]:
                out[S.LIDAR_SCENE] = scanner.topic
    if t.gripper is not None:
        out[S.GRIPPER] = t.gripper.topic
    if t.wrench is not None:
        out[S.WRENCH] = t.wrench.topic
    if t.actions is not None and t.actions.type == _TYPES[S.COMMAND]:
        out[S.COMMAND] = t.actions.topic
    return out


def _message(stream: str, data: Any, ns: int, gripper_joint: str) -> Any:
    types = typestore().types
    if stream in (S.JOINT_STATES, S.GRIPPER):
        names = [gripper_joint] if stream == S.GRIPPER and gripper_joint else list(data.names)
        return types['sensor_msgs/msg/JointState'](
            header=header(ns, 'base_link'), name=names, position=np.asarray(data.position, dtype=np.float64),
            velocity=np.asarray(data.velocity, dtype=np.float64), effort=np.asarray(data.effort, dtype=np.float64))
    if stream in (S.CAMERA_WRIST, S.CAMERA_SCENE):
        fields = encode_image(data.rgb, 'rgb8')
        return types['sensor_msgs/msg/Image'](header=header(ns, data.frame_id), **fields)
    if stream == S.LIDAR_SCENE:
        fields = encode_pointcloud(_cloud_records(data.points))
        fields['fields'] = pointfield_list(fields['fields'], types['sensor_msgs/msg/PointField'])
        return types['sensor_msgs/msg/PointCloud2'](header=header(ns, data.frame_id), **fields)
    vec3 = types['geometry_msgs/msg/Vector3']
    if stream == S.WRENCH:
        wrench = types['geometry_msgs/msg/Wrench'](force=vec3(*map(float, data.force)),
                                                   torque=vec3(*map(float, data.torque)))
        return types['geometry_msgs/msg/WrenchStamped'](header=header(ns, data.frame_id), wrench=wrench)
    twist = types['geometry_msgs/msg/Twist'](linear=vec3(*map(float, data.linear)),
                                             angular=vec3(*map(float, data.angular)))
    return types['geometry_msgs/msg/TwistStamped'](header=header(ns, data.frame_id), twist=twist)


def _cloud_records(points: np.ndarray) -> np.ndarray:
    out = np.zeros(len(points), dtype=[('x', '<f4'), ('y', '<f4'), ('z', '<f4'), ('intensity', '<f4')])
    for i, name in enumerate(('x', 'y', 'z', 'intensity')):
        out[name] = points[:, i]
    return out


def write_sim_episode(bag_dir: str | Path, profile: Profile, seed: int, episode_index: int | None = None, *,
                      mode: str = 'teleop', start_ns: int = 1_700_000_000_000_000_000, cameras: bool = False,
                      lidar: bool = False, **cell_options: Any) -> dict:
    """Simulate one episode into `bag_dir`; returns the physics ground truth (times are sim seconds).
    `cell_options` go to SimCell (faults, image_size, max_duration_s, ...)."""
    topics = _topics(profile, cameras, lidar)
    joint = profile.topics.gripper.joint if profile.topics.gripper else ''
    store = typestore()
    with SimCell(seed, seed if episode_index is None else episode_index, mode, streams=list(topics),
                 **cell_options) as cell, BagWriter(bag_dir) as bag:
        for stream, topic in topics.items():
            bag.add_topic(topic, _TYPES[stream])
        while not cell.finished:
            for sample in cell.step_until(cell.time + 0.1):
                ns = start_ns + round(sample.stamp * 1e9)
                taken_ns = start_ns + round(sample.seq / cell.rates[sample.stream] * 1e9)
                msg = _message(sample.stream, sample.data, ns, joint)
                bag.write(topics[sample.stream], taken_ns + _RECEIVE_DELAY_NS,
                          store.serialize_cdr(msg, _TYPES[sample.stream]))
        truth = cell.ground_truth()
    truth['start_ns'] = start_ns
    return truth
