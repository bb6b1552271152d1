"""The player node over real DDS: what a bare subscriber gets, at which pace, and the rosbag2-style services."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from ros_robodata.bag.reader import BagReader
from test.replay_bags import CAMERA, COMMAND, DESCRIPTION, JOINTS, T0_NS, write_replay_bag
from test.ros_rig import client, new_domain, ros_env, stop_process


def _start_player(domain: int, bag: Path, log: Path, *params: str) -> subprocess.Popen:
    args = [sys.executable, '-m', 'ros_robodata.nodes.player_node', '--ros-args', '-p', f'bag:={bag}', *params]
    return subprocess.Popen(args, env=ros_env(domain), stdin=subprocess.DEVNULL, stdout=log.open('w'),
                            stderr=subprocess.STDOUT)


class Heard:
    """Every message of the bag's topics as a bare raw subscriber gets it, with its arrival time."""

    def __init__(self, c: Any) -> None:
        from geometry_msgs.msg import TwistStamped
        from sensor_msgs.msg import Image, JointState
        from std_msgs.msg import String

        self.got: dict[str, list[tuple[bytes, float]]] = {JOINTS: [], CAMERA: [], COMMAND: [], DESCRIPTION: []}
        deep = QoSProfile(depth=5000, reliability=ReliabilityPolicy.RELIABLE)
        self.subscriptions = [
            c.node.create_subscription(JointState, JOINTS, self._into(JOINTS), deep, raw=True),
            c.node.create_subscription(Image, CAMERA, self._into(CAMERA), deep, raw=True),
            c.node.create_subscription(TwistStamped, COMMAND, self._into(COMMAND),
                                       QoSProfile(depth=5000, reliability=ReliabilityPolicy.BEST_EFFORT), raw=True),
            c.node.create_subscription(String, DESCRIPTION, self._into(DESCRIPTION),
                                       QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                                                  durability=DurabilityPolicy.TRANSIENT_LOCAL), raw=True),
        ]

    def _into(self, topic: str) -> Any:
        return lambda data: self.got[topic].append((bytes(data), time.monotonic()))

    def wait_matched(self, c: Any, player: subprocess.Popen, log: Path) -> None:
        deadline = time.monotonic() + 30
        while not all(s.get_publisher_count() >= 1 for s in self.subscriptions):
            assert player.poll() is None, log.read_text()
            assert time.monotonic() < deadline, 'the player never advertised its topics: ' + log.read_text()
            c.spin_for(0.1)
        c.spin_for(0.5)  # the player's writers see our readers too

    def count(self) -> int:
        return sum(len(v) for v in self.got.values())


def _unpadded(data: bytes) -> bytes:
    """The payload without the 0-3 zero bytes DDS pads a serialized message to 4-byte alignment with (a bag written
    by hand has none; one recorded from DDS has them already)."""
    return data.rstrip(b'\x00') if data.endswith(b'\x00') else data


def _recorded(bag: Path) -> dict[str, list[bytes]]:
    out: dict[str, list[bytes]] = {}
    with BagReader(bag) as reader:
        for message in reader.messages():
            out.setdefault(message.topic, []).append(bytes(message.data))
    return out


def _replay_once(tmp_path: Path, bag: Path, rate: float) -> tuple[dict[str, list[tuple[bytes, float]]], str]:
    domain, log = new_domain(), tmp_path / f'player-{rate:g}.log'
    player = _start_player(domain, bag, log, '-p', 'paused:=true', '-p', f'rate:={rate}')
    try:
        with client(domain) as c:
            heard = Heard(c)
            heard.wait_matched(c, player, log)
            from std_srvs.srv import Trigger

            assert c.call(Trigger, '/player/resume').success
            deadline = time.monotonic() + 30
            while player.poll() is None and time.monotonic() < deadline:
                c.spin_for(0.1)
            c.spin_for(0.5)
            assert player.poll() == 0, log.read_text()
            return heard.got, log.read_text()
    finally:
        stop_process(player)


def test_a_replayed_bag_reaches_a_bare_subscriber_whole_in_order_as_recorded_and_rate_2_halves_the_time(
        tmp_path: Path) -> None:
    bag = tmp_path / 'bag'
    write_replay_bag(bag, seconds=2.0)
    recorded = _recorded(bag)
    spans = {}
    for rate in (1.0, 2.0):
        got, log = _replay_once(tmp_path, bag, rate)
        for topic, messages in recorded.items():
            # the very bytes, so header stamps and every field are as recorded; in order, none lost or doubled
            assert [_unpadded(d) for d, _ in got[topic]] == [_unpadded(d) for d in messages], f'{topic}: {log}'
        arrivals = [at for _, at in got[JOINTS]]
        spans[rate] = arrivals[-1] - arrivals[0]
        assert 'player: 481 message(s) replayed on 4 topic(s)' in log
    recorded_span = 399 / 200.0
    assert 0.85 < spans[1.0] / recorded_span < 1.25, spans
    assert 0.4 < spans[2.0] / spans[1.0] < 0.6, spans


def test_pause_seek_play_next_rate_and_clock_through_the_services(tmp_path: Path) -> None:
    from rosgraph_msgs.msg import Clock
    from std_srvs.srv import Trigger

    from ros_robodata.srv import Seek, SetRate

    bag = tmp_path / 'bag'
    write_replay_bag(bag, seconds=2.0)
    recorded = _recorded(bag)
    domain, log = new_domain(), tmp_path / 'player.log'
    player = _start_player(domain, bag, log, '-p', 'paused:=true', '-p', 'clock:=50.0')
    try:
        with client(domain) as c:
            heard = Heard(c)
            clock: list[int] = []
            c.node.create_subscription(Clock, '/clock', lambda m: clock.append(m.clock.sec * 10**9 + m.clock.nanosec),
                                       10)
            heard.wait_matched(c, player, log)
            c.spin_for(0.3)
            assert heard.count() == 0  # paused
            assert clock and set(clock) == {T0_NS}  # /clock stands at the start while paused
            assert c.call(Trigger, '/player/pause').message == 'paused already'
            for _ in range(3):
                assert c.call(Trigger, '/player/play_next').success
            c.spin_for(0.3)
            assert heard.count() == 3 and [_unpadded(d) for d, _ in heard.got[JOINTS]] == [
                _unpadded(recorded[JOINTS][0])]

            request = Seek.Request()
            request.time.sec, request.time.nanosec = divmod(T0_NS + 1_500_000_000, 10**9)
            answer = c.call(Seek, '/player/seek', request)
            assert answer.success and answer.message == 'at 1.500 s', answer.message
            request.time.sec += 60
            assert not c.call(Seek, '/player/seek', request).success
            bad_rate = SetRate.Request(rate=-1.0)
            assert not c.call(SetRate, '/player/set_rate', bad_rate).success
            assert c.call(SetRate, '/player/set_rate', SetRate.Request(rate=4.0)).success
            assert c.call(Trigger, '/player/toggle_paused').message == 'playing'
            deadline = time.monotonic() + 20
            while player.poll() is None and time.monotonic() < deadline:
                c.spin_for(0.1)
            c.spin_for(0.3)
            assert player.poll() == 0, log.read_text()
    finally:
        stop_process(player)
    joints = [_unpadded(d) for d, _ in heard.got[JOINTS]]
    with BagReader(bag) as reader:
        after = [_unpadded(bytes(m.data)) for m in reader.messages([JOINTS], start_ns=T0_NS + 1_500_000_000)]
    assert joints == [_unpadded(recorded[JOINTS][0]), *after]  # the first by play_next, then from the seek on
    assert len(heard.got[DESCRIPTION]) >= 1  # latched: published again where the seek landed
    assert max(clock) >= T0_NS + 1_900_000_000 and clock == sorted(clock)


def test_robodata_replay_plays_an_episode_with_its_overlay_and_stops_at_its_end(tmp_path: Path) -> None:
    """As a reviewer runs it: `robodata replay EPISODE`, the dataset's own profile for the overlay, RViz's topics
    filled: the annotated cameras and the markers; the command ends with the episode."""
    from sensor_msgs.msg import Image
    from visualization_msgs.msg import MarkerArray

    from test.test_overlay import build_episode

    built = build_episode(tmp_path)
    domain = new_domain()
    log = tmp_path / 'replay.log'
    replay = subprocess.Popen([sys.executable, '-m', 'ros_robodata.cli.main', 'replay', str(built['episode_dir']),
                               '--rate', '2', '--paused'], env=ros_env(domain), stdin=subprocess.DEVNULL,
                              stdout=log.open('w'), stderr=subprocess.STDOUT)
    try:
        with client(domain) as c:
            from std_srvs.srv import Trigger

            images: list[Any] = []
            markers: list[Any] = []
            images_sub = c.node.create_subscription(Image, '/robodata/overlay/wrist/image', images.append, 50)
            markers_sub = c.node.create_subscription(MarkerArray, '/robodata/overlay/markers', markers.append, 50)
            deadline = time.monotonic() + 60
            while not (images_sub.get_publisher_count() and markers_sub.get_publisher_count()):
                assert replay.poll() is None, log.read_text()
                assert time.monotonic() < deadline, 'the overlay never came up: ' + log.read_text()
                c.spin_for(0.1)
            c.spin_for(1.0)  # the overlay subscribes to the player's cameras once it sees them
            assert c.call(Trigger, '/player/resume').success
            while replay.poll() is None and time.monotonic() < deadline:
                c.spin_for(0.1)
            assert replay.poll() == 0, log.read_text()
    finally:
        stop_process(replay)
    assert 'player: ' in log.read_text() and 'message(s) replayed' in log.read_text()
    assert len(images) > 10 and images[0].encoding == 'bgr8'
    texts = [m.text for array in markers for m in array.markers]
    assert any('success' in t for t in texts), texts[-10:]  # the reviewed verdict, from annotations.json
    # Each event's headline went out within 50 ms of replay time of the event, through the player's real DDS: the
    # overlay's time is the replayed joint states' stamps. (An event that comes within 100 ms after another one, or
    # after one of its own kind, may share the headline, and is left out.)
    events = json.loads((built['episode_dir'] / 'events.json').read_text())['events']
    headlines = sorted((m.header.stamp.sec * 10**9 + m.header.stamp.nanosec, m.text) for array in markers
                       for m in array.markers if m.ns == 'robodata_overlay/event' and m.text)
    checked = 0
    for n, event in enumerate(events):
        near = [e for e in events[:n] if event['t_ns'] - e['t_ns'] < 100_000_000]
        if near or (n and events[n - 1]['kind'] == event['kind']):
            continue
        shown = next(stamp for stamp, text in headlines if stamp >= event['t_ns'] and text.startswith(event['kind']))
        assert shown - event['t_ns'] <= 50_000_000, (event, shown)
        checked += 1
    assert checked >= 2, events


def test_robodata_replay_names_what_it_cannot_play(tmp_path: Path, capsys) -> None:
    from ros_robodata.cli.main import main
    from ros_robodata.dataset import Dataset

    dataset = Dataset.create(tmp_path / 'ds')
    assert main(['replay', str(dataset.root)]) == 1
    assert 'a dataset: name the episode to replay with --episode ID (it has: none)' in capsys.readouterr().err
    assert main(['replay', str(dataset.root), '--episode', 'nope']) == 1
    assert 'no episode nope' in capsys.readouterr().err
    bag = tmp_path / 'bag'
    write_replay_bag(bag, seconds=0.2)
    assert main(['replay', str(bag), '--episode', 'x']) == 1
    assert '--episode is for a dataset, and this is not one' in capsys.readouterr().err
    assert main(['replay', str(tmp_path / 'missing')]) == 1
    assert 'no such episode or bag' in capsys.readouterr().err
    assert main(['replay', str(bag), '--topics', '/jointstates', '--no-overlay']) == 1
    err = capsys.readouterr().err
    assert 'no topic /jointstates in this bag' in err and len(err.strip().splitlines()) == 1


def test_nodes_that_publish_frames_take_the_rig_dds_profile_unless_one_is_named() -> None:
    from ros_robodata.nodes.node_runtime import use_rig_transport

    env: dict[str, str] = {}
    path = use_rig_transport(env)
    assert path is not None and path.endswith('config/dds/fastdds_rig.xml') and Path(path).is_file()
    assert env == {'FASTRTPS_DEFAULT_PROFILES_FILE': path, 'FASTDDS_DEFAULT_PROFILES_FILE': path}
    own = {'FASTRTPS_DEFAULT_PROFILES_FILE': '/etc/my_dds.xml'}
    assert use_rig_transport(own) is None and own == {'FASTRTPS_DEFAULT_PROFILES_FILE': '/etc/my_dds.xml'}
    cyclone = {'RMW_IMPLEMENTATION': 'rmw_cyclonedds_cpp'}
    assert use_rig_transport(cyclone) is None and 'FASTRTPS_DEFAULT_PROFILES_FILE' not in cyclone


def test_bags_ros2_bag_record_wrote_replay_and_types_not_installed_here_are_named(tmp_path: Path) -> None:
    """Bags from rosbag2 itself: a talker recorded by `ros2 bag record` (sqlite3, metadata version 4) reaches a
    bare subscriber with its recorded bytes; a bag of test_msgs types that only its schemas define (not installed
    here) is named topic by topic and the player exits with one line (it used to die in its publishing thread
    and hang)."""
    import shutil

    from std_msgs.msg import String

    from test.real_data import real_data

    talker = tmp_path / 'talker'
    shutil.copytree(real_data('rosbag2/sqlite3/talker'), talker)
    recorded = _recorded(talker)
    domain, log = new_domain(), tmp_path / 'talker.log'
    player = _start_player(domain, talker, log, '-p', 'paused:=true')
    try:
        with client(domain) as c:
            got: list[bytes] = []
            sub = c.node.create_subscription(String, '/topic', lambda data: got.append(bytes(data)),
                                             QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE), raw=True)
            deadline = time.monotonic() + 30
            while sub.get_publisher_count() < 1:
                assert player.poll() is None and time.monotonic() < deadline, log.read_text()
                c.spin_for(0.1)
            c.spin_for(0.5)
            from std_srvs.srv import Trigger

            assert c.call(Trigger, '/player/resume').success
            while player.poll() is None and time.monotonic() < deadline + 30:
                c.spin_for(0.1)
            c.spin_for(0.3)
    finally:
        stop_process(player)
    assert player.returncode == 0, log.read_text()
    assert [_unpadded(d) for d in got] == [_unpadded(d) for d in recorded['/topic']] and len(got) == 10
    assert 'player: 20 message(s) replayed on 2 topic(s)' in log.read_text()

    custom = tmp_path / 'convert_b'
    shutil.copytree(real_data('rosbag2/mcap/convert_b'), custom)
    domain, log = new_domain(), tmp_path / 'custom.log'
    player = _start_player(domain, custom, log)
    try:
        player.wait(30)
    finally:
        stop_process(player)
    text = log.read_text()
    assert player.returncode == 1, text
    for topic, msgtype in (('a_empty', 'test_msgs/msg/Empty'), ('c_strings', 'test_msgs/msg/Strings')):
        assert f'{topic}: its type {msgtype} is not installed here' in text, text
    assert ('no topic of this bag can be published here: a_empty (test_msgs/msg/Empty), c_strings '
            '(test_msgs/msg/Strings)') in text and 'Traceback' not in text, text
