"""The ceiling for Python: a raw=True rclpy subscriber that only counts, on the same executor and QoS
as the recorder. Subscribes to the profile's topics; on SIGINT prints one JSON line of counts.

    bare_subscriber.py PROFILE [reliable|best_effort] [DUMP.npz]

The second argument is the reliability of topics whose profile entry says `qos: auto`.

With DUMP, every stamped message's topic, receive time and latency (ns) are saved there too (record_throughput's
boundary phase compares the latency around episode boundaries with mid-episode)."""

from __future__ import annotations

import json
import sys
import time

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from ros_robodata.nodes.node_runtime import make_executor, message_class
from ros_robodata.profile import load_profile
from ros_robodata.signals.cdr import header_stamp_ns


def main() -> int:
    profile = load_profile(sys.argv[1])
    # A reliable reader does not match a best-effort writer: `best_effort` as the second argument for sensor QoS.
    best_effort = len(sys.argv) > 2 and sys.argv[2] == 'best_effort'
    reliability = ReliabilityPolicy.BEST_EFFORT if best_effort else ReliabilityPolicy.RELIABLE
    rclpy.init()
    node = rclpy.create_node('bare_subscriber')
    dump = sys.argv[3] if len(sys.argv) > 3 else ''
    arrivals: dict[str, list[int]] = {}
    counts: dict[str, int] = {}
    latencies: dict[str, list[int]] = {}
    for _, spec in profile.all_topics():
        msgclass = message_class(spec.type)
        if msgclass is None:
            continue
        counts[spec.topic] = 0
        # A topic whose profile names its QoS gets it (a rig with mixed drivers), as the recorder does.
        own = {'reliable': ReliabilityPolicy.RELIABLE, 'best_effort': ReliabilityPolicy.BEST_EFFORT}.get(spec.qos)
        qos = QoSProfile(depth=max(100, int(5 * (spec.rate_hz or 0))), reliability=own or reliability,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL if spec.latched else DurabilityPolicy.VOLATILE)

        stamped = 'header' in msgclass.get_fields_and_field_types()  # a /robot_description string has no stamp

        def count(data: bytes, topic: str = spec.topic, stamped: bool = stamped) -> None:
            counts[topic] += 1
            stamp = header_stamp_ns(data) if stamped else None
            if stamp:
                now = time.time_ns()
                latencies.setdefault(topic, []).append(now - stamp)
                if dump:
                    arrivals.setdefault(topic, []).append(now)

        node.create_subscription(msgclass, spec.topic, count, qos, raw=True)
    executor = make_executor()
    executor.add_node(node)
    try:
        while rclpy.ok():
            executor.spin_once(timeout_sec=0.2)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    if dump:
        import numpy as np

        np.savez(dump, **{f'{t}|received': np.array(v, dtype=np.int64) for t, v in arrivals.items()},
                 **{f'{t}|latency': np.array(latencies[t], dtype=np.int64) for t in arrivals})
    worst = {t: round(max(v) / 1e6, 1) for t, v in latencies.items()}
    median = {t: round(sorted(v)[len(v) // 2] / 1e6, 1) for t, v in latencies.items()}
    print(json.dumps({'received': counts, 'latency_ms_max': worst, 'latency_ms_p50': median}), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
