"""Node `sim_cell`: the simulated teleop cell (ros_robodata.sim) published at real rates on the profile's topics.

Every stream of the robot profile the cell can produce is published with header stamps on the node's clock
(wall time): episode start + the sample's sim time, the sim paced to the wall clock. `/robot_description` is
latched (transient local). With `publish_clock`, the cell's time also goes out on /clock (rosgraph_msgs/Clock),
for nodes run with use_sim_time; the cell runs in real time either way.

Parameters: profile, seed, episodes, image_width, image_height, mode, publish_clock. `main()` runs `episodes`
episodes back to back (seed + i for episode i) and exits; `robodata demo` drives SimCellPublisher.run_episode itself.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from geometry_msgs.msg import TwistStamped, WrenchStamped
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Image, JointState, PointCloud2, PointField
from std_msgs.msg import String

from ros_robodata.errors import RobodataError
from ros_robodata.nodes.common import declare, run_node
from ros_robodata.profile import Profile, load_profile
from ros_robodata.sim import samples as S

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

    def publish(self, sample: S.Sample, start_ns: int) -> None:
        """Publish one sample, stamped at `start_ns` + its sim time."""
        publisher = self.publishers.get(sample.stream)
        if publisher is not None:
            publisher.publish(self._make[sample.stream](sample.data, start_ns + round(sample.stamp * 1e9)))

    # -- episodes ---------------------------------------------------------------------------------

    def wait_for_subscribers(self, count: int = 1, timeout_s: float = 10.0) -> bool:
        """Until every stream has `count` matched subscribers (what is published before is lost to them)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if all(p.get_subscription_count() >= count for p in self.publishers.values()):
                return True
            time.sleep(0.05)
        return False

    def run_episode(self, seed: int, episode_index: int, mode: str = 'teleop', faults: list | None = None,
                    *, on_start: Callable[[], None] | None = None,
                    on_step: Callable[[float], None] | None = None) -> dict:
        """Step a SimCell paced to the wall clock, publishing every sample as it falls due; the ground truth.

        on_start() is called once the cell is built (model compiled, renderer up), just before its time starts:
        the place to start recording. on_step(sim_time_s) is called after each step; it must be quick.
        """
        from ros_robodata.sim.cell import SimCell

        clock = self.node.get_clock()
        with SimCell(seed, episode_index, mode=mode, faults=faults, streams=list(self.publishers), rates=self.rates,
                     image_size=self.image_size) as cell:
            if on_start is not None:
                on_start()
            start_ns = clock.now().nanoseconds
            t0 = time.monotonic()
            while not cell.finished:
                for sample in cell.step_until(time.monotonic() - t0):
                    self.publish(sample, start_ns)
                if self.clock_publisher is not None:
                    tick = Clock()
                    tick.clock.sec, tick.clock.nanosec = divmod(start_ns + round(cell.time * 1e9), 1_000_000_000)
                    self.clock_publisher.publish(tick)
                if on_step is not None:
                    on_step(cell.time)
                time.sleep(_PACE_S)
            truth = cell.ground_truth()
        truth['start_ns'] = start_ns
        return truth


class SimCellNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__('sim_cell', **kwargs)
        profile = declare(self, 'profile', '', 'Robot profile YAML whose topics the cell publishes (required)')
        self.seed = declare(self, 'seed', 0, 'Seed of the first episode; episode i uses seed + i')
        self.episodes = declare(self, 'episodes', 6, 'Episodes to run back to back before exiting')
        width = declare(self, 'image_width', 320, 'Camera image width (px)')
        height = declare(self, 'image_height', 240, 'Camera image height (px)')
        self.mode = declare(self, 'mode', 'teleop', 'Demonstration mode: teleop | kinesthetic')
        publish_clock = declare(self, 'publish_clock', False, 'Publish the cell\'s time on /clock (for use_sim_time)')
        if not profile:
            raise RobodataError('parameter `profile` is required')
        if self.mode not in ('teleop', 'kinesthetic'):
            raise RobodataError(f'parameter `mode`: {self.mode!r} is not teleop or kinesthetic')
        self.cell = SimCellPublisher(self, profile, image_size=(int(width), int(height)),
                                     publish_clock=bool(publish_clock))


def _run_episodes(node: SimCellNode) -> None:
    node.cell.wait_for_subscribers(timeout_s=2.0)
    for i in range(int(node.episodes)):
        truth = node.cell.run_episode(int(node.seed) + i, i, node.mode)
        node.get_logger().info(f'episode {i} (seed {int(node.seed) + i}): {truth["outcome"]}, '
                               f'{truth["duration_s"]:.1f} s')
        time.sleep(0.5)
    raise KeyboardInterrupt  # done: leave run_node's spin loop the clean way


def main(args: list[str] | None = None) -> int:
    return run_node(SimCellNode, args, after_start=_run_episodes)


if __name__ == '__main__':
    sys.exit(main())
