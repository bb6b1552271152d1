"""A simulated episode straight into a rosbag2, without ROS: for tests and benchmarks of the offline tools.

Writes the joint, gripper, wrench and command streams (no rendering) as the recorder would store them from
the `sim_cell` node: topics from the profile, header stamps `start_ns` + sim time, receive time = stamp.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ros_robodata.bag.types import typestore
from ros_robodata.bag.writer import BagWriter
from ros_robodata.profile import Profile
from ros_robodata.sim import samples as S
from ros_robodata.sim.cell import SimCell

_TYPES = {S.JOINT_STATES: 'sensor_msgs/msg/JointState', S.GRIPPER: 'sensor_msgs/msg/JointState',
          S.WRENCH: 'geometry_msgs/msg/WrenchStamped', S.COMMAND: 'geometry_msgs/msg/TwistStamped'}


def _topics(profile: Profile) -> dict[str, str]:
    t = profile.topics
    out = {S.JOINT_STATES: t.joint_states.topic}
    if t.gripper is not None:
        out[S.GRIPPER] = t.gripper.topic
    if t.wrench is not None:
        out[S.WRENCH] = t.wrench.topic
    if t.actions is not None and t.actions.type == _TYPES[S.COMMAND]:
        out[S.COMMAND] = t.actions.topic
    return out


def _header(ns: int, frame: str) -> Any:
    types = typestore().types
    return types['std_msgs/msg/Header'](stamp=types['builtin_interfaces/msg/Time'](sec=ns // 10**9,
                                                                                 nanosec=ns % 10**9), frame_id=frame)


def _message(stream: str, data: Any, ns: int, gripper_joint: str) -> Any:
    types = typestore().types
    if stream in (S.JOINT_STATES, S.GRIPPER):
        names = [gripper_joint] if stream == S.GRIPPER and gripper_joint else list(data.names)
        return types['sensor_msgs/msg/JointState'](
            header=_header(ns, 'base_link'), name=names, position=np.asarray(data.position, dtype=np.float64),
            velocity=np.asarray(data.velocity, dtype=np.float64), effort=np.asarray(data.effort, dtype=np.float64))
    vec3 = types['geometry_msgs/msg/Vector3']
    if stream == S.WRENCH:
        wrench = types['geometry_msgs/msg/Wrench'](force=vec3(*map(float, data.force)),
                                                   torque=vec3(*map(float, data.torque)))
        return types['geometry_msgs/msg/WrenchStamped'](header=_header(ns, data.frame_id), wrench=wrench)
    twist = types['geometry_msgs/msg/Twist'](linear=vec3(*map(float, data.linear)),
                                             angular=vec3(*map(float, data.angular)))
    return types['geometry_msgs/msg/TwistStamped'](header=_header(ns, data.frame_id), twist=twist)


def write_sim_episode(bag_dir: str | Path, profile: Profile, seed: int, episode_index: int | None = None, *,
                      mode: str = 'teleop', start_ns: int = 1_700_000_000_000_000_000, **cell_options: Any
                      ) -> dict:
    """Simulate one episode into `bag_dir`; returns the physics ground truth (times are sim seconds)."""
    topics = _topics(profile)
    joint = profile.topics.gripper.joint if profile.topics.gripper else ''
    store = typestore()
    with SimCell(seed, seed if episode_index is None else episode_index, mode, streams=list(topics),
                 **cell_options) as cell, BagWriter(bag_dir) as bag:
        for stream, topic in topics.items():
            bag.add_topic(topic, _TYPES[stream])
        while not cell.finished:
            for sample in cell.step_until(cell.time + 0.1):
                ns = start_ns + round(sample.stamp * 1e9)
                msg = _message(sample.stream, sample.data, ns, joint)
                bag.write(topics[sample.stream], ns, store.serialize_cdr(msg, _TYPES[sample.stream]))
        truth = cell.ground_truth()
    truth['start_ns'] = start_ns
    return truth
