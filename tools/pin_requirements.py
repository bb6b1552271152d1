"""Print requirements.txt for the current venv: every installed distribution, pinned.

`pip freeze` is not usable here: the ROS 2 wheels carry egg-info metadata of the ROS packages
inside them (action_msgs, rclpy, ...), which freeze lists but PyPI does not serve. Only
distributions that pip installed (a .dist-info) are real, installable requirements.
"""

from __future__ import annotations

import importlib.metadata as metadata

HEADER = """\
# Every Python distribution of the project's .venv, pinned. ROS 2 Jazzy comes from its PyPI wheels
# (ros-jazzy-* name the packages, ros-* carry them). Regenerate with tools/pin_requirements.py."""


def main() -> None:
    pins = set()
    for dist in metadata.distributions():
        name = dist.metadata['Name']
        if str(getattr(dist, '_path', '')).endswith('.dist-info') and name.lower().replace('_', '-') != 'ros-robodata':
            pins.add(f'{name}=={dist.version}')
    print(HEADER)
    print('\n'.join(sorted(pins, key=str.lower)))


if __name__ == '__main__':
    main()
