"""Node `player`: an episode (or any bag) played back into ROS at its recorded timing, for review.

The bytes are the bag's own CDR (never decoded, so header stamps and every field are as recorded), each topic
with the QoS it was recorded with (ros_robodata.replay.replay_plan). Services, named as rosbag2's player names them:
~/pause, ~/resume, ~/toggle_paused, ~/play_next (std_srvs/Trigger), ~/seek (ros_robodata/srv/Seek, a bag time),
~/set_rate (ros_robodata/srv/SetRate); plus ~/next_event and ~/previous_event (std_srvs/Trigger) through the
episode's events.json. With `clock` > 0 it publishes /clock for nodes on use_sim_time.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from std_srvs.srv import Trigger

from ros_robodata.errors import RobodataError
from ros_robodata.nodes.keys_node import Terminal
from ros_robodata.nodes.node_runtime import StopRequest, declare, message_class, run_nodes, use_rig_transport
from ros_robodata.replay.player import Replay, ReplayOptions
from ros_robodata.replay.replay_keys import HELP, press, split_keys, status_line
from ros_robodata.replay.replay_plan import PlayedTopic
from ros_robodata.replay.source import ReplaySource, find_source
from ros_robodata.srv import Seek, SetRate

# Short GIL turns: the thread that publishes a due message gets the GIL back from the one reading ahead within half
# a millisecond instead of Python's default 5 ms (measured: p99 timing error 7.9 ms -> 2.7 ms without DDS).
_SWITCH_S = 0.0005


def _declare_list(node: Node, name: str, description: str) -> list[str]:
    descriptor = ParameterDescriptor(description=description, read_only=True)
    value = node.declare_parameter(name, Parameter.Type.STRING_ARRAY, descriptor).value
    return [str(v) for v in (value or []) if str(v)]


class PlayerNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__('player', **kwargs)
        path = declare(self, 'bag', '', 'Episode folder (DATASET/episodes/<id>) or bag to replay (required)')
        options = ReplayOptions(
            rate=float(declare(self, 'rate', 1.0, 'Speed: 1.0 is recorded time, 2.0 twice as fast')),
            start_s=float(declare(self, 'start', 0.0, 'Seconds after the bag\'s first message to start at')),
            loop=bool(declare(self, 'loop', False, 'Start over at the end, until stopped')),
            paused=bool(declare(self, 'paused', False, 'Start paused (~/resume, ~/toggle_paused or space plays)')),
            topics=_declare_list(self, 'topics', 'Only these topics (empty: every topic of the bag)'),
            exclude=_declare_list(self, 'exclude', 'Leave out these topics (names or patterns such as /camera/*)'),
            remap=_declare_list(self, 'remap', 'Publish a topic under another name: /from:=/to'),
        )
        clock_hz = float(declare(self, 'clock', 0.0, 'Publish /clock at this rate (Hz) for nodes on use_sim_time; '
                                                     '0: no /clock'))
        if not path:
            raise RobodataError('parameter `bag` is required (an episode folder or a bag)')
        self.source: ReplaySource = find_source(Path(path))
        for note in self.source.notes:
            self.get_logger().warning(note)
        self.replay = Replay(self.source.bag, options, events_ns=self.source.events_ns)
        self._played: dict[str, Any] = {}
        missing = [topic for topic in list(self.replay.topics) if not self._advertise(topic)]
        if not self._played:
            raise RobodataError(f'{self.source.bag}: no topic of this bag can be published here: '
                                + ', '.join(f'{t.topic} ({t.msgtype})' for t in missing)
                                + ' (install the packages that define these types)')
        self._serve()
        if clock_hz < 0:
            raise RobodataError(f'parameter `clock` must be >= 0 Hz, got {clock_hz:g}')
        if clock_hz > 0:
            self._clock_out = self.create_publisher(Clock, '/clock', QoSProfile(depth=10))
            self.create_timer(1.0 / clock_hz, self._tick)
        self._thread = threading.Thread(target=self._play, name='replay', daemon=True)
        span = (self.replay.end_ns - self.replay.begin_ns) / 1e9
        self.get_logger().info(f'replaying {self.source.bag}: {len(self._played)} topic(s), {span:.2f} s'
                               f'{", paused" if options.paused else ""}')

    def _advertise(self, topic: PlayedTopic) -> bool:
        """A publisher for `topic` as it was recorded; False (and the topic left out) when its type is not here."""
        cls = message_class(topic.msgtype)
        if cls is None:
            self.get_logger().warning(f'{topic.topic}: its type {topic.msgtype} is not installed here, so it is not '
                                      'replayed (install the package that defines it)')
            self.replay.leave_out(topic.topic)
            return False
        qos = QoSProfile(
            depth=topic.depth, history=HistoryPolicy.KEEP_LAST,
            reliability=ReliabilityPolicy.RELIABLE if topic.reliable else ReliabilityPolicy.BEST_EFFORT,
            durability=DurabilityPolicy.TRANSIENT_LOCAL if topic.transient_local else DurabilityPolicy.VOLATILE)
        self._played[topic.topic] = self.create_publisher(cls, topic.published_as, qos)
        return True

    def _serve(self) -> None:
        replay, clock = self.replay, self.replay.clock

        def trigger(action: Any, said: Any) -> Any:
            def serve(_request: Any, response: Any) -> Any:
                response.success = bool(action())
                response.message = said(response.success)
                return response
            return serve

        self.create_service(Trigger, '~/pause', trigger(clock.pause, lambda ok: 'paused' if ok else 'paused already'))
        self.create_service(Trigger, '~/resume',
                            trigger(clock.resume, lambda ok: 'playing' if ok else 'playing already'))
        self.create_service(Trigger, '~/toggle_paused', trigger(lambda: clock.toggle() or True,
                                                                lambda _ok: 'paused' if clock.paused else 'playing'))
        self.create_service(Trigger, '~/play_next', trigger(replay.play_next, lambda ok: 'published the next message'
                                                            if ok else 'not paused: pause first'))
        self.create_service(Trigger, '~/next_event', trigger(lambda: replay.next_event() is not None,
                                                             lambda ok: self._where() if ok else 'no event after now'))
        self.create_service(Trigger, '~/previous_event', trigger(lambda: replay.previous_event() is not None,
                                                                 lambda ok: self._where() if ok else 'no event before'))
        self.create_service(Seek, '~/seek', self._seek)
        self.create_service(SetRate, '~/set_rate', self._set_rate)

    def _where(self) -> str:
        return f'at {(self.replay.clock.now() - self.replay.begin_ns) / 1e9:.3f} s'

    def _seek(self, request: Any, response: Any) -> Any:
        target = request.time.sec * 1_000_000_000 + request.time.nanosec
        replay = self.replay
        if not replay.begin_ns <= target <= replay.end_ns:
            response.success = False
            response.message = (f'{target} ns is outside the bag ({replay.begin_ns} .. {replay.end_ns} ns, bag '
                                'receive time)')
            return response
        replay.seek(target)
        response.success, response.message = True, self._where()
        return response

    def _set_rate(self, request: Any, response: Any) -> Any:
        try:
            self.replay.clock.set_rate(request.rate)
        except RobodataError as err:
            response.success, response.message = False, str(err)
            return response
        response.success, response.message = True, f'rate {self.replay.clock.rate:g}x'
        return response

    def _tick(self) -> None:
        msg = Clock()
        msg.clock.sec, msg.clock.nanosec = divmod(self.replay.clock.now(), 1_000_000_000)
        self._clock_out.publish(msg)

    def _play(self) -> None:
        publishers = self._played

        def publish(topic: PlayedTopic, data: bytes | memoryview) -> None:
            publisher = publishers.get(topic.topic)
            if publisher is not None:
                publisher.publish(data)

        self.replay.play(publish)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self.replay.stop()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def summary(self) -> str:
        sent = sum(self.replay.published.values())
        stopped = f'; stopped: {self.replay.error}' if self.replay.error else ''
        topics = sum(1 for n in self.replay.published.values() if n)  # a topic the bag declares but never wrote
        return f'player: {sent} message(s) replayed on {topics} topic(s){stopped}'


def play(nodes: list[Node], executor: Any, stop: StopRequest, *, keys: bool = True) -> None:
    """Spin until the replay ends (or Ctrl-C, or q); on a terminal, keys control it and one line shows where."""
    player = next(n for n in nodes if isinstance(n, PlayerNode))
    player.start()
    terminal = None
    if keys and os.isatty(sys.stdin.fileno()):
        terminal = Terminal(sys.stdin, sys.stderr)
    said = ''
    try:
        if terminal is not None:
            terminal.__enter__()
            print(HELP, file=sys.stderr)
        while not stop.reason and not player.replay.finished.is_set():
            executor.spin_once(timeout_sec=0.05)
            if terminal is None:
                continue
            for key in split_keys(_typed(terminal.fd)):
                said = press(player.replay, key) or said
                if said == 'quit':
                    stop.reason = 'quit'
            terminal.show([status_line(player.replay, said)], [])
    finally:
        player.close()
        if terminal is not None:
            terminal.__exit__(None, None, None)
            print(file=sys.stderr)
        print(player.summary(), file=sys.stderr)


def _typed(fd: int) -> str:
    ready, _, _ = select.select([fd], [], [], 0)
    return os.read(fd, 64).decode('utf-8', errors='replace') if ready else ''


def run_player(parameters: list[Parameter], *, overlay: list[str] | None = None, keys: bool = True,
               program: str = 'robodata replay') -> int:
    """The player until the episode ends; the overlay, when given its command line arguments, in a process of its
    own beside it (as replay.launch.xml starts them), so annotating three cameras never delays a due message."""
    sys.setswitchinterval(_SWITCH_S)
    use_rig_transport()
    drawing = None
    if overlay is not None:
        drawing = subprocess.Popen([sys.executable, '-m', 'ros_robodata.nodes.overlay_node', *overlay[1:]],
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        return run_nodes([lambda: PlayerNode(parameter_overrides=parameters)], [program],
                         main_loop=lambda nodes, executor, stop: play(nodes, executor, stop, keys=keys))
    finally:
        if drawing is not None:
            _stop_child(drawing)


def _stop_child(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def main(args: list[str] | None = None) -> int:
    sys.setswitchinterval(_SWITCH_S)
    use_rig_transport()
    return run_nodes([lambda: PlayerNode()], args if args is not None else sys.argv,
                     main_loop=lambda nodes, executor, stop: play(nodes, executor, stop))


if __name__ == '__main__':
    sys.exit(main())
