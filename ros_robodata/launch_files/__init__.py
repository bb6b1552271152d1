"""Launch files checked without ROS 2 launch installed: well-formed XML, described arguments, installed
executables, existing files."""

from ros_robodata.launch_files.check import check_all, check_launch_file, find_package_root, find_substitutions

__all__ = ['check_all', 'check_launch_file', 'find_package_root', 'find_substitutions']
