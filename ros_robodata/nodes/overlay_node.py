"""Node `overlay`: what an episode holds, drawn over it, at the rig and on replay.

For the overlay's current time (the newest header stamp on `time_topic`, or /clock under use_sim_time) it
publishes /robodata/overlay/markers (visualization_msgs/MarkerArray: the event just passed and the subtask, the
active quality findings, the reviewers' temporal labels and verdict, the episode's status and outcome as text in
`marker_frame`, and a timeline bar with a tick per event), and per profile camera /robodata/overlay/<camera>/image
(sensor_msgs/Image, bgr8, the source image's header): the reviewers' boxes and polygons in their taxonomy colours
and class names, the event banner and the quality flags.

On replay (`episode` names an episode folder) the sidecars say what to draw (ros_robodata.replay.episode_view);
live (no `episode`) it listens to /robodata/events, /robodata/quality and /robodata/episode_events. Markers go out
as soon as the time crosses an event (on every time message that changes what is shown), and every 0.1 s for
the timeline's progress.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from geometry_msgs.msg import Point
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Image
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

from ros_robodata.bag.image import decode_image
from ros_robodata.errors import RobodataError
from ros_robodata.labeling.taxonomy import load_taxonomy
from ros_robodata.msg import EpisodeEvent, QualityStatus, SegmentEvent
from ros_robodata.nodes.node_runtime import TopicDiscovery, declare, run_node, use_rig_transport
from ros_robodata.paths import config_path
from ros_robodata.profile import load_profile
from ros_robodata.quality.findings import ERROR, WARN
from ros_robodata.replay.draw import annotate
from ros_robodata.replay.episode_view import EpisodeView, Moment, load_episode_view
from ros_robodata.signals import header_stamp_ns
from ros_robodata.vocabulary import EVENT_COLOURS

MARKERS_TOPIC = '/robodata/overlay/markers'
IMAGE_TOPIC = '/robodata/overlay/{camera}/image'
_LEVELS = {QualityStatus.WARN: WARN, QualityStatus.ERROR: ERROR, QualityStatus.STALE: WARN}
_SEVERITY_RGB = {ERROR: (1.0, 0.25, 0.2), WARN: (1.0, 0.65, 0.0)}
_BAR_LENGTH_M = 1.0
_TEXT_Z = 1.0  # the text column's top, above the marker frame's origin (the segmenter's labels sit lower)
_LINE_M = 0.06


class OverlayNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__('overlay', **kwargs)
        profile_path = declare(self, 'profile', '', 'Robot profile YAML: its cameras and clock topic (required)')
        episode = declare(self, 'episode', '', 'Episode folder DATASET/episodes/<id> whose sidecars to draw '
                          '(empty: live, from /robodata/events and /robodata/quality)')
        taxonomy = declare(self, 'taxonomy', '', 'Class taxonomy YAML: colours and names (empty: config/taxonomy.yaml)')
        marker_frame = declare(self, 'marker_frame', '', "Frame of the RViz text and timeline (empty: the profile's "
                               'robot.base_frame)')
        images = declare(self, 'images', True, "Publish each profile camera's image annotated")
        time_topic = declare(self, 'time_topic', '', "Topic whose header stamps are the overlay's time (empty: the "
                             "profile's joint_states, else its first camera; /clock also under use_sim_time)")
        frames = declare(self, 'frames', '', 'Frame export folders (robodata export frames --out), separated by '
                         f'{os.pathsep!r}, holding the frames box labels were drawn on')
        if not profile_path:
            raise RobodataError('parameter `profile` is required')
        self.profile = load_profile(profile_path)
        self.taxonomy = load_taxonomy(taxonomy or config_path('taxonomy.yaml'))
        self._frame = marker_frame or self.profile.robot.base_frame
        self.live = not episode
        self.view = EpisodeView() if self.live else self._load(Path(episode), frames)
        self.now_ns: int | None = None
        self._shown: tuple[Any, ...] | None = None
        self._markers = self.create_publisher(MarkerArray, MARKERS_TOPIC, 10)
        specs = {spec.topic: spec for _, spec in self.profile.all_topics()}
        clock = time_topic or (self.profile.topics.joint_states.topic if self.profile.topics.joint_states
                               else next((c.topic for c in self.profile.topics.cameras), ''))
        if clock and clock != '/clock' and clock not in specs:
            raise RobodataError(f'time_topic {clock}: not a topic of the profile {self.profile.source} (nor /clock)')
        stamped = {clock: specs[clock]} if clock in specs else {}
        self._time_discovery = TopicDiscovery(self, stamped, self._subscribe_clock)
        if clock == '/clock' or self.get_parameter('use_sim_time').value:
            self.create_subscription(Clock, '/clock', self._on_clock, 10)
        self._images: dict[str, Any] = {}
        if images:
            cameras = {c.topic: c for c in self.profile.topics.cameras}
            self._images = {c.name: self.create_publisher(Image, IMAGE_TOPIC.format(camera=c.name), 5)
                            for c in cameras.values()}
            self._discovery = TopicDiscovery(self, cameras, self._subscribe_camera)
        if self.live:
            self.create_subscription(SegmentEvent, '/robodata/events', self._on_event, 100)
            self.create_subscription(QualityStatus, '/robodata/quality', self._on_quality, 50)
            latched = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                                 durability=DurabilityPolicy.TRANSIENT_LOCAL)
            self.create_subscription(EpisodeEvent, '/robodata/episode_events', self._on_episode, latched)
        self.create_timer(0.1, self._tick)
        what = f'episode {self.view.episode_id}' if not self.live else 'live'
        self.get_logger().info(f'overlay ({what}) on {clock or "/clock"}: {len(self.view.events)} event(s), '
                               f'{len(self.view.shapes)} shape(s)')

    def _load(self, folder: Path, frames: str) -> EpisodeView:
        if not folder.is_dir():
            raise RobodataError(f'episode {folder}: no such episode folder')
        view = load_episode_view(folder, [Path(p) for p in frames.split(os.pathsep) if p])
        for note in view.notes:  # each unreadable sidecar once; the rest is still shown
            self.get_logger().warning(note)
        return view

    # -- time ----------------------------------------------------------------------------------------------

    def _subscribe_clock(self, topic: str, spec: Any, qos: Any, msgclass: Any) -> None:
        if msgclass is None:
            raise RobodataError(f'time_topic {topic}: message type {spec.type} is not installed here')
        self.create_subscription(msgclass, topic, self._on_time, qos, raw=True)

    def _on_time(self, data: bytes) -> None:
        stamp = header_stamp_ns(data)
        if stamp is not None and stamp > 0:
            self._advance(stamp)

    def _on_clock(self, msg: Clock) -> None:
        self._advance(msg.clock.sec * 1_000_000_000 + msg.clock.nanosec)

    def _advance(self, now_ns: int) -> None:
        """The replay's time moved (backwards too, after a seek): new markers at once if what is shown changed."""
        self.now_ns = now_ns
        moment = self.view.at(now_ns)
        if moment.shown() != self._shown:
            self._publish(moment)

    def _tick(self) -> None:
        if self.now_ns is not None:
            self._publish(self.view.at(self.now_ns))

    # -- live ----------------------------------------------------------------------------------------------

    def _on_event(self, msg: SegmentEvent) -> None:
        if self.view.episode_id and msg.episode_id and msg.episode_id != self.view.episode_id:
            return
        self.view.add_event(msg.kind, _ns(msg.header.stamp), float(msg.confidence))
        if self.now_ns is not None:
            self._advance(self.now_ns)

    def _on_quality(self, msg: QualityStatus) -> None:
        if msg.check == 'summary':
            return
        self.view.live_status(msg.check, msg.topic, _LEVELS.get(msg.level), msg.message, _ns(msg.header.stamp))

    def _on_episode(self, msg: EpisodeEvent) -> None:
        if msg.event == EpisodeEvent.START:
            self.view = EpisodeView(episode_id=msg.episode_id, outcome=msg.outcome, status=msg.status or 'recording',
                                    start_ns=_ns(msg.data_start) or _ns(msg.header.stamp))
        elif msg.episode_id == self.view.episode_id:
            self.view.outcome, self.view.status = msg.outcome or self.view.outcome, msg.status or self.view.status

    # -- images --------------------------------------------------------------------------------------------

    def _subscribe_camera(self, topic: str, spec: Any, qos: Any, msgclass: Any) -> None:
        if msgclass is None:
            self.get_logger().warning(f'{topic}: message type {spec.type} is not installed here: not annotated')
            return
        tolerance = round(0.5e9 / (spec.rate_hz or 30.0))  # half a frame period
        self.create_subscription(msgclass, topic, lambda msg: self._on_image(spec.name, msg, tolerance), qos)

    def _on_image(self, camera: str, msg: Any, tolerance_ns: int) -> None:
        stamp = _ns(msg.header.stamp)
        try:
            pixels = decode_image(msg, 'bgr')
        except (RobodataError, ValueError) as err:  # one bad frame is a warning, not a dead overlay
            self.get_logger().warning(f'{camera}: cannot decode a frame: {err}', throttle_duration_sec=10.0)
            return
        drawn = annotate(pixels, self.view.shapes_at(camera, stamp, tolerance_ns), self.view.at(stamp), self.taxonomy)
        out = Image(header=msg.header, height=drawn.shape[0], width=drawn.shape[1], encoding='bgr8',
                    is_bigendian=0, step=drawn.shape[1] * 3)
        out.data = drawn.tobytes()
        self._images[camera].publish(out)

    # -- markers -------------------------------------------------------------------------------------------

    def _publish(self, moment: Moment) -> None:
        self._shown = moment.shown()
        self._markers.publish(MarkerArray(markers=[*self._texts(moment), *self._timeline(moment)]))

    def _marker(self, moment: Moment, ns: str, marker_id: int, kind: int) -> Marker:
        marker = Marker(ns=ns, id=marker_id, type=kind, action=Marker.ADD)
        marker.header.frame_id = self._frame
        marker.header.stamp.sec, marker.header.stamp.nanosec = divmod(moment.t_ns, 1_000_000_000)
        marker.pose.orientation.w = 1.0
        marker.lifetime.sec = 1  # ten timer periods: a stopped overlay's markers do not linger
        marker.color.r = marker.color.g = marker.color.b = marker.color.a = 1.0
        return marker

    def _texts(self, moment: Moment) -> list[Marker]:
        """One text marker per kind of line, stacked downwards; a kind with nothing to say is deleted."""
        worst = moment.flags[0].severity if moment.flags else ''
        lines = [('event', moment.headline(), EVENT_COLOURS.get(moment.event.kind) if moment.event else None),
                 ('status', moment.status_line(), None),
                 ('labels', '\n'.join(moment.label_lines()), (0.6, 0.9, 1.0)),
                 ('findings', '\n'.join(moment.flag_lines()), _SEVERITY_RGB.get(worst))]
        out, z = [], _TEXT_Z
        for n, (name, text, rgb) in enumerate(lines):
            marker = self._marker(moment, f'robodata_overlay/{name}', n, Marker.TEXT_VIEW_FACING)
            if not text:
                marker.action = Marker.DELETE
            marker.text = text
            marker.pose.position.z = z
            marker.scale.z = 0.04
            if rgb is not None:
                marker.color.r, marker.color.g, marker.color.b = rgb
            z -= _LINE_M * max(1, text.count('\n') + 1)
            out.append(marker)
        return out

    def _timeline(self, moment: Moment) -> list[Marker]:
        """A bar the episode's length, the part played filled, a tick in the event's colour per event."""
        start = moment.start_ns
        end = moment.end_ns if moment.end_ns is not None else moment.t_ns  # live: the bar is the episode so far
        if start is None or end <= start:
            return []

        def x_of(t_ns: int) -> float:
            return _BAR_LENGTH_M * (min(max(t_ns, start), end) - start) / (end - start)

        ns, z = 'robodata_overlay/timeline', _TEXT_Z + 0.08
        bar = self._marker(moment, ns, 0, Marker.CUBE)
        bar.pose.position.x, bar.pose.position.z = _BAR_LENGTH_M / 2, z
        bar.scale.x, bar.scale.y, bar.scale.z = _BAR_LENGTH_M, 0.01, 0.02
        bar.color.r = bar.color.g = bar.color.b = 0.35
        played = self._marker(moment, ns, 1, Marker.CUBE)
        width = max(1e-3, x_of(moment.t_ns))
        played.pose.position.x, played.pose.position.z = width / 2, z
        played.scale.x, played.scale.y, played.scale.z = width, 0.012, 0.022
        played.color.r, played.color.g, played.color.b = 0.3, 0.6, 1.0
        ticks = self._marker(moment, ns, 2, Marker.LINE_LIST)
        ticks.scale.x = 0.006
        for t_ns, kind in sorted((e.t_ns, e.kind) for e in self.view.events):
            rgb = EVENT_COLOURS.get(kind, (1.0, 1.0, 1.0))
            for dz in (-0.03, 0.03):
                ticks.points.append(Point(x=x_of(t_ns), y=0.0, z=z + dz))
                ticks.colors.append(ColorRGBA(r=rgb[0], g=rgb[1], b=rgb[2], a=1.0))
        if not ticks.points:
            ticks.action = Marker.DELETE
        clock = self._marker(moment, ns, 3, Marker.TEXT_VIEW_FACING)
        total = f' / {(end - start) / 1e9:.2f}' if moment.end_ns is not None else ''
        clock.text = f'{(moment.t_ns - start) / 1e9:.2f}{total} s'
        clock.pose.position.x, clock.pose.position.z = _BAR_LENGTH_M + 0.12, z
        clock.scale.z = 0.035
        return [bar, played, ticks, clock]


def _ns(stamp: Any) -> int:
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def main(args: list[str] | None = None) -> int:
    use_rig_transport()  # it publishes annotated camera frames
    return run_node(lambda: OverlayNode(), args if args is not None else sys.argv)


if __name__ == '__main__':
    sys.exit(main())
