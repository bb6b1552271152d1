"""A rig's session in one process: the recorder, the segmenter, the quality monitor and, capturing to a protocol,
the shot list (what launch/session.launch.xml starts as separate processes). `robodata session` runs it."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from typing import Any

from rclpy.node import Node
from rclpy.parameter import Parameter

from ros_robodata.nodes.node_runtime import run_nodes
from ros_robodata.nodes.quality_monitor_node import QualityMonitorNode
from ros_robodata.nodes.recorder_node import RecorderNode
from ros_robodata.nodes.segmenter_node import SegmenterNode
from ros_robodata.nodes.shot_list_node import ShotListNode
from ros_robodata.record.priority import INTAKE_NICENESS, lower_this_thread


def parameters(**values: Any) -> list[Parameter]:
    """Parameter overrides for a node made in this process; None values are left to the node's default."""
    return [Parameter(name, value=value) for name, value in values.items() if value is not None]


def run_session(profile: str, dataset: str, *, task: str = '', operator: str | None = None, mode: str = 'teleop',
                delete_discarded: bool = False, use_sim_time: bool = False, min_episode_s: float | None = None,
                segment: bool = True, monitor: bool = True, capture: dict[str, str] | None = None) -> int:
    """Spin the session's nodes until Ctrl-C/SIGTERM; a running episode is then closed as interrupted. `capture`:
    the shot list node's parameters (protocol, participant, illuminance_topic, range_topic, camera_topic,
    camera_info_topic), None for none."""
    sys.setswitchinterval(0.0005)  # as the recorder alone: short GIL turns keep intake steady
    makers = [lambda: RecorderNode(parameter_overrides=parameters(
        profile=profile, dataset=dataset, task=task, operator=operator, mode=mode,
        delete_discarded=delete_discarded, use_sim_time=use_sim_time,
        min_episode_s=float(min_episode_s) if min_episode_s is not None else None))]
    analysis: list[Callable[[], Node]] = []
    if segment:
        analysis.append(lambda: SegmenterNode(parameter_overrides=parameters(profile=profile, dataset=dataset,
                                                                           use_sim_time=use_sim_time)))
    if monitor:
        analysis.append(lambda: QualityMonitorNode(parameter_overrides=parameters(profile=profile,
                                                                               use_sim_time=use_sim_time)))
    if capture is not None:
        # After the recorder (it creates the dataset); with the analysis: a take's files are written at a stop.
        analysis.append(lambda: ShotListNode(parameter_overrides=parameters(dataset=dataset, use_sim_time=use_sim_time,
                                                                          **capture)))
    # The recorder alone on the main executor: the segmenter's and the monitor's work waits, its intake does not.
    return run_nodes(makers, ['robodata session'], on_shutdown=_close_episode, after_start=_started,
                     analysis=analysis)


def run_monitor(profile: str, *, images: bool = True, use_sim_time: bool = False) -> int:
    """The segmenter and the quality monitor next to a recorder or a bag replay (monitor.launch.xml)."""
    return run_nodes([lambda: SegmenterNode(parameter_overrides=parameters(profile=profile, use_sim_time=use_sim_time)),
                      lambda: QualityMonitorNode(parameter_overrides=parameters(profile=profile, images=images,
                                                                             use_sim_time=use_sim_time))],
                     ['robodata monitor'])


def _close_episode(nodes: list[Node], reason: str) -> None:
    for node in nodes:
        if isinstance(node, RecorderNode):
            episode = node.recorder.close('interrupted')
            if episode is not None:
                print(f'recorder: episode {episode.id} closed as {episode.status} ({reason})', file=sys.stderr)


def _started(nodes: list[Node]) -> None:
    _quiet_gc(nodes)
    # The middleware's threads exist now and keep their priority; the executor goes below them (record/priority.py).
    lower_this_thread(INTAKE_NICENESS)


def _quiet_gc(_nodes: list[Node]) -> None:
    gc.collect()
    gc.freeze()
