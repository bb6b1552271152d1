"""Commands that run nodes: the one check that ROS 2 is there, and the one way options become node parameters.

The nodes are imported only when such a command runs, so `robodata --help` and every offline command keep
working on a machine without ROS.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from typing import Any

from ros_robodata.errors import RobodataError


def require_ros(module: str, what: str) -> Any:
    """The node module `ros_robodata.nodes.<module>`; one line saying what is missing when ROS 2 is not there."""
    try:
        return importlib.import_module(f'ros_robodata.nodes.{module}')
    except ImportError as err:
        raise RobodataError(f'{what} needs ROS 2 (rclpy and the colcon-built ros_robodata interfaces): {err}') from None


def node_arguments(params: Mapping[str, Any], program: str = 'robodata') -> list[str]:
    """`<program> --ros-args -p name:=value ...` for a node's main(); None values are left to the node's default.
    `program` (e.g. 'robodata record') is how the node's errors name the command.
    Values are YAML, as ROS 2 reads them: strings are quoted (a task named 007 stays '007'), booleans are
    true/false, numbers stay numbers."""
    out = [program, '--ros-args']
    for name, value in params.items():
        if value is None:
            continue
        text = ('true' if value else 'false') if isinstance(value, bool) else json.dumps(value)
        out += ['-p', f'{name}:={text}']
    return out
