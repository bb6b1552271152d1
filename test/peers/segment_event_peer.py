"""A separate ROS 2 process for tests: `talk` publishes SegmentEvents, `listen` prints the first one as JSON."""

from __future__ import annotations

import json
import sys
import time

import rclpy
from rclpy.node import Node

from ros_robodata.msg import SegmentEvent


def talk(node: Node, seconds: float) -> None:
    pub = node.create_publisher(SegmentEvent, '/robodata/events', 10)
    deadline = time.monotonic() + seconds
    n = 0
    while time.monotonic() < deadline:
        msg = SegmentEvent(kind=SegmentEvent.GRASP, episode_id='ep-dds', confidence=0.875)
        msg.header.stamp.sec = 42
        msg.header.stamp.nanosec = n
        msg.header.frame_id = 'wrist'
        msg.evidence_signals = ['gripper.position', 'wrench.force_norm']
        msg.evidence_values = [0.012, 6.5]
        msg.evidence_thresholds = [0.02, 3.0]
        pub.publish(msg)
        n += 1
        rclpy.spin_once(node, timeout_sec=0.1)


def listen(node: Node, seconds: float) -> int:
    got: list[SegmentEvent] = []
    node.create_subscription(SegmentEvent, '/robodata/events', got.append, 10)
    deadline = time.monotonic() + seconds
    while not got and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.1)
    if not got:
        return 1
    m = got[0]
    print(json.dumps({
        'kind': m.kind, 'episode_id': m.episode_id, 'confidence': m.confidence, 'sec': m.header.stamp.sec,
        'frame_id': m.header.frame_id, 'evidence_signals': list(m.evidence_signals),
        'evidence_values': list(m.evidence_values), 'evidence_thresholds': list(m.evidence_thresholds),
    }), flush=True)
    return 0


def main() -> int:
    mode, seconds = sys.argv[1], float(sys.argv[2])
    rclpy.init()
    node = rclpy.create_node(f'segment_event_{mode}')
    try:
        if mode == 'talk':
            talk(node, seconds)
            return 0
        return listen(node, seconds)
    finally:
        node.destroy_node()
        rclpy.shutdown()


if __name__ == '__main__':
    sys.exit(main())
