"""What every command shares: what a path names (dataset.targets), the terminal (console.py), JSON output."""

from __future__ import annotations

import json
import sys
from typing import Any

from ros_robodata.console import human_bytes, progress, stderr, stdout
from ros_robodata.dataset.targets import Item, Target, items, need, profile_for, resolve

__all__ = ['Item', 'Target', 'human_bytes', 'items', 'need', 'print_json', 'profile_for', 'progress', 'resolve',
           'stderr', 'stdout']


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, default=str)
    sys.stdout.write('\n')
