"""The episode recorder: one bag per episode, lossless, crash-safe, driven by the operator.

ROS delivers raw CDR messages on the executor thread; `on_message` only queues them. One writer
thread takes messages and operator commands from that single queue in arrival order, so an
episode holds exactly the messages received between its start and its stop, and two episodes
back to back share none. Between episodes messages go to the pre-roll. The writer flushes at least
every `flush_interval_s`, so a SIGKILL loses at most that much; Ctrl-C/SIGTERM close the episode
as `interrupted`; a storage error (disk full) closes it as `incomplete` and leaves earlier
episodes untouched.

Why one module: every transition (start, stop, discard, outcome, a storage failure, a crash of the caller) runs
on the one writer thread and touches the same episode, bag and statistics; split apart, that ordering guarantee
would have to be re-established across modules. The pre-roll (preroll.py), per-topic figures (topic_stats.py)
and the writer process (writer_process.py) are their own modules.
"""

from __future__ import annotations

import contextlib
import queue
import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import asdict, dataclass, replace
from typing import Any

from ros_robodata.bag.types import typestore
from ros_robodata.bag.writer import BagWriter, qos_profile
from ros_robodata.dataset.audit import append_audit
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.episode import Episode
from ros_robodata.errors import RecorderError, RobodataError
from ros_robodata.files import free_bytes
from ros_robodata.record.disk_room import WriteRate, disk_room
from ros_robodata.record.intent import EpisodeIntent
from ros_robodata.record.preroll import PreRoll
from ros_robodata.signals.cdr import starts_with_header
from ros_robodata.signals.topic_stats import TopicStats, stamp_range
from ros_robodata.vocabulary import OUTCOMES

_LATCHED_KEEP = 16  # distinct latched messages kept per topic (one per publisher of /tf_static)
_PERIODIC_S = 0.1
STATUS_PERIOD_S = 1.0
# Compression yields under pressure: while this much waits to be written (here and upstream, in the node's
# outbox), bag chunks go to disk uncompressed, until the backlog is down to the lower figure. zstd takes about
# half the writer's CPU on camera frames, which it shrinks by a fifth; on a busy computer that CPU is intake's.
BEHIND_BYTES = 64 << 20
SAVE_RETRY_S = 2.0  # how often an episode.yaml a full disk refused is tried again
CAUGHT_UP_BYTES = 16 << 20


@dataclass(frozen=True)
class RecorderSettings:
    task: str = ''
    operator: str = ''
    mode: str = 'teleop'
    robot: str = ''
    profile_sha256: str = ''
    storage: str = 'mcap'
    compression: str = 'zstd'
    pre_roll_s: float = 2.0
    min_episode_s: float = 1.0
    max_episode_s: float = 600.0
    flush_interval_s: float = 1.0
    delete_discarded: bool = False
    queue_max_bytes: int = 1 << 30
    preroll_max_bytes: int = 512 << 20
    disk_warn_s: float = 120.0

    @classmethod
    def from_profile(cls, profile: Any, **overrides: Any) -> RecorderSettings:
        rec = profile.recording
        base = cls(robot=profile.robot.name, profile_sha256=profile.sha256, storage=rec.storage,
                   compression=rec.compression, pre_roll_s=rec.pre_roll_s, min_episode_s=rec.min_episode_s,
                   max_episode_s=rec.max_episode_s,
                   flush_interval_s=rec.flush_interval_s, disk_warn_s=rec.disk_warn_s)
        return replace(base, **{k: v for k, v in overrides.items() if v is not None})


@dataclass(frozen=True)
class Transition:
    """What just happened to an episode; the node publishes it as an EpisodeEvent."""

    kind: str  # start | stop | outcome | discard
    episode: Episode
    t_ns: int
    message: str = ''


@dataclass
class _Topic:
    msgtype: str
    latched: bool
    expected_rate_hz: float | None
    reliable: bool
    stamped: bool


class _Command:
    __slots__ = ('args', 'fn', 'future')

    def __init__(self, fn: Callable[..., Any] | None, args: tuple[Any, ...]) -> None:
        self.fn = fn
        self.args = args
        self.future: Future[Any] = Future()


class EpisodeRecorder:
    """Use from any thread; everything that touches a bag runs on the writer thread."""

    def __init__(
        self,
        dataset: Dataset,
        settings: RecorderSettings,
        *,
        clock_ns: Callable[[], int] = time.time_ns,
        on_transition: Callable[[Transition], None] | None = None,
        on_warning: Callable[[str], None] | None = None,
        on_writer_end: Callable[[str], None] | None = None,
    ) -> None:
        self.dataset = dataset
        self.settings = settings
        self._clock_ns = clock_ns
        self._on_transition = on_transition or (lambda _t: None)
        self._warn = on_warning or (lambda _m: None)
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._enqueued_bytes = 0  # written only by producers (the executor thread)
        self._taken_bytes = 0  # written only by the writer thread
        self._upstream_bytes = 0  # what waits before this recorder (the node's outbox), as last told
        self._behind = False
        self._dropped: dict[str, int] = {}  # producer side: messages refused because the queue was full
        self._topics: dict[str, _Topic] = {}
        self._latched: dict[str, list[tuple[int, bytes | memoryview]]] = {}
        self._preroll = PreRoll(settings.pre_roll_s, settings.preroll_max_bytes)
        self._bag: BagWriter | None = None
        self._episode: Episode | None = None
        self._stats: dict[str, TopicStats] = {}
        self._dropped_at_start: dict[str, int] = {}
        # What the commands issued so far make of the recorder, known at once on the caller's thread
        # (the writer may still be working through the queue): the running episode and the last one.
        self._intent = EpisodeIntent(dataset.new_episode_id, settings.min_episode_s)
        self._on_writer_end = on_writer_end or (lambda _id: None)
        self._next_flush = 0.0
        self._snapshot: dict[str, Any] | None = None
        self._next_snapshot = 0.0
        self._write_rate = WriteRate()  # the rig's measured rate: the disk's room in recording time
        self._unsaved: Episode | None = None  # closed by a storage error before its episode.yaml could be written
        self._next_save_retry = 0.0
        self._closed = False
        self._thread = threading.Thread(target=self._run, name='episode-writer', daemon=True)
        self._thread.start()

    # -- called from ROS threads ------------------------------------------------------------------

    def add_topic(self, topic: str, msgtype: str, *, latched: bool = False, expected_rate_hz: float | None = None,
                  reliable: bool = True) -> None:
        """Declare a topic before its messages arrive (when its subscription is made)."""
        self._call(self._add_topic, topic, msgtype, latched, expected_rate_hz, reliable)

    def on_message(self, topic: str, data: bytes | memoryview, t_ns: int) -> None:
        """A message as received (CDR bytes, receive time). Never blocks, never deserializes."""
        if self._closed:
            return
        size = len(data)
        if self._enqueued_bytes - self._taken_bytes + size > self.settings.queue_max_bytes:
            self._dropped[topic] = self._dropped.get(topic, 0) + 1
            return
        self._enqueued_bytes += size
        self._queue.put((topic, t_ns, data))

    def upstream_backlog(self, waiting_bytes: int) -> None:
        """How much waits before this recorder (the node's outbox), as its sender last saw it."""
        self._upstream_bytes = waiting_bytes

    def _compress_now(self) -> bool:
        """Asked by the bag at each chunk (writer thread): compress it, unless the writer is behind."""
        waiting = self._enqueued_bytes - self._taken_bytes + self._upstream_bytes
        if self._behind and waiting < CAUGHT_UP_BYTES:
            self._behind = False
        elif not self._behind and waiting > BEHIND_BYTES:
            self._behind = True
        return not self._behind

    def count_dropped(self, topic: str, count: int) -> None:
        """`count` messages of `topic` never reached this recorder (the node's outbox was full): they count as
        dropped by the recorder, as the ones its own queue turns away."""
        self._dropped[topic] = self._dropped.get(topic, 0) + count

    def start(self, task: str = '', operator: str = '', mode: str = '') -> Episode:
        """Start an episode and wait until its pre-roll is written; returns it."""
        return self._call(self._start, self._intent.begin(), task, operator, mode, self._clock_ns())

    def stop(self, status: str = 'complete') -> Episode:
        """Stop the running episode and wait until its bag is closed and checksummed."""
        return self._call(self._stop, status, self._clock_ns(), '', self._intent.end())

    def discard(self) -> Episode:
        return self._call(self._discard, self._clock_ns(), self._intent.end(discard=True))

    def set_outcome(self, outcome: str, notes: str = '') -> Episode:
        return self._call(self._set_outcome, outcome, notes, self._clock_ns(), self._intent.target())

    # The same commands without waiting for the writer: for a ROS service callback, which runs on
    # the thread that takes messages from DDS and must not stop taking them while a bag is closed.
    # Each checks and reserves what it can at once and returns the episode id; the outcome comes
    # through on_transition (and on_warning if the writer then fails).

    def request_start(self, task: str = '', operator: str = '', mode: str = '') -> str:
        episode_id = self._intent.begin()
        self._send(self._start, episode_id, task, operator, mode, self._clock_ns())
        return episode_id

    def request_stop(self, status: str = 'complete') -> str:
        episode_id = self._intent.end()
        self._send(self._stop, status, self._clock_ns(), '', episode_id)
        return episode_id

    def request_discard(self) -> str:
        episode_id = self._intent.end(discard=True)
        self._send(self._discard, self._clock_ns(), episode_id)
        return episode_id

    def request_outcome(self, outcome: str, notes: str = '') -> str:
        if outcome not in OUTCOMES:
            raise RecorderError(f'outcome {outcome!r} is not one of {", ".join(OUTCOMES)}')
        episode_id = self._intent.target()
        self._send(self._set_outcome, outcome, notes, self._clock_ns(), episode_id)
        return episode_id

    def order(self, name: str, episode_id: str, *args: Any) -> None:
        """A command already checked and given its episode by the caller's own EpisodeIntent (the writer process's
        parent): queued as the request_* would queue it, keeping this recorder's intent in step."""
        if name == 'start':
            self._intent.adopt(episode_id)
            self._send(self._start, episode_id, *args, self._clock_ns())
        elif name == 'stop':
            self._intent.ended(episode_id)
            self._send(self._stop, *args, self._clock_ns(), '', episode_id)
        elif name == 'discard':
            self._intent.ended(episode_id)
            self._send(self._discard, self._clock_ns(), episode_id)
        elif name == 'outcome':
            self._send(self._set_outcome, *args, self._clock_ns(), episode_id)
        else:
            raise RecorderError(f'unknown recorder command {name!r}')

    def _ended_by_writer(self, episode_id: str) -> None:
        """The writer closed an episode on its own (max duration, storage error, failed start)."""
        self._intent.ended(episode_id)
        # As with _notify: the parent may be gone (this is how a writer process closes after a SIGKILL).
        with contextlib.suppress(Exception):
            self._on_writer_end(episode_id)

    def _send(self, fn: Callable[..., Any], *args: Any) -> None:
        if self._closed:
            raise RecorderError('the recorder is shut down')
        command = _Command(fn, args)
        command.future.add_done_callback(self._report_failure)
        self._queue.put(command)

    def _report_failure(self, future: Future[Any]) -> None:
        if (err := future.exception()) is not None:
            self._warn(f'recorder command failed: {err}')

    @property
    def recording(self) -> Episode | None:
        return self._episode

    def status(self) -> dict[str, Any] | None:
        """Live figures for diagnostics, as the writer last summed them up (every STATUS_PERIOD_S).

        Never waits for the writer: it is read from the thread that takes messages from DDS.
        """
        return self._snapshot

    def close(self, status: str = 'interrupted', timeout: float = 60.0) -> Episode | None:
        """Stop the running episode (if any) with `status`, then end the writer thread."""
        if self._closed:
            return None
        episode = None
        if self._thread.is_alive():
            try:
                episode = self._call(self._close, status, self._clock_ns(), timeout=timeout)
            finally:
                self._closed = True
                self._queue.put(_Command(None, ()))
                self._thread.join(timeout)
        self._closed = True
        return episode

    def _call(self, fn: Callable[..., Any], *args: Any, timeout: float = 60.0) -> Any:
        if self._closed:
            raise RecorderError('the recorder is shut down')
        command = _Command(fn, args)
        self._queue.put(command)
        return command.future.result(timeout)

    def _notify(self, transition: Transition) -> None:
        """Tell the node; a failure to tell must never undo or block what was recorded."""
        try:
            self._on_transition(transition)
        except Exception as err:
            self._warn(f'could not announce episode {transition.episode.id} {transition.kind}: {err}')

    # -- the writer thread ------------------------------------------------------------------------

    def _run(self) -> None:
        next_periodic = time.monotonic() + _PERIODIC_S
        get = self._queue.get
        while True:
            try:
                item = get(timeout=_PERIODIC_S)
            except queue.Empty:
                item = None
            if type(item) is tuple:
                self._on_message(*item)
            elif item is not None:
                if item.fn is None:
                    return
                try:
                    item.future.set_result(item.fn(*item.args))
                except BaseException as err:  # handed to the caller's thread
                    item.future.set_exception(err)
            now = time.monotonic()
            if now >= next_periodic:
                next_periodic = now + _PERIODIC_S
                self._periodic(now)

    def _add_topic(self, topic: str, msgtype: str, latched: bool, rate: float | None, reliable: bool) -> None:
        if topic in self._topics:
            return
        self._topics[topic] = _Topic(msgtype, latched, rate, reliable, starts_with_header(msgtype, typestore()))
        if self._bag is not None:
            self._declare(topic)

    def _declare(self, topic: str) -> None:
        assert self._bag is not None
        info = self._topics[topic]
        self._bag.add_topic(topic, info.msgtype, qos=qos_profile(reliable=info.reliable, latched=info.latched))
        self._stats[topic] = TopicStats(topic, info.msgtype, info.expected_rate_hz, info.stamped, info.latched)

    def _on_message(self, topic: str, t_ns: int, data: bytes | memoryview) -> None:
        self._taken_bytes += len(data)
        info = self._topics.get(topic)
        if info is None:
            return
        if info.latched:
            kept = self._latched.setdefault(topic, [])
            if all(bytes(d) != bytes(data) for _, d in kept):
                kept.append((t_ns, data))
                del kept[:-_LATCHED_KEEP]
        if self._bag is None:
            self._preroll.push(topic, t_ns, data)
            return
        self._write(topic, t_ns, data)

    def _write(self, topic: str, t_ns: int, data: bytes | memoryview) -> None:
        if self._bag is None:  # the storage failed earlier in this batch
            return
        try:
            self._bag.write(topic, t_ns, data)
        except OSError as err:
            self._storage_failed(err)
            return
        self._stats[topic].update(t_ns, data)

    def _start(self, episode_id: str, task: str, operator: str, mode: str, t_ns: int) -> Episode:
        if self._episode is not None:
            raise RecorderError(f'episode {self._episode.id} is recording; stop it first')
        self._save_unsaved()
        s = self.settings
        pre = self._preroll.take(t_ns - int(s.pre_roll_s * 1e9))
        first_t = min([t_ns, *(item.t_ns for item in pre)])
        try:
            episode = Episode(
                id=episode_id, task=task or s.task, operator=operator or s.operator,
                mode=mode or s.mode, robot=s.robot, status='recording', start_ns=first_t, marked_start_ns=t_ns,
                profile_sha256=s.profile_sha256,
            )
            self.dataset.add_episode(episode, who=episode.operator or None)
        except RobodataError:
            self._ended_by_writer(episode_id)
            raise
        custom = {'ros_robodata.episode_id': episode.id, 'ros_robodata.task': episode.task,
                  'ros_robodata.mode': episode.mode}
        self._bag = BagWriter(self.dataset.bag_dir(episode.id), storage=s.storage, compression=s.compression,
                              custom_data=custom, compress_now=self._compress_now).open()
        self._episode = episode
        self._stats = {}
        self._dropped_at_start = dict(self._dropped)
        for topic in self._topics:
            self._declare(topic)
        for topic, kept in self._latched.items():  # the rig's fixed facts, at the top of every bag
            for _, data in kept:
                self._write(topic, first_t, data)
        for item in pre:
            if not self._topics[item.topic].latched:
                self._write(item.topic, item.t_ns, item.data)
        if self._episode is None:  # the storage failed while writing the pre-roll
            self._ended_by_writer(episode.id)
            raise RecorderError(f'episode {episode.id} could not be written: {self.dataset.episode(episode.id).notes}')
        self._next_flush = time.monotonic() + s.flush_interval_s
        self._notify(Transition('start', episode, t_ns, f'{len(pre)} pre-roll message(s)'))
        return episode

    def _finish(self, status: str, t_ns: int, message: str) -> Episode:
        """Close the bag and write what is known about the episode; the bag is whole after this."""
        episode, bag = self._episode, self._bag
        assert episode is not None and bag is not None
        self._bag = None
        self._episode = None
        sums: dict[str, str] = {}
        try:
            bag.close()
            sums = bag.sha256
        except OSError as err:
            status = 'incomplete'
            message = f'{message}; bag not finished: {err} (run `robodata repair`)'.lstrip('; ')
        for topic, stats in self._stats.items():
            stats.dropped_by_recorder = self._dropped.get(topic, 0) - self._dropped_at_start.get(topic, 0)
        episode.status = status
        episode.marked_stop_ns = t_ns
        last = [s.last_t_ns for s in self._stats.values() if s.last_t_ns is not None]
        episode.stop_ns = max(last) if last else t_ns
        episode.topics = {topic: stats.summary() for topic, stats in self._stats.items()}
        episode.stamp_start_ns, episode.stamp_stop_ns = stamp_range(self._stats.values())
        per_topic = {topic: stats.loss(episode.stamp_start_ns) for topic, stats in self._stats.items()}
        episode.loss = {
            'total_lost': sum(s.lost for s in self._stats.values()),
            'missing_by_stamp': sum(s.missing_by_stamp for s in self._stats.values()),
            'dropped_by_recorder': sum(s.dropped_by_recorder for s in self._stats.values()),
            'topics': per_topic,
        }
        if bag.chunks_uncompressed:  # not a loss: the bag is whole, only larger than it might have been
            message = (f'{message}; {bag.chunks_uncompressed} of {bag.chunks_compressed + bag.chunks_uncompressed} '
                       'bag chunks stored uncompressed while the writer was behind').lstrip('; ')
        if message:
            episode.notes = f'{episode.notes}\n{message}'.strip()
        self.dataset.save_episode(episode)
        if status != 'incomplete':
            episode = self.dataset.record_checksums(episode.id, who=episode.operator or None, known=sums)
        return episode

    def _stop(self, status: str, t_ns: int, message: str, episode_id: str | None = None) -> Episode:
        if self._episode is None or (episode_id is not None and self._episode.id != episode_id):
            what = 'no episode is recording' if episode_id is None else f'episode {episode_id} ended already'
            raise RecorderError(what)
        episode = self._finish(status, t_ns, message)
        self._notify(Transition('stop', episode, t_ns, message))
        return episode

    def _discard(self, t_ns: int, episode_id: str) -> Episode:
        if self._episode is not None and self._episode.id == episode_id:
            episode = self._finish('discarded', t_ns, 'discarded by the operator')
            append_audit(self.dataset.audit_path, 'set_status', episode.id, self.settings.operator or None,
                         old='recording', new='discarded', reason='discarded by the operator while recording')
        else:
            episode = self.dataset.set_status(episode_id, 'discarded', self.settings.operator or None,
                                              'discarded by the operator')
        if self.settings.delete_discarded:
            shutil.rmtree(self.dataset.episode_dir(episode.id))
            self.dataset.catalog.delete(episode.id)
            append_audit(self.dataset.audit_path, 'delete_episode', episode.id, self.settings.operator or None,
                         reason='discarded (delete_discarded is set)')
            self._intent.forget_last()
        self._notify(Transition('discard', episode, t_ns))
        return episode

    def _set_outcome(self, outcome: str, notes: str, t_ns: int, episode_id: str) -> Episode:
        if outcome not in OUTCOMES:
            raise RecorderError(f'outcome {outcome!r} is not one of {", ".join(OUTCOMES)}')
        who = self.settings.operator or None
        if self._episode is not None and self._episode.id == episode_id:
            episode = self._episode
            old, episode.outcome = episode.outcome, outcome
            if notes:
                episode.notes = f'{episode.notes}\n{notes}'.strip()
            self.dataset.save_episode(episode)
            append_audit(self.dataset.audit_path, 'set_outcome', episode.id, who, old=old, new=outcome, reason=notes)
        else:
            episode = self.dataset.set_outcome(episode_id, outcome, who, notes)
            if notes:
                episode.notes = f'{episode.notes}\n{notes}'.strip()
                self.dataset.save_episode(episode)
        self._notify(Transition('outcome', episode, t_ns))
        return episode

    def _status(self) -> dict[str, Any]:
        episode = self._episode
        topics = {}
        for topic, stats in (self._stats.items() if episode is not None else ()):  # per topic: only while recording
            received, missing, gap = stats.take_window()
            topics[topic] = {'received': received, 'missing': missing, 'gap_stamps_ns': gap, 'count': stats.count,
                             'bytes': stats.bytes,
                             'lost': stats.lost, 'expected_rate_hz': stats.expected_rate_hz,
                             'last_t_ns': stats.last_t_ns, 'latched': stats.latched}
        return {
            'episode_id': episode.id if episode else None,
            'elapsed_s': (self._clock_ns() - episode.marked_start_ns) / 1e9 if episode and episode.marked_start_ns
            else None,
            'marked_start_ns': episode.marked_start_ns if episode else None,
            # gaps are told in seconds after the episode's earliest header stamp, as episode.yaml's loss tells them
            'stamp_origin_ns': stamp_range(self._stats.values())[0] if episode else None,
            'queued_bytes': self._enqueued_bytes - self._taken_bytes,
            'dropped_by_recorder': sum(self._dropped.values()),
            'topics': topics,
            'last_episode_id': self._intent.last,
            'disk': asdict(disk_room(free_bytes(self.dataset.root),
                                     self._write_rate.update(time.monotonic(), self._taken_bytes, episode is not None),
                                     self.settings.disk_warn_s)),
        }

    def _close(self, status: str, t_ns: int) -> Episode | None:
        if self._episode is None:
            return None
        self._ended_by_writer(self._episode.id)
        return self._stop(status, t_ns, f'closed on shutdown ({status})')

    def _save_unsaved(self) -> None:
        """Write the episode.yaml (and catalog row) a full disk kept from being written, once there is room, so
        the dataset never says `recording` for an episode that ended."""
        episode = self._unsaved
        if episode is None:
            return
        try:
            self.dataset.save_episode(episode)
        except (OSError, RobodataError):
            return  # still no room: tried again while idle and at the next start
        self._unsaved = None
        self._warn(f'episode {episode.id}: episode.yaml written now that the disk has room again (status '
                   f'{episode.status}; `robodata repair` makes its bag whole)')

    def _periodic(self, now: float) -> None:
        if self._unsaved is not None and now >= self._next_save_retry:
            self._next_save_retry = now + SAVE_RETRY_S
            self._save_unsaved()
        if now >= self._next_snapshot:
            self._next_snapshot = now + STATUS_PERIOD_S
            self._snapshot = self._status()  # one reference swap: readers see an old or a new dict
        if self._bag is None or self._episode is None:
            return
        if now >= self._next_flush:
            self._next_flush = now + self.settings.flush_interval_s
            try:
                self._bag.flush()
            except OSError as err:
                self._storage_failed(err)
                return
        start = self._episode.marked_start_ns or 0
        t_ns = self._clock_ns()
        if (t_ns - start) / 1e9 >= self.settings.max_episode_s:
            message = f'auto-stopped after max_episode_s={self.settings.max_episode_s:g} s'
            self._warn(f'episode {self._episode.id} {message}')
            self._ended_by_writer(self._episode.id)
            self._stop('complete', t_ns, message)

    def _storage_failed(self, err: OSError) -> None:
        """Disk full or gone: keep what is on disk, close the episode as incomplete, tell the operator."""
        episode, bag = self._episode, self._bag
        assert episode is not None and bag is not None
        self._bag = None
        self._episode = None
        self._ended_by_writer(episode.id)
        text = f'storage error while recording episode {episode.id}: {err.strerror or err}; closed as incomplete'
        self._warn(text + ' (data flushed before the error is kept; run `robodata repair` on it)')
        for closer in (bag.close, bag.abort):
            try:
                closer()
                break
            except Exception:  # the disk may refuse even the index; what was flushed stays readable
                continue
        episode.status = 'incomplete'
        episode.notes = f'{episode.notes}\n{text}'.strip()
        t_ns = self._clock_ns()
        episode.marked_stop_ns = t_ns
        episode.topics = {topic: stats.summary() for topic, stats in self._stats.items()}
        episode.stamp_start_ns, episode.stamp_stop_ns = stamp_range(self._stats.values())
        try:
            self.dataset.save_episode(episode)
        except (OSError, RobodataError) as save_err:
            self._unsaved = episode
            self._warn(f'could not write episode.yaml of {episode.id} yet ({save_err}): it is written as soon as '
                       'the disk has room again')
        self._notify(Transition('stop', episode, t_ns, text))
