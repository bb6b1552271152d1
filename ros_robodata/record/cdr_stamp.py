"""Read a message's header stamp straight from its CDR bytes, without deserializing it.

The recorder must not deserialize (it would cap throughput), yet loss and latency are judged by
header stamps. In CDR a message whose first field is std_msgs/Header starts, after the 4-byte
encapsulation header, with the stamp: int32 sec, uint32 nanosec.
"""

from __future__ import annotations

import struct

from rosbags.typesys.store import Typestore

_LE = struct.Struct('<iI')
_BE = struct.Struct('>iI')
HEADER_TYPES = ('std_msgs/msg/Header',)


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
        sec, nanosec = _LE.unpack_from(data, 4)
    elif data[1] == 0:
        sec, nanosec = _BE.unpack_from(data, 4)
    else:
        return None
    return sec * 1_000_000_000 + nanosec
