"""Files the package ships under config/: found next to the source tree (editable install) or in the ROS
install's share/ros_robodata (colcon, apt)."""

from __future__ import annotations

import os
from pathlib import Path

from ros_robodata.errors import RobodataError


def config_path(name: str) -> Path:
    """config/<name>, from wherever this ros_robodata was installed."""
    candidates = [Path(__file__).resolve().parents[1] / 'config' / name]
    for prefix in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep):
        if prefix:
            candidates.append(Path(prefix) / 'share' / 'ros_robodata' / 'config' / name)
    for path in candidates:
        if path.is_file():
            return path
    raise RobodataError(f'cannot find config/{name} (looked next to the package and in AMENT_PREFIX_PATH)')
