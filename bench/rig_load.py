"""Publish a realistic teleop-rig load from a separate process, for recorder tests and benchmarks.

Streams (names as in config/sim_cell.yaml): joint states, wrist wrench, gripper, operator
commands, N cameras (rgb8), one LiDAR (PointCloud2), a latched /robot_description. Header stamps
lie on a perfect grid (start + seq * period), so every sample that never reached the bag is
countable. At the end it prints one JSON line: messages published per topic.
"""

from __future__ import annotations

import argparse
import heapq
import json
import sys
import time

import numpy as np
import rclpy
from geometry_msgs.msg import TwistStamped, WrenchStamped
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image, JointState, PointCloud2, PointField
from std_msgs.msg import String

ARM_JOINTS = [f'joint{i}' for i in range(1, 7)]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument('--seconds', type=float, default=20.0, help='how long to publish')
    p.add_argument('--warmup', type=float, default=1.0, help='seconds to wait after subscribers matched')
    p.add_argument('--linger', type=float, default=3.0, help='seconds to stay up after the last message')
    p.add_argument('--subscribers', type=int, default=1, help='wait until each topic has this many subscribers')
    p.add_argument('--cameras', type=int, default=3, help='number of 640x480 rgb8 cameras at --camera-hz')
    p.add_argument('--camera-hz', type=float, default=30.0)
    p.add_argument('--width', type=int, default=640)
    p.add_argument('--height', type=int, default=480)
    p.add_argument('--joint-hz', type=float, default=500.0)
    p.add_argument('--wrench-hz', type=float, default=500.0)
    p.add_argument('--gripper-hz', type=float, default=100.0)
    p.add_argument('--command-hz', type=float, default=100.0)
    p.add_argument('--lidar-hz', type=float, default=10.0)
    p.add_argument('--lidar-points', type=int, default=30000)
    p.add_argument('--scale', type=float, default=1.0, help='multiply every rate (saturation runs)')
    p.add_argument('--best-effort', action='store_true', help='publish sensor streams best effort')
    p.add_argument('--depth', type=int, default=0,
                   help='publisher history depth as real drivers set it (ros2_control: 10; sensor data: 5); '
                        '0: 2 s of history')
    p.add_argument('--photos', help='folder of real photos to use as camera frames (default: synthetic)')
    p.add_argument('--gap', action='append', default=[],
                   help='TOPIC:START_S:END_S: skip publishing TOPIC in that window (loss injection)')
    return p.parse_args(argv)


def camera_names(n: int) -> list[str]:
    return ['wrist', 'scene', 'side', 'top', 'left', 'right'][:n] + [f'cam{i}' for i in range(6, n)]


def synthetic_frame(rng: np.random.Generator, width: int, height: int) -> bytes:
    """Smooth gradients plus sensor noise: compresses about as a camera image does, unlike pure noise."""
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([x * 255 // max(width, 1), y * 255 // max(height, 1), (x + y) * 127 // max(width + height, 1)], -1)
    noise = rng.integers(0, 12, (height, width, 3))
    return np.clip(base + noise, 0, 255).astype(np.uint8).tobytes()


def load_photos(folder: str, width: int, height: int) -> list[bytes]:
    """Real photos resized to the camera size, as rgb8 frames."""
    import pathlib

    import cv2

    frames = []
    for path in sorted(pathlib.Path(folder).glob('*.png')):
        bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if bgr is not None:
            frames.append(cv2.cvtColor(cv2.resize(bgr, (width, height)), cv2.COLOR_BGR2RGB).tobytes())
    return frames


def build_streams(node, args):  # -> list of (topic, rate_hz, publisher, make(seq, stamp_ns) -> msg)
    reliability = ReliabilityPolicy.BEST_EFFORT if args.best_effort else ReliabilityPolicy.RELIABLE

    def qos_for(rate_hz: float) -> QoSProfile:
        # 2 s of history: this one Python thread stalls now and then and catches up in bursts, which
        # a shorter history would drop before any subscriber could acknowledge them (a C++ driver
        # publishing steadily does not burst like that).
        depth = args.depth if args.depth > 0 else max(100, int(2 * rate_hz * args.scale))
        return QoSProfile(depth=depth, reliability=reliability)
    streams = []

    def stamped(msg, stamp_ns, frame):
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
        msg.header.frame_id = frame
        return msg

    js = JointState(name=ARM_JOINTS, velocity=[0.0] * 6, effort=[0.0] * 6)

    def joint(seq, ns):
        js.position = [0.3 * np.sin(seq / 500 + k) for k in range(6)]
        return stamped(js, ns, 'base_link')

    wr = WrenchStamped()

    def wrench(seq, ns):
        wr.wrench.force.z = -9.81 + 0.1 * np.sin(seq / 50)
        return stamped(wr, ns, 'wrist_ft')

    gr = JointState(name=['finger_joint'], position=[0.04], velocity=[0.0], effort=[0.0])

    def gripper(seq, ns):
        gr.position = [0.02 + 0.02 * np.cos(seq / 200)]
        return stamped(gr, ns, 'gripper')

    tw = TwistStamped()

    def command(seq, ns):
        tw.twist.linear.x = 0.05 * np.sin(seq / 100)
        return stamped(tw, ns, 'base_link')

    def stream(topic, rate_hz, msgtype, make):
        return topic, rate_hz, node.create_publisher(msgtype, topic, qos_for(rate_hz)), make

    streams += [
        stream('/joint_states', args.joint_hz, JointState, joint),
        stream('/wrist/wrench', args.wrench_hz, WrenchStamped, wrench),
        stream('/gripper/joint_states', args.gripper_hz, JointState, gripper),
        stream('/teleop/command', args.command_hz, TwistStamped, command),
    ]
    rng = np.random.default_rng(7)
    photos = load_photos(args.photos, args.width, args.height) if args.photos else []
    for name in camera_names(args.cameras):
        frames = photos or [synthetic_frame(rng, args.width, args.height) for _ in range(4)]
        img = Image(height=args.height, width=args.width, encoding='rgb8', step=args.width * 3)

        def camera(seq, ns, img=img, frames=frames, name=name):
            img.data = frames[seq % len(frames)]
            return stamped(img, ns, f'{name}_camera')

        topic = f'/camera/{name}/image_raw'
        streams.append(stream(topic, args.camera_hz, Image, camera))
    if args.lidar_points:
        fields = [PointField(name=n, offset=4 * i, datatype=PointField.FLOAT32, count=1)
                  for i, n in enumerate(('x', 'y', 'z', 'intensity'))]
        points = rng.normal(size=(args.lidar_points, 4)).astype(np.float32).tobytes()
        cloud = PointCloud2(height=1, width=args.lidar_points, fields=fields, is_bigendian=False, point_step=16,
                            row_step=16 * args.lidar_points, is_dense=True)
        cloud.data = points

        def lidar(seq, ns):
            return stamped(cloud, ns, 'lidar')

        streams.append(stream('/lidar/points', args.lidar_hz, PointCloud2, lidar))
    return streams


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rclpy.init()
    node = rclpy.create_node('rig_load')
    latched = node.create_publisher(String, '/robot_description', QoSProfile(
        depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL))
    latched.publish(String(data='<robot name="sim_cell_arm"/>'))
    streams = build_streams(node, args)
    gaps = []
    for spec in args.gap:
        topic, start, end = spec.rsplit(':', 2)
        gaps.append((topic, float(start), float(end)))
    # Start only when every stream has its subscriber: what is published before DDS has matched
    # them is lost to everyone, and would be counted against the subscriber.
    deadline = time.monotonic() + args.warmup + 20.0
    while time.monotonic() < deadline and any(pub.get_subscription_count() < args.subscribers
                                              for _, _, pub, _ in streams):
        time.sleep(0.05)
    time.sleep(args.warmup)
    published = {topic: 0 for topic, *_ in streams}
    t0 = time.monotonic()
    stamp0 = time.time_ns()
    max_late = 0.0
    heap = [(0.0, i, 0) for i in range(len(streams))]
    heapq.heapify(heap)
    end = args.seconds
    try:
        while heap:
            due, i, seq = heapq.heappop(heap)
            if due >= end:
                continue
            delay = t0 + due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                max_late = max(max_late, -delay)
            topic, rate, pub, make = streams[i]
            rate *= args.scale
            period = 1.0 / rate
            if not any(t == topic and s <= due < e for t, s, e in gaps):
                pub.publish(make(seq, stamp0 + int(seq * period * 1e9)))
                published[topic] += 1
            heapq.heappush(heap, (due + period, i, seq + 1))
    except KeyboardInterrupt:
        pass
    elapsed = time.monotonic() - t0
    time.sleep(args.linger)  # a rig does not vanish after its last message: let reliable delivery finish
    print(json.dumps({'published': published, 'seconds': round(elapsed, 3), 'max_late_ms': round(1000 * max_late, 1)}),
          flush=True)
    node.destroy_node()
    rclpy.shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
