"""Scoring a recorded bag at the speed of reading it: the episode's checks fed a chunk of messages at a time.

EpisodeQuality.add judges one message at a time, as a live monitor must; offline that per-sample Python cost
about as much as reading the bag. BatchQuality takes the same messages in the bag's order, holds a few thousand,
reads their fields as numpy arrays (signals/cdr_batch.py) and moves the same streaming objects through the
vectorized twins of their steps (batch_checks.py, batch_motion.py), so report() gives what the streaming path
gives. What couples streams is kept in the bag's order by sequence numbers: a camera frame is paired only with
joint stamps that arrived before it, and a joint's command is known to the stuck check up to where it arrived.
Camera frames go to the image worker as they are read, so decoding them overlaps the read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np

from ros_robodata.bag.reader import BagMessage, JointRows, OrderedMessages
from ros_robodata.quality.batch_checks import feed_gripper, feed_sync, feed_timing, feed_wrench
from ros_robodata.quality.batch_motion import MotionRun, feed_motion
from ros_robodata.quality.episode_checks import _CAMERA, _COMMAND, _JOINTS, _URDF, _WRENCH, UNREADABLE, EpisodeQuality
from ros_robodata.signals import header_stamp_ns, read_gripper, read_joints, read_wrench
from ros_robodata.signals.cdr_batch import joint_states_of, stamps_of, wrenches_of

Decode = Callable[[], Any]
_HEADER = 16  # bytes of a message that hold its header stamp (signals/cdr.py)
CHUNK = 4096  # messages held before the checks run on them (memory stays bounded whatever the bag's length)


@dataclass
class _Held:
    """One topic's messages since the last flush."""

    topic: str
    msgtype: str
    seqs: list[int] = field(default_factory=list)
    receives: list[int] = field(default_factory=list)
    datas: Sequence[bytes | memoryview] = field(default_factory=list)
    joints: JointRows | None = None  # what the datas decode to, where the reader gave it (OrderedMessages.joints)

    def message(self, i: int) -> BagMessage:
        """The i-th as a BagMessage (made only for the few a check decodes one by one)."""
        return BagMessage(self.topic, self.msgtype, self.receives[i], self.datas[i])



class _Picked(Sequence[bytes | memoryview]):
    """Some of a topic's messages, by index, read only when asked for."""

    def __init__(self, datas: Sequence[bytes | memoryview], picked: list[int]) -> None:
        self.datas, self.picked = datas, picked

    def __len__(self) -> int:
        return len(self.picked)

    @overload
    def __getitem__(self, i: int) -> bytes | memoryview: ...

    @overload
    def __getitem__(self, i: slice) -> list[bytes | memoryview]: ...

    def __getitem__(self, i: int | slice) -> bytes | memoryview | list[bytes | memoryview]:
        if isinstance(i, slice):
            return [self.datas[k] for k in self.picked[i]]
        return self.datas[self.picked[i]]


class BatchQuality:
    """Offline feeder of an EpisodeQuality: add() every message of a bag in its order, then finish(), then ask
    the EpisodeQuality for its report. `decode(message)` gives a message object where the fast readers cannot."""

    def __init__(self, checks: EpisodeQuality, decode: Callable[[BagMessage], Any]) -> None:
        self.checks = checks
        self._decode = decode
        self._chunk: list[BagMessage] = []
        self._frames: dict[str, list[tuple[int, int]]] = {}  # camera topic -> (seq, stamp) for the sync check
        roles = checks._roles
        # The topics read on arrival (one lookup a message): camera frames go to the image worker at once, so
        # decoding them overlaps the read; a URDF changes how every later joint sample is judged.
        self._on_arrival = {topic: role for topic, role in roles.items() if role in (_CAMERA, _URDF)}
        # Topics whose bytes no check reads (cameras, once their frame is queued; LiDAR, events): only their
        # header is held for the timing checks, so a chunk never holds seconds of images.
        self._header_only = {topic for topic in checks.timing
                             if roles.get(topic) in (None, _CAMERA) and topic != checks._gripper_topic}
        self._ids = {topic: i for i, topic in enumerate(checks.timing)}
        self._seq = 0  # sequence number of the chunk's first message in the bag's order

    def add(self, message: BagMessage) -> None:
        """One message of the bag, in the bag's order."""
        chunk = self._chunk
        role = self._on_arrival.get(message.topic)
        if role is not None:
            if role == _URDF:
                self.flush()
                self._first(message.t_ns)
                self.checks.add(message.topic, message.t_ns, message.data, self._decoder(message))
                return
            self._camera(message, self._seq + len(chunk))
        if message.topic in self._header_only:
            message = BagMessage(message.topic, message.msgtype, message.t_ns, bytes(message.data[:_HEADER]))
        chunk.append(message)
        if len(chunk) >= CHUNK:
            self.flush()

    def add_ordered(self, ordered: OrderedMessages) -> None:
        """All of a reader's messages at once, as arrays: the same chunks, sequence numbers and checks as add() of
        each in turn, without a Python object a message (the per-message cost of a LeRobot episode in place).
        Camera and URDF topics, which are read on arrival, go through add() one by one."""
        names = [topic for topic, _ in ordered.topics]
        if self._chunk or any(t in self._on_arrival or t in self._header_only or t not in self._ids for t in names):
            for k, i, t in zip(ordered.which.tolist(), ordered.within.tolist(), ordered.times.tolist(), strict=True):
                topic, msgtype = ordered.topics[k]
                self.add(BagMessage(topic, msgtype, t, ordered.datas[k][i]))
            return
        for begin in range(0, len(ordered.times), CHUNK):  # the chunks add() would flush, the tail included
            self._flush_held(self._held_of(ordered, begin, min(begin + CHUNK, len(ordered.times))))

    def _held_of(self, ordered: OrderedMessages, begin: int, end: int) -> dict[str, _Held]:
        """What _split gives for messages begin..end of `ordered` (all of the profile's topics)."""
        base = self._seq
        self._seq += end - begin
        times, which, within = ordered.times[begin:end], ordered.which[begin:end], ordered.within[begin:end]
        self._first(int(times[0]))
        self.checks.last_ns = int(times[-1])
        held = {}
        for k in np.unique(which).tolist():
            part = np.flatnonzero(which == k)
            topic, msgtype = ordered.topics[k]
            datas, rows = ordered.datas[k], ordered.joints[k] if ordered.joints is not None else None
            picked = within[part]
            if rows is None:
                held[topic] = _Held(topic, msgtype, (part + base).tolist(), times[part].tolist(),
                                    [datas[i] for i in picked.tolist()])
            else:  # the rows as arrays: the bytes are not asked for (nor made) unless a check reads one
                held[topic] = _Held(topic, msgtype, (part + base).tolist(), times[part].tolist(),
                                    _Picked(datas, picked.tolist()), (rows[0], rows[1][picked], rows[2][picked]))
        return held

    def finish(self) -> None:
        """Run the checks on what is still held."""
        self.flush()

    def _first(self, receive_ns: int) -> None:
        q = self.checks
        if q.first_ns is None:
            q.first_ns = receive_ns
        q.last_ns = receive_ns

    def _camera(self, message: BagMessage, seq: int) -> None:
        q = self.checks
        topic, data = message.topic, message.data
        stamp = header_stamp_ns(data) if q._stamped[topic] else None
        at = stamp or message.t_ns
        q._frame(topic, at, self._decoder(message), data)
        if topic in q.sync:
            self._frames.setdefault(topic, []).append((seq, at))

    def _split(self) -> dict[str, _Held]:
        """The chunk's messages of the profile's topics, by topic, with their sequence numbers."""
        chunk, self._chunk = self._chunk, []
        base = self._seq
        self._seq += len(chunk)
        ids = self._ids
        which = np.array([ids.get(m.topic, -1) for m in chunk], dtype=np.int64)
        known = np.flatnonzero(which >= 0)
        if not len(known):
            return {}
        self._first(chunk[int(known[0])].t_ns)
        self.checks.last_ns = chunk[int(known[-1])].t_ns
        order = known[np.argsort(which[known], kind='stable')]
        bounds = np.flatnonzero(np.diff(which[order])) + 1
        held = {}
        for part in np.split(order, bounds):
            picked = [chunk[i] for i in part.tolist()]
            held[picked[0].topic] = _Held(picked[0].topic, picked[0].msgtype, (part + base).tolist(),
                                          [m.t_ns for m in picked], [m.data for m in picked])
        return held

    def flush(self) -> None:
        self._flush_held(self._split())

    def _flush_held(self, held: dict[str, _Held]) -> None:
        q = self.checks
        frames, self._frames = self._frames, {}
        refs: list[tuple[np.ndarray, np.ndarray]] = []
        runs: list[MotionRun] = []
        commands: list[MotionRun] = []
        for topic, h in sorted(held.items(), key=lambda item: item[1].seqs[0]):
            receives = np.array(h.receives, dtype=np.int64)
            if not q._stamped[topic]:
                stamps = np.zeros(len(receives), dtype=np.int64)
            else:
                stamps = h.joints[1] if h.joints is not None else stamps_of(h.datas)
            positive = stamps[stamps > 0]
            if len(positive):
                low, high = int(positive.min()), int(positive.max())
                q.first_stamp_ns = low if q.first_stamp_ns is None else min(q.first_stamp_ns, low)
                q.last_stamp_ns = high if q.last_stamp_ns is None else max(q.last_stamp_ns, high)
            feed_timing(q.timing[topic], stamps, receives)
            role = q._roles.get(topic)
            if role in (_JOINTS, _COMMAND) or topic == q._gripper_topic:
                topic_runs = self._joint_states(topic, h, role in (_JOINTS, _COMMAND))
                if role == _JOINTS:
                    runs += topic_runs
                    refs += [(r.stamps, r.seqs) for r in topic_runs]
                elif role == _COMMAND:
                    commands += topic_runs
            elif role == _WRENCH:
                self._wrenches(topic, h, np.where(stamps != 0, stamps, receives))
        if q.motion is not None and (runs or commands):
            feed_motion(q.motion, runs, commands)
        if q.sync:
            ref_stamps = np.concatenate([r for r, _ in refs]) if refs else np.zeros(0, dtype=np.int64)
            ref_seqs = np.concatenate([s for _, s in refs]) if refs else np.zeros(0, dtype=np.int64)
            for topic, watch in q.sync.items():
                got = frames.get(topic, [])
                if not len(ref_stamps) and not got:
                    continue
                at = np.array([a for _, a in got], dtype=np.int64)
                seqs = np.array([s for s, _ in got], dtype=np.int64)
                feed_sync(watch, ref_stamps, ref_seqs, at, seqs)

    def _decoder(self, message: BagMessage) -> Decode:
        return lambda: self._decode(message)

    def _unreadable(self, topic: str, err: BaseException) -> None:
        self.checks.undecodable.setdefault(topic, f'{type(err).__name__}: {" ".join(str(err).split())}')

    def _joint_states(self, topic: str, h: _Held, joints: bool) -> list[MotionRun]:
        """The topic's JointState messages as runs of one layout (names) in order; the gripper's joint is fed on
        the way when this is the gripper's topic."""
        q = self.checks
        gripper = q.gripper if topic == q._gripper_topic else None
        batch = joint_states_of(h.datas) if h.joints is None else (
            list(h.joints[0]), h.joints[1], h.joints[2], np.ones(len(h.datas), dtype=bool))
        fast = batch[3] if batch is not None else np.zeros(len(h.datas), dtype=bool)
        seqs = np.array(h.seqs, dtype=np.int64)
        runs: list[MotionRun] = []
        g_stamps: list[np.ndarray] = []
        g_values: list[np.ndarray] = []
        where = np.flatnonzero(fast)
        row_of = np.full(len(fast), -1, dtype=np.int64)
        row_of[where] = np.arange(len(where))
        slow = np.flatnonzero(~fast).tolist()
        bounds = [-1, *slow, len(fast)]
        for k in range(len(bounds) - 1):
            begin, end = bounds[k] + 1, bounds[k + 1]
            if end > begin and batch is not None:  # template rows between two slow ones
                names, stamps, positions, _ = batch
                rows = slice(int(row_of[begin]), int(row_of[end - 1]) + 1)
                if gripper is not None and gripper.joint in names:
                    column = names.index(gripper.joint)
                    g_stamps.append(stamps[rows])
                    g_values.append(positions[rows, column] if column < positions.shape[1]
                                    else np.full(end - begin, np.nan))
                if joints:
                    runs.append(MotionRun(seqs[begin:end], tuple(names), stamps[rows], positions[rows]))
            if k + 1 < len(bounds) - 1:  # the slow row after them, read one by one as EpisodeQuality.add does
                i = bounds[k + 1]
                data, decode = h.datas[i], self._decoder(h.message(i))
                try:
                    reading = read_gripper(data, gripper.joint, decode) if gripper is not None else None
                    js = read_joints(data, decode) if joints else None
                except UNREADABLE as err:
                    self._unreadable(topic, err)
                    continue
                if reading is not None:
                    g_stamps.append(np.array([reading.stamp_ns], dtype=np.int64))
                    g_values.append(np.array([reading.position], dtype=float))
                if js is not None:
                    runs.append(MotionRun(seqs[i:i + 1], tuple(js.names), np.array([js.stamp_ns], dtype=np.int64),
                                          np.array([js.position], dtype=float).reshape(1, len(js.position))))
        if gripper is not None and g_stamps:
            q._gripper_last = feed_gripper(gripper, q._gripper_last, q._gripper_moving, np.concatenate(g_stamps),
                                           np.concatenate(g_values))
        return runs

    def _wrenches(self, topic: str, h: _Held, at: np.ndarray) -> None:
        q = self.checks
        assert q.wrench is not None
        batch = wrenches_of(h.datas)
        n = len(h.datas)
        forces = np.zeros((n, 3))
        keep = np.zeros(n, dtype=bool)
        if batch is not None:
            _, batch_forces, fast = batch
            forces[fast] = batch_forces
            keep[fast] = True
        else:
            fast = keep.copy()
        for i in np.flatnonzero(~fast).tolist():
            try:
                forces[i] = read_wrench(h.datas[i], self._decoder(h.message(i))).force
                keep[i] = True
            except UNREADABLE as err:
                self._unreadable(topic, err)
        feed_wrench(q.wrench, at[keep], forces[keep])
