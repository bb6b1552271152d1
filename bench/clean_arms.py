"""Clean episodes of arms built unlike the simulated cell, for the quality checks' false alarms (issue 14): what a
real rig's logs look like when nothing is wrong with them.

`industrial_arm`: a 6-joint arm's controller log at 20 Hz. The arm rests before and after the task (encoders read
the same value at rest), moves between waypoints with trapezoidal speed profiles up to 0.66 rad/s, pauses between
moves, and one joint is never used. The driver re-publishes a sample now and then while the arm moves, and a few
stamps step 40 or 58 ms instead of 50 (the positions are sampled on time). None of that is a data fault.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ros_robodata.bag.types import header, typestore  # noqa: E402
from ros_robodata.bag.writer import BagWriter  # noqa: E402
from ros_robodata.profile import Profile, profile_from_dict  # noqa: E402

JOINTS = ['shoulder_pan', 'shoulder_lift', 'elbow', 'wrist_1', 'wrist_2', 'wrist_3']
TOPIC = '/joint_states'
T0_NS = 1_700_000_000 * 1_000_000_000


def industrial_profile() -> Profile:
    return profile_from_dict({'robot': {'name': 'industrial_arm'},
                              'topics': {'joint_states': {'topic': TOPIC, 'type': 'sensor_msgs/msg/JointState',
                                                          'rate_hz': 20}}}, source='<industrial_arm>')


def _trapezoid(start: np.ndarray, end: np.ndarray, vmax: float, amax: float, t: np.ndarray) -> np.ndarray:
    """Positions along a straight joint-space move with a trapezoidal speed profile, at times t from its start."""
    distance = float(np.max(np.abs(end - start)))
    if distance == 0:
        return np.repeat(start[None, :], t.size, axis=0)
    ramp = vmax / amax
    if amax * ramp * ramp >= distance:  # never reaches vmax: a triangle
        ramp = math.sqrt(distance / amax)
        vmax = amax * ramp
    cruise = (distance - amax * ramp * ramp) / vmax
    total = 2 * ramp + cruise
    tt = np.clip(t, 0.0, total)
    s = np.where(tt < ramp, 0.5 * amax * tt ** 2,
                 np.where(tt < ramp + cruise, 0.5 * amax * ramp ** 2 + vmax * (tt - ramp),
                          distance - 0.5 * amax * (total - tt) ** 2))
    return start[None, :] + (end - start)[None, :] * (s / distance)[:, None]


def industrial_arm(seed: int) -> tuple[list[int], np.ndarray]:
    """(header stamps, positions) of one clean episode."""
    rng = np.random.default_rng([14, seed])
    rate = 20.0
    pieces: list[np.ndarray] = []
    here = rng.uniform(-1.0, 1.0, len(JOINTS))
    here[5] = 0.3  # wrist_3 is not used by this task

    def rest(seconds: float) -> None:
        pieces.append(np.repeat(here[None, :], int(seconds * rate), axis=0))

    rest(rng.uniform(2.0, 4.0))  # the operator has not started yet
    for _ in range(rng.integers(3, 6)):
        target = here + rng.uniform(-0.8, 0.8, len(JOINTS))
        target[5] = here[5]
        duration = 2 * 0.66 / 1.5 + float(np.max(np.abs(target - here))) / 0.66 + 0.1
        t = np.arange(0.0, duration, 1 / rate)
        pieces.append(_trapezoid(here, target, 0.66, 1.5, t))
        here = target
        rest(rng.uniform(0.3, 2.5))  # a pause between moves
    rest(rng.uniform(2.0, 4.0))  # done, waiting for the stop key
    positions = np.concatenate(pieces)
    n = positions.shape[0]
    stamps = [T0_NS + round(i * 1e9 / rate) for i in range(n)]
    for i in range(1, n - 1):
        if i % 37 == 0:  # an uneven stamp step (the sample itself was taken on time)
            stamps[i] += int(rng.choice([-10, 8])) * 1_000_000
    moving = np.max(np.abs(np.diff(positions, axis=0)), axis=1) > 1e-6
    for i in range(2, n):
        if i % 41 == 0 and moving[i - 1] and moving[i - 2]:  # the driver re-publishes its last sample
            positions[i] = positions[i - 1]
    return stamps, positions


def write_industrial_arm(path: Path, seed: int) -> Path:
    stamps, positions = industrial_arm(seed)
    types = typestore().types
    empty = np.array([], dtype=np.float64)
    with BagWriter(path) as writer:
        writer.add_topic(TOPIC, 'sensor_msgs/msg/JointState')
        for stamp, row in zip(stamps, positions, strict=True):
            writer.write_message(TOPIC, stamp + 3_000_000, types['sensor_msgs/msg/JointState'](
                header=header(stamp), name=JOINTS, position=np.asarray(row, dtype=np.float64), velocity=empty,
                effort=empty))
    return path
