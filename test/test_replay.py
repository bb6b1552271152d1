"""Replay without ROS: the playback clock, which topics go out how, the keys, and the player's loop."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from ros_robodata.bag.reader import BagReader
from ros_robodata.bag.writer import BagWriter
from ros_robodata.errors import ReplayError
from ros_robodata.events.event import Event, SegmentResult
from ros_robodata.events.offline import write_events
from ros_robodata.replay.playback import EVENT_LEAD_NS, PlaybackClock, next_event, previous_event, step_rate
from ros_robodata.replay.player import Replay, ReplayOptions
from ros_robodata.replay.replay_keys import press, split_keys, status_line
from ros_robodata.replay.replay_plan import parse_remaps, plan_topics
from ros_robodata.replay.source import find_source
from test.replay_bags import CAMERA, COMMAND, DESCRIPTION, JOINTS, T0_NS, write_replay_bag


class FakeWall:
    def __init__(self) -> None:
        self.ns = 0

    def __call__(self) -> int:
        return self.ns


@pytest.fixture
def bag(tmp_path: Path) -> Path:
    path = tmp_path / 'episode_bag'
    write_replay_bag(path)
    return path


def _play_in_thread(replay: Replay) -> tuple[list[tuple[str, bytes]], threading.Thread]:
    got: list[tuple[str, bytes]] = []
    thread = threading.Thread(target=replay.play, args=(lambda topic, data: got.append((topic.topic, data)),))
    thread.start()
    return got, thread


def _wait_for(condition, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)
    assert condition()


def test_the_clock_follows_the_rate_stands_still_while_paused_and_seeks_within_the_bag() -> None:
    wall = FakeWall()
    clock = PlaybackClock(1_000, 10_000_000_000, rate=2.0, wall_ns=wall)
    wall.ns = 7_000_000
    assert clock.now() == 1_000 and clock.due_in(2_000) is None  # not started: stands still
    clock.start()
    wall.ns += 1_000_000
    assert clock.now() == 1_000 + 2_000_000
    assert clock.due_in(1_000 + 4_000_000) == 1_000_000  # 2 ms of bag time at 2x is 1 ms of wall time
    assert clock.pause() and not clock.pause()
    wall.ns += 5_000_000_000
    assert clock.now() == 1_000 + 2_000_000 and clock.due_in(5_000_000) is None
    assert clock.resume()
    wall.ns += 1_000_000
    assert clock.now() == 1_000 + 4_000_000
    clock.set_rate(0.5)
    wall.ns += 2_000_000
    assert clock.now() == 1_000 + 5_000_000
    generation = clock.generation
    assert clock.seek(-5) == 1_000 and clock.seek(99_000_000_000) == 10_000_000_000
    assert clock.generation == generation + 2
    for bad in (0.0, -1.0, float('nan'), float('inf')):
        with pytest.raises(ReplayError, match='positive number'):
            clock.set_rate(bad)


def test_rate_keys_step_through_a_ladder_and_stop_at_its_ends() -> None:
    assert step_rate(1.0, up=True) == 1.5 and step_rate(1.0, up=False) == 0.5
    assert step_rate(1.2, up=True) == 1.5 and step_rate(1.2, up=False) == 1.0
    assert step_rate(16.0, up=True) == 16.0 and step_rate(0.05, up=False) == 0.05


def test_next_and_previous_event_land_just_before_the_event() -> None:
    events = [10 * EVENT_LEAD_NS, 20 * EVENT_LEAD_NS]
    assert next_event(events, 0) == 9 * EVENT_LEAD_NS
    # once there, n goes on to the second event, p goes back to the start of the first
    assert next_event(events, 9 * EVENT_LEAD_NS) == 19 * EVENT_LEAD_NS
    assert previous_event(events, 19 * EVENT_LEAD_NS) == 9 * EVENT_LEAD_NS
    assert previous_event(events, 19 * EVENT_LEAD_NS + 10 ** 9) == 19 * EVENT_LEAD_NS
    assert next_event(events, 20 * EVENT_LEAD_NS) is None and previous_event(events, 9 * EVENT_LEAD_NS) is None


def test_topics_keep_the_qos_they_were_recorded_with(bag: Path) -> None:
    with BagReader(bag) as reader:
        planned = {t.topic: t for t in plan_topics(reader.topics)}
    assert planned[DESCRIPTION].transient_local and planned[DESCRIPTION].reliable
    assert not planned[COMMAND].reliable and not planned[COMMAND].transient_local
    assert planned[JOINTS].reliable and not planned[JOINTS].transient_local
    assert planned[CAMERA].depth < planned[JOINTS].depth  # frames are large: a short history of them


def test_topics_remaps_and_excludes_and_a_named_topic_that_is_not_there(bag: Path) -> None:
    with BagReader(bag) as reader:
        topics = reader.topics
    chosen = plan_topics(topics, include=[JOINTS, CAMERA], exclude=['/camera/*'],
                         remap=parse_remaps(['/joint_states:=/replay/joint_states']))
    assert [(t.topic, t.published_as) for t in chosen] == [(JOINTS, '/replay/joint_states')]
    with pytest.raises(ReplayError, match=r'no topic /jointstates in this bag \(it has: .*/joint_states'):
        plan_topics(topics, include=['/jointstates'])
    with pytest.raises(ReplayError, match='--remap names /nope'):
        plan_topics(topics, remap=parse_remaps(['/nope:=/x']))
    with pytest.raises(ReplayError, match='nothing left to replay'):
        plan_topics(topics, exclude=['*'])
    with pytest.raises(ReplayError, match='two topics would be published under one name'):
        plan_topics(topics, remap=parse_remaps([f'{JOINTS}:={CAMERA}']))
    for bad in ('/a', '/a:=', ':=/b', '/a b:=/c'):
        with pytest.raises(ReplayError, match='write it as /from:=/to'):
            parse_remaps([bad])


def _per_topic(messages: list[tuple[str, bytes]]) -> dict[str, list[bytes]]:
    out: dict[str, list[bytes]] = {}
    for topic, data in messages:
        out.setdefault(topic, []).append(data)
    return out


def test_a_replay_hands_on_every_message_in_its_topics_order_with_its_recorded_bytes(bag: Path) -> None:
    with BagReader(bag) as reader:
        recorded = [(m.topic, bytes(m.data)) for m in reader.messages()]
    replay = Replay(bag, ReplayOptions(rate=8.0))
    started = time.monotonic()
    got, thread = _play_in_thread(replay)
    thread.join(timeout=10)
    took = time.monotonic() - started
    # frames go out from a thread of their own (a frame being published must not hold up a joint state), so the
    # order is the bag's within each topic, as DDS keeps it anyway
    assert _per_topic(got) == _per_topic(recorded)
    assert replay.finished.is_set() and sum(replay.published.values()) == len(recorded)
    assert took >= (replay.end_ns - replay.begin_ns) / 8e9 * 0.9  # it kept to the recorded timing, 8x faster


def test_paused_start_play_next_one_message_at_a_time_then_seek_with_the_latched_topic_again(bag: Path) -> None:
    replay = Replay(bag, ReplayOptions(paused=True, rate=4.0))
    got, thread = _play_in_thread(replay)
    try:
        time.sleep(0.2)
        assert got == []  # paused: nothing goes out
        for n in range(1, 4):
            assert replay.play_next()
            _wait_for(lambda n=n: len(got) == n)
        with BagReader(bag) as reader:
            first = [(m.topic, bytes(m.data)) for m, _ in zip(reader.messages(), range(3), strict=False)]
        assert got == first and got[0][0] == DESCRIPTION
        replay.seek(T0_NS + 1_500_000_000)
        assert replay.play_next() and replay.play_next()
        _wait_for(lambda: len(got) == 5)
        assert got[3][0] == DESCRIPTION  # the robot model again, for a viewer that joins here
        with BagReader(bag) as reader:
            after = [m for m in reader.messages(start_ns=T0_NS + 1_500_000_000)]
        assert got[4] == (after[0].topic, bytes(after[0].data))
        assert replay.clock.resume()
        thread.join(timeout=10)
        assert not thread.is_alive()
        assert not replay.play_next()  # ended: nothing to step to
    finally:
        replay.stop()
        thread.join(timeout=5)


def test_loop_starts_over_until_stopped(bag: Path) -> None:
    replay = Replay(bag, ReplayOptions(rate=16.0, loop=True, topics=[COMMAND]))
    got, thread = _play_in_thread(replay)
    _wait_for(lambda: len(got) > 45, timeout=10)  # 20 commands a pass
    replay.stop()
    thread.join(timeout=5)
    assert not thread.is_alive()


def test_start_and_bags_that_cannot_be_replayed(tmp_path: Path, bag: Path) -> None:
    replay = Replay(bag, ReplayOptions(start_s=1.0))
    assert replay.clock.now() == replay.begin_ns + 1_000_000_000
    replay.reader.close()
    with pytest.raises(ReplayError, match=r'start 5 s is outside the bag, which lasts 2\.00 s'):
        Replay(bag, ReplayOptions(start_s=5.0))
    with pytest.raises(ReplayError, match=r'no topic /camera/scene/image_raw in this bag \(it has: '):
        Replay(bag, ReplayOptions(topics=[CAMERA, 'camera/scene/image_raw']))
    empty = tmp_path / 'empty'
    with BagWriter(empty) as writer:
        writer.add_topic(JOINTS, 'sensor_msgs/msg/JointState')
    with pytest.raises(ReplayError, match='the bag holds no message to replay'):
        Replay(empty)


def test_keys_drive_the_replay(bag: Path) -> None:
    assert split_keys(' \x1b[C\x1b[Dn+\x1b[15~q') == [' ', 'right', 'left', 'n', '+', 'q']
    replay = Replay(bag, ReplayOptions(paused=True), events_ns=[T0_NS + 1_500_000_000])
    try:
        assert press(replay, 'right') == 'at 2.00 s'  # held at the bag's end
        assert press(replay, 'left') == 'at 0.00 s'
        assert press(replay, 'n') == 'event lead-in at 0.50 s'
        assert press(replay, 'n') == 'no event after this point'
        assert press(replay, '+') == 'rate 1.5x' and replay.clock.rate == 1.5
        assert press(replay, ' ') == 'playing' and not replay.clock.paused
        assert press(replay, '.') == 'press space to pause first'
        assert press(replay, 'q') == 'quit' and press(replay, 'x') is None
        assert 'rate 1.5x' in status_line(replay)
    finally:
        replay.reader.close()
    quiet = Replay(bag)
    assert press(quiet, 'n') == 'this episode has no events (run `robodata segment` on it)'
    quiet.reader.close()


def test_an_episode_folder_brings_its_events_and_says_when_it_has_none(tmp_path: Path, bag: Path) -> None:
    assert find_source(bag).episode_dir is None and find_source(bag).events_ns == ()
    episode = tmp_path / 'episodes' / 'ep1'
    (episode / 'bag').mkdir(parents=True)
    for file in bag.iterdir():
        (episode / 'bag' / file.name).write_bytes(file.read_bytes())
    (episode / 'episode.yaml').write_text('id: ep1\n')
    source = find_source(episode)
    assert source.bag == episode / 'bag' and 'no events.json' in source.notes[0]
    result = SegmentResult(events=[Event('grasp', T0_NS + 900_000_000, 0.9), Event('release', T0_NS + 400_000_000,
                                                                                  0.8)])
    write_events(episode / 'events.json', result)
    assert find_source(episode / 'bag').events_ns == (T0_NS + 400_000_000, T0_NS + 900_000_000)
    (episode / 'events.json').write_text('{"events": 3}')
    assert 'replaying without events' in find_source(episode).notes[0]
    with pytest.raises(Exception, match='no such episode or bag'):
        find_source(tmp_path / 'nothing')


def test_a_message_the_middleware_refuses_stops_the_replay_and_says_why(bag: Path) -> None:
    replay = Replay(bag, ReplayOptions(rate=8.0))

    def publish(topic, data) -> None:
        if topic.topic == CAMERA:
            raise RuntimeError('failed to publish: context invalid')

    thread = threading.Thread(target=replay.play, args=(publish,))
    thread.start()
    thread.join(timeout=10)
    assert not thread.is_alive() and replay.finished.is_set()
    assert replay.error == f'{CAMERA}: cannot publish: RuntimeError: failed to publish: context invalid'


def test_a_topic_left_out_is_neither_read_nor_counted_and_the_rest_plays(bag: Path) -> None:
    """What the player node does with a topic whose type is not installed here."""
    replay = Replay(bag, ReplayOptions(rate=1000.0))
    replay.leave_out(CAMERA)
    got, thread = _play_in_thread(replay)
    thread.join(10)
    assert not thread.is_alive() and replay.error == ''
    with BagReader(bag) as reader:
        expected = [m.topic for m in reader.messages() if m.topic != CAMERA]
    assert sorted(t for t, _ in got) == sorted(expected) and CAMERA not in replay.published
    assert sum(replay.published.values()) == len(expected)
