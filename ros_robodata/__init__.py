"""ros_robodata: robot demonstrations recorded, segmented, checked and exported as training data."""

import os as _os
import sys as _sys


def _generated_interface_dirs() -> list:
    """colcon installs the generated ros_robodata.msg/.srv modules into a copy of this package under
    each ament prefix; let that copy complete this one (sources first), so an editable checkout and
    its colcon build form one package."""
    found = []
    version = f'python{_sys.version_info.major}.{_sys.version_info.minor}'
    for prefix in _os.environ.get('AMENT_PREFIX_PATH', '').split(_os.pathsep):
        for site in ('site-packages', 'dist-packages'):
            candidate = _os.path.join(prefix, 'lib', version, site, __name__)
            if prefix and _os.path.isdir(candidate) and candidate not in __path__:
                found.append(candidate)
    return found


__path__ = [*__path__, *_generated_interface_dirs()]

__version__ = '0.1.0'
