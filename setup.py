"""Thin setup.py: ship the interface definitions (msg/, srv/) inside the Python package.

The offline tools write bags that embed our message definitions, so a pip-installed
ros_robodata (no ROS, no colcon) needs the .msg files too. They live at the repository root
where rosidl wants them; this copies them to ros_robodata/interfaces/ in the built package.
Editable installs find them at the repository root instead (see ros_robodata/bag/types.py).
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildWithInterfaces(build_py):
    def run(self):
        super().run()
        for kind in ('msg', 'srv'):
            src = ROOT / kind
            if not src.is_dir():
                continue
            dst = Path(self.build_lib) / 'ros_robodata' / 'interfaces' / kind
            dst.mkdir(parents=True, exist_ok=True)
            for path in src.iterdir():
                if path.suffix in ('.msg', '.srv'):
                    shutil.copy2(path, dst / path.name)


setup(cmdclass={'build_py': BuildWithInterfaces})
