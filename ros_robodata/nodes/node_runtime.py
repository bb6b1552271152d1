"""What every ros_robodata node shares: declared parameters, running with a clean shutdown."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

import rclpy
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.duration import Duration
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions

from ros_robodata.errors import RobodataError
from ros_robodata.paths import config_path
from ros_robodata.record.host_check import PROFILE_ENV, RIG_PROFILE
from ros_robodata.record.priority import ANALYSIS_NICENESS, lower_this_thread

N = TypeVar('N', bound=Node)


def declare(node: Node, name: str, default: Any, description: str, *, read_only: bool = True) -> Any:
    """Declare a parameter with its description (shown by `ros2 param describe`) and return its value."""
    # A launch file cannot type a value: a task named 007 arrives as an integer. Text parameters
    # accept any type and are read back as text.
    text = isinstance(default, str)
    descriptor = ParameterDescriptor(description=description, read_only=read_only, dynamic_typing=text)
    value = node.declare_parameter(name, default, descriptor).value
    return str(value) if text and value is not None else value


def clock_of(node: Node) -> Callable[[], int]:
    """Receive times: the node's ROS clock under use_sim_time, else the (cheaper) system clock."""
    if node.get_parameter('use_sim_time').value:
        clock = node.get_clock()
        return lambda: clock.now().nanoseconds
    return time.time_ns


def matching_qos(node: Node, spec: Any) -> QoSProfile | None:
    """The QoS that matches a profile topic's publishers, as rosbag2 chooses it; None = no publisher yet."""
    depth = max(100, int(5 * (spec.rate_hz or 0)))  # 5 s of slack before DDS drops anything
    if spec.latched:
        return QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE,
                          durability=DurabilityPolicy.TRANSIENT_LOCAL, history=HistoryPolicy.KEEP_LAST)
    if spec.qos in ('reliable', 'best_effort'):
        reliability = ReliabilityPolicy.RELIABLE if spec.qos == 'reliable' else ReliabilityPolicy.BEST_EFFORT
        return QoSProfile(depth=depth, reliability=reliability)
    publishers = node.get_publishers_info_by_topic(spec.topic)
    if not publishers:
        return None
    reliable = all(p.qos_profile.reliability == ReliabilityPolicy.RELIABLE for p in publishers)
    durable = all(p.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL for p in publishers)
    return QoSProfile(
        depth=depth,
        reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if durable else DurabilityPolicy.VOLATILE,
    )


def message_class(msgtype: str) -> Any:
    """The generated Python class for `pkg/msg/Name` (rclpy needs it even for raw subscriptions), or None."""
    package, _, name = msgtype.split('/')
    try:
        module = __import__(f'{package}.msg', fromlist=[name])
        return getattr(module, name)
    except (ImportError, AttributeError):
        return None


class TopicDiscovery:
    """Subscribes each profile topic once a publisher of it appears, with QoS matched to it (as rosbag2 does),
    looking again every `period_s` until none is pending. `subscribe(topic, spec, qos, msgclass)` makes the
    subscription; msgclass is None when the message package is not installed here."""

    def __init__(self, node: Node, specs: dict[str, Any], subscribe: Callable[[str, Any, QoSProfile, Any], None],
                 period_s: float = 0.5) -> None:
        self.node, self.pending, self._subscribe = node, dict(specs), subscribe
        self._timer = None
        self.poll()
        if self.pending:
            self._timer = node.create_timer(period_s, self.poll)

    def poll(self) -> None:
        for topic, spec in list(self.pending.items()):
            qos = matching_qos(self.node, spec)
            if qos is None:
                continue
            del self.pending[topic]
            self._subscribe(topic, spec, qos, message_class(spec.type))
        if not self.pending and self._timer is not None:
            self._timer.cancel()


def use_rig_transport(environ: dict[str, str] | None = None) -> str | None:
    """For a node that publishes camera frames (the player, the overlay): the publisher's side decides whether a VGA
    frame (and the small messages queued behind it) gets through, and Fast DDS's default 512 KiB shared-memory
    segment cannot hold one (bench/README: record_throughput, replay_timing). So such a node takes
    config/dds/fastdds_rig.xml for its own participant, unless a profile was named already or another RMW is in
    use. Call it before rclpy.init(); returns the profile used, or None."""
    env = os.environ if environ is None else environ
    if any(env.get(name) for name in PROFILE_ENV) or \
            not env.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp').startswith('rmw_fastrtps'):
        return None
    try:
        path = str(config_path(RIG_PROFILE))
    except RobodataError:
        return None
    for name in PROFILE_ENV:
        env[name] = path
    return path


EXECUTORS = ('events', 'single', 'multi')


def make_executor(fast: bool = True) -> Any:
    """The EventsExecutor receives several times more raw messages per second than the
    SingleThreadedExecutor here (measured ~37k vs ~15k small messages/s); fall back if absent.
    ROBODATA_EXECUTOR=single|multi picks another (bench/record_throughput.py --executor compares them).

    Raises:
        RobodataError: ROBODATA_EXECUTOR names no executor.
    """
    chosen = os.environ.get('ROBODATA_EXECUTOR', 'events' if fast else 'single')
    if chosen not in EXECUTORS:
        raise RobodataError(f'ROBODATA_EXECUTOR={chosen!r}: expected one of {", ".join(EXECUTORS)}')
    if chosen == 'events':
        try:
            # Optional dependency: older ROS 2 releases have no rclpy.experimental (EventsExecutor); then the fallback.
            from rclpy.experimental import EventsExecutor

            return EventsExecutor()
        except ImportError:
            pass
    if chosen == 'multi':
        return MultiThreadedExecutor()
    return SingleThreadedExecutor()


def run_node(
    make: Callable[[], N],
    args: list[str] | None = None,
    *,
    on_shutdown: Callable[[N, str], None] | None = None,
    after_start: Callable[[N], None] | None = None,
) -> int:
    """Create and spin a node until Ctrl-C/SIGTERM, then let it close cleanly; user errors are one line."""
    # nodes[0] below is the one node, the one `make` made
    return run_nodes(
        [make], args,
        on_shutdown=None if on_shutdown is None else lambda nodes, reason: on_shutdown(cast(N, nodes[0]), reason),
        after_start=None if after_start is None else lambda nodes: after_start(cast(N, nodes[0])),
    )


class EpisodesSeen:
    """Which episode starts an analysis node has acted on. The episode events are latched: a subscription that
    matches the recorder again (discovery lost and found on a computer too busy to answer in time, or a node
    restarted mid-session) is handed the last starts and stops once more, and acting on a start twice would
    replay the pre-roll and publish the episode's events twice."""

    def __init__(self) -> None:
        self._started: set[str] = set()

    def first_start(self, episode_id: str) -> bool:
        """True the first time `episode_id` starts; False for a start heard again."""
        if episode_id in self._started:
            return False
        self._started.add(episode_id)
        return True


class StopRequest:
    """Ctrl-C and SIGTERM ask the spin loop to stop, between callbacks: a signal never lands inside one as an
    exception (rclpy's own handler would also take the context away before the episode is closed). A second
    signal while stopping raises KeyboardInterrupt, for a shutdown that hangs."""

    def __init__(self) -> None:
        self.reason = ''
        self._previous = {sig: signal.signal(sig, self._handle) for sig in (signal.SIGINT, signal.SIGTERM)}

    def _handle(self, signum: int, _frame: Any) -> None:
        if self.reason:
            raise KeyboardInterrupt
        self.reason = 'interrupted' if signum == signal.SIGINT else 'terminated'

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def quiesce(node: Node) -> None:
    """No more callbacks: the node's subscriptions, timers and services go before anything is closed."""
    for subscription in list(node.subscriptions):
        node.destroy_subscription(subscription)
    for timer in list(node.timers):
        node.destroy_timer(timer)
    for service in list(node.services):
        node.destroy_service(service)


def deliver(node: Node, timeout_s: float = 1.0) -> None:
    """Wait (at most `timeout_s`) until every reliable subscriber has what the node published last (the final
    STOP, the last statuses), since they go with the process."""
    deadline = time.monotonic() + timeout_s
    for publisher in list(node.publishers):
        if publisher.qos_profile.reliability != ReliabilityPolicy.RELIABLE:
            continue
        left = deadline - time.monotonic()
        if left <= 0:
            return
        publisher.wait_for_all_acked(Duration(nanoseconds=int(left * 1e9)))


def spin_apart(nodes: Sequence[Node], running: Callable[[], bool]) -> list[threading.Thread]:
    """Each node on an executor and a thread of its own, below the intake's priority, while `running()`: one node's
    long callback (the segmenter replaying the pre-roll at an episode's start) never holds another's (the monitor,
    which times messages when its callbacks run, would see every topic late at once)."""
    threads = []
    for node in nodes:
        executor = make_executor()
        executor.add_node(node)
        thread = threading.Thread(target=_spin_analysis, args=(executor, running), name=f'{node.get_name()}-executor',
                                  daemon=True)
        thread.start()
        threads.append(thread)
    return threads


def still_spinning(spinners: Sequence[threading.Thread], timeout_s: float) -> set[str]:
    """Wait (at most `timeout_s` in all) for the spin threads to end; the names of those still in a callback, whose
    nodes must not be destroyed under them (rclpy then crashes the process, after the episode was closed)."""
    deadline = time.monotonic() + timeout_s
    for spinner in spinners:
        spinner.join(max(0.0, deadline - time.monotonic()))
    return {spinner.name for spinner in spinners if spinner.is_alive()}


def _spin_analysis(executor: Any, running: Callable[[], bool]) -> None:
    lower_this_thread(ANALYSIS_NICENESS)
    try:
        while running() and rclpy.ok():
            executor.spin_once(timeout_sec=0.2)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass


def run_nodes(
    makers: Sequence[Callable[[], Node]],
    args: list[str] | None = None,
    *,
    on_shutdown: Callable[[list[Node], str], None] | None = None,
    after_start: Callable[[list[Node]], None] | None = None,
    main_loop: Callable[[list[Node], Any, StopRequest], None] | None = None,
    analysis: Sequence[Callable[[], Node]] = (),
) -> int:
    """Several nodes in one process and one executor (what `robodata session` runs), until Ctrl-C or SIGTERM.
    `main_loop(nodes, executor, stop)`, when given, replaces the spin loop (a node with work of its own, like the
    simulated cell): it spins the executor itself and returns once `stop.reason` is set or its work is done.
    The `analysis` nodes (a segmenter, a monitor: work that may wait) get an executor each, spun on a thread of its
    own below the intake's priority (spin_apart), so that their work at an episode's start or stop (the pre-roll
    replayed through the segmenter, a summary) never holds the first executor's callbacks (a recorder's intake and
    services), nor each other's.

    Shutdown, in order: callbacks stop (subscriptions, timers, services destroyed), `on_shutdown` closes what is
    open (a running episode becomes `interrupted` and its STOP is published), reliable publishers deliver what
    they sent, then the nodes and the context go. Exit status 0 for a stop asked by Ctrl-C or SIGTERM, 1 for a
    node that could not start (one line: what and why)."""
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    stop = StopRequest()
    nodes: list[Node] = []
    reason = 'interrupted'
    spinners: list[threading.Thread] = []
    try:
        for make in makers:
            nodes.append(make())
        behind = [make() for make in analysis]
        nodes += behind
        executor = make_executor()
        for node in nodes[:len(nodes) - len(behind)]:
            executor.add_node(node)
        spinners = spin_apart(behind, lambda: not stop.reason)
        if after_start is not None:
            after_start(nodes)
        if main_loop is not None:
            main_loop(nodes, executor, stop)
        # EventsExecutor.spin() (rclpy 7.1) never serves service requests from other processes;
        # a spin_once loop does, at the same message throughput.
        while main_loop is None and not stop.reason and rclpy.ok():
            executor.spin_once(timeout_sec=0.2)
        reason = stop.reason or 'shut down'
    except (KeyboardInterrupt, ExternalShutdownException):
        reason = stop.reason or 'interrupted'
    except RobodataError as err:  # named after the command that ran the nodes, or the node (ros2 run)
        name = Path(args[0]).name if args else (Path(sys.argv[0]).stem or 'robodata')
        print(f'{name}: error: {" ".join(str(err).split())}', file=sys.stderr)
        return 1
    finally:
        if spinners:
            stop.reason = stop.reason or reason
        busy = still_spinning(spinners, 10.0)
        # A node still in a callback on its thread is left to the process's exit: destroying it there crashes.
        idle = [node for node in nodes if f'{node.get_name()}-executor' not in busy]
        for node in idle:
            quiesce(node)
        if nodes and on_shutdown is not None:
            on_shutdown(nodes, reason)
        for node in idle:
            deliver(node)
        for node in idle:
            node.destroy_node()
        if rclpy.ok() and not busy:
            rclpy.shutdown()
        stop.restore()
    return 0
