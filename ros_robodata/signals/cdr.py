"""Signals read straight from CDR bytes: a message's header stamp, and the fixed layouts of JointState and
WrenchStamped.

The recorder must not deserialize (it would cap throughput), yet loss and latency are judged by header stamps;
offline, rosbags' generic decode (~20 us a message) cost more than the checks and the detector. In CDR a message
whose first field is std_msgs/Header starts, after the 4-byte encapsulation header, with the stamp (int32 sec,
uint32 nanosec), and the two fixed layouts parse in a few microseconds. Anything unexpected (big-endian data, a
short buffer) returns None and the caller decodes instead (signals/read.py), so the fast path never changes a
result.
"""

from __future__ import annotations

import struct

from rosbags.typesys.store import Typestore

from ros_robodata.signals.samples import GripperReading, JointReading, WrenchReading

_STAMP = struct.Struct('<iI')
_STAMP_BE = struct.Struct('>iI')
HEADER_TYPES = ('std_msgs/msg/Header',)
_U32 = struct.Struct('<I')
_WRENCH = struct.Struct('<6d')
_LITTLE_ENDIAN_CDR = (b'\x00\x01', b'\x00\x03')  # CDR_LE, PL_CDR_LE


class _Short(Exception):
    pass


# ROS 2's standard messages whose first field is a std_msgs/Header: known without loading a typestore (~0.1 s
# a command), which stamped_type() answers from; a test holds them to Jazzy's definitions.
STAMPED_TYPES = frozenset({
    'sensor_msgs/msg/JointState', 'sensor_msgs/msg/Image', 'sensor_msgs/msg/CompressedImage',
    'sensor_msgs/msg/CameraInfo', 'sensor_msgs/msg/PointCloud2', 'sensor_msgs/msg/LaserScan', 'sensor_msgs/msg/Imu',
    'sensor_msgs/msg/Range', 'sensor_msgs/msg/Illuminance', 'geometry_msgs/msg/WrenchStamped',
    'geometry_msgs/msg/PoseStamped', 'geometry_msgs/msg/TwistStamped', 'geometry_msgs/msg/TransformStamped'})


def stamped_type(msgtype: str) -> bool | None:
    """True for a standard stamped type (STAMPED_TYPES); None when only its definition can say (starts_with_header)."""
    return True if msgtype in STAMPED_TYPES else None


def starts_with_header(msgtype: str, store: Typestore) -> bool:
    """True when the message's first field is a std_msgs/Header (stamped messages)."""
    fielddefs = store.fielddefs.get(msgtype)
    if not fielddefs or not fielddefs[1]:
        return False
    _name, (kind, target) = fielddefs[1][0]
    return getattr(kind, 'name', '') == 'NAME' and target in HEADER_TYPES


def header_stamp_ns(data: bytes | memoryview) -> int | None:
    """The header stamp in ns, or None when the bytes are too short or not CDR."""
    if len(data) < 12:
        return None
    if data[1] == 1:
        sec, nanosec = _STAMP.unpack_from(data, 4)
    elif data[1] == 0:
        sec, nanosec = _STAMP_BE.unpack_from(data, 4)
    else:
        return None
    return sec * 1_000_000_000 + nanosec


def _align(offset: int, size: int) -> int:
    # Alignment counts from the start of the payload, after the 4-byte encapsulation header.
    return offset + (-(offset - 4) % size)


def _header(data: memoryview, frame: bool = False) -> tuple[int, str, int]:
    """Stamp, frame_id (only when asked: decoding it costs) and the offset after the header."""
    sec, nanosec = _STAMP.unpack_from(data, 4)
    (length,) = _U32.unpack_from(data, 12)
    end = 16 + length
    if end > len(data):
        raise _Short
    frame_id = bytes(data[16:end - 1]).decode('utf-8', 'replace') if frame and length else ''
    return sec * 1_000_000_000 + nanosec, frame_id, end


def wrench_from_cdr(raw: bytes | memoryview) -> WrenchReading | None:
    data = memoryview(raw)
    if len(data) < 20 or bytes(data[:2]) not in _LITTLE_ENDIAN_CDR:
        return None
    try:
        stamp, frame, offset = _header(data, frame=True)
        offset = _align(offset, 8)
        if offset + 48 > len(data):
            return None
        fx, fy, fz, tx, ty, tz = _WRENCH.unpack_from(data, offset)
    except (_Short, struct.error):
        return None
    return WrenchReading(stamp, (fx, fy, fz), (tx, ty, tz), frame)


_last_names: tuple[bytes, list[str]] | None = None


def _names_at(data: memoryview, start: int) -> tuple[list[str], int]:
    """The string array at `start` and the offset after it. A stream repeats the same joint names in every
    message: the previous message's bytes are compared first (a string array delimits itself)."""
    global _last_names
    last = _last_names
    if last is not None and data[start:start + len(last[0])] == last[0]:
        return last[1], start + len(last[0])
    (count,) = _U32.unpack_from(data, start)
    offset = start + 4
    names = []
    for _ in range(count):
        offset = _align(offset, 4)
        (length,) = _U32.unpack_from(data, offset)
        names.append(bytes(data[offset + 4:offset + 3 + length]).decode('utf-8', 'replace'))
        offset += 4 + length
    _last_names = (bytes(data[start:offset]), names)
    return names, offset


def joint_state_from_cdr(raw: bytes | memoryview) -> JointReading | None:
    """Stamp, names and positions of a sensor_msgs/JointState; None: use the slow path."""
    data = memoryview(raw)
    if len(data) < 20 or bytes(data[:2]) not in _LITTLE_ENDIAN_CDR:
        return None
    try:
        stamp, _, offset = _header(data)
        names, offset = _names_at(data, _align(offset, 4))
        offset = _align(offset, 4)
        (n,) = _U32.unpack_from(data, offset)
        offset = _align(offset + 4, 8)
        if offset + 8 * n > len(data):
            return None
        positions = list(struct.unpack_from(f'<{n}d', data, offset))
    except (_Short, struct.error, UnicodeDecodeError):
        return None
    return JointReading(stamp, list(names), positions)


def gripper_from_cdr(raw: bytes | memoryview, joint: str) -> GripperReading | bool | None:
    """The named joint's reading; False when the message does not carry that joint; None: use the slow path."""
    data = memoryview(raw)
    if len(data) < 20 or bytes(data[:2]) not in _LITTLE_ENDIAN_CDR:
        return None
    try:
        stamp, _, offset = _header(data)
        offset = _align(offset, 4)
        (count,) = _U32.unpack_from(data, offset)
        offset += 4
        index = -1
        wanted = joint.encode('utf-8')
        for i in range(count):
            offset = _align(offset, 4)
            (length,) = _U32.unpack_from(data, offset)
            if data[offset + 4:offset + 4 + max(0, length - 1)] == wanted and index < 0:
                index = i
            offset += 4 + length
        if index < 0:
            return False
        values = []
        for _ in range(3):  # position, velocity, effort
            offset = _align(offset, 4)
            (n,) = _U32.unpack_from(data, offset)
            offset = _align(offset + 4, 8)
            if offset + 8 * n > len(data):
                return None
            values.append(struct.unpack_from('<d', data, offset + 8 * index)[0] if index < n else float('nan'))
            offset += 8 * n
    except (_Short, struct.error):
        return None
    return GripperReading(stamp, *values)
