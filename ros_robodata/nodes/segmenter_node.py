"""Node `segmenter`: grasp, contact and release events live, from the gripper and wrist wrench topics.

The detection is ros_robodata.events (no ROS); this node only subscribes, feeds it and publishes. Events go
out as soon as the sample that confirms them arrives (header stamped with when the event happened), on
/robodata/events (ros_robodata/msg/SegmentEvent; the recorder records it into the episode) and as RViz text
labels on /robodata/event_markers (visualization_msgs/msg/MarkerArray).

At each episode START the detector starts afresh from the samples kept since the episode's data began (its
first message, pre-roll included: EpisodeEvent.data_start; events/segmenter.py, episode_input_start):
`robodata segment` reads the same samples of the bag, so the events recorded live and those in events.json are
the same. The gripper's stroke is calibrated from the data (events/stroke.py): each episode starts from what the
earlier episodes of this run showed (pooled, events/calibration.py), and with `dataset` set the node writes that
starting point into the episode's folder (segmenter_prior.json), which `robodata segment` then starts from too.
At STOP the episode is finished (a close on nothing still held is said then) and its stroke logged.
"""

from __future__ import annotations

import sys
from collections import deque
from pathlib import Path
from typing import Any

from geometry_msgs.msg import WrenchStamped
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float32, Float64
from visualization_msgs.msg import Marker, MarkerArray

from ros_robodata.errors import RobodataError
from ros_robodata.events.calibration import SESSION, Priors, pool_priors, write_prior
from ros_robodata.events.event import Event
from ros_robodata.events.segmenter import GRIPPER, WRENCH, Segmenter, episode_input_start
from ros_robodata.msg import EpisodeEvent, SegmentEvent
from ros_robodata.nodes.node_runtime import EpisodesSeen, TopicDiscovery, clock_of, declare, run_node
from ros_robodata.profile import load_profile
from ros_robodata.profile.schema import FLOAT64, JOINT_STATE
from ros_robodata.vocabulary import EVENT_COLOURS

EVENTS_TOPIC = '/robodata/events'
MARKERS_TOPIC = '/robodata/event_markers'
EPISODE_EVENTS_TOPIC = '/robodata/episode_events'
# Samples are kept this much longer than the pre-roll: the START event comes after the operator's start (the
# recorder announces it once the bag is open).
_KEEP_MARGIN_S = 3.0


class SegmenterNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__('segmenter', **kwargs)
        profile_path = declare(self, 'profile', '', 'Robot profile YAML: the gripper and wrench topics (required)')
        use_gripper = declare(self, 'use_gripper', True, 'Read the gripper joint (false: wrench only)')
        use_wrench = declare(self, 'use_wrench', True, 'Read the wrist wrench (false: gripper only)')
        self._marker_frame = declare(self, 'marker_frame', '',
                                     "Frame of the RViz labels (empty: the profile's robot.base_frame)")
        self._dataset = declare(self, 'dataset', '', 'Dataset folder the recorder writes: each episode gets the '
                                'gripper strokes this node started it from (segmenter_prior.json), so `robodata '
                                'segment` finds the same events; empty: nothing written')
        self._label_lifetime = declare(self, 'label_lifetime_s', 3.0, 'How long an RViz label stays up')
        if not profile_path:
            raise RobodataError('parameter `profile` is required')
        self.profile = load_profile(profile_path)
        self._options = {'use_gripper': use_gripper, 'use_wrench': use_wrench}
        self.segmenter = Segmenter(self.profile, **self._options)
        self.episode_id = ''
        self._episodes = EpisodesSeen()
        self._calibrations: list[dict[str, Any]] = []  # what each finished episode of this run showed
        self._kept: deque[tuple[str, Any, int]] = deque()  # (role, reading, received) as they came
        self._clock_ns = clock_of(self)
        self._keep_ns = round((self.profile.recording.pre_roll_s + _KEEP_MARGIN_S) * 1e9)
        self.published: list[SegmentEvent] = []
        self._events = self.create_publisher(SegmentEvent, EVENTS_TOPIC, QoSProfile(depth=100))
        self._markers = self.create_publisher(MarkerArray, MARKERS_TOPIC, 10)
        latched = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.create_subscription(EpisodeEvent, EPISODE_EVENTS_TOPIC, self._on_episode, latched)
        specs = {spec.topic: spec for _, spec in self.profile.all_topics() if spec.topic in self.segmenter.topics}
        self._discovery = TopicDiscovery(self, specs, self._subscribe)
        self._marker_id = 0
        if self.segmenter.topics:
            self.get_logger().info(f'segmenting from {", ".join(sorted(self.segmenter.topics))}')
        else:  # a rig without a gripper or a wrist sensor (a capture studio): the session runs on without events
            self.get_logger().warning(f'{profile_path}: the profile names no gripper or wrench topic: no grasp, '
                                      'contact or release events will be published')

    def _subscribe(self, topic: str, spec: Any, qos: Any, msgclass: Any) -> None:
        roles = self.segmenter.topics[topic]
        if WRENCH in roles:
            msgclass = WrenchStamped
        elif GRIPPER in roles or spec.type == JOINT_STATE:
            msgclass = JointState
        else:  # a gripper command as a plain number
            msgclass = Float64 if spec.type == FLOAT64 else Float32
        self.create_subscription(msgclass, topic, self._receiver(topic), qos)

    def _receiver(self, topic: str) -> Any:
        kept, keep_ns, clock = self._kept, self._keep_ns, self._clock_ns

        def receive(msg: Any) -> None:
            received = clock()
            for sample in self.segmenter.read(topic, b'', lambda: msg, received):
                kept.append((*sample, received))
                while kept and received - kept[0][2] > keep_ns:
                    kept.popleft()
                for event in self.segmenter.add(*sample, received):
                    self._publish(event)

        return receive

    def _on_episode(self, msg: EpisodeEvent) -> None:
        if msg.event == EpisodeEvent.START:
            if not self._episodes.first_start(msg.episode_id):
                return  # a start heard again (EpisodesSeen)
            self.episode_id = msg.episode_id
            start = msg.data_start.sec * 1_000_000_000 + msg.data_start.nanosec
            priors = pool_priors(self._calibrations, SESSION)
            self.segmenter = Segmenter(self.profile, since_ns=episode_input_start(start), priors=priors,
                                       **self._options)
            self._write_prior(msg.episode_id, priors)
            for role, reading, received in list(self._kept):  # the pre-roll and what came before this event
                for event in self.segmenter.add(role, reading, received):
                    self._publish(event)
        elif msg.event in (EpisodeEvent.STOP, EpisodeEvent.DISCARD) and msg.episode_id == self.episode_id:
            for event in self.segmenter.finish():
                self._publish(event)
            result = self.segmenter.result()
            if msg.event == EpisodeEvent.STOP and result.calibration:
                self._calibrations.append(result.calibration)
                stroke = result.calibration.get('gripper', {})
                self.get_logger().info(f'{self.episode_id}: gripper stroke {stroke.get("closed")}..'
                                       f'{stroke.get("open")} ({stroke.get("source")})')
            for warning in result.warnings:
                self.get_logger().warning(f'{self.episode_id}: {warning}')
            self.episode_id = ''

    def _write_prior(self, episode_id: str, priors: Priors | None) -> None:
        """Where this episode's strokes started from, for `robodata segment` (a missing folder: said, not fatal)."""
        if not self._dataset:
            return
        try:
            write_prior(Path(self._dataset) / 'episodes' / episode_id, priors, len(self._calibrations))
        except (OSError, RobodataError) as err:
            self.get_logger().warning(f'{episode_id}: could not write its segmenter prior ({err}): `robodata '
                                      'segment` will pool the dataset instead, and may differ from the live events')

    def _publish(self, event: Event) -> None:
        msg = SegmentEvent(episode_id=self.episode_id, kind=event.kind, confidence=float(event.confidence))
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(event.stamp_ns, 1_000_000_000)
        msg.header.frame_id = event.frame_id
        msg.evidence_signals = [e.signal for e in event.evidence]
        msg.evidence_values = [float(e.value) for e in event.evidence]
        msg.evidence_thresholds = [float(e.threshold) for e in event.evidence]
        self._events.publish(msg)
        self.published.append(msg)
        self._markers.publish(self._label(event, msg))
        self.get_logger().info(f'{event.kind} at {event.stamp_ns / 1e9:.3f} (confidence {event.confidence:.2f})')

    def _label(self, event: Event, msg: SegmentEvent) -> MarkerArray:
        """A text label in the rig's fixed frame (so RViz shows it whatever TF it has) that fades after
        label_lifetime_s; labels stack in three rows so a burst of events stays readable."""
        marker = Marker(ns='robodata_events', id=self._marker_id % 20, type=Marker.TEXT_VIEW_FACING,
                        action=Marker.ADD, text=f'{event.kind} ({event.confidence:.2f})')
        self._marker_id += 1
        marker.header.stamp = msg.header.stamp
        marker.header.frame_id = self._marker_frame or self.profile.robot.base_frame
        marker.pose.position.z = 0.6 + 0.05 * (marker.id % 3)
        marker.pose.orientation.w = 1.0
        marker.scale.z = 0.03
        marker.color.r, marker.color.g, marker.color.b = EVENT_COLOURS.get(event.kind, (1.0, 1.0, 1.0))
        marker.color.a = 1.0
        marker.lifetime.sec = int(self._label_lifetime)
        marker.lifetime.nanosec = int((self._label_lifetime % 1) * 1e9)
        return MarkerArray(markers=[marker])


def main(args: list[str] | None = None) -> int:
    return run_node(lambda: SegmenterNode(), args if args is not None else sys.argv)


if __name__ == '__main__':
    sys.exit(main())
