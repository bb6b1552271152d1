"""Bag messages into typed samples: the CDR fast path where the layout is the plain one, else a full decode.

Every consumer (the quality checks, the segmenter, the report, the frame export) reads joints, gripper and wrench
this way, so a message the fast path cannot parse (big-endian, an extra field, a short buffer) is decoded rather
than dropped, and all of them see the same values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ros_robodata.signals.cdr import gripper_from_cdr, joint_state_from_cdr, wrench_from_cdr
from ros_robodata.signals.samples import (
    GripperReading,
    JointReading,
    WrenchReading,
    gripper_reading,
    joint_reading,
    wrench_reading,
)

Decode = Callable[[], Any]  # the message object of the bytes at hand, decoded on demand


def read_wrench(data: bytes | memoryview, decode: Decode) -> WrenchReading:
    """A geometry_msgs/WrenchStamped."""
    reading = wrench_from_cdr(data)
    return reading if reading is not None else wrench_reading(decode())


def read_joints(data: bytes | memoryview, decode: Decode) -> JointReading:
    """A sensor_msgs/JointState's stamp, names and positions."""
    reading = joint_state_from_cdr(data)
    return reading if reading is not None else joint_reading(decode())


def read_gripper(data: bytes | memoryview, joint: str, decode: Decode) -> GripperReading | None:
    """The finger joint out of a sensor_msgs/JointState; None when the message does not carry that joint."""
    reading = gripper_from_cdr(data, joint)
    if reading is False:
        return None
    if reading is None or reading is True:
        return gripper_reading(decode(), joint)
    return reading


def read_command(data: bytes | memoryview, joint: str | None, decode: Decode,
                 received_ns: int | None) -> GripperReading | None:
    """A gripper command: the named joint of a JointState (a leader arm), or a std_msgs Float64/Float32's data,
    which has no header and is stamped with when it was received. None when there is nothing to read."""
    if joint is not None:
        return read_gripper(data, joint, decode)
    if received_ns is None:
        return None
    return GripperReading(received_ns, float(decode().data))
