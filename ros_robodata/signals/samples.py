"""Typed samples of the robot's signals, whichever way they were read (CDR bytes, rclpy or rosbags messages).

Plain slotted dataclasses, not frozen ones: a frozen one costs three times as much to make, and offline every
joint state and wrench sample of a dataset becomes one. Treat them as values all the same."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class GripperReading:
    """The finger joint: position in the profile's units; velocity and effort NaN when not reported."""

    stamp_ns: int
    position: float
    velocity: float = math.nan
    effort: float = math.nan


@dataclass(slots=True)
class WrenchReading:
    """Wrist force (N) and torque (N m) in the sensor frame."""

    stamp_ns: int
    force: tuple[float, float, float]
    torque: tuple[float, float, float] = (0.0, 0.0, 0.0)
    frame_id: str = ''


@dataclass(slots=True)
class JointReading:
    """An arm's joint positions (rad, or m for a prismatic joint), by name."""

    stamp_ns: int
    names: list[str]
    position: list[float]


def stamp_ns(header: Any) -> int:
    return int(header.stamp.sec) * 1_000_000_000 + int(header.stamp.nanosec)


def _at(values: Any, index: int) -> float:
    return float(values[index]) if index < len(values) else math.nan


def gripper_reading(msg: Any, joint: str) -> GripperReading | None:
    """The named joint out of a sensor_msgs/JointState; None when the message does not carry it."""
    try:
        index = list(msg.name).index(joint)
    except ValueError:
        return None
    return GripperReading(stamp_ns(msg.header), _at(msg.position, index), _at(msg.velocity, index),
                          _at(msg.effort, index))


def wrench_reading(msg: Any) -> WrenchReading:
    """A geometry_msgs/WrenchStamped."""
    f, t = msg.wrench.force, msg.wrench.torque
    return WrenchReading(stamp_ns(msg.header), (float(f.x), float(f.y), float(f.z)),
                         (float(t.x), float(t.y), float(t.z)), str(msg.header.frame_id))


def joint_reading(msg: Any) -> JointReading:
    """A sensor_msgs/JointState's names and positions."""
    return JointReading(stamp_ns(msg.header), [str(n) for n in msg.name], [float(v) for v in msg.position])
