"""The simulated teleop cell's physics (MuJoCo), ROS-free: a node publishes the samples it produces."""

import os

# Headless rendering: must be chosen before mujoco is first imported. EGL (Mesa llvmpipe here) works.
os.environ.setdefault('MUJOCO_GL', 'egl')
