"""Node `quality_monitor`: data quality live at the rig, so the operator can redo a bad episode at once.

Subscribes raw to every topic of the robot profile (like the recorder; nothing is deserialized on the intake
thread except the few messages a check reads). Camera frames go to a worker thread through a two-frame queue:
when the checks fall behind, frames are skipped, never the intake. The checks are ros_robodata.quality.

Publishes, every `period_s`: /diagnostics (diagnostic_msgs/DiagnosticArray: works with rqt_robot_monitor and
friends), /robodata/quality (ros_robodata/QualityStatus, one per live problem plus a 'summary'; `robodata keys`
shows them), /robodata/quality_markers (visualization_msgs/MarkerArray: a text panel for RViz). At each episode
stop it logs the episode's findings.
"""

from __future__ import annotations

import queue
import sys
import threading
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message
from visualization_msgs.msg import Marker, MarkerArray

from ros_robodata.bag.image import decode_image
from ros_robodata.errors import RobodataError
from ros_robodata.msg import EpisodeEvent, QualityStatus
from ros_robodata.nodes.node_runtime import EpisodesSeen, TopicDiscovery, clock_of, declare, run_node
from ros_robodata.profile import load_profile
from ros_robodata.quality.episode_checks import EpisodeQuality, score_of
from ros_robodata.quality.live import LiveQuality, Status
from ros_robodata.record.priority import ANALYSIS_NICENESS, lower_this_thread

QUALITY_TOPIC = '/robodata/quality'
MARKERS_TOPIC = '/robodata/quality_markers'
EPISODE_EVENTS_TOPIC = '/robodata/episode_events'
_COLOURS = {0: (0.3, 1.0, 0.3), 1: (1.0, 0.8, 0.2), 2: (1.0, 0.25, 0.25), 3: (0.7, 0.7, 0.7)}


_BEAT_S = 0.05
_BEAT_NS = int(_BEAT_S * 1e9)
_STALL_NS = 20_000_000  # a beat this late: the monitor's callbacks ran late


class QualityMonitorNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__('quality_monitor', **kwargs)
        profile_path = declare(self, 'profile', '', 'Robot profile YAML: the topics to watch, their limits (required)')
        images = declare(self, 'images', True, 'Run the camera checks (blur, frozen, dark, occluded)')
        period = declare(self, 'period_s', 1.0, 'How often statuses are published')
        image_rate = declare(self, 'image_rate_hz', 10.0,
                             'Frames per second and camera the image checks look at (at most; fewer when behind)')
        self._image_period_ns = int(1e9 / image_rate) if image_rate > 0 else 0
        panel_frame = declare(self, 'panel_frame', '', "Frame of the RViz text panel (empty: the profile's "
                                                           'robot.base_frame)')
        self._period_s = period
        if not profile_path:
            raise RobodataError('parameter `profile` is required')
        self.profile = load_profile(profile_path)
        self._panel_frame = panel_frame or self.profile.robot.base_frame
        self.live = LiveQuality(self.profile, images=images)
        self._episodes = EpisodesSeen()
        self._clock_ns = clock_of(self)
        self._status_pub = self.create_publisher(QualityStatus, QUALITY_TOPIC, 50)
        self._diagnostics = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._markers = self.create_publisher(MarkerArray, MARKERS_TOPIC, 10)
        latched = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.create_subscription(EpisodeEvent, EPISODE_EVENTS_TOPIC, self._on_episode, latched)
        self._frames: queue.Queue[tuple[str, bytes, Any, int]] = queue.Queue(maxsize=2)
        self._running = True
        self._worker = threading.Thread(target=self._frame_worker, name='quality-frames', daemon=True)
        self._worker.start()
        self._ended: queue.Queue[tuple[str, EpisodeQuality] | None] = queue.Queue()
        self.summaries: list[tuple[str, float]] = []  # (episode id, quality score) as each summary is logged
        self._summarizer = threading.Thread(target=self._summary_worker, name='quality-summary', daemon=True)
        self._summarizer.start()
        self._discovery = TopicDiscovery(self, {spec.topic: spec for _, spec in self.profile.all_topics()},
                                         self._subscribe)
        self.create_timer(period, self._publish)
        # The rclpy 7.1 EventsExecutor cannot hand a callback the middleware's reception time, so messages are
        # timed when their callback runs. A timer on the same executor shows when that runs late (the process
        # busy: a bag closing, frames being checked): lateness the monitor itself caused is not the topics'.
        self._beat_ns: int | None = None
        self.create_timer(_BEAT_S, self._beat)
        self.last_statuses: list[Status] = []
        self.get_logger().info(f'watching the {len(self.profile.all_topics())} topic(s) of {self.profile.robot.name}')

    def _subscribe(self, topic: str, spec: Any, qos: Any, msgclass: Any) -> None:
        if msgclass is None:
            self.get_logger().warning(f'cannot watch {topic}: {spec.type} is not installed here')
            return
        self.create_subscription(msgclass, topic, self._receiver(topic, msgclass), qos, raw=True)
        self.live.watch(topic, self._clock_ns())

    def _receiver(self, topic: str, msgclass: Any) -> Any:
        live, clock = self.live, self._clock_ns
        is_camera = topic in live.camera_topics
        last_frame = [0]

        def receive(data: bytes) -> None:
            now = clock()
            live.add(topic, now, data, lambda: deserialize_message(data, msgclass))
            # Frames are checked at image_rate_hz on a worker thread: the checks share the process (and its GIL)
            # with a recorder in a session, and must never slow its intake.
            if is_camera and now - last_frame[0] >= self._image_period_ns:
                last_frame[0] = now
                try:
                    self._frames.put_nowait((topic, data, msgclass, now))
                except queue.Full:
                    live.frames_skipped += 1

        return receive

    def _frame_worker(self) -> None:
        # Decoding and judging frames is the heaviest work here, and may skip frames when behind: it yields the
        # CPU to every intake, this node's and a recorder's beside it.
        lower_this_thread(ANALYSIS_NICENESS)
        while self._running:
            try:
                topic, data, msgclass, received = self._frames.get(timeout=0.5)
            except queue.Empty:
                continue
            try:
                msg = deserialize_message(data, msgclass)
                stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
                self.live.add_frame(topic, stamp, received, decode_image(msg))
            except Exception as err:  # a frame we cannot decode is one warning, not a dead monitor
                self.get_logger().warning(f'{topic}: cannot check a frame: {err}', throttle_duration_sec=10.0)

    def _on_episode(self, msg: EpisodeEvent) -> None:
        if msg.event == EpisodeEvent.START:
            if not self._episodes.first_start(msg.episode_id):
                return  # a start heard again (EpisodesSeen)
            self.live.start(msg.episode_id)
        elif msg.event in (EpisodeEvent.STOP, EpisodeEvent.DISCARD) and msg.episode_id == self.live.episode_id:
            # The summary (the whole episode's findings, its smoothness, the images still to judge) is worked out on
            # a worker at the analysis priority: at a stop the intake beside it, a recorder's in a session, and
            # the next episode's first messages come first. It is logged when it is ready.
            self._ended.put((msg.episode_id, self.live.end_episode()))

    def _summary_worker(self) -> None:
        lower_this_thread(ANALYSIS_NICENESS)
        while True:
            item = self._ended.get()
            if item is None:
                return
            episode_id, checks = item
            try:
                score, reasons = score_of(checks.report().findings)
            except Exception as err:  # a summary that cannot be made is one warning, not a dead monitor
                self.get_logger().warning(f'episode {episode_id}: no quality summary: {err}')
                continue
            text = '; '.join(reasons[:3]) if reasons else 'no problem found'
            self.get_logger().info(f'episode {episode_id}: quality score {score:.2f}: {text}')
            self.summaries.append((episode_id, score))

    def _beat(self) -> None:
        now = self._clock_ns()
        due = None if self._beat_ns is None else self._beat_ns + _BEAT_NS
        self._beat_ns = now
        if due is not None and now - due > _STALL_NS:
            self.live.stalled(due, now, _BEAT_NS)
            if now - due > 100_000_000:
                self.get_logger().info(f'the monitor ran {(now - due) / 1e6:.0f} ms late (this computer is busy): '
                                       'messages it timed late then are not counted against their topics',
                                       throttle_duration_sec=10.0)

    def _publish(self) -> None:
        now = self._clock_ns()
        statuses = self.live.statuses(now)
        self.last_statuses = statuses
        array = DiagnosticArray()
        array.header.stamp.sec, array.header.stamp.nanosec = divmod(now, 1_000_000_000)
        markers = MarkerArray()
        for status in statuses:
            msg = QualityStatus(episode_id=self.live.episode_id, check=status.check, topic=status.topic,
                                level=status.level, value=float(status.value), threshold=float(status.threshold),
                                message=status.message)
            msg.header.stamp = array.header.stamp
            self._status_pub.publish(msg)
            name = 'robodata quality' + (f': {status.check} {status.topic}' if status.check != 'summary' else '')
            array.status.append(DiagnosticStatus(
                level=bytes([status.level]), name=name, message=status.message, hardware_id=self.profile.robot.name,
                values=[KeyValue(key='episode_id', value=self.live.episode_id),
                        KeyValue(key='frames_skipped', value=str(self.live.frames_skipped))]))
        self._diagnostics.publish(array)
        panel = Marker(ns='robodata_quality', id=0, type=Marker.TEXT_VIEW_FACING, action=Marker.ADD,
                       text=panel_text(statuses))
        # Gone from RViz three periods after the last update: a dead monitor's verdict must not linger.
        panel.lifetime.sec, panel.lifetime.nanosec = divmod(int(3 * self._period_s * 1e9), 1_000_000_000)
        panel.header.frame_id = self._panel_frame
        panel.header.stamp = array.header.stamp
        panel.pose.position.z = 1.2
        panel.pose.orientation.w = 1.0
        panel.scale.z = 0.04
        panel.color.r, panel.color.g, panel.color.b = _COLOURS[statuses[-1].level]
        panel.color.a = 1.0
        markers.markers.append(panel)
        self._markers.publish(markers)

    def destroy_node(self) -> None:
        self._running = False
        self._ended.put(None)
        self._summarizer.join(10.0)  # the last episode's summary is still logged on a quick Ctrl-C after its stop
        super().destroy_node()


def panel_text(statuses: list[Status]) -> str:
    """The RViz panel: a headline with the counts, then each live problem once (at most five)."""
    problems = statuses[:-1]
    if not problems:
        return 'quality OK'
    errors = sum(1 for s in problems if s.level == 2)
    warnings = len(problems) - errors
    head = ', '.join(f'{n} {w}' for n, w in ((errors, 'error(s)'), (warnings, 'warning(s)')) if n)
    lines = [f'quality: {head}', *(s.message for s in problems[:5])]
    if len(problems) > 5:
        lines.append(f'... and {len(problems) - 5} more')
    return '\n'.join(lines)


def main(args: list[str] | None = None) -> int:
    return run_node(lambda: QualityMonitorNode(), args if args is not None else sys.argv)


if __name__ == '__main__':
    sys.exit(main())
