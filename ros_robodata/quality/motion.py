"""The arm's motion: NaN values, joint limits, velocity jumps, stuck encoders, idle time, smoothness, and a
bounded-memory copy of the trajectory for comparing demonstrations.

A policy learns the motion it is shown; jerky, idle or physically impossible stretches teach the wrong thing.

Why one module: every check here reads the same per-sample joint speeds and the same stillness spans (a jump is
judged against the typical change of the moving samples the idle check counts; a stuck joint is a stretch of
that stillness with its command moving; the follower's deadband and latency are timed on those same stretches),
so they are one streaming pass; why a still joint is no fault (an end stop, a hand closed on an object, a leader
dithering inside the follower's deadband, a late answer) is its own module, joint_stop.py.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ros_robodata.quality.findings import ERROR, INFO, WARN, Finding, Ranges
from ros_robodata.quality.joint_stop import explain_stuck, is_hand_joint
from ros_robodata.quality.quality_format import TrimPoints


@dataclass(frozen=True)
class JointLimit:
    lower: float
    upper: float


def limits_from_urdf(urdf: str) -> dict[str, JointLimit]:
    """Position limits of the revolute and prismatic joints of a URDF (continuous joints have none)."""
    try:
        root = ET.fromstring(urdf)
    except ET.ParseError:
        return {}
    out = {}
    for joint in root.iter('joint'):
        limit = joint.find('limit')
        if joint.get('type') in ('revolute', 'prismatic') and limit is not None:
            try:
                out[joint.get('name', '')] = JointLimit(float(limit.get('lower', 'nan')),
                                                        float(limit.get('upper', 'nan')))
            except ValueError:
                continue
    return out


@dataclass(frozen=True)
class MotionLimits:
    idle_speed: float = 0.01  # joint speed (rad/s or m/s) below which a joint is still
    idle_after_s: float = 3.0  # everything still this long is idle time
    stuck_after_s: float = 2.0  # a joint whose command moved while it reported the bit-identical value this long
    stuck_command_travel: float = 0.05  # ... by at least this much (in the joint's units) ...
    stuck_command_share: float = 0.25  # ... and by this share of all the command did for that joint in the episode
    limit_margin: float = 1e-3  # tolerance beyond a URDF limit
    velocity_jump_sigmas: float = 20.0  # a speed change this many typical changes (while moving) in one sample ...
    min_velocity_jump: float = 0.5  # ... and at least this much (rad/s or m/s) ...
    velocity_jump_of_peak: float = 1.5  # ... and more than this share of the task's peak speed is a jump
    uneven_stamp_share: float = 0.3  # a stamp step this far off the typical period is an uneven stamp gap
    repeated_warn_share: float = 0.01  # repeated samples above this share of the moving samples warn
    max_idle_s: float | None = None  # idle time beyond this warns; None: idle is information only
    trajectory_points: int = 2000  # at most this many samples of the trajectory are kept (memory bound)


_STILL_EVERY = 5  # samples between idle/stuck judgements
EARLY_KEPT = 1000  # speed changes kept to judge once the task's typical change is known
START_SETTLE_S = 0.5  # a stream's first half second: no jump judged in it before the motion is known
JOINT_CHANGES_KEPT = 5000  # speed changes kept per joint for the dataset's judgement of its jumps
ANSWERS_KEPT = 1000  # per joint, the follower's answers to its command kept for its latency
EARLY_MIN_SAMPLES = 30  # ... or, in a short episode, once this many moving samples showed it


class Trajectory:
    """A decimated trajectory whose memory never grows past `capacity` samples: when full, every other sample is
    dropped and the stride doubles, so a long episode is kept as evenly as a short one."""

    def __init__(self, capacity: int = 2000) -> None:
        self.capacity = capacity
        self.times: list[int] = []
        self.rows: list[list[float]] = []
        self._stride = 1
        self._seen = 0
        self._arrays: tuple[tuple[int, int], np.ndarray, np.ndarray] | None = None

    def add(self, stamp_ns: int, row: Sequence[float]) -> None:
        if self._seen % self._stride == 0:
            self.times.append(stamp_ns)
            self.rows.append(list(row))
            if len(self.times) >= self.capacity:
                self.times, self.rows = self.times[::2], self.rows[::2]
                self._stride *= 2
        self._seen += 1

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The kept samples as arrays, made once for the samples seen so far (smoothness and the episode's
        report both read them at the end)."""
        key = (self._seen, len(self.times))
        if self._arrays is None or self._arrays[0] != key:
            self._arrays = (key, np.array(self.times, dtype=np.int64), np.array(self.rows, dtype=float))
        return self._arrays[1], self._arrays[2]


class JointMotion:
    """Streaming motion checks over the arm joints of sensor_msgs/JointState messages."""

    def __init__(self, topic: str, joints: Sequence[str] | None, limits: MotionLimits = MotionLimits(),
                 joint_limits: dict[str, JointLimit] | None = None, not_stuck: Sequence[str] = ()) -> None:
        self.topic = topic
        self.wanted = list(joints) if joints else None
        self.limits = limits
        self.joint_limits = joint_limits or {}
        self.names: list[str] = []
        self._index: list[int] | None = None
        self._names_seen: tuple[str, ...] | None = None
        self.trajectory = Trajectory(limits.trajectory_points)
        self._nan = Ranges()
        self._nan_joints: set[str] = set()
        self._beyond = Ranges()
        self._beyond_joints: set[str] = set()
        self._jumps = Ranges()
        self._stamp_jumps = 0  # of those, explained by an uneven stamp step, not by the arm
        self._hand_jumps = 0  # ... or by a hand or gripper joint snapping shut or open, as grasps do
        self._early: list[tuple[int, float, int, list[float]]] = []  # speed changes before the typical was known
        self._joint_changes: list[list[float]] = []  # per joint, its speed changes while the arm moved
        self._motion_jumps: list[dict[str, float]] = []  # per jump in the motion itself: the joints that jumped
        self._repeats = Ranges()
        self._pending_repeat: int | None = None
        self._moving_samples = 0
        self._periods: list[int] = []
        self._period = 0
        self._speeds: list[float] = []
        self._peak_speed = 0.0
        self._idle = Ranges(join_ns=0)
        self._stuck: dict[str, Ranges] = {}
        self._stuck_travel: dict[str, float] = {}
        # (held value, command low, high, s since its command moved, 1.0 if held since the episode's start)
        self._stuck_spans: dict[str, list[tuple[float, float, float, float, float]]] = {}
        self._seen: list[tuple[float, float]] = []  # each joint's lowest and highest reading in the episode
        self._commands: dict[str, list[tuple[int, float]]] = {}
        self._command_range: dict[str, tuple[float, float]] = {}  # what the command did per joint, all episode
        self._command_layouts: dict[tuple[str, ...], list[tuple[str, list[tuple[int, float]]]]] = {}
        self._not_stuck = set(not_stuck)  # a gripper joint: an object holds it where its command is not
        self._moved: dict[str, tuple[int, int]] = {}  # a joint holding still: (since, when its command had moved)
        self._rest_error: dict[str, float] = {}  # per joint, its widest gap to its command at rest (both still)
        self._answers: dict[str, list[float]] = {}  # per joint, s from its command's move to its answer
        self._quiet: dict[str, int] = {}  # per joint, the stretch (since) in which its command rested with it
        self._startup: dict[str, float] = {}  # per joint, s from its command's first move to its first answer
        self._changed: list[bool] = []
        self._travel: list[float] = []
        self._last: tuple[int, list[float]] | None = None
        self._last_speed: list[float] | None = None
        self._speed_changes: list[float] = []
        self._typical_change = 0.0
        self._still_since: int | None = None
        self._same_since: list[int | None] = []
        self._moving_now = False
        self._still_from: tuple[int, list[float]] | None = None
        self._since_still_check = 0
        self.first_ns: int | None = None
        self.last_ns: int | None = None
        self.idle_ns = 0

    def add(self, stamp_ns: int, names: Sequence[str], position: Sequence[float]) -> list[str]:
        """One JointState; returns the checks that fired on it."""
        if self._names_seen != tuple(names):
            self._names_seen = tuple(names)
            wanted = self.wanted or list(names)
            self._index = [list(names).index(n) for n in wanted if n in names]
            self.names = [names[i] for i in self._index]
            self._same_since = [None] * len(self._index)
            self._last, self._last_speed, self._still_from = None, None, None
            self._changed, self._travel = [False] * len(self._index), [0.0] * len(self._index)
        assert self._index is not None
        if not self._index:
            return []
        q = [float(position[i]) if i < len(position) else math.nan for i in self._index]
        fired: list[str] = []
        if self.first_ns is None:
            self.first_ns = stamp_ns
        self.last_ns = stamp_ns
        if not all(map(math.isfinite, q)):
            bad = [n for n, v in zip(self.names, q, strict=True) if not math.isfinite(v)]
            self._nan.add(stamp_ns, len(bad))
            self._nan_joints.update(bad)
            return ['motion.nan']  # a NaN sample says nothing about speed or limits
        if self.joint_limits:
            for name, value in zip(self.names, q, strict=True):
                lim = self.joint_limits.get(name)
                if lim is not None and not (lim.lower - self.limits.limit_margin <= value
                                            <= lim.upper + self.limits.limit_margin):
                    excess = max(lim.lower - value, value - lim.upper)
                    self._beyond.add(stamp_ns, excess)
                    self._beyond_joints.add(name)
                    fired.append('motion.joint_limit')
        self.trajectory.add(stamp_ns, q)
        last = self._last
        if last is not None and q == last[1] and self._pending_repeat is None and self._moving_now:
            # The same reading again while the arm moved: the driver may have re-published a stale sample, or the
            # arm stopped, or crept below its encoders' resolution. Skipped for now; the next sample tells.
            self._pending_repeat = stamp_ns
            return fired
        if self._pending_repeat is not None and last is not None and q != last[1] and self._last_speed:
            # The arm went on at the speed it had, across both steps (real stamps): the middle one was a repeat.
            # (Creeping at the encoders' resolution alternates one step and none: half the speed across.)
            before = max(abs(v) for v in self._last_speed)
            across = max(abs(a - b) for a, b in zip(q, last[1], strict=True)) / ((stamp_ns - last[0]) / 1e9)
            if before > self.limits.idle_speed and 0.75 <= across / before <= 1.33:
                self._repeats.add(self._pending_repeat, 1.0)
        self._pending_repeat = None
        self._last = (stamp_ns, q)
        if last is None or stamp_ns <= last[0]:
            return fired
        if len(self._seen) != len(q):
            self._seen = [(v, v) for v in q]
        for i, (a, b) in enumerate(zip(q, last[1], strict=True)):
            if a != b:
                self._changed[i] = True
                self._travel[i] += abs(a - b)
            low, high = self._seen[i]
            if a < low or a > high:
                self._seen[i] = (min(low, a), max(high, a))
        step = stamp_ns - last[0]
        dt = step / 1e9
        speed = [(a - b) / dt for a, b in zip(q, last[1], strict=True)]
        self._moving_now = any(abs(v) > self.limits.idle_speed for v in speed)
        self._moving_samples += self._moving_now
        self._check_jump(stamp_ns, speed, fired, step)
        # Idle time and stuck encoders live on second scales: judged every few samples, over that span.
        self._since_still_check += 1
        if self._still_from is None:
            self._still_from = (last[0], last[1])
        if self._since_still_check >= _STILL_EVERY:
            t0, q0 = self._still_from
            span = (stamp_ns - t0) / 1e9
            self._check_still(stamp_ns, [(a - b) / span for a, b in zip(q, q0, strict=True)], q, q0, t0)
            self._still_from, self._since_still_check = (stamp_ns, q), 0
        return fired

    def _check_jump(self, stamp_ns: int, speed: list[float], fired: list[str], step_ns: int) -> None:
        """A speed change in one sample far beyond what the task's own motion shows: judged against the typical
        change while the arm moves and the task's peak speed (a start or a stop is not a jump), and named by its
        cause: an uneven stamp step (the driver's timing) or the motion itself."""
        previous, self._last_speed = self._last_speed, speed
        self._periods.append(step_ns)
        if len(self._periods) >= 50:
            self._period = int(np.median(self._periods))
            self._periods = self._periods[-25:]
        if previous is None:
            return
        fastest = max(abs(v) for v in speed)
        changes = [abs(a - b) for a, b in zip(speed, previous, strict=True)]  # per joint, this sample
        change = max(changes)
        if self._moving_now or max(abs(v) for v in previous) > self.limits.idle_speed:
            if len(self._joint_changes) != len(speed):
                self._joint_changes = [[] for _ in speed]
            for kept, joint_change in zip(self._joint_changes, changes, strict=True):
                if len(kept) < JOINT_CHANGES_KEPT:
                    kept.append(joint_change)
            self._speed_changes.append(change)
            self._speeds.append(fastest)
            if len(self._speed_changes) >= 200:
                self._typical_change = float(np.median(self._speed_changes))
                self._speed_changes = self._speed_changes[-100:]
            if len(self._speeds) >= 200:
                self._peak_speed = float(np.percentile(self._speeds, 95))
                self._speeds = self._speeds[-100:]
        if self._typical_change <= 0:
            # Before the task's typical motion is known, a jump is kept to be judged once it is (a spike in an
            # episode's first seconds is no less a spike); the stream's first START_SETTLE_S are not: a driver
            # flushes what it buffered before the recording started, and a stale first sample is no arm's jump.
            if self.first_ns is not None and stamp_ns - self.first_ns < START_SETTLE_S * 1e9:
                return
            if len(self._early) < EARLY_KEPT:
                self._early.append((stamp_ns, change, step_ns, changes))
            return
        if self._early:
            self._judge_early()
        self._judge_jump(stamp_ns, change, step_ns, changes, fired)

    def _judge_early(self) -> None:
        early, self._early = self._early, []
        for stamp_ns, change, step_ns, changes in early:
            self._judge_jump(stamp_ns, change, step_ns, changes, [])

    def _judge_jump(self, stamp_ns: int, change: float, step_ns: int, changes: list[float],
                    fired: list[str]) -> None:
        limit = self.jump_limit
        if change > limit:
            uneven = self._period > 0 and abs(step_ns - self._period) > self.limits.uneven_stamp_share * self._period
            jumped = [n for n, c in zip(self.names, changes, strict=True) if c > limit]
            hand = not uneven and bool(jumped) and all(is_hand_joint(n) or n in self._not_stuck for n in jumped)
            self._jumps.add(stamp_ns, change)
            self._stamp_jumps += uneven
            self._hand_jumps += hand
            if not uneven and not hand:
                fired.append('motion.velocity_jump')
                self._motion_jumps.append({n: c for n, c in zip(self.names, changes, strict=True) if c > limit})

    @property
    def jump_limit(self) -> float:
        return max(self.limits.min_velocity_jump, self.limits.velocity_jump_sigmas * self._typical_change,
                   self.limits.velocity_jump_of_peak * self._peak_speed)

    def command(self, stamp_ns: int, names: Sequence[str], position: Sequence[float]) -> None:
        """The commanded joints (a leader arm's JointState): a joint that stays put while its command moves is
        stuck; one the operator did not command is merely unused."""
        horizon = stamp_ns - int(2 * self.limits.stuck_after_s * 1e9)
        layout = self._command_layouts.get(tuple(names))
        if layout is None:  # each joint's history list, looked up once a layout rather than once a sample
            layout = self._command_layouts[tuple(names)] = [(str(n), self._commands.setdefault(str(n), []))
                                                            for n in names]
        ranges, finite = self._command_range, math.isfinite
        for (key, history), value in zip(layout, position, strict=False):  # once a command sample a joint: lean
            if not finite(value):
                continue
            value = float(value)
            history.append((stamp_ns, value))
            span = ranges.get(key)
            if span is None:
                ranges[key] = (value, value)
            elif value < span[0]:  # min(low, value), max(high, value): only the end it passes moves
                ranges[key] = (value, span[1])
            elif value > span[1]:
                ranges[key] = (span[0], value)
            if len(history) > 64 and history[0][0] < horizon:
                del history[:len(history) // 2]

    def _command_still(self, name: str, since_ns: int, until_ns: int) -> float | None:
        """The command's value if it held one value between two stamps (None: it moved, or it has none there)."""
        batch = getattr(self._commands, 'still', None)  # a batch's histories (batch_commands.py) answer on arrays
        if batch is not None:
            known, value = batch(name, since_ns, until_ns)
            if known:
                return value
        values = {v for t, v in self._commands.get(name, ()) if since_ns <= t <= until_ns}
        return values.pop() if len(values) == 1 else None

    def _command_travel(self, name: str, since_ns: int, until_ns: int) -> float:
        batch = getattr(self._commands, 'travel', None)  # a batch's histories (batch_commands.py) answer on arrays
        found = batch(name, since_ns, until_ns) if batch is not None else None
        if found is not None:
            return float(found)
        values = [v for t, v in self._commands.get(name, ()) if since_ns <= t <= until_ns]
        return max(values) - min(values) if values else 0.0

    def _command_span(self, name: str, since_ns: int, until_ns: int) -> tuple[float, float]:
        """The command's lowest and highest value between two stamps (it has one there: it moved)."""
        batch = getattr(self._commands, 'span', None)  # a batch's histories answer on arrays, not a list a sample
        found = batch(name, since_ns, until_ns) if batch is not None else None
        if found is not None:
            return found
        values = [v for t, v in self._commands.get(name, ()) if since_ns <= t <= until_ns]
        return min(values), max(values)

    def _check_still(self, stamp_ns: int, speed: list[float], q: list[float], previous: list[float],
                     since_ns: int) -> None:
        """Over the span since_ns..stamp_ns: did the arm move, did each joint's reading change at all?"""
        moving = [abs(s) > self.limits.idle_speed for s in speed]
        if any(moving):
            if self._still_since is not None:
                self._close_idle(stamp_ns)
            self._still_since = None
        elif self._still_since is None:
            self._still_since = since_ns
        stuck_ns = self.limits.stuck_after_s * 1e9
        for i, name in enumerate(self.names):
            since = self._same_since[i]
            if q[i] != previous[i]:
                if since is not None:
                    self._stretch_ended(i, name, since, stamp_ns)
                continue
            if since is None:
                self._same_since[i] = since_ns
                self._note_rest(name, q[i], since_ns, stamp_ns)
                continue
            if name in self._not_stuck:
                continue
            moved = self._moved.get(name)
            if moved is None or moved[0] != since:
                span = self._command_range.get(name)  # all its command did (so far): no window travels further
                if span is None or span[1] - span[0] <= self.limits.stuck_command_travel \
                        or self._command_travel(name, since, stamp_ns) <= self.limits.stuck_command_travel:
                    self._quiet[name] = since  # its command rested with it: a later move of it is a clean cue
                    continue
                moved = self._moved[name] = (since, stamp_ns)  # when its command had moved: the follower's cue
            if stamp_ns - since > stuck_ns:
                low, high = self._command_span(name, since, stamp_ns)
                # commanded to move, reported the same value (judged against the whole episode at the end)
                self._stuck.setdefault(name, Ranges()).add(since, (stamp_ns - since) / 1e9, end_ns=stamp_ns)
                self._stuck_travel[name] = max(self._stuck_travel.get(name, 0.0), high - low)
                self._stuck_spans.setdefault(name, []).append((q[i], low, high,
                                                               (stamp_ns - moved[1]) / 1e9,
                                                               float(since == self.first_ns)))

    def _stretch_ended(self, i: int, name: str, since_ns: int, stamp_ns: int) -> None:
        """A joint held still from since_ns moved again by stamp_ns: if its command had moved meanwhile, the
        time from that cue to its answer is how late the follower answers (a teleop loop a second late answers so
        every time; the dataset's judgement reads it). Only where its command first rested with it (a command
        already moving when the follower stopped gives no cue to time). Kept apart: the episode's start (drivers
        enabling, a follower catching on), and the stretches too short to be judged stuck (a stuck joint's late
        answer mid-episode must not teach the dataset that its joints answer late)."""
        self._same_since[i] = None
        moved = self._moved.get(name)
        if moved is None or not moved[0] == since_ns == self._quiet.get(name):
            return
        if since_ns == self.first_ns:
            self._startup[name] = (stamp_ns - moved[1]) / 1e9
        elif stamp_ns - since_ns <= self.limits.stuck_after_s * 1e9:
            answers = self._answers.setdefault(name, [])
            if len(answers) < ANSWERS_KEPT:
                answers.append((stamp_ns - moved[1]) / 1e9)

    def end_stretches(self, stamp_ns: int) -> None:
        """Every joint moved by stamp_ns (the batch path's shortcut past _check_still): each stretch ends.

        Args:
            stamp_ns: the stamp of the still check that saw every joint's reading change.
        """
        for i, (name, since) in enumerate(zip(self.names, self._same_since, strict=False)):
            if since is not None:
                self._stretch_ended(i, name, since, stamp_ns)

    def _note_rest(self, name: str, value: float, since_ns: int, until_ns: int) -> None:
        """A joint come to rest (its reading the same over a span) whose command held one value over it too:
        the gap between them is an error its servo tolerates (a deadband, a calibration offset between leader and
        follower). Its widest per episode tells the dataset's judgement how far a command may wander unanswered."""
        command = self._command_still(name, since_ns, until_ns)
        if command is not None:
            gap = abs(command - value)
            if gap > self._rest_error.get(name, -1.0):
                self._rest_error[name] = gap

    def _explained(self, name: str) -> str:
        """Why a joint that held still while its command moved is no fault ('' when nothing explains it): it
        rests at the end of its travel in this episode and its command stays within a small margin of that end
        (an end stop, or a readback clipped there), or it is a hand or gripper joint whose command went on past
        where it holds (a finger closed on an object). Every such stretch of the joint must be explained."""
        spans = self._stuck_spans.get(name, [])
        i = self.names.index(name) if name in self.names else -1
        if not spans or i < 0 or i >= len(self._seen):
            return ''
        low, high = self._seen[i]
        limit = self.joint_limits.get(name)
        if limit is not None:  # the URDF's travel, where the profile gives it
            low, high = min(low, limit.lower), max(high, limit.upper)
        return explain_stuck(name, spans, (low, high), self._command_range.get(name),
                             self.limits.stuck_command_share)

    def stuck_detail(self) -> dict[str, Any]:
        """What the dataset-wide judgement of stuck joints needs: per joint that held still while commanded,
        its stretches (held value, command low, command high, s since its command moved, 1.0 if held since the
        episode's start), every joint's readings' and commands' span, its widest gap to its command at rest, and how
        late it answers its command (its median mid-episode answer; its first answer at the episode's start)."""
        return {'stuck': {n: [list(s) for s in spans] for n, spans in self._stuck_spans.items()},
                'ranges': {name: [*self._seen[i]] for i, name in enumerate(self.names) if i < len(self._seen)},
                'commands': {name: [*span] for name, span in self._command_range.items()},
                'jumps': list(self._motion_jumps),
                'change_p99': self._change_p99(),
                'rest_error': dict(self._rest_error),
                'latency': {name: float(np.median(delays)) for name, delays in self._answers.items()},
                'startup': dict(self._startup)}

    def _change_p99(self) -> dict[str, float]:
        """Per joint, the 99th percentile of its speed changes while the arm moved: one np.percentile over all
        joints where they kept as many (as they do: every moving sample adds to each), the same values."""
        kept = [(name, changes) for name, changes in zip(self.names, self._joint_changes, strict=False) if changes]
        if len({len(changes) for _, changes in kept}) == 1:
            rows = np.percentile(np.array([changes for _, changes in kept]), 99, axis=1).tolist()
            return {name: float(value) for (name, _), value in zip(kept, rows, strict=True)}
        return {name: float(np.percentile(changes, 99)) for name, changes in kept}

    def _close_idle(self, end_ns: int) -> None:
        since = self._still_since
        if since is not None and end_ns - since > self.limits.idle_after_s * 1e9:
            self._idle.add(since, (end_ns - since) / 1e9, end_ns=end_ns)
            self.idle_ns += end_ns - since

    def trim(self) -> TrimPoints:
        """Idle at the very start or end of the episode, as trim points (s from the first sample) a training
        export may cut at: the arm waiting for the operator is no demonstration."""
        out: TrimPoints = {}
        if self.first_ns is None or self.last_ns is None:
            return out
        near = int(0.5e9)
        for since, until in self._idle.items:
            if since - self.first_ns <= near:
                out['start_s'] = round((until - self.first_ns) / 1e9, 3)
            if self.last_ns - until <= near:
                out['end_s'] = round((since - self.first_ns) / 1e9, 3)
        return out

    def smoothness(self) -> float | None:
        """Log dimensionless jerk of the joint-space speed profile over the moving part of the episode
        (-ln of T^3 / v_peak^2 x integral of jerk^2): higher (closer to 0) is smoother; None if it never moved."""
        times, rows = self.trajectory.arrays()
        if len(times) < 11:
            return None
        # The speed profile from the kept (decimated) trajectory: the same shape at any episode length.
        t = (times[1:] - times[0]) / 1e9
        v = np.linalg.norm(np.diff(rows, axis=0), axis=1) / np.maximum(np.diff(times) / 1e9, 1e-9)
        # Resample onto an even grid at most 100 Hz, and low-pass lightly, so encoder quantization does not read
        # as jerk.
        n = int(min(len(t), max(10, t[-1] * 100)))
        grid = np.linspace(0.0, t[-1], n)
        v = np.interp(grid, t, v)
        k = max(1, n // 200)
        v = np.convolve(v, np.ones(2 * k + 1) / (2 * k + 1), mode='same')
        peak = float(v.max())
        moving = np.nonzero(v > 0.05 * peak)[0] if peak > 0 else np.array([], dtype=int)
        if peak <= self.limits.idle_speed or len(moving) < 10:
            return None
        a, b = moving[0], moving[-1] + 1
        dt = grid[1] - grid[0]
        jerk = np.gradient(np.gradient(v[a:b], dt), dt)
        duration = grid[b - 1] - grid[a]
        integral = float(np.sum(jerk ** 2) * dt)
        if integral <= 0 or duration <= 0:
            return None
        value = duration * duration * duration / (peak * peak) * integral  # `**` on a float can raise OverflowError
        return -math.log(value) if 0 < value < math.inf else None

    def findings(self) -> list[Finding]:
        if self._still_since is not None and self.last_ns is not None:
            self._close_idle(self.last_ns)
            self._still_since = None
        if self._early:  # a short episode: judged against what its motion showed by its end
            if self._typical_change <= 0 and len(self._speed_changes) >= EARLY_MIN_SAMPLES:
                self._typical_change = float(np.median(self._speed_changes))
                self._peak_speed = float(np.percentile(self._speeds, 95))
            if self._typical_change > 0:
                self._judge_early()
        out: list[Finding] = []
        topic = self.topic
        if self._nan:
            out.append(self._nan.finding('motion.nan', ERROR, topic, f'{topic}: NaN/Inf positions in '
                                         f'{self._nan.count} sample(s) ({", ".join(sorted(self._nan_joints))})', 0.0))
        if self._beyond:
            out.append(self._beyond.finding('motion.joint_limit', ERROR, topic, f'{topic}: '
                                            f'{", ".join(sorted(self._beyond_joints))} beyond the URDF limits by up '
                                            f'to {self._beyond.worst:.3g}', self.limits.limit_margin))
        if self._repeats:
            share = self._repeats.count / max(1, self._moving_samples + self._repeats.count)
            out.append(self._repeats.finding(
                'timing.repeated_sample', WARN if share > self.limits.repeated_warn_share else INFO, topic,
                f'{topic}: {self._repeats.count} sample(s) re-published unchanged while the arm moved ({share:.1%} '
                'of the moving samples): the driver repeats a stale reading; speeds are taken across them',
                self.limits.repeated_warn_share))
        if self._jumps:
            in_motion = self._jumps.count - self._stamp_jumps - self._hand_jumps
            causes = [f'{n} {why}' for n, why in ((in_motion, 'in the motion itself'),
                                                   (self._stamp_jumps, "at uneven stamp steps (the driver's timing, "
                                                    'not the arm)'),
                                                   (self._hand_jumps, 'in hand or gripper joints only (fingers '
                                                    'snapping shut or open, as grasps do)')) if n]
            out.append(self._jumps.finding('motion.velocity_jump', WARN if in_motion else INFO, topic,
                                           f'{topic}: joint speed jumped by up to {self._jumps.worst:.3g} in one '
                                           f'sample, beyond the task\'s own motion: {", ".join(causes)}',
                                           self.jump_limit))
        for name, ranges in sorted(self._stuck.items()):
            low, high = self._command_range.get(name, (0.0, 0.0))
            if self._stuck_travel[name] < self.limits.stuck_command_share * (high - low):
                continue  # a twitch of the leader next to what the operator did with that joint: a deadband
            why = self._explained(name)
            if why:
                out.append(ranges.finding('motion.stuck_joint', INFO, topic, f'{name} held still for '
                                          f'{ranges.worst:.1f} s while its command moved by '
                                          f'{self._stuck_travel[name]:.3g}: {why}', self.limits.stuck_after_s))
                continue
            out.append(ranges.finding('motion.stuck_joint', WARN, topic, f'{name} reported the same value for '
                                      f'{ranges.worst:.1f} s while its command moved by '
                                      f'{self._stuck_travel[name]:.3g} (a dead encoder or a blocked joint?)',
                                      self.limits.stuck_after_s))
        others_moved = [t > 10 * self.limits.stuck_command_travel for t in self._travel]
        for i, name in enumerate(self.names):
            if (self._changed and not self._changed[i] and name not in self._stuck
                    and any(m for j, m in enumerate(others_moved) if j != i)):
                out.append(Finding('motion.stuck_joint', INFO, topic, f'{name} never changed in the episode while '
                                   'the other joints moved: unused by this task, or a dead encoder if the task needs '
                                   'it', 0.0, 0.0))
        if self._idle:
            over = self.limits.max_idle_s is not None and self.idle_ns / 1e9 > self.limits.max_idle_s
            trim = self.trim()
            where = (' (idle at the ' + ' and '.join(f'{k[:-2]}: trim at {v:.1f} s' for k, v in trim.items())
                     + ')') if trim else ''
            out.append(self._idle.finding('motion.idle', WARN if over else INFO, topic, f'the arm stood still for '
                                          f'{self.idle_ns / 1e9:.1f} s in {len(self._idle.items)} stretch(es)'
                                          + (f', more than the profile\'s {self.limits.max_idle_s:g} s' if over
                                             else '') + where,
                                          self.limits.max_idle_s or self.limits.idle_after_s))
        return out
