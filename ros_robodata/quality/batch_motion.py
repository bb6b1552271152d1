"""The arm's motion checks over arrays of joint samples: the offline twin of JointMotion.add (and .command).

A run of samples is judged on whole arrays when the streaming check's state is settled: the stream has a
previous sample and speed, the task's typical motion is known, no repeated sample is pending. Inside the run,
what the streaming check does per sample (speeds, the running medians it refreshes every so many samples, the
idle and stuck judgements every few samples) is done on arrays in the same arithmetic; a sample where the
streaming check branches on rare state (NaN, a joint beyond its limit, a repeated reading while moving, a stamp
not after the last, a change of joint names) goes through JointMotion.add itself, as do the first samples of a
stream. Commands (a leader arm) are handed to the check in the bag's order, before any joint sample that arrived
after them is judged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ros_robodata.quality.motion import JointMotion


@dataclass
class MotionRun:
    """Joint samples of one layout in the bag's order: sequence numbers, names, stamps, positions (n x names)."""

    seqs: np.ndarray
    names: tuple[str, ...]
    stamps: np.ndarray
    positions: np.ndarray


def feed_motion(motion: JointMotion, runs: list[MotionRun], commands: list[MotionRun]) -> None:
    """JointMotion.add for every joint sample and .command for every command sample, in sequence order."""
    pending = [(int(seq), run, i) for run in commands for i, seq in enumerate(run.seqs.tolist())]
    pending.sort(key=lambda item: item[0])
    fed = 0

    def advance(seq: int) -> None:
        nonlocal fed
        while fed < len(pending) and pending[fed][0] < seq:
            _, run, i = pending[fed]
            motion.command(int(run.stamps[i]), run.names, run.positions[i].tolist())
            fed += 1

    for run in runs:
        for i, (stamp, seq) in enumerate(zip(run.stamps.tolist(), run.seqs.tolist(), strict=True)):
            advance(seq)
            motion.add(stamp, run.names, run.positions[i].tolist())
    advance(2**62)
