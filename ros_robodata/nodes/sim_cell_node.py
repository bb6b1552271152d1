"""Node `sim_cell`: the simulated teleop cell (ros_robodata.sim) as a rig, published at real rates on the profile's
topics, episode after episode on one unbroken timeline (ros_robodata.sim.rig.SimRig).

Every stream of the robot profile the cell can produce is published with header stamps on the node's clock
(wall time): the rig's start + rig time, the sim paced to the wall clock. `/robot_description` is latched
(transient local). With `publish_clock`, the cell's time also goes out on /clock (rosgraph_msgs/Clock), for
nodes run with use_sim_time; the cell runs in real time either way.

With start=auto the scripted operator acts out one episode after another and, like a person at the keys, starts,
labels and stops each on the recorder (parameter `recorder`); with start=key the cell waits at home for the
operator's start key and goes home at the stop key (both seen on /robodata/episode_events). `robodata sim` runs
it; `robodata demo` uses SimCellPublisher with the recorder in the same process.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import rclpy
from geometry_msgs.msg import TransformStamped, TwistStamped, WrenchStamped
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.task import Future
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Image, JointState, PointCloud2, PointField
from std_msgs.msg import String
from std_srvs.srv import Trigger

from ros_robodata.errors import RobodataError
from ros_robodata.msg import EpisodeEvent
from ros_robodata.nodes.node_runtime import StopRequest, declare, run_nodes
from ros_robodata.nodes.sim_pace import PaceWatch
from ros_robodata.profile import Profile, load_profile
from ros_robodata.sim import sim_samples as S
from ros_robodata.sim.faults import FAULT_SYNTAX, parse_fault
from ros_robodata.sim.rig import STARTS, RigEvent, SimRig
from ros_robodata.srv import SetOutcome, StartEpisode

# The profile role each sim stream is published under, and the message type it needs.
_ROLE_OF = {S.JOINT_STATES: 'joint_states', S.GRIPPER: 'gripper', S.WRENCH: 'wrench', S.COMMAND: 'actions',
            S.CAMERA_WRIST: 'camera/wrist', S.CAMERA_SCENE: 'camera/scene', S.LIDAR_SCENE: 'lidar/scene'}
_TYPE_OF = {S.JOINT_STATES: 'sensor_msgs/msg/JointState', S.GRIPPER: 'sensor_msgs/msg/JointState',
            S.WRENCH: 'geometry_msgs/msg/WrenchStamped', S.COMMAND: 'geometry_msgs/msg/TwistStamped',
            S.CAMERA_WRIST: 'sensor_msgs/msg/Image', S.CAMERA_SCENE: 'sensor_msgs/msg/Image',
            S.LIDAR_SCENE: 'sensor_msgs/msg/PointCloud2'}
_CLASS_OF = {'sensor_msgs/msg/JointState': JointState, 'geometry_msgs/msg/WrenchStamped': WrenchStamped,
             'geometry_msgs/msg/TwistStamped': TwistStamped, 'sensor_msgs/msg/Image': Image,
             'sensor_msgs/msg/PointCloud2': PointCloud2}
DESCRIPTION_TOPIC = '/robot_description'
EVENTS_TOPIC = '/robodata/episode_events'
_CLOUD_FIELDS = [PointField(name=n, offset=4 * i, datatype=PointField.FLOAT32, count=1)
                 for i, n in enumerate(('x', 'y', 'z', 'intensity'))]
_PACE_S = 0.004  # sleep between sim steps: the sim runs ahead of the wall clock by at most this


def robot_description(profile: Profile) -> str:
    """A small URDF-like description of the cell (enough for a viewer to name the links and joints)."""
    joints = ''.join(
        f'<joint name="{name}" type="{"prismatic" if i < 3 else "revolute"}"><parent link="link{i}"/>'
        f'<child link="link{i + 1}"/></joint>'
        for i, name in enumerate(profile.robot.arm_joints or [f'joint{k}' for k in range(1, 7)])
    )
    gripper = profile.topics.gripper
    finger = f'<joint name="{gripper.joint}" type="prismatic"/>' if gripper is not None else ''
    return f'<robot name="{profile.robot.name}"><link name="world"/>{joints}{finger}</robot>'


def _stamp(msg: Any, ns: int, frame: str) -> Any:
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(ns, 1_000_000_000)
    msg.header.frame_id = frame
    return msg


class SimCellPublisher:
    """Publishers for the profile's roles on `node`, and episodes of the cell published on them in real time."""

    def __init__(self, node: Node, profile: Profile | str, *, image_size: tuple[int, int] = (320, 240),
                 rates: dict[str, float] | None = None, publish_clock: bool = False) -> None:
        self.node = node
        self.clock_publisher = node.create_publisher(Clock, '/clock', 10) if publish_clock else None
        self.pace = PaceWatch(node)
        self.profile = load_profile(profile) if isinstance(profile, str) else profile
        self.image_size = image_size
        specs = dict(self.profile.all_topics())
        gripper = self.profile.topics.gripper
        self._gripper_joint = gripper.joint if gripper is not None else None
        self.publishers: dict[str, Any] = {}
        self.topics: dict[str, str] = {}
        self.rates: dict[str, float] = {}
        for stream, role in _ROLE_OF.items():
            spec = specs.get(role)
            if spec is None:
                continue
            if spec.type != _TYPE_OF[stream]:
                node.get_logger().warning(f'{spec.topic}: the sim cell publishes {_TYPE_OF[stream]}, the profile '
                                          f'says {spec.type}; not published')
                continue
            rate = (rates or {}).get(stream) or spec.rate_hz or S.DEFAULT_RATES_HZ[stream]
            # Reliable with 2 s of history: one Python thread renders and publishes, and catches up in bursts.
            qos = QoSProfile(depth=max(10, int(2 * rate)), reliability=ReliabilityPolicy.RELIABLE)
            self.publishers[stream] = node.create_publisher(_CLASS_OF[spec.type], spec.topic, qos)
            self.topics[stream] = spec.topic
            self.rates[stream] = float(rate)
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.description = node.create_publisher(String, DESCRIPTION_TOPIC, latched)
        self.description.publish(String(data=robot_description(self.profile)))
        self._tf = self._tf_static = None
        self._tf_message: Any = None
        self._tf_sent_ns = 0
        try:  # the frames the messages name, for RViz
            # Optional dependency: tf2_msgs is not in every environment (not in the PyPI wheels).
            from tf2_msgs.msg import TFMessage
        except ImportError:
            node.get_logger().info(f'tf2_msgs is not installed here: no /tf from the cell; set RViz\'s Fixed Frame to '
                                   f'{self.profile.robot.base_frame!r} (event labels, quality panel; the LiDAR cloud '
                                   "is in 'world')")
        else:
            self._tf_message, self._transform = TFMessage, TransformStamped
            self._tf = node.create_publisher(TFMessage, '/tf', 100)
            self._tf_static = node.create_publisher(TFMessage, '/tf_static', latched)
        self._make: dict[str, Callable[[Any, int], Any]] = {
            S.JOINT_STATES: self._joint_state, S.GRIPPER: self._gripper, S.WRENCH: self._wrench,
            S.COMMAND: self._command, S.CAMERA_WRIST: self._image, S.CAMERA_SCENE: self._image,
            S.LIDAR_SCENE: self._cloud}

    # -- samples to messages ----------------------------------------------------------------------

    @staticmethod
    def _joint_state(d: S.JointSample, ns: int, names: list[str] | None = None) -> JointState:
        msg = JointState(name=names or d.names)
        msg.position = d.position.astype(np.float64)
        msg.velocity = d.velocity.astype(np.float64)
        msg.effort = d.effort.astype(np.float64)
        return _stamp(msg, ns, 'base_link')

    def _gripper(self, d: S.JointSample, ns: int) -> JointState:
        return self._joint_state(d, ns, [self._gripper_joint] if self._gripper_joint else None)

    @staticmethod
    def _wrench(d: S.WrenchSample, ns: int) -> WrenchStamped:
        msg = WrenchStamped()
        w = msg.wrench
        w.force.x, w.force.y, w.force.z = (float(v) for v in d.force)
        w.torque.x, w.torque.y, w.torque.z = (float(v) for v in d.torque)
        return _stamp(msg, ns, d.frame_id)

    @staticmethod
    def _command(d: S.CommandSample, ns: int) -> TwistStamped:
        msg = TwistStamped()
        t = msg.twist
        t.linear.x, t.linear.y, t.linear.z = (float(v) for v in d.linear)
        t.angular.x, t.angular.y, t.angular.z = (float(v) for v in d.angular)
        return _stamp(msg, ns, d.frame_id)

    @staticmethod
    def _image(d: S.ImageSample, ns: int) -> Image:
        h, w = d.rgb.shape[:2]
        msg = Image(height=h, width=w, encoding='rgb8', is_bigendian=0, step=3 * w)
        msg.data = np.ascontiguousarray(d.rgb, dtype=np.uint8).tobytes()
        return _stamp(msg, ns, d.frame_id)

    @staticmethod
    def _cloud(d: S.CloudSample, ns: int) -> PointCloud2:
        points = np.ascontiguousarray(d.points, dtype=np.float32)
        n = len(points)
        msg = PointCloud2(height=1, width=n, fields=_CLOUD_FIELDS, is_bigendian=False, point_step=16,
                          row_step=16 * n, is_dense=bool(np.isfinite(points).all()))
        msg.data = points.tobytes()
        return _stamp(msg, ns, d.frame_id)

    def publish(self, sample: S.Sample, stamp_ns: int) -> None:
        """Publish one sample with header stamp `stamp_ns`."""
        publisher = self.publishers.get(sample.stream)
        if publisher is not None:
            publisher.publish(self._make[sample.stream](sample.data, stamp_ns))

    def publish_clock(self, now_ns: int) -> None:
        if self.clock_publisher is not None:
            tick = Clock()
            tick.clock.sec, tick.clock.nanosec = divmod(now_ns, 1_000_000_000)
            self.clock_publisher.publish(tick)

    def publish_frames(self, poses: dict[str, tuple[np.ndarray, np.ndarray]], stamp_ns: int, first: bool) -> None:
        """The cell's frames in `world`: the fixed ones once on /tf_static, the wrist's on /tf at 50 Hz."""
        if self._tf is None or self._tf_static is None:
            return
        fixed = ('base_link', 'camera_scene')
        if first:
            self._tf_static.publish(self._transforms(poses, fixed, stamp_ns))
        if stamp_ns - self._tf_sent_ns >= 20_000_000:
            self._tf_sent_ns = stamp_ns
            self._tf.publish(self._transforms(poses, [f for f in poses if f not in fixed], stamp_ns))

    def _transforms(self, poses: dict[str, tuple[np.ndarray, np.ndarray]], frames: Any, stamp_ns: int) -> Any:
        message = self._tf_message()
        for frame in frames:
            position, quat = poses[frame]
            t = _stamp(self._transform(), stamp_ns, 'world')
            t.child_frame_id = frame
            t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = map(float, position)
            r = t.transform.rotation
            r.x, r.y, r.z, r.w = map(float, quat)
            message.transforms.append(t)
        return message

    def wait_for_subscribers(self, count: int = 1, timeout_s: float = 10.0) -> bool:
        """Until every stream has `count` matched subscribers (what is published before is lost to them)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if all(p.get_subscription_count() >= count for p in self.publishers.values()):
                return True
            time.sleep(0.05)
        return False

    def rig(self, seed: int, mode: str = 'teleop', *, start: str = 'auto', episodes: int = 0,
            faults: list | None = None) -> SimRig:
        """A SimRig producing what this node publishes (its streams, rates and image size)."""
        return SimRig(seed, mode, start=start, episodes=episodes, faults=faults, streams=list(self.publishers),
                      rates=self.rates, image_size=self.image_size)

    def run(self, rig: SimRig, running: Callable[[], bool], on_event: Callable[[RigEvent, int], None],
            spin: Callable[[float], None]) -> None:
        """Publish the rig's samples as they fall due on the wall clock until `running()` is false or the rig is
        finished: stamps are the node's clock at the rig's start plus rig time. `spin(timeout)` lets ROS work
        (service replies, subscriptions) between steps; on_event(event, stamp_ns) hears what the rig did."""
        start_ns = self.node.get_clock().now().nanoseconds
        t0 = time.monotonic()
        first = True
        pace = self.pace
        while running() and not rig.finished:
            samples, events = rig.step_until(time.monotonic() - t0)
            for stamp, sample in samples:
                self.publish(sample, start_ns + stamp)
            if samples:
                now = time.monotonic()
                pace.update(now - t0 - samples[0][0] / 1e9, now)
            self.publish_clock(start_ns + rig.now_ns)
            if self._tf is not None:
                self.publish_frames(rig.cell.frame_poses(), start_ns + rig.now_ns, first)
                first = False
            for event in events:
                if 'start_ns' in event.truth:  # ground truth times count from the scene's start, on this clock
                    event.truth['start_ns'] += start_ns
                on_event(event, start_ns + event.at_ns)
            spin(_PACE_S)


class SimCellNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__('sim_cell', **kwargs)
        profile = declare(self, 'profile', '', 'Robot profile YAML whose topics the cell publishes (required)')
        self.seed = declare(self, 'seed', 0, 'Seed of the first episode; episode i uses seed + i')
        self.episodes = declare(self, 'episodes', 0, 'Episodes to act out before exiting (0: until stopped)')
        width = declare(self, 'image_width', 320, 'Camera image width (px)')
        height = declare(self, 'image_height', 240, 'Camera image height (px)')
        self.mode = declare(self, 'mode', 'teleop', 'Demonstration mode: teleop | kinesthetic')
        self.start = declare(self, 'start', 'auto',
                             'auto: the scripted operator starts each episode and presses start and stop on the '
                             'recorder; key: the cell waits at home for the start key (robodata keys) and goes '
                             'home at the stop key')
        self.recorder = declare(self, 'recorder', '/recorder',
                                'With start=auto, the recorder node the scripted operator drives (empty: none, the '
                                'cell only publishes)').rstrip('/')
        faults = declare(self, 'faults', '', 'Faults injected into every episode, `;`-separated, each '
                         f'{FAULT_SYNTAX} (seconds from the scene\'s start), e.g. camera/scene:silent:3:6')
        publish_clock = declare(self, 'publish_clock', False, 'Publish the cell\'s time on /clock (for use_sim_time)')
        if not profile:
            raise RobodataError('parameter `profile` is required')
        if self.mode not in ('teleop', 'kinesthetic'):
            raise RobodataError(f'parameter `mode`: {self.mode!r} is not teleop or kinesthetic')
        if self.start not in STARTS:
            raise RobodataError(f'parameter `start`: {self.start!r} is not auto or key')
        try:
            self.faults = [parse_fault(text) for text in faults.split(';') if text.strip()]
        except ValueError as err:
            raise RobodataError(f'parameter `faults`: {err}') from None
        if int(self.episodes) < 0:
            raise RobodataError(f'parameter `episodes`: {self.episodes} is negative (0 runs until stopped)')
        self.cell = SimCellPublisher(self, profile, image_size=(int(width), int(height)),
                                     publish_clock=bool(publish_clock))
        self._rig: SimRig | None = None
        self._calls: list[Future] = []
        self._warned_no_recorder = False
        self._recorder_clients: dict[str, Any] = {}
        if self.start == 'auto' and self.recorder:
            self._recorder_clients = {'start': self.create_client(StartEpisode, f'{self.recorder}/start_episode'),
                             'stop': self.create_client(Trigger, f'{self.recorder}/stop_episode'),
                             'outcome': self.create_client(SetOutcome, f'{self.recorder}/set_outcome')}
        if self.start == 'key':  # volatile: a START from before this cell ran is not a key press for it
            self.create_subscription(EpisodeEvent, EVENTS_TOPIC, self._on_episode_event, QoSProfile(depth=10))

    # -- the operator's keys, seen as the recorder's events (start=key) ---------------------------

    def _on_episode_event(self, msg: EpisodeEvent) -> None:
        rig = self._rig
        if rig is None:
            return
        if msg.event == EpisodeEvent.START:
            if rig.begin():
                self.get_logger().info(f'episode {msg.episode_id}: the operator starts (seed {rig.seed_now})')
            else:
                self.get_logger().warning(f'episode {msg.episode_id} started while the cell is still setting up '
                                          'the next scene: it acts nothing out until that is done')
        elif msg.event in (EpisodeEvent.STOP, EpisodeEvent.DISCARD):
            rig.end()

    # -- what the rig did ---------------------------------------------------------------------------

    def on_rig_event(self, event: RigEvent, stamp_ns: int) -> None:
        log = self.get_logger()
        if event.kind == 'ready':
            log.info(f'scene {event.index + 1} (seed {event.seed}) ready: press space in `robodata keys` to start')
        elif event.kind == 'begin':
            log.info(f'episode {event.index + 1} (seed {event.seed}) begins')
            self._call('start', StartEpisode.Request(operator_name='scripted', mode=self.mode))
        elif event.kind == 'done':
            truth = event.truth
            cut = ' (stopped before it was through)' if truth.get('cut_short') else ''
            # From the script's start (the operator's key), as the episode's marked window counts: the wait at home
            # before it is no part of the demonstration.
            acted = float(truth.get('duration_s') or 0.0) - float(truth.get('begun_s') or 0.0)
            log.info(f'episode {event.index + 1} (seed {event.seed}): {truth.get("outcome")}, {acted:.1f} s{cut}'
                     + ('; label it (s/f/r) and stop it (space)' if self.start == 'key' and not cut else ''))
            self._call('outcome', SetOutcome.Request(outcome=str(truth.get('outcome', 'unknown')),
                                                     notes=f'scripted operator (seed {event.seed})'))
            self._call('stop', Trigger.Request())

    def _call(self, service: str, request: Any) -> None:
        client = self._recorder_clients.get(service)
        if client is None:
            return
        if not client.service_is_ready():
            if not self._warned_no_recorder:
                self._warned_no_recorder = True
                self.get_logger().warning(f'no recorder answers at {self.recorder}: the cell publishes, nothing is '
                                          'recorded (start `robodata record` or `robodata session`)')
            return
        future = client.call_async(request)
        future.add_done_callback(lambda f, what=service: self._answered(what, f))
        self._calls.append(future)

    def _answered(self, service: str, future: Future) -> None:
        response = future.result()
        if response is not None and not response.success:
            self.get_logger().warning(f'recorder: {service} not done: {response.message}')

    def calls_pending(self) -> bool:
        self._calls = [f for f in self._calls if not f.done()]
        return bool(self._calls)


def _run(nodes: list[Node], executor: Any, stop: StopRequest) -> None:
    """The cell's main loop: publish the rig in real time, let ROS work between steps, until stopped or done."""
    node = nodes[0]
    assert isinstance(node, SimCellNode)
    node.cell.wait_for_subscribers(timeout_s=2.0)
    with node.cell.rig(int(node.seed), node.mode, start=node.start, episodes=int(node.episodes),
                       faults=node.faults) as rig:
        node._rig = rig
        node.cell.run(rig, lambda: not stop.reason and rclpy.ok(), node.on_rig_event,
                      lambda timeout: executor.spin_once(timeout_sec=timeout))
        deadline = time.monotonic() + 5.0  # the last stop and outcome reach the recorder before the cell goes
        while node.calls_pending() and time.monotonic() < deadline and not stop.reason:
            executor.spin_once(timeout_sec=0.05)
        node._rig = None


def main(args: list[str] | None = None) -> int:
    return run_nodes([SimCellNode], args, main_loop=_run)


if __name__ == '__main__':
    sys.exit(main())
