"""A rig's session: the recorder in this process, the segmenter and the quality monitor in a child process (what
launch/session.launch.xml starts as separate processes). `robodata session` runs it.

Why two processes: the monitor decodes camera frames and both analysis nodes parse every joint state and wrench,
all under one GIL with the recorder's intake. On a busy computer a depth-10 driver's history lasts 20 ms at 500 Hz,
and in one process the recorder lost several times what it lost alone. The nodes talk over DDS as the launched
ones do; the child ends with the session, and a child that ends early is said while recording goes on."""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from rclpy.node import Node
from rclpy.parameter import Parameter

from ros_robodata.nodes.common import run_nodes
from ros_robodata.nodes.quality_monitor import QualityMonitorNode
from ros_robodata.nodes.recorder import RecorderNode
from ros_robodata.nodes.segmenter import SegmenterNode
from ros_robodata.record.priority import ANALYSIS_NICENESS, INTAKE_NICENESS, lower_this_thread


def parameters(**values: Any) -> list[Parameter]:
    """Parameter overrides for a node made in this process; None values are left to the node's default."""
    return [Parameter(name, value=value) for name, value in values.items() if value is not None]


def run_session(profile: str, dataset: str, *, task: str = '', operator: str | None = None, mode: str = 'teleop',
                delete_discarded: bool = False, use_sim_time: bool = False, min_episode_s: float | None = None,
                segment: bool = True, monitor: bool = True) -> int:
    """Spin the session's nodes until Ctrl-C/SIGTERM; a running episode is then closed as interrupted."""
    sys.setswitchinterval(0.0005)  # as the recorder alone: short GIL turns keep intake steady
    analysis = _Analysis(profile, segment=segment, monitor=monitor, use_sim_time=use_sim_time)
    makers = [lambda: RecorderNode(parameter_overrides=parameters(
        profile=profile, dataset=dataset, task=task, operator=operator, mode=mode,
        delete_discarded=delete_discarded, use_sim_time=use_sim_time,
        min_episode_s=float(min_episode_s) if min_episode_s is not None else None))]

    def started(nodes: list[Node]) -> None:
        _quiet_gc(nodes)
        analysis.start()  # once the recorder is up: a profile it refuses starts nothing
        lower_this_thread(INTAKE_NICENESS)  # the executor below the middleware's threads, which exist now

    def shutdown(nodes: list[Node], reason: str) -> None:
        _close_episode(nodes, reason)
        analysis.stop()

    try:
        return run_nodes(makers, ['robodata session'], on_shutdown=shutdown, after_start=started)
    finally:
        analysis.stop()


def run_monitor(profile: str, *, images: bool = True, use_sim_time: bool = False, segment: bool = True,
                monitor: bool = True, name: str = 'robodata monitor',
                after_start: Callable[[list[Node]], None] | None = None) -> int:
    """The segmenter and the quality monitor next to a recorder or a bag replay (monitor.launch.xml)."""
    makers = []
    if segment:
        makers.append(lambda: SegmenterNode(parameter_overrides=parameters(profile=profile, use_sim_time=use_sim_time)))
    if monitor:
        makers.append(lambda: QualityMonitorNode(parameter_overrides=parameters(profile=profile, images=images,
                                                                             use_sim_time=use_sim_time)))
    return run_nodes(makers, [name], after_start=after_start)


class _Analysis:
    """The session's segmenter and quality monitor, in a child process of their own."""

    def __init__(self, profile: str, *, segment: bool, monitor: bool, use_sim_time: bool) -> None:
        self._args = (profile, segment, monitor, use_sim_time, os.getpid())
        self._wanted = segment or monitor
        self._process: Any = None
        self._stopping = threading.Event()

    def start(self) -> None:
        if not self._wanted or self._process is not None:
            return
        context = multiprocessing.get_context('spawn')  # never fork a process that runs DDS threads
        self._process = context.Process(target=_analysis_main, args=self._args, name='robodata-session-analysis')
        self._process.start()
        threading.Thread(target=self._watch, name='session-analysis-watch', daemon=True).start()

    def _watch(self) -> None:
        self._process.join()
        if not self._stopping.is_set():
            print(f'robodata session: the segmenter and quality monitor ended (exit status {self._process.exitcode});'
                  ' recording goes on without live events and quality', file=sys.stderr)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the child as Ctrl-C would, once, and wait for it."""
        self._stopping.set()
        process, self._process = self._process, None
        if process is None:
            return
        if process.is_alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGINT)
            process.join(timeout)
        if process.is_alive():
            process.terminate()
            process.join(timeout)


def _analysis_main(profile: str, segment: bool, monitor: bool, use_sim_time: bool, parent: int) -> None:
    # A process group of its own: a Ctrl-C at the terminal reaches the session alone, which stops this child
    # after closing the episode (a second signal while stopping would be an emergency stop).
    os.setsid()

    def orphaned() -> None:  # the session died without stopping us (SIGKILL): end as on SIGTERM
        while os.getppid() == parent:
            threading.Event().wait(0.5)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=orphaned, daemon=True).start()
    sys.setswitchinterval(0.0005)
    # Live events and checks can wait, the recorder's intake cannot: the Python side goes below it once the
    # middleware's threads exist (they keep their priority, so the monitor loses no more than the recorder).
    sys.exit(run_monitor(profile, segment=segment, monitor=monitor, use_sim_time=use_sim_time,
                         name='robodata session', after_start=lambda _nodes: lower_this_thread(ANALYSIS_NICENESS)))


def _close_episode(nodes: list[Node], reason: str) -> None:
    for node in nodes:
        if isinstance(node, RecorderNode):
            episode = node.recorder.close('interrupted')
            if episode is not None:
                print(f'recorder: episode {episode.id} closed as {episode.status} ({reason})', file=sys.stderr)


def _quiet_gc(_nodes: list[Node]) -> None:
    gc.collect()
    gc.freeze()
