"""Bags for the replay tests: joint states, a small camera and a latched robot description, with stamps on a
grid (so every message is countable) and receive times a little after their header stamps, as a rig records."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ros_robodata.bag.types import typestore
from ros_robodata.bag.writer import BagWriter, qos_profile

T0_NS = 1_700_000_000_000_000_000
LATENCY_NS = 1_500_000  # receive time - header stamp
JOINTS = '/joint_states'
CAMERA = '/camera/wrist/image_raw'
DESCRIPTION = '/robot_description'
COMMAND = '/teleop/command'  # best effort, as many teleop devices publish


def _header(store, t_ns: int, frame: str):
    sec, nanosec = divmod(t_ns, 1_000_000_000)
    return store.types['std_msgs/msg/Header'](stamp=store.types['builtin_interfaces/msg/Time'](sec=sec,
                                                                                             nanosec=nanosec),
                                              frame_id=frame)


def write_replay_bag(path: Path, *, seconds: float = 2.0, joint_hz: float = 200.0, camera_hz: float = 30.0,
                     width: int = 64, height: int = 48, t0_ns: int = T0_NS) -> dict[str, list[int]]:
    """Write the bag; returns each topic's header stamps in order (the description has none: its receive time)."""
    store = typestore()
    stamps: dict[str, list[int]] = {JOINTS: [], CAMERA: [], COMMAND: [], DESCRIPTION: []}
    out: list[tuple[int, str, object]] = []
    out.append((t0_ns, DESCRIPTION, store.types['std_msgs/msg/String'](data='<robot name="cell"/>')))
    stamps[DESCRIPTION].append(t0_ns)
    for i in range(int(seconds * joint_hz)):
        t = t0_ns + 1_000_000 + round(i * 1e9 / joint_hz)
        msg = store.types['sensor_msgs/msg/JointState'](
            header=_header(store, t, 'base_link'), name=['joint1', 'joint2'],
            position=np.array([0.001 * i, -0.002 * i]), velocity=np.zeros(2), effort=np.zeros(2))
        out.append((t + LATENCY_NS, JOINTS, msg))
        stamps[JOINTS].append(t)
    for i in range(int(seconds * camera_hz)):
        t = t0_ns + 2_000_000 + round(i * 1e9 / camera_hz)
        pixels = np.full((height, width, 3), i % 256, dtype=np.uint8)
        msg = store.types['sensor_msgs/msg/Image'](
            header=_header(store, t, 'wrist_camera'), height=height, width=width, encoding='rgb8', is_bigendian=0,
            step=width * 3, data=pixels.reshape(-1))
        out.append((t + 3 * LATENCY_NS, CAMERA, msg))
        stamps[CAMERA].append(t)
    for i in range(int(seconds * 10)):
        t = t0_ns + 3_000_000 + i * 100_000_000
        twist = store.types['geometry_msgs/msg/Twist'](
            linear=store.types['geometry_msgs/msg/Vector3'](x=0.01 * i, y=0.0, z=0.0),
            angular=store.types['geometry_msgs/msg/Vector3'](x=0.0, y=0.0, z=0.0))
        out.append((t + LATENCY_NS, COMMAND, store.types['geometry_msgs/msg/TwistStamped'](
            header=_header(store, t, 'base_link'), twist=twist)))
        stamps[COMMAND].append(t)
    out.sort(key=lambda item: item[0])
    with BagWriter(path) as writer:
        writer.add_topic(DESCRIPTION, 'std_msgs/msg/String', qos=qos_profile(latched=True, depth=1))
        writer.add_topic(JOINTS, 'sensor_msgs/msg/JointState')
        writer.add_topic(CAMERA, 'sensor_msgs/msg/Image', qos=qos_profile(reliable=True, depth=5))
        writer.add_topic(COMMAND, 'geometry_msgs/msg/TwistStamped', qos=qos_profile(reliable=False, depth=5))
        for t, topic, msg in out:
            writer.write_message(topic, t, msg)
    return stamps
