#!/usr/bin/env python3
"""Rig load: the drivers of a bimanual teleop cell, as they load the rig computer.

Written blind from `bench/rigs/drivers_bimanual_cell.md` and `bench/rigs/README.md` only (no look at the code
under test nor at the other benches). One OS process per driver, real rclpy on whatever ROS domain and Fast DDS
profile the environment names, each publishing with the QoS, rate, message, size and timing quirks the page gives:

| process | topics |
|---|---|
| left_arm_driver / right_arm_driver | /<side>/joint_states (250 Hz) and /<side>/gripper/joint_states (50 Hz) |
| left_ft_driver / right_ft_driver | /<side>/wrench: 1000 Hz as bursts of 10 samples every 10 ms, stamps 1 ms apart |
| teleop_driver | /teleop/left/command and /teleop/right/command (200 Hz each, 7 positions) |
| head_camera_driver | /head_camera/image_raw, 1920x1080 rgb8, 30 Hz, reliable depth 10 |
| left/right_wrist_camera_driver | /<side>_wrist/image_raw, 640x480 rgb8, 30 Hz, best effort depth 5 |
| robot_state_publisher | /robot_description (~40 kB URDF), once, transient local |

Usage (the bench calls it so):

    .venv/bin/python bench/rigs/drivers_bimanual_cell_load.py --seconds S [--subscribers N] [--warmup W] [--linger L]

Every driver waits until each of its topics has N subscriptions matched (30 s at most), then all start publishing
at one wall-clock moment (`--warmup` seconds after the last one matched), publish for S seconds, stay up `--linger`
seconds so reliable messages get delivered, and report. The parent's last stdout line is one JSON object:
`{"published": {topic: count, ...}, "max_late_ms": worst lateness of any publish against its schedule}`.

Header stamps are wall-clock (time.time_ns) capture times on the schedule, increasing exactly by the device's
period, so a subscriber can count losses from stamp gaps. Cameras are USB: now and then a frame leaves one period
late and the next one right behind it (same stamps; that planned delay is not counted as lateness).
"""

from __future__ import annotations

import argparse
import array
import contextlib
import ctypes
import heapq
import json
import math
import multiprocessing as mp
import os
import random
import signal
import sys
import time
from multiprocessing.connection import wait as mp_wait

NS = 1_000_000_000
MATCH_TIMEOUT_S = 30.0
STARTUP_TIMEOUT_S = 120.0  # process start, imports and frame generation on a busy 2-core machine, before matching

DRIVERS = (
    'left_arm_driver', 'right_arm_driver', 'left_ft_driver', 'right_ft_driver', 'teleop_driver',
    'head_camera_driver', 'left_wrist_camera_driver', 'right_wrist_camera_driver', 'robot_state_publisher',
)

ARM_JOINTS = 7
GRIPPER_OPEN_M = 0.085
GRIPPER_CLOSED_M = 0.0
CAMERA_LATE_PROBABILITY = 1.0 / 75.0  # "now and then": about once every 2.5 s per camera at 30 Hz
URDF_BYTES = 40_000


class DriverError(RuntimeError):
    pass


class ParentGone(RuntimeError):
    pass


# --------------------------------------------------------------------------------------------------------------
# Parent death: a child must never outlive the load (an orphan publisher spoils the next benchmark run).

def _die_with_parent() -> None:
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


class Guard:
    def __init__(self, parent_pid: int):
        self.parent_pid = parent_pid
        self.next_check = 0.0

    def check(self) -> None:
        now = time.monotonic()
        if now >= self.next_check:
            self.next_check = now + 0.1
            if os.getppid() != self.parent_pid:
                raise ParentGone()

    def sleep_until_mono_ns(self, target_ns: int) -> None:
        while True:
            self.check()
            left = target_ns - time.monotonic_ns()
            if left <= 0:
                return
            time.sleep(min(left / NS, 0.2))


# --------------------------------------------------------------------------------------------------------------
# Synthetic content, made once at startup.

def _joint_names(side: str) -> list[str]:
    return [f'{side}_joint{i + 1}' for i in range(ARM_JOINTS)]


def _arm_table(side: str, rate_hz: int, lead_s: float = 0.0) -> tuple[list, list, list]:
    """Position/velocity/effort for one 8 s cycle of smooth teleoperated motion (closes on itself)."""
    import numpy as np

    cycle_s = 8.0
    n = int(rate_hz * cycle_s)
    t = np.arange(n) / rate_hz + lead_s
    sign = 1.0 if side == 'left' else -1.0
    harmonics = np.array([1, 2, 1, 3, 2, 1, 2], float)
    amp = np.array([0.6, 0.4, 0.5, 0.7, 0.8, 0.5, 1.2])
    center = np.array([0.0, -0.6, 0.0, -1.9, 0.0, 1.5, 0.8]) * np.array([sign, 1, sign, 1, sign, 1, sign])
    phase = np.arange(ARM_JOINTS) * 0.7 + (0.0 if side == 'left' else 1.3)
    w = 2 * math.pi * harmonics / cycle_s
    arg = w[None, :] * t[:, None] + phase[None, :]
    rng = np.random.default_rng(1 if side == 'left' else 2)
    pos = center + amp * np.sin(arg) + rng.normal(0, 2e-5, (n, ARM_JOINTS))
    vel = amp * w * np.cos(arg) + rng.normal(0, 1e-3, (n, ARM_JOINTS))
    gravity = np.array([0.0, 28.0, 2.0, 12.0, 0.5, 1.5, 0.1])
    eff = gravity * np.cos(pos) + 0.8 * vel + rng.normal(0, 0.05, (n, ARM_JOINTS))
    return ([array.array('d', row) for row in pos], [array.array('d', row) for row in vel],
            [array.array('d', row) for row in eff])


def _gripper_table(side: str, rate_hz: int) -> tuple[list, list, list]:
    """Finger gap (m) over an 8 s cycle: open, close onto a 42 mm object, hold (effort), open again."""
    import numpy as np

    cycle_s = 8.0
    n = int(rate_hz * cycle_s)
    t = (np.arange(n) / rate_hz + (0.0 if side == 'left' else 2.0)) % cycle_s
    obj = 0.042

    def smooth(x):
        x = np.clip(x, 0.0, 1.0)
        return x * x * (3 - 2 * x)

    closing = smooth((t - 1.0) / 0.8)
    opening = smooth((t - 5.0) / 0.8)
    pos = GRIPPER_OPEN_M + (obj - GRIPPER_OPEN_M) * closing * (1 - opening)
    vel = np.gradient(pos) * rate_hz
    held = (closing > 0.999) & (opening < 0.001)
    eff = np.where(held, 35.0, 0.5) + np.random.default_rng(3).normal(0, 0.2, n)
    return ([array.array('d', [p]) for p in pos], [array.array('d', [v]) for v in vel],
            [array.array('d', [e]) for e in eff])


def _wrench_table(side: str, rate_hz: int) -> list[tuple[float, ...]]:
    """Force (N) and torque (N m) at the wrist over an 8 s cycle: tool weight, a held object, contacts, noise."""
    import numpy as np

    cycle_s = 8.0
    n = int(rate_hz * cycle_s)
    t = (np.arange(n) / rate_hz + (0.0 if side == 'left' else 2.0)) % cycle_s
    rng = np.random.default_rng(4 if side == 'left' else 5)
    held = ((t > 1.8) & (t < 5.0)).astype(float)
    contact = np.exp(-(((t - 1.6) / 0.05) ** 2)) * 6.0 + np.exp(-(((t - 4.6) / 0.08) ** 2)) * 9.0
    fx = 0.3 * np.sin(2 * math.pi * t / cycle_s) + rng.normal(0, 0.08, n)
    fy = -0.2 + 0.1 * np.cos(2 * math.pi * t / cycle_s) + rng.normal(0, 0.08, n)
    fz = -8.8 - 2.0 * held - contact + rng.normal(0, 0.12, n)
    tx = 0.05 * fy + rng.normal(0, 0.004, n)
    ty = -0.05 * fx + 0.02 * held + rng.normal(0, 0.004, n)
    tz = rng.normal(0, 0.003, n)
    return [tuple(float(v) for v in row) for row in np.stack([fx, fy, fz, tx, ty, tz], axis=1)]


class _Canvas:
    """An image in world units (x across, y down, metres-ish) with soft-edged painting inside bounding boxes."""

    def __init__(self, width: int, height: int, cx: float, cy: float, span: float):
        import numpy as np

        self.np = np
        self.w, self.h = width, height
        self.px = span / width
        self.x = (cx + (np.arange(width) - width / 2 + 0.5) * self.px).astype(np.float32)
        self.y = (cy + (np.arange(height) - height / 2 + 0.5) * self.px).astype(np.float32)
        self.img = np.zeros((height, width, 3), np.float32)

    def _window(self, x0, y0, x1, y1):
        np = self.np
        c0 = max(int(np.searchsorted(self.x, x0)) - 2, 0)
        c1 = min(int(np.searchsorted(self.x, x1)) + 2, self.w)
        r0 = max(int(np.searchsorted(self.y, y0)) - 2, 0)
        r1 = min(int(np.searchsorted(self.y, y1)) + 2, self.h)
        if c0 >= c1 or r0 >= r1:
            return None
        return slice(r0, r1), slice(c0, c1)

    def paint(self, bbox, fn) -> None:
        win = self._window(*bbox)
        if win is None:
            return
        rs, cs = win
        X = self.x[cs][None, :]
        Y = self.y[rs][:, None]
        alpha, rgb = fn(X, Y)
        alpha = alpha[..., None]
        self.img[rs, cs] = self.img[rs, cs] * (1 - alpha) + rgb * alpha

    def edge(self, dist_inside):
        """Antialiased coverage from a signed distance (positive inside), in world units."""
        return self.np.clip(dist_inside / self.px + 0.5, 0.0, 1.0)

    def background(self, horizon: float) -> None:
        np = self.np
        X = self.x[None, :]
        Y = self.y[:, None]
        wall_shade = 0.85 + 0.15 * np.clip((Y + 0.2) / 0.4, 0, 1)
        wall = np.array([196, 192, 184], np.float32) * wall_shade[..., None]
        grain = 10.0 * np.sin(X * 60.0 + 4.0 * np.sin(Y * 9.0)) + 5.0 * np.sin(X * 170.0 + Y * 13.0)
        light = 1.0 - 0.35 * np.clip((Y - horizon) / 0.6, 0, 1) - 0.15 * np.abs(X - 0.5)
        wood = (np.array([158, 114, 72], np.float32) + grain[..., None] * np.array([1.0, 0.75, 0.5])) * light[..., None]
        table = self.edge(Y - horizon)[..., None] + np.zeros_like(X)[..., None]
        self.img[:] = wall * (1 - table) + wood * table
        # the table's front edge, a dark strip just below the horizon
        self.paint((-10, horizon, 10, horizon + 0.01), lambda X, Y: (
            self.edge(np.minimum(Y - horizon, horizon + 0.008 - Y)) + 0 * X, np.array([70, 52, 38], np.float32)))

    def capsule(self, p0, p1, r, color, shine=0.25) -> None:
        np = self.np
        (x0, y0), (x1, y1) = p0, p1
        dx, dy = x1 - x0, y1 - y0
        ll = dx * dx + dy * dy or 1e-12
        col = np.array(color, np.float32)

        def fn(X, Y):
            u = np.clip(((X - x0) * dx + (Y - y0) * dy) / ll, 0, 1)
            ex, ey = X - (x0 + u * dx), Y - (y0 + u * dy)
            d = np.sqrt(ex * ex + ey * ey)
            rel = np.clip(d / r, 0, 1)
            side = (ex * -dy + ey * dx) / (math.sqrt(ll) * r)  # -1..1 across the limb
            shade = 1.0 - 0.45 * rel ** 2 + shine * np.exp(-(((side + 0.35) / 0.25) ** 2))
            return self.edge(r - d), col * shade[..., None]

        self.paint((min(x0, x1) - r, min(y0, y1) - r, max(x0, x1) + r, max(y0, y1) + r), fn)

    def ellipse(self, cx, cy, rx, ry, color, sphere=0.5) -> None:
        np = self.np
        col = np.array(color, np.float32)

        def fn(X, Y):
            q = np.sqrt(((X - cx) / rx) ** 2 + ((Y - cy) / ry) ** 2)
            lit = np.sqrt(((X - cx + 0.35 * rx) / rx) ** 2 + ((Y - cy + 0.35 * ry) / ry) ** 2)
            shade = 1.0 - sphere * 0.5 * np.clip(lit, 0, 1.5) ** 2 + 0.3 * np.exp(-(lit / 0.25) ** 2)
            return self.edge((1 - q) * min(rx, ry)), col * shade[..., None]

        self.paint((cx - rx, cy - ry, cx + rx, cy + ry), fn)

    def box(self, x0, y0, x1, y1, color, top=1.0, bottom=0.75) -> None:
        np = self.np
        col = np.array(color, np.float32)

        def fn(X, Y):
            inside = np.minimum(np.minimum(X - x0, x1 - X), np.minimum(Y - y0, y1 - Y))
            shade = top + (bottom - top) * np.clip((Y - y0) / max(y1 - y0, 1e-9), 0, 1)
            return self.edge(inside), col * shade[..., None] + 0 * X[..., None]

        self.paint((x0, y0, x1, y1), fn)

    def shadow(self, cx, cy, rx, ry, depth=0.45) -> None:
        np = self.np

        def fn(X, Y):
            q = ((X - cx) / rx) ** 2 + ((Y - cy) / ry) ** 2
            return depth * np.exp(-q * 1.5), np.zeros(3, np.float32)

        self.paint((cx - 2 * rx, cy - 2 * ry, cx + 2 * rx, cy + 2 * ry), fn)

    def finish(self, rng, noise_sigma: float):
        np = self.np
        X = (self.x[None, :] - self.x.mean()) / (self.x[-1] - self.x[0])
        Y = (self.y[:, None] - self.y.mean()) / (self.x[-1] - self.x[0])
        vignette = 1.0 - 0.6 * (X * X + Y * Y)
        img = self.img * vignette[..., None]
        img += rng.standard_normal(img.shape, dtype=np.float32) * noise_sigma  # read noise
        img += rng.standard_normal(img.shape, dtype=np.float32) * np.sqrt(np.clip(img, 0, 255)) * 0.25  # shot
        return np.clip(img, 0, 255).astype(np.uint8)


def _scene(canvas: _Canvas, phase: float, wrist: str | None) -> None:
    """A table with objects seen from the head (or, wrist set, from that gripper), two arms reaching in."""
    horizon = 0.16
    canvas.background(horizon)
    s = math.sin(2 * math.pi * phase)
    # objects on the table, with contact shadows
    canvas.shadow(0.33, 0.42, 0.06, 0.025)
    canvas.box(0.29, 0.33, 0.37, 0.41, (178, 40, 34), top=1.1, bottom=0.8)   # red cube, front face
    canvas.box(0.29, 0.31, 0.37, 0.335, (215, 70, 60), top=1.0, bottom=1.0)  # its lit top
    canvas.shadow(0.62, 0.44, 0.05, 0.02)
    canvas.box(0.585, 0.34, 0.655, 0.44, (40, 70, 160), top=1.05, bottom=0.7)  # blue cylinder body
    canvas.ellipse(0.62, 0.34, 0.035, 0.012, (90, 120, 205), sphere=0.2)
    canvas.shadow(0.49, 0.30, 0.035, 0.012)
    canvas.ellipse(0.49, 0.28, 0.025, 0.025, (60, 150, 70))                 # green ball
    canvas.box(0.42, 0.46, 0.58, 0.52, (225, 225, 215), top=1.0, bottom=0.85)  # a white tray
    # two arms from the cell's top corners, elbows out, grippers over the objects
    for sign, base_x, target in ((1, -0.05, (0.36 + 0.05 * s, 0.27)), (-1, 1.05, (0.61 - 0.05 * s, 0.25))):
        shoulder = (base_x, -0.05)
        elbow = ((base_x + target[0]) / 2 - 0.08 * sign, 0.05 + 0.03 * s)
        wrist_pt = target
        canvas.capsule(shoulder, elbow, 0.045, (92, 96, 104))
        canvas.capsule(elbow, wrist_pt, 0.035, (110, 114, 122))
        canvas.capsule(wrist_pt, (wrist_pt[0], wrist_pt[1] + 0.04), 0.022, (40, 40, 44), shine=0.1)  # F/T + flange
        gap = 0.02 + 0.015 * (1 + s) / 2
        for f in (-1, 1):
            fx = wrist_pt[0] + f * gap
            canvas.capsule((fx, wrist_pt[1] + 0.05), (fx, wrist_pt[1] + 0.085), 0.007, (30, 30, 34), shine=0.15)
    if wrist is not None:
        # the gripper's own fingers, fixed in this camera's view (drawn in view coordinates near the bottom)
        x0, x1 = float(canvas.x[0]), float(canvas.x[-1])
        y1 = float(canvas.y[-1])
        width = x1 - x0
        gap = width * (0.18 + 0.06 * s)
        mid = (x0 + x1) / 2
        for f in (-1, 1):
            fx = mid + f * gap
            canvas.capsule((fx, y1 + 0.02 * width), (fx + f * 0.02 * width, y1 - 0.28 * width), 0.06 * width,
                           (34, 34, 38), shine=0.2)


def _make_frames(kind: str, width: int, height: int, count: int) -> list:
    """A small set of distinct frames of one slow motion, in a ping-pong order so the cycle has no jump."""
    import numpy as np

    frames = []
    rng = np.random.default_rng({'head': 11, 'left': 12, 'right': 13}[kind])
    for i in range(count):
        phase = -0.25 + 0.5 * i / (count - 1)  # sin(2 pi phase) sweeps -1 .. 1
        if kind == 'head':
            canvas = _Canvas(width, height, 0.5, 0.5 * height / width + 0.005, 1.0)
            _scene(canvas, phase, None)
        else:
            cx = 0.36 if kind == 'left' else 0.61
            canvas = _Canvas(width, height, cx, 0.36, 0.26)
            _scene(canvas, phase, kind)
        frames.append(array.array('B', canvas.finish(rng, 2.5).tobytes()))
    return frames + frames[-2:0:-1]


def _urdf() -> str:
    """A ~40 kB URDF of the cell: torso, head camera, two 7-joint arms with F/T sensor, gripper and wrist camera."""
    parts = ['<?xml version="1.0"?>', '<robot name="bimanual_teleop_cell">']

    def inertial(mass: float) -> str:
        i = 0.01 * mass
        return (f'    <inertial>\n      <origin xyz="0 0 0.05" rpy="0 0 0"/>\n      <mass value="{mass:.3f}"/>\n'
                f'      <inertia ixx="{i:.5f}" ixy="0.0" ixz="0.0" iyy="{i:.5f}" iyz="0.0" izz="{0.6 * i:.5f}"/>\n'
                '    </inertial>')

    def link(name: str, mesh: str, mass: float) -> None:
        parts.append(
            f'  <link name="{name}">\n{inertial(mass)}\n'
            f'    <visual>\n      <origin xyz="0 0 0" rpy="0 0 0"/>\n      <geometry>\n'
            f'        <mesh filename="package://bimanual_cell_description/meshes/visual/{mesh}.dae"/>\n'
            f'      </geometry>\n      <material name="arm_grey"/>\n    </visual>\n'
            f'    <collision>\n      <origin xyz="0 0 0" rpy="0 0 0"/>\n      <geometry>\n'
            f'        <mesh filename="package://bimanual_cell_description/meshes/collision/{mesh}.stl"/>\n'
            f'      </geometry>\n    </collision>\n  </link>')

    def joint(name, kind, parent, child, xyz, rpy='0 0 0', axis='0 0 1', lower=-2.9, upper=2.9, effort=87.0,
              velocity=2.175) -> None:
        text = (f'  <joint name="{name}" type="{kind}">\n    <parent link="{parent}"/>\n    <child link="{child}"/>\n'
                f'    <origin xyz="{xyz}" rpy="{rpy}"/>\n')
        if kind != 'fixed':
            text += (f'    <axis xyz="{axis}"/>\n    <limit lower="{lower}" upper="{upper}" effort="{effort}" '
                     f'velocity="{velocity}"/>\n    <dynamics damping="0.1" friction="0.05"/>\n'
                     f'    <safety_controller soft_lower_limit="{lower + 0.05:.3f}" '
                     f'soft_upper_limit="{upper - 0.05:.3f}" k_position="100.0" k_velocity="40.0"/>\n')
        parts.append(text + '  </joint>')

    parts.append('  <material name="arm_grey">\n    <color rgba="0.6 0.62 0.66 1.0"/>\n  </material>')
    parts.append('  <material name="black">\n    <color rgba="0.1 0.1 0.1 1.0"/>\n  </material>')
    parts.append('  <link name="world"/>')
    link('base_link', 'cell_frame', 80.0)
    joint('world_to_base', 'fixed', 'world', 'base_link', '0 0 0')
    link('torso_link', 'torso', 25.0)
    joint('base_to_torso', 'fixed', 'base_link', 'torso_link', '0 0 0.9')
    link('head_camera_link', 'usb3_camera', 0.2)
    joint('torso_to_head_camera', 'fixed', 'torso_link', 'head_camera_link', '0.1 0 0.55', '0 0.7 0')
    parts.append('  <link name="head_camera_optical_frame"/>')
    joint('head_camera_optical_joint', 'fixed', 'head_camera_link', 'head_camera_optical_frame', '0 0 0',
          '-1.5708 0 -1.5708')
    limits = [(-2.9, 2.9), (-1.76, 1.76), (-2.9, 2.9), (-3.07, -0.07), (-2.9, 2.9), (-0.02, 3.75), (-2.9, 2.9)]
    hw = []
    for side, y in (('left', 0.25), ('right', -0.25)):
        link(f'{side}_link0', 'link0', 4.0)
        joint(f'{side}_mount', 'fixed', 'torso_link', f'{side}_link0', f'0 {y} 0.3', f'{1.5708 if y > 0 else -1.5708} 0 0')
        prev = f'{side}_link0'
        for i in range(ARM_JOINTS):
            lk = f'{side}_link{i + 1}'
            link(lk, f'link{i + 1}', 3.0 - 0.3 * i)
            lo, up = limits[i]
            joint(f'{side}_joint{i + 1}', 'revolute', prev, lk, f'0 0 {0.333 if i == 0 else 0.0}',
                  '-1.5708 0 0' if i % 2 else '1.5708 0 0', lower=lo, upper=up, effort=87.0 if i < 4 else 12.0)
            prev = lk
            hw.append(f'{side}_joint{i + 1}')
        link(f'{side}_ft_sensor_link', 'ft_sensor', 0.3)
        joint(f'{side}_ft_mount', 'fixed', prev, f'{side}_ft_sensor_link', '0 0 0.107')
        link(f'{side}_gripper_base', 'gripper_base', 0.9)
        joint(f'{side}_gripper_mount', 'fixed', f'{side}_ft_sensor_link', f'{side}_gripper_base', '0 0 0.035')
        for f in ('left', 'right'):
            link(f'{side}_gripper_{f}_finger', 'finger', 0.05)
        joint(f'{side}_gripper_finger_joint', 'prismatic', f'{side}_gripper_base', f'{side}_gripper_left_finger',
              '0 0 0.12', axis='0 1 0', lower=GRIPPER_CLOSED_M, upper=GRIPPER_OPEN_M, effort=140.0, velocity=0.15)
        parts.append(
            f'  <joint name="{side}_gripper_mimic_joint" type="prismatic">\n'
            f'    <parent link="{side}_gripper_base"/>\n    <child link="{side}_gripper_right_finger"/>\n'
            f'    <origin xyz="0 0 0.12" rpy="0 0 3.14159"/>\n    <axis xyz="0 1 0"/>\n'
            f'    <limit lower="0.0" upper="0.085" effort="140.0" velocity="0.15"/>\n'
            f'    <mimic joint="{side}_gripper_finger_joint" multiplier="1.0" offset="0.0"/>\n  </joint>')
        link(f'{side}_wrist_camera_link', 'wrist_camera', 0.1)
        joint(f'{side}_wrist_camera_mount', 'fixed', f'{side}_gripper_base', f'{side}_wrist_camera_link',
              '0.06 0 0.02', '0 -0.5 0')
        parts.append(f'  <link name="{side}_wrist_camera_optical_frame"/>')
        joint(f'{side}_wrist_camera_optical_joint', 'fixed', f'{side}_wrist_camera_link',
              f'{side}_wrist_camera_optical_frame', '0 0 0', '-1.5708 0 -1.5708')
        hw.append(f'{side}_gripper_finger_joint')
    for side in ('left', 'right'):
        text = [f'  <ros2_control name="{side}_arm_system" type="system">', '    <hardware>',
                '      <plugin>arm_hardware/ArmSystemInterface</plugin>',
                f'      <param name="robot_ip">192.168.1.{11 if side == "left" else 12}</param>',
                '      <param name="control_period_us">4000</param>', '    </hardware>']
        for j in (j for j in hw if j.startswith(side)):
            text += [f'    <joint name="{j}">', '      <command_interface name="position"/>',
                     '      <command_interface name="velocity"/>', '      <state_interface name="position">',
                     '        <param name="initial_value">0.0</param>', '      </state_interface>',
                     '      <state_interface name="velocity"/>', '      <state_interface name="effort"/>',
                     '    </joint>']
        text += [f'    <sensor name="{side}_ft_sensor">',
                 *[f'      <state_interface name="{a}"/>' for a in
                   ('force.x', 'force.y', 'force.z', 'torque.x', 'torque.y', 'torque.z')],
                 f'      <param name="frame_id">{side}_ft_sensor_link</param>', '    </sensor>', '  </ros2_control>']
        parts.append('\n'.join(text))
    for j in hw:
        parts.append(
            f'  <transmission name="{j}_transmission">\n    <type>transmission_interface/SimpleTransmission</type>\n'
            f'    <joint name="{j}">\n      <hardwareInterface>hardware_interface/PositionJointInterface'
            f'</hardwareInterface>\n    </joint>\n    <actuator name="{j}_motor">\n'
            f'      <mechanicalReduction>{100 if "gripper" not in j else 1}</mechanicalReduction>\n'
            f'    </actuator>\n  </transmission>')
    parts.append('</robot>\n')
    text = '\n'.join(parts)
    body, tail = text[:-len('</robot>\n')], '</robot>\n'
    while len(body) + len(tail) < URDF_BYTES - 64:  # the description's gazebo/material blocks, to its ~40 kB
        for side in ('left', 'right'):
            for i in range(ARM_JOINTS):
                body += (f'  <gazebo reference="{side}_link{i + 1}">\n    <material>Gazebo/Grey</material>\n'
                         '    <selfCollide>false</selfCollide>\n  </gazebo>\n')
                if len(body) + len(tail) >= URDF_BYTES - 64:
                    break
            if len(body) + len(tail) >= URDF_BYTES - 64:
                break
    pad = URDF_BYTES - len(body) - len(tail)
    if pad >= 9:
        body += '<!--' + ' ' * (pad - 8) + '-->\n'
    return body + tail


# --------------------------------------------------------------------------------------------------------------
# Streams: what each driver publishes and when. Times are ns after the common start.

class _Stream:
    topic: str
    pub = None

    def __init__(self):
        self.count = 0

    def capture_ns(self, k: int) -> int:  # when the k-th event's (first) sample was captured
        raise NotImplementedError

    def due_ns(self, k: int) -> int:  # when the k-th event is published
        return self.capture_ns(k)

    def publish(self, k: int, start_ns: int, target_mono: int) -> int:  # returns the worst lateness, ns
        raise NotImplementedError


def _set_stamp(stamp, t_ns: int) -> None:
    stamp.sec, stamp.nanosec = divmod(t_ns, NS)


class _JointStream(_Stream):
    def __init__(self, node, qos, topic, rate_hz, names, table, frame_id=''):
        from sensor_msgs.msg import JointState

        super().__init__()
        self.topic, self.rate = topic, rate_hz
        self.pub = node.create_publisher(JointState, topic, qos)
        self.msg = JointState(check_fields=True)
        self.msg.name = list(names)
        self.msg.header.frame_id = frame_id
        self.pos, self.vel, self.eff = table

    def capture_ns(self, k):
        return k * NS // self.rate

    def publish(self, k, start_ns, target_mono):
        m = self.msg
        i = k % len(self.pos)
        _set_stamp(m.header.stamp, start_ns + self.capture_ns(k))
        m.position = self.pos[i]
        if self.vel is not None:
            m.velocity = self.vel[i]
        if self.eff is not None:
            m.effort = self.eff[i]
        late = time.monotonic_ns() - target_mono
        self.pub.publish(m)
        self.count += 1
        return late


class _WrenchBurstStream(_Stream):
    """1000 Hz samples; the sensor box sends them 10 at a time every 10 ms, back to back, stamps 1 ms apart.

    Burst b holds the samples captured at 10 b .. 10 b + 9 ms and leaves when the box's 10 ms are up (10 b + 10 ms).
    """

    SAMPLE_NS = 1_000_000
    BURST = 10

    def __init__(self, node, qos, topic, frame_id, table):
        from geometry_msgs.msg import WrenchStamped

        super().__init__()
        self.topic = topic
        self.pub = node.create_publisher(WrenchStamped, topic, qos)
        self.msg = WrenchStamped()
        self.msg.header.frame_id = frame_id
        self.table = table

    def capture_ns(self, k):
        return k * self.BURST * self.SAMPLE_NS

    def due_ns(self, k):
        return (k + 1) * self.BURST * self.SAMPLE_NS

    def publish(self, k, start_ns, target_mono):
        m = self.msg
        stamp = m.header.stamp
        force, torque = m.wrench.force, m.wrench.torque
        table, n = self.table, len(self.table)
        first = k * self.BURST
        worst = -(1 << 62)
        for j in range(first, first + self.BURST):
            _set_stamp(stamp, start_ns + j * self.SAMPLE_NS)
            force.x, force.y, force.z, torque.x, torque.y, torque.z = table[j % n]
            late = time.monotonic_ns() - target_mono
            self.pub.publish(m)
            worst = max(worst, late)
        self.count += self.BURST
        return worst


class _CameraStream(_Stream):
    """30 Hz frames, stamped at exposure; now and then a frame comes one period late and the next right behind."""

    def __init__(self, node, qos, topic, frame_id, width, height, frames, seed, rate_hz=30):
        from sensor_msgs.msg import Image

        super().__init__()
        self.topic, self.rate = topic, rate_hz
        self.pub = node.create_publisher(Image, topic, qos)
        self.msg = Image(check_fields=True)  # check_fields: an array.array is taken as is, not copied
        self.msg.header.frame_id = frame_id
        self.msg.height, self.msg.width = height, width
        self.msg.encoding = 'rgb8'
        self.msg.is_bigendian = 0
        self.msg.step = width * 3
        self.frames = frames
        self.rng = random.Random(seed)
        self.late = {}

    def capture_ns(self, k):
        return k * NS // self.rate

    def _is_late(self, k):
        if k not in self.late:
            self.late.pop(k - 2, None)
            self.late[k] = (not self._is_late(k - 1) if k > 0 else True) and self.rng.random() < CAMERA_LATE_PROBABILITY
        return self.late[k]

    def due_ns(self, k):
        # a late frame leaves with the next one's slot; the next one goes right behind it (same due time)
        return self.capture_ns(k + 1) if self._is_late(k) else self.capture_ns(k)

    def publish(self, k, start_ns, target_mono):
        m = self.msg
        _set_stamp(m.header.stamp, start_ns + self.capture_ns(k))
        m.data = self.frames[k % len(self.frames)]
        late = time.monotonic_ns() - target_mono
        self.pub.publish(m)
        self.count += 1
        return late


class _OnceStream(_Stream):
    def __init__(self, node, qos, topic, text):
        from std_msgs.msg import String

        super().__init__()
        self.topic = topic
        self.pub = node.create_publisher(String, topic, qos)
        self.msg = String(data=text)

    def capture_ns(self, k):
        return 0 if k == 0 else 1 << 62

    def publish(self, k, start_ns, target_mono):
        late = time.monotonic_ns() - target_mono
        self.pub.publish(self.msg)
        self.count += 1
        return late


def _build(driver: str, node) -> list[_Stream]:
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

    reliable10 = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10, reliability=ReliabilityPolicy.RELIABLE,
                            durability=DurabilityPolicy.VOLATILE)
    sensor5 = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=5, reliability=ReliabilityPolicy.BEST_EFFORT,
                         durability=DurabilityPolicy.VOLATILE)
    latched1 = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                          durability=DurabilityPolicy.TRANSIENT_LOCAL)
    side = driver.split('_', 1)[0]
    if driver in ('left_arm_driver', 'right_arm_driver'):
        return [
            _JointStream(node, reliable10, f'/{side}/joint_states', 250, _joint_names(side), _arm_table(side, 250)),
            _JointStream(node, reliable10, f'/{side}/gripper/joint_states', 50, [f'{side}_gripper_finger_joint'],
                         _gripper_table(side, 50)),
        ]
    if driver in ('left_ft_driver', 'right_ft_driver'):
        return [_WrenchBurstStream(node, sensor5, f'/{side}/wrench', f'{side}_ft_sensor_link',
                                   _wrench_table(side, 1000))]
    if driver == 'teleop_driver':
        streams = []
        for s in ('left', 'right'):
            pos, _, _ = _arm_table(s, 200, lead_s=0.05)  # the leader is a little ahead of the follower
            streams.append(_JointStream(node, reliable10, f'/teleop/{s}/command', 200, _joint_names(s),
                                        (pos, None, None)))
        return streams
    if driver == 'head_camera_driver':
        return [_CameraStream(node, reliable10, '/head_camera/image_raw', 'head_camera_optical_frame', 1920, 1080,
                              _make_frames('head', 1920, 1080, 5), seed=21)]
    if driver in ('left_wrist_camera_driver', 'right_wrist_camera_driver'):
        return [_CameraStream(node, sensor5, f'/{side}_wrist/image_raw', f'{side}_wrist_camera_optical_frame', 640,
                              480, _make_frames(side, 640, 480, 6), seed=22 if side == 'left' else 23)]
    if driver == 'robot_state_publisher':
        return [_OnceStream(node, latched1, '/robot_description', _urdf())]
    raise DriverError(f'unknown driver {driver}')


# --------------------------------------------------------------------------------------------------------------
# One driver process.

def _run_driver(driver: str, conn, guard: Guard, subscribers: int) -> None:
    import rclpy
    from rclpy.signals import SignalHandlerOptions

    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node(driver)
    try:
        streams = _build(driver, node)
        deadline = time.monotonic() + MATCH_TIMEOUT_S
        while True:
            short = [(s.topic, s.pub.get_subscription_count()) for s in streams]
            short = [(t, c) for t, c in short if c < subscribers]
            if not short:
                break
            if time.monotonic() > deadline:
                raise DriverError(f'no {subscribers} subscriber(s) matched within {MATCH_TIMEOUT_S:.0f} s: '
                                  + ', '.join(f'{t} has {c}' for t, c in short))
            guard.check()
            time.sleep(0.02)
        conn.send(('matched',))
        while not conn.poll(0.1):
            guard.check()
        order = conn.recv()
        if order[0] != 'start':
            return
        _, start_ns, seconds, linger = order
        end_rel = int(seconds * NS)
        mono0 = time.monotonic_ns() + (start_ns - time.time_ns())
        heap = []
        for i, s in enumerate(streams):
            if s.capture_ns(0) < end_rel:
                heap.append((s.due_ns(0), i, 0))
        heapq.heapify(heap)
        worst = 0
        while heap:
            due, i, k = heapq.heappop(heap)
            target = mono0 + due
            left = target - time.monotonic_ns()
            if left > 0:
                guard.sleep_until_mono_ns(target)
            else:
                guard.check()
            s = streams[i]
            worst = max(worst, s.publish(k, start_ns, target))
            if s.capture_ns(k + 1) < end_rel:
                heapq.heappush(heap, (s.due_ns(k + 1), i, k + 1))
        guard.sleep_until_mono_ns(mono0 + end_rel + int(linger * NS))
        conn.send(('done', {s.topic: s.count for s in streams}, worst))
    finally:
        node.destroy_node()
        with contextlib.suppress(Exception):
            rclpy.shutdown()


def _child_main(driver: str, conn, parent_pid: int, subscribers: int) -> None:
    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles ^C and ends the children
    with contextlib.suppress(Exception):
        os.dup2(2, 1)  # nothing of a child may reach stdout: the parent's last stdout line is the report
        sys.stdout = sys.stderr
    guard = Guard(parent_pid)
    try:
        guard.check()
        _run_driver(driver, conn, guard, subscribers)
    except ParentGone:
        os._exit(3)
    except BaseException as exc:
        with contextlib.suppress(Exception):
            conn.send(('error', f'{type(exc).__name__}: {exc}'.replace('\n', ' ')))
        sys.exit(1)


# --------------------------------------------------------------------------------------------------------------
# The parent.

def _parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--seconds', type=float, required=True, help='seconds of publishing')
    p.add_argument('--subscribers', type=int, default=1, help='subscriptions every topic must have matched (1)')
    p.add_argument('--warmup', type=float, default=1.0, help='seconds from all matched to the first publish (1.0)')
    p.add_argument('--linger', type=float, default=3.0, help='seconds to stay up after publishing (3.0)')
    args = p.parse_args(argv)
    if args.seconds <= 0 or args.subscribers < 0 or args.warmup < 0 or args.linger < 0:
        p.error('--seconds must be positive; --subscribers, --warmup and --linger not negative')
    return args


def _collect(procs: dict, conns: dict, want: str, timeout_s: float) -> dict:
    """Wait for message `want` from every driver; a driver's error or death ends the load."""
    got = {}
    pending = {conns[d]: d for d in procs}
    deadline = time.monotonic() + timeout_s
    while pending:
        left = deadline - time.monotonic()
        if left <= 0:
            raise DriverError(f'{", ".join(sorted(pending.values()))}: no {want!r} within {timeout_s:.0f} s')
        for c in mp_wait(list(pending), timeout=min(left, 1.0)):
            d = pending[c]
            try:
                msg = c.recv()
            except (EOFError, OSError):
                procs[d].join(2)
                raise DriverError(f'{d}: exited (code {procs[d].exitcode}) before {want!r}') from None
            if msg[0] == 'error':
                raise DriverError(f'{d}: {msg[1]}')
            if msg[0] == want:
                got[d] = msg
                del pending[c]
    return got


def _stop(procs: dict) -> None:
    for p in procs.values():
        if p.is_alive():
            p.terminate()
    for p in procs.values():
        p.join(3)
        if p.is_alive():
            p.kill()
            p.join(2)


def main(argv=None) -> int:
    args = _parse(argv)

    def on_term(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)
    ctx = mp.get_context('spawn')  # a fresh interpreter per driver: no DDS state crosses a fork
    procs, conns = {}, {}
    try:
        for d in DRIVERS:
            parent_end, child_end = ctx.Pipe()
            p = ctx.Process(target=_child_main, args=(d, child_end, os.getpid(), args.subscribers), name=d,
                            daemon=True)
            p.start()
            child_end.close()
            procs[d], conns[d] = p, parent_end
        _collect(procs, conns, 'matched', STARTUP_TIMEOUT_S + MATCH_TIMEOUT_S)
        start_ns = time.time_ns() + int(args.warmup * NS)
        for d in DRIVERS:
            conns[d].send(('start', start_ns, args.seconds, args.linger))
        done = _collect(procs, conns, 'done', args.warmup + args.seconds + args.linger + 60.0)
        for p in procs.values():
            p.join(10)
        _stop(procs)
    except DriverError as exc:
        _stop(procs)
        print(f'drivers_bimanual_cell_load: {exc}', file=sys.stderr, flush=True)
        return 1
    except (KeyboardInterrupt, SystemExit):
        _stop(procs)
        print('drivers_bimanual_cell_load: interrupted', file=sys.stderr, flush=True)
        return 130
    published = {}
    worst = 0
    for d in DRIVERS:
        _, counts, late = done[d]
        published.update(counts)
        worst = max(worst, late)
    print(json.dumps({'published': published, 'max_late_ms': round(worst / 1e6, 3)}), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
