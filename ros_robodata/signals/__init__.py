"""The robot's signals out of bag messages: header stamps, joints, gripper and wrench as typed samples."""

from ros_robodata.signals.cdr import header_stamp_ns, stamped_type, starts_with_header
from ros_robodata.signals.read import read_command, read_gripper, read_joints, read_wrench
from ros_robodata.signals.samples import (
    GripperReading,
    JointReading,
    WrenchReading,
    gripper_reading,
    joint_reading,
    stamp_ns,
    wrench_reading,
)

__all__ = ['GripperReading', 'JointReading', 'WrenchReading', 'gripper_reading', 'header_stamp_ns', 'joint_reading',
           'read_command', 'read_gripper', 'read_joints', 'read_wrench', 'stamp_ns', 'stamped_type',
           'starts_with_header', 'wrench_reading']
