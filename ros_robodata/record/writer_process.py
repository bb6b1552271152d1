"""The episode recorder in a child process, so that taking messages from DDS never waits for writing.

In one process the thread that takes messages from DDS and the thread that compresses and writes
bags share the GIL: every callback can wait for it, and under camera load intake fell behind by
seconds. Here the ROS process only forwards each message's CDR bytes through a pipe (a write that
releases the GIL); the child runs EpisodeRecorder, whose transitions, warnings and status come back.
Commands travel the same pipe as messages, so start/stop still cut the stream exactly.

The pipe holds 64 KiB, less than one VGA frame: writing a frame waits until the child has read it, and the
child runs at a lower priority. On a busy computer that wait held the DDS callback for tens of milliseconds,
longer than a driver's history of 10 at 500 Hz lasts, and the driver's messages were lost. So the callback only
appends to an outbox; a sender thread of the ROS process moves the outbox into the pipe, in order.
"""

from __future__ import annotations

import collections
import multiprocessing
import pickle
import signal
import struct
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from ros_robodata.dataset.dataset import Dataset
from ros_robodata.errors import RecorderError, RobodataError
from ros_robodata.record.intent import EpisodeIntent
from ros_robodata.record.priority import INTAKE_NICENESS, WRITER_NICENESS, lower_this_thread
from ros_robodata.record.recorder import EpisodeRecorder, RecorderSettings, Transition
from ros_robodata.vocabulary import OUTCOMES

_MESSAGE = b'M'
_COMMAND = b'C'
_DROPPED = b'D'  # messages the outbox had no room for, in a _HEADER: topic index, count
_BACKLOG = b'B'  # bytes waiting in the outbox behind this frame
_BACKLOG_FRAME = struct.Struct('<cq')
_BACKLOG_STEP = 8 << 20  # told again when it moved by this much
_HEADER = struct.Struct('<cHq')  # kind, topic index, receive time (ns)
_REPLY_TIMEOUT_S = 30.0


class RecorderProcess:
    """The node's recorder: the same commands as EpisodeRecorder's request_*, run in a child process."""

    def __init__(
        self,
        dataset_root: str | Path,
        settings: RecorderSettings,
        *,
        clock_ns: Callable[[], int] = time.time_ns,
        on_transition: Callable[[Transition], None] | None = None,
        on_warning: Callable[[str], None] | None = None,
    ) -> None:
        self._clock_ns = clock_ns
        context = multiprocessing.get_context('spawn')  # never fork a process that runs DDS threads
        child_in, self._out = context.Pipe(duplex=False)
        self._in, child_out = context.Pipe(duplex=False)
        self._process = context.Process(target=_child_main, args=(child_in, child_out, str(dataset_root), settings),
                                        name='robodata-episode-writer', daemon=True)
        self._process.start()
        child_in.close()
        child_out.close()
        self._transition_listeners: list[Callable[[Transition], None]] = [on_transition] if on_transition else []
        self._on_warning = on_warning or (lambda _m: None)
        self._topics: dict[str, int] = {}
        self._send_lock = threading.Lock()
        self._pending: dict[int, Future[Any]] = {}
        self._next_id = 0
        self._snapshot: dict[str, Any] | None = None
        self._closed = False
        # What the callbacks hand on, in order: (topic index, receive ns, CDR bytes) or (command frame, future).
        self._outbox: collections.deque[tuple[Any, Any, Any]] = collections.deque()
        # Bytes waiting: handed on (written by the intake callback alone) minus sent (by the sender alone).
        self._handed_bytes = self._sent_bytes = 0
        self._outbox_max = settings.queue_max_bytes
        self._dropped: dict[int, int] = {}  # topic index -> messages not taken (written by the callback alone)
        self._dropped_told: dict[int, int] = {}  # how many of those the child has been told of (by the sender)
        self._wake = threading.Event()
        self._broken: BaseException | None = None
        self._sender = threading.Thread(target=self._send_outbox, name='episode-writer-sender', daemon=True)
        self._sender.start()
        self._listener = threading.Thread(target=self._listen, name='episode-writer-replies', daemon=True)
        self._listener.start()
        self._command('ready')  # the child is up and has opened the dataset (raises its error if not)
        self._intent = EpisodeIntent(Dataset.open(dataset_root).new_episode_id, settings.min_episode_s)
        self._delete_discarded = settings.delete_discarded

    def add_transition_listener(self, listener: Callable[[Transition], None]) -> None:
        """Also call `listener` for every episode transition (after the ones given at construction)."""
        self._transition_listeners.append(listener)

    # -- intake -----------------------------------------------------------------------------------

    def add_topic(self, topic: str, msgtype: str, *, latched: bool = False, expected_rate_hz: float | None = None,
                  reliable: bool = True) -> None:
        if topic in self._topics:
            return
        self._command('add_topic', topic, msgtype, latched, expected_rate_hz, reliable)
        self._topics[topic] = len(self._topics)

    def on_message(self, topic: str, data: bytes | memoryview, t_ns: int) -> None:
        """Hand one message on; never blocks. Past `queue_max_bytes` waiting, it is counted as dropped."""
        if self._closed:
            return
        index = self._topics.get(topic)
        if index is None:
            return
        size = len(data)
        if self._handed_bytes - self._sent_bytes + size > self._outbox_max:
            self._dropped[index] = self._dropped.get(index, 0) + 1
            return
        self._handed_bytes += size
        self._outbox.append((index, t_ns, data))
        if not self._wake.is_set():
            self._wake.set()

    def _send_outbox(self) -> None:
        """The only writer of the pipe: messages and commands in the order they were handed on."""
        lower_this_thread(INTAKE_NICENESS)
        outbox, out = self._outbox, self._out
        told = 0  # the outbox backlog the child last heard of
        while True:
            self._wake.wait()
            self._wake.clear()
            while outbox:
                # A message: (topic index, receive ns, bytes); a command: (frame, future, None); the end: all None.
                first, second, data = outbox.popleft()
                if data is None and first is None:
                    return
                if data is not None:
                    self._sent_bytes += len(data)
                try:
                    if self._broken is not None:
                        raise self._broken
                    if self._dropped != self._dropped_told:
                        self._send_dropped(out)
                    if data is None:
                        out.send_bytes(first)
                        continue
                    out.send_bytes(_HEADER.pack(_MESSAGE, first, second) + data)
                    waiting = self._handed_bytes - self._sent_bytes
                    if abs(waiting - told) >= _BACKLOG_STEP:
                        out.send_bytes(_BACKLOG_FRAME.pack(_BACKLOG, waiting))
                        told = waiting
                except (OSError, ValueError) as err:  # the child is gone: commands fail, messages go nowhere
                    self._broken = err
                    if data is None and not second.done():
                        second.set_exception(RecorderError(f'the episode writer process is gone: {err}'))

    def _send_dropped(self, out: Any) -> None:
        for index, count in list(self._dropped.items()):
            told = self._dropped_told.get(index, 0)
            if count > told:
                out.send_bytes(_HEADER.pack(_DROPPED, index, count - told))
                self._dropped_told[index] = count

    # -- commands ---------------------------------------------------------------------------------

    # Checked and answered here at once, from this process's own EpisodeIntent: the command then goes down the
    # pipe behind the messages received before it (so it still cuts the stream exactly) and the caller, the thread
    # that takes messages from DDS, never waits for the child to read a backlog of frames or close a bag. What the
    # child then does is announced as a transition (or a warning if it fails).

    def request_start(self, task: str = '', operator: str = '', mode: str = '') -> str:
        episode_id = self._intent.begin()
        self._order('start', episode_id, task, operator, mode)
        return episode_id

    def request_stop(self, status: str = 'complete') -> str:
        episode_id = self._intent.end()
        self._order('stop', episode_id, status)
        return episode_id

    def request_discard(self) -> str:
        episode_id = self._intent.end(discard=True)
        self._order('discard', episode_id)
        if self._delete_discarded:  # the child deletes it: nothing left here to label or discard again
            self._intent.forget_last()
        return episode_id

    def request_outcome(self, outcome: str, notes: str = '') -> str:
        if outcome not in OUTCOMES:
            raise RecorderError(f'outcome {outcome!r} is not one of {", ".join(OUTCOMES)}')
        episode_id = self._intent.target()
        self._order('outcome', episode_id, outcome, notes)
        return episode_id

    def _order(self, name: str, *args: Any) -> None:
        future = self._send_command('order', name, *args)
        future.add_done_callback(self._report_failure)

    def _report_failure(self, future: Future[Any]) -> None:
        if (err := future.exception()) is not None:
            self._on_warning(f'recorder command failed: {err}')

    def status(self) -> dict[str, Any] | None:
        return self._snapshot

    def running(self) -> tuple[str, float] | None:
        """The episode recording as the commands checked here leave it, and the seconds since its start was asked:
        at once, where `status` (the writer's snapshot, every second) lags by a second or more on a busy computer."""
        return self._intent.running_for()

    def close(self, status: str = 'interrupted', timeout: float = 120.0) -> Any:
        """Close a running episode with `status`, let the child finish writing, and end it."""
        if self._closed:
            return None
        try:
            episode = self._command('close', status, timeout=timeout)
        finally:
            self._closed = True
            self._outbox.append((None, None, None))
            self._wake.set()
            self._process.join(timeout)
        return episode

    def _command(self, name: str, *args: Any, timeout: float = _REPLY_TIMEOUT_S) -> Any:
        return self._send_command(name, *args).result(timeout)

    def _send_command(self, name: str, *args: Any) -> Future[Any]:
        if self._closed:
            raise RecorderError('the recorder is shut down')
        if self._broken is not None:
            raise RecorderError(f'the episode writer process is gone: {self._broken}')
        future: Future[Any] = Future()
        with self._send_lock:  # ids and the outbox in one order
            command_id = self._next_id
            self._next_id += 1
            self._pending[command_id] = future
            self._outbox.append((_COMMAND + pickle.dumps((command_id, name, args, self._clock_ns())), future, None))
        self._wake.set()
        return future

    def _listen(self) -> None:
        lower_this_thread(INTAKE_NICENESS)
        while True:
            try:
                kind, *payload = self._in.recv()
            except (EOFError, OSError):
                break
            if kind == 'reply':
                command_id, ok, value = payload
                future = self._pending.pop(command_id)
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(value)
            elif kind == 'transition':
                for listener in list(self._transition_listeners):
                    listener(payload[0])
            elif kind == 'warning':
                self._on_warning(payload[0])
            elif kind == 'ended':  # the child closed an episode on its own (max duration, storage error)
                self._intent.ended(payload[0])
            elif kind == 'status':
                self._snapshot = payload[0]
        for future in self._pending.values():  # the child is gone
            future.set_exception(RecorderError('the episode writer process ended'))
        self._pending.clear()


def _child_main(conn_in: Any, conn_out: Any, dataset_root: str, settings: RecorderSettings) -> None:
    """Run EpisodeRecorder on what the pipe brings, until told to close or the ROS process is gone."""
    # Ctrl-C reaches the whole process group; the ROS process decides how the episode ends.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # The writer yields the CPU to intake: on a busy computer it catches up from its queue afterwards.
    lower_this_thread(WRITER_NICENESS)
    out_lock = threading.Lock()

    def send(item: tuple[Any, ...]) -> None:
        with out_lock:
            conn_out.send(item)

    recorder: EpisodeRecorder | None = None
    topics: list[str] = []
    # The ROS process's clock (sim time under use_sim_time), as last heard: each command carries it and
    # every message's receive time advances it.
    now = [time.time_ns()]
    try:
        recorder = EpisodeRecorder(Dataset.open(dataset_root), settings, clock_ns=lambda: now[0],
                                   on_transition=lambda t: send(('transition', t)),
                                   on_warning=lambda m: send(('warning', m)),
                                   on_writer_end=lambda episode_id: send(('ended', episode_id)))
        startup_error: BaseException | None = None
    except RobodataError as err:
        startup_error = err
    stop_status = threading.Event()
    if recorder is not None:
        threading.Thread(target=_report_status, args=(recorder, send, stop_status), daemon=True).start()
    try:
        while True:
            try:
                frame = conn_in.recv_bytes()
            except (EOFError, OSError):  # the ROS process died: close what runs, as Ctrl-C would
                if recorder is not None:
                    recorder.close('interrupted')
                return
            if frame[:1] == _MESSAGE:
                if recorder is not None:
                    _, index, t_ns = _HEADER.unpack_from(frame)
                    now[0] = max(now[0], t_ns)
                    recorder.on_message(topics[index], memoryview(frame)[_HEADER.size:], t_ns)
                continue
            if frame[:1] == _BACKLOG:
                if recorder is not None:
                    recorder.upstream_backlog(_BACKLOG_FRAME.unpack_from(frame)[1])
                continue
            if frame[:1] == _DROPPED:
                if recorder is not None:
                    _, index, count = _HEADER.unpack_from(frame)
                    recorder.count_dropped(topics[index], count)
                continue
            command_id, name, args, now[0] = pickle.loads(frame[1:])
            try:
                if startup_error is not None:
                    raise startup_error
                assert recorder is not None
                if name == 'ready':
                    value = None
                elif name == 'add_topic':
                    topic, msgtype, latched, rate, reliable = args
                    recorder.add_topic(topic, msgtype, latched=latched, expected_rate_hz=rate, reliable=reliable)
                    topics.append(topic)
                    value = None
                elif name == 'order':
                    recorder.order(*args)
                    value = None
                elif name == 'close':
                    value = recorder.close(*args)
                    send(('reply', command_id, True, value))
                    return
                else:
                    value = getattr(recorder, name)(*args)
                send(('reply', command_id, True, value))
            except BaseException as err:  # handed back to the caller in the ROS process
                send(('reply', command_id, False, err))
    finally:
        stop_status.set()


def _report_status(recorder: EpisodeRecorder, send: Callable[[tuple[Any, ...]], None],
                   stop: threading.Event) -> None:
    while not stop.wait(1.0):
        status = recorder.status()
        if status is not None:
            try:
                send(('status', status))
            except (OSError, ValueError):
                return
    time.sleep(0)
