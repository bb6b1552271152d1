"""Message types for bag I/O: ROS 2 Jazzy's standard ones plus ros_robodata's own from msg/.

rosbags serializes CDR from message definitions, not from generated code, so our own types are
registered from the same .msg files that colcon builds. Bags we write then embed their
definitions, and any reader (Foxglove, mcap, ros2 bag) can decode them without our package.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any

from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from rosbags.typesys.store import Typestore

from ros_robodata.errors import BagError

PACKAGE = 'ros_robodata'
ROS_DISTRO = 'jazzy'


def interface_dirs() -> list[Path]:
    """Where our .msg/.srv files may be: beside the package (wheel), the source tree, an install."""
    here = Path(__file__).resolve().parent.parent
    candidates = [here / 'interfaces', here.parent]
    for prefix in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep):
        if prefix:
            candidates.append(Path(prefix) / 'share' / PACKAGE)
    return [c for c in candidates if (c / 'msg').is_dir()]


def own_message_definitions() -> dict[str, str]:
    """Map 'ros_robodata/msg/Name' to the text of its .msg file."""
    dirs = interface_dirs()
    if not dirs:
        msg = f'{PACKAGE}: message definitions (msg/*.msg) not found beside the package or on AMENT_PREFIX_PATH'
        raise BagError(msg)
    return {
        f'{PACKAGE}/msg/{path.stem}': path.read_text(encoding='utf-8')
        for path in sorted((dirs[0] / 'msg').glob('*.msg'))
    }


@cache
def typestore() -> Typestore:
    """The ROS 2 Jazzy typestore with ros_robodata's messages registered."""
    store = get_typestore(Stores.ROS2_JAZZY)
    types = {}
    for name, text in own_message_definitions().items():
        types.update(get_types_from_msg(text, name))
    store.register(types)
    return store


def header(stamp_ns: int, frame_id: str = '') -> Any:
    """A std_msgs/Header for a stamp in nanoseconds, for messages written into bags."""
    types = typestore().types
    return types['std_msgs/msg/Header'](
        stamp=types['builtin_interfaces/msg/Time'](sec=stamp_ns // 10**9, nanosec=stamp_ns % 10**9), frame_id=frame_id)
