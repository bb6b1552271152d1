"""Replay timing (issue 17): a rig-load episode played by the player node into a bare subscriber with deep history.

The episode: three VGA rgb8 cameras at 30 Hz, joint states and wrench at 500 Hz, gripper and commands at 100 Hz, a
30k-point LiDAR at 10 Hz and the latched robot description, written as the recorder writes a bag (MCAP, zstd
chunks), receive times a little after the header stamps with a driver's jitter. The subscriber (a separate
process, raw=True, reliable, deep history) notes each message's arrival. Printed per topic: messages in the bag,
received, lost; the inter-arrival error (arrival gaps against the recorded gaps, divided by the rate) p50 / p99;
the CPU and peak memory of the player. The baseline in the same run: bench/rig_load.py publishing the same load
live (its header stamps are its schedule) into the same subscriber, so the figures show what the player adds to
what this machine's DDS and subscriber do anyway.

    .venv/bin/python bench/replay_timing.py                  # 10 s episode, player then live baseline
    .venv/bin/python bench/replay_timing.py --seconds 5 --rate 2 --overlay
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CAMERAS = ('wrist', 'scene', 'side')
SMALL = ('/joint_states', '/wrist/wrench', '/gripper/joint_states', '/teleop/command')


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--seconds', type=float, default=10.0, help='length of the episode')
    p.add_argument('--rate', type=float, default=1.0, help='replay rate')
    p.add_argument('--width', type=int, default=640)
    p.add_argument('--height', type=int, default=480)
    p.add_argument('--lidar-points', type=int, default=30000)
    p.add_argument('--overlay', action='store_true', help='run the overlay node in the player process as well '
                                                          '(robodata replay), annotating the three cameras')
    p.add_argument('--no-baseline', action='store_true', help='skip the live rig_load baseline')
    p.add_argument('--dds-profile', default=str(ROOT / 'config' / 'dds' / 'fastdds_rig.xml'),
                   help='Fast DDS profile for every process (default: the rig profile the README recommends; '
                        '"none": Fast DDS defaults, under which VGA frames do not fit the shared-memory segment)')
    p.add_argument('--listen', help=argparse.SUPPRESS)  # internal: run as the subscriber, write arrivals here
    return p.parse_args()


# -- the episode -------------------------------------------------------------------------------------------------

def write_episode(bag: Path, args: argparse.Namespace) -> dict[str, int]:
    """The rig-load bag; returns messages per topic."""
    from bench.rig_load import synthetic_frame
    from ros_robodata.bag.types import typestore
    from ros_robodata.bag.writer import BagWriter, qos_profile

    store = typestore()
    types = store.types
    rng = np.random.default_rng(3)
    jitter = random.Random(5)

    def header(ns: int, frame: str):
        sec, nanosec = divmod(ns, 1_000_000_000)
        return types['std_msgs/msg/Header'](stamp=types['builtin_interfaces/msg/Time'](sec=sec, nanosec=nanosec),
                                            frame_id=frame)

    frames = [np.frombuffer(synthetic_frame(rng, args.width, args.height), dtype=np.uint8) for _ in range(4)]
    points = rng.normal(size=(args.lidar_points, 4)).astype(np.float32).reshape(-1).view(np.uint8)
    fields = [types['sensor_msgs/msg/PointField'](name=n, offset=4 * i, datatype=7, count=1)
              for i, n in enumerate(('x', 'y', 'z', 'intensity'))]
    vec = types['geometry_msgs/msg/Vector3']
    streams = [('/joint_states', 500.0, 'sensor_msgs/msg/JointState'), ('/wrist/wrench', 500.0,
               'geometry_msgs/msg/WrenchStamped'), ('/gripper/joint_states', 100.0, 'sensor_msgs/msg/JointState'),
               ('/teleop/command', 100.0, 'geometry_msgs/msg/TwistStamped'), ('/lidar/points', 10.0,
               'sensor_msgs/msg/PointCloud2')] + [(f'/camera/{c}/image_raw', 30.0, 'sensor_msgs/msg/Image')
                                                  for c in CAMERAS]

    def make(topic: str, seq: int, ns: int):
        if topic == '/joint_states':
            return types['sensor_msgs/msg/JointState'](
                header=header(ns, 'base_link'), name=[f'joint{k}' for k in range(1, 7)],
                position=np.array([0.3 * np.sin(seq / 500 + k) for k in range(6)]), velocity=np.zeros(6),
                effort=np.zeros(6))
        if topic == '/gripper/joint_states':
            return types['sensor_msgs/msg/JointState'](header=header(ns, 'gripper'), name=['finger_joint'],
                                                       position=np.array([0.02]), velocity=np.zeros(1),
                                                       effort=np.zeros(1))
        if topic == '/wrist/wrench':
            return types['geometry_msgs/msg/WrenchStamped'](header=header(ns, 'wrist_ft'), wrench=types[
                'geometry_msgs/msg/Wrench'](force=vec(x=0.0, y=0.0, z=-9.81), torque=vec(x=0.0, y=0.0, z=0.0)))
        if topic == '/teleop/command':
            return types['geometry_msgs/msg/TwistStamped'](header=header(ns, 'base_link'), twist=types[
                'geometry_msgs/msg/Twist'](linear=vec(x=0.01, y=0.0, z=0.0), angular=vec(x=0.0, y=0.0, z=0.0)))
        if topic == '/lidar/points':
            return types['sensor_msgs/msg/PointCloud2'](
                header=header(ns, 'lidar'), height=1, width=args.lidar_points, fields=fields, is_bigendian=False,
                point_step=16, row_step=16 * args.lidar_points, data=points, is_dense=True)
        return types['sensor_msgs/msg/Image'](header=header(ns, topic.split('/')[2] + '_camera'),
                                              height=args.height, width=args.width, encoding='rgb8',
                                              is_bigendian=0, step=args.width * 3, data=frames[seq % len(frames)])

    t0 = 1_700_000_000_000_000_000
    plan = []
    for topic, hz, _ in streams:
        for seq in range(int(args.seconds * hz)):
            stamp = t0 + round(seq * 1e9 / hz)
            plan.append((stamp + 800_000 + int(jitter.expovariate(1 / 300_000)), topic, seq, stamp))
    plan.sort()
    with BagWriter(bag) as writer:
        writer.add_topic('/robot_description', 'std_msgs/msg/String', qos=qos_profile(latched=True, depth=1))
        for topic, _, msgtype in streams:
            writer.add_topic(topic, msgtype)
        writer.write_message('/robot_description', t0 - 1_000_000, types['std_msgs/msg/String'](data='<robot/>'))
        for received, topic, seq, stamp in plan:
            writer.write_message(topic, received, make(topic, seq, stamp))
        return writer.counts


# -- the subscriber ----------------------------------------------------------------------------------------------

def listen(out: str) -> int:
    """Subscribe to the rig's topics (raw, reliable, deep history); on SIGINT write every arrival to `out`."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    from ros_robodata.nodes.node_runtime import message_class
    from ros_robodata.signals.cdr import header_stamp_ns

    topics = {'/joint_states': 'sensor_msgs/msg/JointState', '/wrist/wrench': 'geometry_msgs/msg/WrenchStamped',
              '/gripper/joint_states': 'sensor_msgs/msg/JointState',
              '/teleop/command': 'geometry_msgs/msg/TwistStamped', '/lidar/points': 'sensor_msgs/msg/PointCloud2',
              **{f'/camera/{c}/image_raw': 'sensor_msgs/msg/Image' for c in CAMERAS}}
    rclpy.init()
    node = rclpy.create_node('replay_listener')
    arrivals: dict[str, list[tuple[int, int]]] = {t: [] for t in topics}
    subs = []
    for topic, msgtype in topics.items():
        depth = 200 if 'camera' in topic or 'lidar' in topic else 10000

        def got(data: bytes, info: dict, topic: str = topic) -> None:
            # the middleware's reception time, not the callback's: the subscriber's own executor delays are not
            # the player's
            arrivals[topic].append((info['received_timestamp'], header_stamp_ns(data) or 0))

        subs.append(node.create_subscription(message_class(msgtype), topic, got,
                                             QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE,
                                                        durability=DurabilityPolicy.VOLATILE), raw=True))
    stop = []
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    executor = SingleThreadedExecutor()  # it hands callbacks the reception time (rclpy 7.1's EventsExecutor does not)
    executor.add_node(node)
    announced = False
    while not stop:
        executor.spin_once(timeout_sec=0.05)
        if not announced and all(s.get_publisher_count() > 0 for s in subs):
            print('matched', flush=True)
            announced = True
    Path(out).write_text(json.dumps(arrivals))
    return 0


# -- measuring ---------------------------------------------------------------------------------------------------

def _cpu_and_peak(proc: psutil.Process) -> tuple[float, int]:
    """CPU seconds and resident memory of a process with its children, now."""
    total, rss = 0.0, 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            times = p.cpu_times()
            total += times.user + times.system
            rss += p.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total, rss


def _wait_line(proc: subprocess.Popen, word: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if word in line:
            return
        if proc.poll() is not None:
            raise SystemExit(f'the subscriber exited: {proc.stderr.read()}')
    raise SystemExit(f'no "{word}" from the subscriber within {timeout} s')


def run_phase(name: str, start_publisher, reference: dict[str, dict[int, int]] | None, rate: float, env: dict,
              tmp: Path) -> dict:
    """One publisher into a fresh subscriber; arrivals compared with `reference` (header stamp -> intended time,
    per topic) or, for the live baseline, with the header stamps themselves."""
    out = tmp / f'{name}.json'
    listener = subprocess.Popen([sys.executable, __file__, '--listen', str(out)], env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    publisher = start_publisher()
    watched = psutil.Process(publisher.pid)
    peak, cpu0 = 0, None
    try:
        _wait_line(listener, 'matched')
        started = time.monotonic()
        cpu0, _ = _cpu_and_peak(watched)
        if name == 'player':
            _resume(env)
        while publisher.poll() is None:
            cpu, rss = _cpu_and_peak(watched)
            peak = max(peak, rss)
            time.sleep(0.2)
        took = time.monotonic() - started
    finally:
        if publisher.poll() is None:
            publisher.send_signal(signal.SIGINT)
            publisher.wait(20)
    cpu_s = cpu - cpu0 if cpu0 is not None else 0.0
    time.sleep(1.0)
    listener.send_signal(signal.SIGINT)
    listener.wait(30)
    arrivals = json.loads(out.read_text())
    return {'name': name, 'arrivals': arrivals, 'took_s': took, 'cpu_s': cpu_s, 'peak_rss': peak,
            'reference': reference, 'rate': rate}


def _resume(env: dict) -> None:
    """Start the paused player once the subscriber has matched (what a reviewer's first space press does)."""
    code = ('import rclpy, time; from std_srvs.srv import Trigger; rclpy.init(); n = rclpy.create_node("bench"); '
            'c = n.create_client(Trigger, "/player/resume"); c.wait_for_service(timeout_sec=30); '
            'f = c.call_async(Trigger.Request()); rclpy.spin_until_future_complete(n, f, timeout_sec=10); '
            'print(f.result().message)')
    subprocess.run([sys.executable, '-c', code], env=env, check=True, capture_output=True, timeout=60)


def errors_ms(arrivals: list[list[int]], reference: dict[int, int] | None, rate: float) -> np.ndarray:
    """|arrival gap - intended gap| per consecutive pair, in ms."""
    if len(arrivals) < 2:
        return np.zeros(0)
    arrived = np.array([a for a, _ in arrivals], dtype=np.int64)
    stamps = [s for _, s in arrivals]
    intended = np.array([reference[s] for s in stamps] if reference is not None else stamps, dtype=np.int64)
    return np.abs(np.diff(arrived) - np.diff(intended) / rate) / 1e6


def report(phase: dict, counts: dict[str, int]) -> dict[str, tuple[float, float]]:
    print(f"\n{phase['name']}: {phase['took_s']:.2f} s, CPU {phase['cpu_s']:.1f} s = "
          f"{100 * phase['cpu_s'] / max(phase['took_s'], 1e-9):.0f}% of one core, peak RSS "
          f"{phase['peak_rss'] / 2 ** 20:.0f} MiB")
    print(f"  {'topic':28s} {'sent':>6s} {'recv':>6s} {'lost':>5s} {'gap err p50':>12s} {'p99':>8s} {'max':>8s}")
    figures = {}
    for topic, sent in counts.items():
        got = phase['arrivals'].get(topic, [])
        ref = phase['reference'][topic] if phase['reference'] else None
        err = errors_ms(got, ref, phase['rate'])
        p50, p99, worst = (np.percentile(err, 50), np.percentile(err, 99), err.max()) if err.size else (0, 0, 0)
        figures[topic] = (p50, p99, max(0, sent - len(got)))
        print(f'  {topic:28s} {sent:6d} {len(got):6d} {max(0, sent - len(got)):5d} {p50:10.2f} ms {p99:5.2f} ms '
              f'{worst:5.1f} ms')
    return figures


def main() -> int:
    args = parse_args()
    if args.listen:
        return listen(args.listen)
    from ros_robodata.bag.reader import BagReader
    from ros_robodata.signals.cdr import header_stamp_ns

    env = {**os.environ, 'ROS_DOMAIN_ID': str(random.randint(100, 200)), 'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST',
           'PYTHONUNBUFFERED': '1'}
    if args.dds_profile != 'none':
        env['FASTRTPS_DEFAULT_PROFILES_FILE'] = env['FASTDDS_DEFAULT_PROFILES_FILE'] = args.dds_profile
    with tempfile.TemporaryDirectory(prefix='replay-timing-') as scratch:
        tmp = Path(scratch)
        bag = tmp / 'episode'
        began = time.monotonic()
        counts = write_episode(bag, args)
        counts.pop('/robot_description', None)
        reference: dict[str, dict[int, int]] = {t: {} for t in counts}
        with BagReader(bag) as reader:
            for message in reader.messages(list(counts)):
                reference[message.topic][header_stamp_ns(message.data)] = message.t_ns
            size = reader.size_bytes
        print(f'episode: {args.seconds:g} s, {sum(counts.values())} messages, {size / 2 ** 20:.0f} MiB on disk, '
              f'written in {time.monotonic() - began:.1f} s; replay rate {args.rate:g}'
              f'{", with the overlay" if args.overlay else ""}; DDS profile: {Path(args.dds_profile).name}')

        def start_player() -> subprocess.Popen:
            if args.overlay:
                command = [sys.executable, '-m', 'ros_robodata.cli.main', 'replay', str(bag), '--paused',
                           '--rate', str(args.rate), '--profile', str(ROOT / 'bench' / 'rig_profile.yaml')]
            else:
                command = [sys.executable, '-m', 'ros_robodata.nodes.player_node', '--ros-args', '-p', f'bag:={bag}',
                           '-p', 'paused:=true', '-p', f'rate:={args.rate}']
            return subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)

        phases = [run_phase('player', start_player, reference, args.rate, env, tmp)]
        if not args.no_baseline:
            def start_rig() -> subprocess.Popen:
                return subprocess.Popen([sys.executable, str(ROOT / 'bench' / 'rig_load.py'), '--seconds',
                                         str(args.seconds / args.rate), '--scale', str(args.rate), '--warmup', '0.5',
                                         '--linger', '1', '--width', str(args.width), '--height', str(args.height),
                                         '--lidar-points', str(args.lidar_points)],
                                        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            phases.append(run_phase('live rig_load (baseline)', start_rig, None, 1.0, env, tmp))
        results = [report(phase, counts) for phase in phases]
    player = results[0]
    small = [player[t] for t in SMALL]
    lost = sum(f[2] for f in player.values())
    p50, p99 = max(f[0] for f in small), max(f[1] for f in small)
    print(f'\nplayer: lost {lost} (target 0); small topics gap error worst p50 {p50:.2f} ms (target <= 2), worst p99 '
          f'{p99:.2f} ms (target <= 20): ' + ('met' if lost == 0 and p50 <= 2 and p99 <= 20 else 'NOT met'))
    if len(results) > 1:
        base = [results[1][t] for t in SMALL]
        print(f'baseline (live publisher, same subscriber): worst p50 {max(f[0] for f in base):.2f} ms, worst p99 '
              f'{max(f[1] for f in base):.2f} ms, lost {sum(f[2] for f in results[1].values())}; player / '
              f'baseline p99 = {p99 / max(max(f[1] for f in base), 1e-9):.2f}x')
    return 0


if __name__ == '__main__':
    sys.exit(main())
