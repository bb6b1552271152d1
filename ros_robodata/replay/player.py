"""Playing a bag back at its recorded timing: its stored CDR bytes, never decoded, each at its receive time.

Two threads: one reads ahead (chunks decompressed into a bounded buffer), one waits for each message's time and
hands it to `publish`. A chunk read or a zstd burst therefore never delays a message that is due. Seeking
restarts the read where the replay now is; latched topics (/robot_description, /tf_static) are published again
there, so a viewer opened mid-episode still has the robot model.
"""

from __future__ import annotations

import enum
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ros_robodata.bag.reader import BagMessage, BagReader
from ros_robodata.errors import ReplayError
from ros_robodata.replay.playback import PlaybackClock, next_event, previous_event
from ros_robodata.replay.replay_plan import PlayedTopic, parse_remaps, plan_topics

# Read-ahead: at most this many bytes or messages waiting per lane (a second of three VGA cameras is ~80 MB).
_AHEAD_BYTES = 96 * 1024 * 1024
_AHEAD_COUNT = 20_000


class _End(enum.Enum):
    """The mark a lane gets where the bag ends (a one-member enum: type checkers narrow `is _END`)."""

    END = enum.auto()


_END: Final = _End.END


@dataclass(frozen=True)
class ReplayOptions:
    """What `robodata replay` and the player node's parameters set (see docs/replay.md)."""

    rate: float = 1.0
    start_s: float = 0.0  # from the bag's first message
    loop: bool = False
    paused: bool = False
    topics: Sequence[str] = ()
    exclude: Sequence[str] = ()
    remap: Sequence[str] = ()


class _Lane:
    """Messages read but not yet due, for one publishing thread, tagged with the seek generation they were read
    for. Large messages (frames, clouds) have a lane of their own: publishing a VGA frame takes a millisecond or
    more, and a joint state due meanwhile must not wait behind it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.items: deque = deque()
        self.size = 0
        self.cond = threading.Condition()
        self.head_ns: int | None = None  # the message this lane waits to publish
        self.ended = -1  # the last generation whose end this lane reached


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
        self._small, self._large = _Lane('small'), _Lane('large')
        self._lanes = (self._small, self._large)
        self._steps = 0
        self._stopping = False
        self.error = ''  # why the replay stopped before its end, when it did

    def leave_out(self, topic: str) -> None:
        """Do not read or publish `topic` (its type cannot be published here); before play() only."""
        self.topics = [t for t in self.topics if t.topic != topic]
        self.published.pop(topic, None)
        self._by_topic.pop(topic, None)
        self._latched = [t for t in self._latched if t != topic]
        if not self._by_topic:
            self.reader.close()

    # -- controls --------------------------------------------------------------------------------------------------

    def stop(self) -> None:
        self._stopping = True
        self._wake_lanes()
        with self.clock.changed:
            self.clock.changed.notify_all()

    def _wake_lanes(self) -> None:
        for lane in self._lanes:
            with lane.cond:
                lane.cond.notify_all()

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
        self._wake_lanes()
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

    def play(self, publish: Callable[[PlayedTopic, bytes | memoryview], None]) -> None:
        """Publish every message at its time through `publish(topic, cdr_bytes)`; returns at the end or on stop()."""
        self.clock.start()
        threads = [threading.Thread(target=self._read_ahead, name='replay-read', daemon=True)]
        threads += [threading.Thread(target=self._publish_loop, args=(lane, publish), name=f'replay-{lane.name}',
                                     daemon=True) for lane in self._lanes]
        for thread in threads:
            thread.start()
        try:
            while not self._stopping:
                with self.clock.changed:
                    generation = self.clock.generation
                    through = all(lane.ended == generation for lane in self._lanes)
                    if through and not self.loop:
                        break
                    if not through:
                        self.clock.changed.wait(0.05)
                        continue
                self.seek(self.begin_ns)  # loop: both lanes are through the bag
        finally:
            self.finished.set()
            self.stop()
            for thread in threads:
                thread.join(timeout=5)
            self.reader.close()

    def _publish_loop(self, lane: _Lane, publish: Callable[[PlayedTopic, bytes | memoryview], None]) -> None:
        while not self._stopping:
            item = self._take(lane)
            if item is None:
                return
            generation, message = item
            if generation != self.clock.generation:
                continue  # read before a seek
            if message is _END:
                with self.clock.changed:
                    lane.ended = generation
                    self.clock.changed.notify_all()
                continue
            lane.head_ns = message.t_ns
            due = self._wait_until_due(message, generation)
            lane.head_ns = None
            if due:
                try:
                    publish(self._by_topic[message.topic], message.data)
                except Exception as err:  # whatever the middleware raises: the replay stops and says why
                    self.error = f'{message.topic}: cannot publish: {type(err).__name__}: {err}'
                    self.stop()
                    return
                self.published[message.topic] += 1

    def _wait_until_due(self, message: BagMessage, generation: int) -> bool:
        """Block until `message` is due; False when a seek (or stop) made it stale. A play_next step goes to the
        lane whose message is next in the bag."""
        clock = self.clock
        while not self._stopping:
            with clock.changed:
                if generation != clock.generation:
                    return False
                if self._steps and clock.paused and self._first_in_line(message.t_ns):
                    self._steps -= 1
                    clock.reached(message.t_ns)
                    return True
                wait = clock.due_in(message.t_ns)
                if wait is not None and wait <= 0:
                    return True
                clock.changed.wait(0.05 if wait is None else min(wait / 1e9, 0.1))
        return False

    def _first_in_line(self, t_ns: int) -> bool:
        heads = [lane.head_ns for lane in self._lanes if lane.head_ns is not None]
        waiting = [lane.items[0][1].t_ns for lane in self._lanes if lane.head_ns is None and lane.items
                   and lane.items[0][1] is not _END]
        return t_ns <= min(heads + waiting, default=t_ns)

    def _take(self, lane: _Lane) -> tuple[int, BagMessage | _End] | None:
        with lane.cond:
            while not lane.items and not self._stopping:
                lane.cond.wait(0.1)
            if self._stopping:
                return None
            generation, message = lane.items.popleft()
            if message is not _END:
                lane.size -= len(message.data)
            lane.cond.notify_all()
            return generation, message

    def _read_ahead(self) -> None:
        while not self._stopping:
            with self.clock.changed:
                generation, position = self.clock.generation, self.clock.origin_ns
            for lane in self._lanes:
                with lane.cond:
                    lane.items.clear()
                    lane.size = 0
            for message in self._messages_from(position):
                if self._stopping or generation != self.clock.generation:
                    break
                topic = self._by_topic[message.topic]
                self._put(self._large if topic.large else self._small, generation, message)
            else:
                for lane in self._lanes:
                    self._put(lane, generation, _END)
                while not self._stopping and generation == self.clock.generation:
                    with self.clock.changed:
                        self.clock.changed.wait(0.1)

    def _put(self, lane: _Lane, generation: int, message: BagMessage | _End) -> None:
        size = 0 if message is _END else len(message.data)
        with lane.cond:
            while (lane.size > _AHEAD_BYTES or len(lane.items) > _AHEAD_COUNT) and not self._stopping \
                    and generation == self.clock.generation:
                lane.cond.wait(0.1)
            lane.items.append((generation, message))
            lane.size += size
            lane.cond.notify_all()

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
