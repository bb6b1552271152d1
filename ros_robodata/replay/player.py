"""Playing a bag back at its recorded timing: its stored CDR bytes, never decoded, each at its receive time.

Two threads: one reads ahead (chunks decompressed into a bounded buffer), one waits for each message's time and
hands it to `publish`. A chunk read or a zstd burst therefore never delays a message that is due. Seeking
restarts the read where the replay now is; latched topics (/robot_description, /tf_static) are published again
there, so a viewer opened mid-episode still has the robot model.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ros_robodata.bag.reader import BagMessage, BagReader
from ros_robodata.errors import ReplayError
from ros_robodata.replay.plan import PlayedTopic, parse_remaps, plan_topics
from ros_robodata.replay.playback import PlaybackClock, next_event, previous_event

# Read-ahead: at most this many bytes or messages waiting (a second of three VGA cameras is ~80 MB).
_AHEAD_BYTES = 96 * 1024 * 1024
_AHEAD_COUNT = 20_000
_END = object()


@dataclass(frozen=True)
class ReplayOptions:
    """What `robodata replay` and the player node's parameters set (see the README's replay section)."""

    rate: float = 1.0
    start_s: float = 0.0  # from the bag's first message
    loop: bool = False
    paused: bool = False
    topics: Sequence[str] = ()
    exclude: Sequence[str] = ()
    remap: Sequence[str] = ()


@dataclass
class _Ahead:
    """Messages read but not yet due, tagged with the seek generation they were read for."""

    items: deque = field(default_factory=deque)
    size: int = 0
    cond: threading.Condition = field(default_factory=threading.Condition)


class Replay:
    """One bag being played. `play(publish)` runs until the bag ends (or forever with loop) or stop() is called;
    every control (pause, seek, rate, play_next, events) may be called from any thread meanwhile."""

    def __init__(self, bag: str | Path, options: ReplayOptions = ReplayOptions(), *,
                 events_ns: Sequence[int] = ()) -> None:
        self.bag = Path(bag)
        self.reader = BagReader(self.bag)
        if not self.reader.message_count or self.reader.start_ns is None or self.reader.end_ns is None:
            self.reader.close()
            raise ReplayError(f'{self.bag}: the bag holds no message to replay')
        try:
            self.topics = plan_topics(self.reader.topics, include=options.topics, exclude=options.exclude,
                                      remap=parse_remaps(options.remap))
        except ReplayError as err:
            self.reader.close()
            raise ReplayError(f'{self.bag}: {err}') from None
        self.begin_ns, self.end_ns = self.reader.start_ns, self.reader.end_ns
        start = self.begin_ns + round(options.start_s * 1e9)
        if not options.start_s >= 0 or start > self.end_ns:
            self.reader.close()
            raise ReplayError(f'{self.bag}: start {options.start_s:g} s is outside the bag, which lasts '
                              f'{(self.end_ns - self.begin_ns) / 1e9:.2f} s')
        self.clock = PlaybackClock(start, self.end_ns, rate=options.rate, paused=options.paused)
        self.loop = options.loop
        self.events_ns = sorted(int(t) for t in events_ns)
        self.published: dict[str, int] = {t.topic: 0 for t in self.topics}
        self.finished = threading.Event()
        self._by_topic = {t.topic: t for t in self.topics}
        self._latched = [t.topic for t in self.topics if t.transient_local]
        self._ahead = _Ahead()
        self._steps = 0
        self._stopping = False

    # -- controls --------------------------------------------------------------------------------------------------

    def stop(self) -> None:
        self._stopping = True
        with self._ahead.cond:
            self._ahead.cond.notify_all()
        with self.clock.changed:
            self.clock.changed.notify_all()

    def play_next(self) -> bool:
        """While paused, publish the next message now (as rosbag2's ~/play_next); False when not paused."""
        with self.clock.changed:
            if not self.clock.paused or self.finished.is_set():
                return False
            self._steps += 1
            self.clock.changed.notify_all()
            return True

    def seek(self, bag_ns: int) -> int:
        """Go to a bag time (held within the bag); the read starts over there."""
        where = self.clock.seek(bag_ns)
        with self._ahead.cond:
            self._ahead.cond.notify_all()
        return where

    def seek_by(self, seconds: float) -> int:
        return self.seek(self.clock.now() + round(seconds * 1e9))

    def next_event(self) -> int | None:
        """Seek to just before the next event; None (and no seek) when there is none after now."""
        target = next_event(self.events_ns, self.clock.now())
        return None if target is None else self.seek(target)

    def previous_event(self) -> int | None:
        target = previous_event(self.events_ns, self.clock.now())
        return None if target is None else self.seek(target)

    # -- playing ---------------------------------------------------------------------------------------------------

    def play(self, publish: Callable[[PlayedTopic, bytes], None]) -> None:
        """Publish every message at its time through `publish(topic, cdr_bytes)`; returns at the end or on stop()."""
        self.clock.start()
        reading = threading.Thread(target=self._read_ahead, name='replay-read', daemon=True)
        reading.start()
        try:
            self._publish_loop(publish)
        finally:
            self.finished.set()
            self.stop()
            reading.join(timeout=5)
            self.reader.close()

    def _publish_loop(self, publish: Callable[[PlayedTopic, bytes], None]) -> None:
        while not self._stopping:
            item = self._take()
            if item is None:
                return
            generation, message = item
            if generation != self.clock.generation:
                continue  # read before a seek
            if message is _END:
                if not self.loop:
                    return
                self.seek(self.begin_ns)
                continue
            if not self._wait_until_due(message, generation):
                continue
            publish(self._by_topic[message.topic], message.data)
            self.published[message.topic] += 1

    def _wait_until_due(self, message: BagMessage, generation: int) -> bool:
        """Block until `message` is due; False when a seek (or stop) made it stale."""
        clock = self.clock
        while not self._stopping:
            with clock.changed:
                if generation != clock.generation:
                    return False
                if self._steps and clock.paused:
                    self._steps -= 1
                    clock.reached(message.t_ns)
                    return True
                wait = clock.due_in(message.t_ns)
                if wait is not None and wait <= 0:
                    return True
                clock.changed.wait(0.1 if wait is None else min(wait / 1e9, 0.1))
        return False

    def _take(self) -> tuple[int, object] | None:
        ahead = self._ahead
        with ahead.cond:
            while not ahead.items and not self._stopping:
                ahead.cond.wait(0.1)
            if self._stopping:
                return None
            generation, message = ahead.items.popleft()
            if message is not _END:
                ahead.size -= len(message.data)
            ahead.cond.notify_all()
            return generation, message

    def _read_ahead(self) -> None:
        ahead = self._ahead
        while not self._stopping:
            with self.clock.changed:
                generation, position = self.clock.generation, self.clock.origin_ns
            with ahead.cond:
                ahead.items.clear()
                ahead.size = 0
            for message in self._messages_from(position):
                if self._stopping or generation != self.clock.generation:
                    break
                with ahead.cond:
                    while (ahead.size > _AHEAD_BYTES or len(ahead.items) > _AHEAD_COUNT) and not self._stopping \
                            and generation == self.clock.generation:
                        ahead.cond.wait(0.1)
                    ahead.items.append((generation, message))
                    ahead.size += len(message.data)
                    ahead.cond.notify_all()
            else:
                with ahead.cond:
                    ahead.items.append((generation, _END))
                    ahead.cond.notify_all()
                while not self._stopping and generation == self.clock.generation:
                    with ahead.cond:
                        ahead.cond.wait(0.1)

    def _messages_from(self, position: int) -> Iterator[BagMessage]:
        """The latched topics' newest message before `position` (stamped `position`, so it goes out at once),
        then every chosen topic from `position` on."""
        if position > self.begin_ns and self._latched:
            last: dict[str, BagMessage] = {}
            for message in self.reader.messages(self._latched, stop_ns=position):
                last[message.topic] = message
            for message in sorted(last.values(), key=lambda m: m.t_ns):
                yield BagMessage(message.topic, message.msgtype, position, bytes(message.data))
        for message in self.reader.messages(list(self._by_topic), start_ns=position):
            yield BagMessage(message.topic, message.msgtype, message.t_ns, bytes(message.data))
