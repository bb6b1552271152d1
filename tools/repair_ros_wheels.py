"""Repair the build-machine paths that the ROS 2 PyPI wheels leave in their CMake export files.

The wheels were built in a manylinux container whose Python lived in /opt/python/cp311-cp311.
Their exported CMake targets (std_msgs::std_msgs__rosidl_generator_py and friends) still name its
Python and NumPy include directories, so any package that builds interfaces against them fails at
CMake's generate step. This rewrites those paths to this venv's own, inside the venv only.
Idempotent: a second run changes nothing and says so.
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

BUILD_MACHINE_PREFIX = '/opt/python/cp311-cp311'


def replacements() -> dict[str, str]:
    """Map each build-machine path to this interpreter's equivalent."""
    import numpy

    version = f'{sys.version_info.major}.{sys.version_info.minor}'
    site_packages = Path(sysconfig.get_paths()['purelib'])
    return {
        f'{BUILD_MACHINE_PREFIX}/lib/python{version}/site-packages/numpy/_core/include': numpy.get_include(),
        f'{BUILD_MACHINE_PREFIX}/lib/python{version}/site-packages': str(site_packages),
        f'{BUILD_MACHINE_PREFIX}/include/python{version}': sysconfig.get_paths()['include'],
    }


def repair(prefix: Path) -> list[Path]:
    """Rewrite every CMake file under `prefix`/share that names the build machine's Python."""
    changed = []
    table = replacements()
    for path in sorted((prefix / 'share').rglob('*.cmake')):
        text = path.read_text(encoding='utf-8')
        if BUILD_MACHINE_PREFIX not in text:
            continue
        for old, new in table.items():
            text = text.replace(old, new)
        path.write_text(text, encoding='utf-8')
        changed.append(path)
    return changed


def main() -> int:
    prefix = Path(sys.prefix)
    if prefix == Path(sys.base_prefix):
        print('repair_ros_wheels: run this with the venv python, not the system one', file=sys.stderr)
        return 2
    changed = repair(prefix)
    print(f'repair_ros_wheels: {len(changed)} CMake file(s) repaired in {prefix}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
