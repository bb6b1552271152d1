"""Node `robodata_keys`: the operator's keyboard for the recorder, in any terminal (SSH, no display).

Thin on purpose: key presses become service calls on the recorder; EpisodeEvent, /diagnostics
and /robodata/quality messages become plain data for ros_robodata.record.keys_screen.KeysScreen,
which decides what a key means and what the screen says. ROS spins on a background thread and
every service call is asynchronous, so a slow or absent recorder never freezes the keyboard.

Keys come from a terminal in cbreak mode (one key at a time, no echo; Ctrl-C still interrupts)
and the terminal is restored however the program ends. From a pipe, keys are read as they come
and end of input quits, so scripts and tests can drive it.

Parameter: `recorder` (default /recorder), the recorder node's name; its services are
<recorder>/start_episode, /stop_episode, /discard_episode and /set_outcome.

With a session capturing to a protocol, the take to record next arrives on /robodata/take (JSON from the
shot_list node) and n (skip) and 1-9 (change a condition) go back to it on /robodata/take_command.
"""

from __future__ import annotations

import codecs
import json
import os
import select
import shutil
import signal
import sys
import termios
import threading
import time
import tty
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType, TracebackType
from typing import Any, TextIO

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.exceptions import InvalidNodeNameException, InvalidServiceNameException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from rclpy.task import Future
from std_msgs.msg import String
from std_srvs.srv import Trigger

from ros_robodata.errors import RobodataError
from ros_robodata.msg import EpisodeEvent, QualityStatus
from ros_robodata.nodes.node_runtime import declare
from ros_robodata.record.keys_screen import KeysScreen, Request, fit, redraw
from ros_robodata.srv import SetOutcome, StartEpisode

EVENTS_TOPIC = '/robodata/episode_events'
QUALITY_TOPIC = '/robodata/quality'
TAKE_TOPIC = '/robodata/take'  # the shot list's take (std_msgs/String, JSON), latched
TAKE_COMMAND_TOPIC = '/robodata/take_command'  # 'skip', 'cycle FACTOR' (std_msgs/String)
_EVENT_KINDS = {EpisodeEvent.START: 'start', EpisodeEvent.STOP: 'stop', EpisodeEvent.OUTCOME: 'outcome',
                EpisodeEvent.DISCARD: 'discard'}
ANSWER_TIMEOUT_S = 10.0  # a call the recorder has not answered by then is reported and forgotten
QUIT_WAIT_S = 5.0  # on quit, how long to wait for calls already sent (a stop must not be lost)
_FRAME_S = 0.1
_PLAUSIBLE_AGE_S = 86400.0  # an event stamp older than this is simulated time, not the wall clock


@dataclass
class _Call:
    request: Request
    future: Future
    sent_at: float


class KeysNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__('robodata_keys', **kwargs)
        recorder = declare(self, 'recorder', '/recorder',
                           "The recorder node's name; its services are <recorder>/start_episode and so on")
        recorder = recorder.rstrip('/')
        if not recorder:
            raise RobodataError('parameter `recorder` must name the recorder node, e.g. /recorder')
        self.lock = threading.Lock()
        self.screen = KeysScreen(recorder)
        try:
            self._recorder_clients = {
                'start': self.create_client(StartEpisode, f'{recorder}/start_episode'),
                'stop': self.create_client(Trigger, f'{recorder}/stop_episode'),
                'discard': self.create_client(Trigger, f'{recorder}/discard_episode'),
                'outcome': self.create_client(SetOutcome, f'{recorder}/set_outcome'),
            }
        except (InvalidServiceNameException, InvalidNodeNameException) as err:
            raise RobodataError(f'parameter `recorder`: {recorder!r} is not a valid node name ({err})') from None
        self._calls: list[_Call] = []
        self.spin_error: BaseException | None = None
        latched = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.create_subscription(EpisodeEvent, EVENTS_TOPIC, self._on_event, latched)
        # Best effort matches any publisher's reliability; these are refreshed continuously.
        any_publisher = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)
        self.create_subscription(DiagnosticArray, '/diagnostics', self._on_diagnostics, any_publisher)
        self.create_subscription(QualityStatus, QUALITY_TOPIC, self._on_quality, any_publisher)
        self.create_subscription(String, TAKE_TOPIC, self._on_take, latched)
        self._take_commands = self.create_publisher(
            String, TAKE_COMMAND_TOPIC, QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
        self.create_timer(0.5, self._check_ready)

    # -- ROS side (executor thread) ---------------------------------------------------------------

    def _check_ready(self) -> None:
        ready = all(client.service_is_ready() for client in self._recorder_clients.values())
        with self.lock:
            self.screen.set_ready(ready)

    def _on_event(self, msg: EpisodeEvent) -> None:
        kind = _EVENT_KINDS.get(msg.event)
        if kind is None:
            return
        age = (time.time_ns() - (msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec)) / 1e9
        with self.lock:
            self.screen.on_event(kind, msg.episode_id, task=msg.task, status=msg.status, outcome=msg.outcome,
                                 age_s=age if -5.0 < age < _PLAUSIBLE_AGE_S else None)

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        statuses = [(s.name, _level(s.level), s.message) for s in msg.status]
        with self.lock:
            self.screen.on_diagnostics(statuses)

    def _on_quality(self, msg: QualityStatus) -> None:
        with self.lock:
            self.screen.on_quality(msg.check, msg.topic, _level(msg.level), msg.message, msg.episode_id)

    def _on_take(self, msg: String) -> None:
        try:
            data = json.loads(msg.data)
            line, factors = str(data['line']), [str(f) for f in data['factors']]
            recording, message = bool(data.get('recording')), str(data.get('message') or '')
        except (ValueError, KeyError, TypeError):
            return  # not the shot list's: nothing to show
        with self.lock:
            self.screen.on_take(line, factors, recording, message)

    def _answered(self, call: _Call, future: Future) -> None:
        if future.cancelled():
            return
        response = future.result()
        service = call.request.service
        with self.lock:
            if service in ('stop', 'discard'):
                self.screen.on_reply(service, response.success, response.message)
            else:
                self.screen.on_reply(service, response.success, response.message, response.episode_id,
                                     call.request.outcome)

    # -- keyboard side (main thread) --------------------------------------------------------------

    def press(self, key: str) -> bool:
        """Act on one key; False once the operator asked to quit."""
        with self.lock:
            request = self.screen.press(key)
        if request is None:
            return True
        if request.service == 'quit':
            return False
        if request.service == 'take':
            self._take_commands.publish(String(data=request.command))
            return True
        if request.service == 'start':
            message: Any = StartEpisode.Request()
        elif request.service == 'outcome':
            message = SetOutcome.Request(outcome=request.outcome)
        else:
            message = Trigger.Request()
        call = _Call(request, self._recorder_clients[request.service].call_async(message), time.monotonic())
        call.future.add_done_callback(lambda future, call=call: self._answered(call, future))
        self._calls.append(call)
        return True

    def forget_answered(self) -> int:
        """Drop answered calls, give up on those past ANSWER_TIMEOUT_S; the number still waiting."""
        now = time.monotonic()
        for call in self._calls:
            if not call.future.done() and now - call.sent_at > ANSWER_TIMEOUT_S:
                call.future.cancel()
                if call.future.cancelled():  # the answer did not slip in meanwhile
                    with self.lock:
                        self.screen.on_no_answer(call.request.service, now - call.sent_at)
        # rclpy: a cancelled future is not done()
        self._calls = [call for call in self._calls if not (call.future.done() or call.future.cancelled())]
        return len(self._calls)

    def render(self, ticking: bool = True) -> list[str]:
        with self.lock:
            return self.screen.render(ticking)


def _level(level: Any) -> int:
    """diagnostic_msgs levels arrive as one byte (b'\\x01'), QualityStatus levels as int."""
    return level[0] if isinstance(level, (bytes, bytearray)) else int(level)


class Terminal:
    """Keys one at a time from stdin, and a screen redrawn in place on a terminal (or printed
    whenever it changes into a pipe or log). Restores the terminal mode on every way out."""

    def __init__(self, stdin: TextIO, stdout: TextIO) -> None:
        self.fd = stdin.fileno()
        self.keyboard = os.isatty(self.fd)
        self.out = stdout
        self.screen = stdout.isatty()
        self._saved: list[Any] | None = None
        self._decoder = codecs.getincrementaldecoder('utf-8')(errors='replace')
        self._drawn = 0
        self._last_frame: list[str] | None = None

    def __enter__(self) -> Terminal:
        if self.keyboard:
            self._saved = termios.tcgetattr(self.fd)
            tty.setcbreak(self.fd)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._saved is not None:
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)
            self._saved = None

    def read_keys(self, timeout: float) -> list[str] | None:
        """Keys typed within `timeout` s ([] if none); None at end of input."""
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return []
        data = os.read(self.fd, 256)
        if not data:
            return None
        text = self._decoder.decode(data)
        if text.startswith('\x1b'):  # arrow and function keys: escape sequences, not our keys
            return []
        return list(text)

    def show(self, lines: list[str], unticked: list[str]) -> None:
        if self.screen:
            width = shutil.get_terminal_size((80, 24)).columns
            lines = fit(lines, width)
            self.out.write(redraw(lines, self._drawn, width))
            self._drawn = len(lines)
        elif unticked != self._last_frame:
            self.out.write('\n'.join(lines) + '\n\n')
        self._last_frame = unticked
        self.out.flush()


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def run(node: KeysNode, terminal: Terminal, spinning: Callable[[], bool] = lambda: True) -> int:
    """The keyboard loop: until q, end of input or Ctrl-C; then wait briefly for calls in flight."""
    quit_at: float | None = None
    status = 0
    while True:
        if not spinning():
            raise RobodataError(f'ROS stopped serving this node: {node.spin_error or "executor ended"}')
        waiting = node.forget_answered()
        terminal.show(node.render(), node.render(ticking=False))
        if quit_at is not None and (waiting == 0 or time.monotonic() - quit_at > QUIT_WAIT_S):
            return status
        try:
            keys = terminal.read_keys(_FRAME_S)
        except KeyboardInterrupt:
            if quit_at is not None:  # a second Ctrl-C: stop waiting for answers
                return 130
            keys, status = ['q'], 130
        if quit_at is not None:
            continue
        if keys is None:
            keys = ['q']
        for key in keys:
            if not node.press(key):
                quit_at = time.monotonic()
                break


def _farewell(node: KeysNode) -> str:
    with node.lock:
        live = node.screen.episode
    if live is None:
        return ''
    return f'episode {live.episode_id} is still recording: the recorder keeps it until it is stopped\n'


def main(args: list[str] | None = None) -> int:
    """`ros2 run ros_robodata keys`: a user error is one line and exit status 1."""
    try:
        return keys(args)
    except RobodataError as err:
        print(f'robodata_keys: error: {" ".join(str(err).split())}', file=sys.stderr)
        return 1


def keys(args: list[str] | None = None) -> int:
    """Run the keyboard until q, end of input or a signal; RobodataError for a user error (the
    `robodata keys` command reports it in its own words)."""
    # Our own signal handling: Ctrl-C/SIGTERM/SIGHUP (the SSH session closing) must end the loop
    # through its `finally`, which gives the terminal back.
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_interrupt)
    node: KeysNode | None = None
    executor = SingleThreadedExecutor()
    spinner: threading.Thread | None = None
    try:
        node = KeysNode()
        executor.add_node(node)
        spinner = threading.Thread(target=_spin, args=(executor, node), name='ros-spin', daemon=True)
        spinner.start()
        with Terminal(sys.stdin, sys.stdout) as terminal:
            status = run(node, terminal, spinner.is_alive)
        sys.stdout.write(_farewell(node))
        return status
    except KeyboardInterrupt:
        return 130
    finally:
        executor.shutdown(timeout_sec=1.0)
        if spinner is not None:
            spinner.join(1.0)
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()


def _spin(executor: SingleThreadedExecutor, node: KeysNode) -> None:
    """The executor thread; an error here is kept for the keyboard loop to report in one line."""
    try:
        executor.spin()
    except ExternalShutdownException:
        pass
    except Exception as err:
        node.spin_error = err


if __name__ == '__main__':
    sys.exit(main())
