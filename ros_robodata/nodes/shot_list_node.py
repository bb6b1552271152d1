"""Node `shot_list`: a capture session's shot list and its takes checked live (`robodata session --protocol`).

Thin on purpose: ros_robodata.capture.shot_list.ShotList decides the next take, capture.take_check.TakeCheck
judges the readings, capture.take_save writes the take; this node only wires topics to them.

- publishes the take shown on /robodata/take (std_msgs/String, JSON: line, factors, recording, message; latched),
  which `robodata keys` shows;
- takes the operator's changes on /robodata/take_command (std_msgs/String: `skip`, `cycle FACTOR`);
- follows the recorder's /robodata/episode_events: the take shown when an episode starts is the take it records;
  when it stops complete, capture.json and episode.yaml's `capture:` are written and the list moves on;
- reads the light from sensor_msgs/Illuminance on `illuminance_topic`, the distance from sensor_msgs/Range on
  `range_topic` and, with `camera_topic`, the face's distance and orientation from the camera's frames
  (capture.frame_measure, at most `measure_rate_hz` frames a second, with `camera_info_topic`'s intrinsics), and
  publishes a WARN on /diagnostics ('robodata take') while a reading is outside the take's intended level or bin,
  within a tick (TICK_S) of the reading. The camera is subscribed once a publisher of it appears, reliable when its
  publishers are (as the recorder matches them): a VGA frame from a driver on Fast DDS's defaults is often lost on
  a busy computer, and only a reliable subscription has it repaired (on a loaded 2-core computer a best-effort one
  got 0 of the 18 frames of a 2 s take, a reliable one all). When a take stops, the frame in hand is measured first
  (at most capture.frame_measure.SETTLE_S) and every reading measured so far is the take's before it is written.

Parameters: protocol (a file or a shipped name), participant, dataset, illuminance_topic, range_topic,
camera_topic, camera_info_topic, measure_rate_hz, lux_calibration (PROFILE:CAMERA: light estimated from the frames).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo, CompressedImage, Illuminance, Image, Range
from std_msgs.msg import String

from ros_robodata.capture.consent_check import check_participant
from ros_robodata.capture.coverage import Coverage, coverage
from ros_robodata.capture.frame_measure import SETTLE_S, FrameMeasurer
from ros_robodata.capture.lux_calibration import error_text, profile_camera_calibration
from ros_robodata.capture.protocol import load_protocol
from ros_robodata.capture.shot_list import ShotList, Take, empty_coverage
from ros_robodata.capture.take_check import DISTANCE, ILLUMINANCE, ORIENTATION, TakeCheck, rig_sources, take_record
from ros_robodata.capture.take_save import save_take
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.errors import RobodataError
from ros_robodata.msg import EpisodeEvent
from ros_robodata.nodes.keys_node import EVENTS_TOPIC, TAKE_COMMAND_TOPIC, TAKE_TOPIC
from ros_robodata.nodes.node_runtime import TopicDiscovery, declare, run_node
from ros_robodata.profile.schema import TopicSpec
from ros_robodata.record.keys_screen import TAKE_STATUS
from ros_robodata.record.priority import ANALYSIS_NICENESS, lower_this_thread

TICK_S = 0.25  # how often the latest readings are judged: a take out of spec shows within this and a hop
REPEAT_S = 1.0  # /diagnostics is refreshed this often when nothing changed


class ShotListNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__('shot_list', **kwargs)
        protocol = declare(self, 'protocol', '', 'Capture protocol: a file or a shipped name (hri_expressions)')
        participant = declare(self, 'participant', '', "The participant's pseudonymous id (participants.yaml); "
                                                       "'' or none: nobody")
        dataset = declare(self, 'dataset', '', 'Dataset folder the recorder writes (required)')
        lux_topic = declare(self, 'illuminance_topic', '/illuminance', 'sensor_msgs/Illuminance of the lux meter')
        range_topic = declare(self, 'range_topic', '/range', 'sensor_msgs/Range from the camera to the participant')
        camera_topic = declare(self, 'camera_topic', '', "The camera filming the participant (sensor_msgs/Image, or "
                                                         "CompressedImage on a topic ending /compressed) whose faces "
                                                         "give distance and orientation; '' or none: no camera")
        camera_info_topic = declare(self, 'camera_info_topic', '', "Its sensor_msgs/CameraInfo; '' or auto: "
                                                                   "camera_info beside the image topic")
        rate_hz = declare(self, 'measure_rate_hz', 2.0, 'The most camera frames measured a second (the latest '
                                                         'frame each time; the others are skipped)')
        lux_calibration = declare(self, 'lux_calibration', '', "PROFILE:CAMERA whose lux_calibration estimates the "
                                                               "light from camera_topic's frames without a meter; "
                                                               "'' or none: none")
        if not protocol or not dataset:
            raise RobodataError('parameters `protocol` and `dataset` are required')
        self.protocol = load_protocol(protocol)
        self.participant = '' if participant == 'none' else participant
        self._root = Path(dataset)
        check_participant(self._root, self.protocol, self.participant)
        self.shots = ShotList(self._coverage())
        camera_topic = '' if camera_topic == 'none' else camera_topic
        camera_info_topic = '' if camera_info_topic == 'auto' else camera_info_topic
        available = rig_sources(self.protocol, lux_topic, range_topic, camera_topic)
        self.check = TakeCheck(self.protocol, available)
        kinds = self.check.measured_kinds()
        self.measurer: FrameMeasurer | None = None
        if camera_topic and {DISTANCE, ORIENTATION} & set(kinds):  # the camera measures what the protocol varies
            calibration = profile_camera_calibration('' if lux_calibration == 'none' else lux_calibration)
            self.measurer = FrameMeasurer(f'{camera_topic} (faces)', float(rate_hz), calibration=calibration)
            if calibration is not None:
                self.check.estimate_lux_from(self.measurer.source, error_text(calibration))
        self._recording: tuple[str, Take] | None = None
        self._message = ''
        self._last_status: tuple[Any, str] | None = None
        self._status_at = 0.0
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self._take_pub = self.create_publisher(String, TAKE_TOPIC, latched)
        self._diagnostics = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        # Volatile: the recorder's latched history (episodes of an earlier session) is not a take of this one.
        self.create_subscription(EpisodeEvent, EVENTS_TOPIC, self._on_event,
                                 QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
        self.create_subscription(String, TAKE_COMMAND_TOPIC, self._on_command,
                                 QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
        if ILLUMINANCE in kinds:
            self.create_subscription(Illuminance, lux_topic, self._reading(ILLUMINANCE, lux_topic, 'Illuminance'),
                                     qos_profile_sensor_data)
        if DISTANCE in kinds:
            self.create_subscription(Range, range_topic, self._reading(DISTANCE, range_topic, 'Range'),
                                     qos_profile_sensor_data)
        if self.measurer is not None:
            measurer = self.measurer
            compressed = camera_topic.rstrip('/').endswith('/compressed')
            image_base = camera_topic.rstrip('/').rsplit('/', 2 if compressed else 1)[0]
            info_topic = camera_info_topic or f'{image_base}/camera_info'
            image_type = CompressedImage if compressed else Image
            self._camera_discovery = TopicDiscovery(self, {camera_topic: TopicSpec(
                topic=camera_topic, type=f'sensor_msgs/msg/{image_type.__name__}')}, self._subscribe_camera)
            self.create_subscription(CameraInfo, info_topic, self._on_camera_info, qos_profile_sensor_data)
            measurer.start(lambda: lower_this_thread(ANALYSIS_NICENESS))  # below the recorder's intake
        self.create_timer(TICK_S, self._tick)
        self._publish_take()
        self.get_logger().info(f'protocol {self.protocol.name}, participant {self.participant or "none"}: '
                               f'{self.shots.line()}')

    def _coverage(self) -> Coverage:
        if not (self._root / 'episodes').is_dir():
            return empty_coverage(self.protocol, self._root.name)
        return coverage(Dataset.open(self._root), self.protocol)

    def _reading(self, kind: str, topic: str, type_name: str) -> Any:
        source = f'{topic} (sensor_msgs/{type_name})'

        def receive(msg: Any) -> None:
            value = msg.illuminance if kind == ILLUMINANCE else msg.range
            self.check.add(kind, float(value), source, time.monotonic())
        return receive

    def _subscribe_camera(self, topic: str, spec: TopicSpec, qos: QoSProfile, msgclass: Any) -> None:
        if self.measurer is not None:  # depth 1: the measurer takes the latest frame only
            self.create_subscription(msgclass, topic, self.measurer.offer,
                                     QoSProfile(depth=1, reliability=qos.reliability))

    def _on_camera_info(self, msg: CameraInfo) -> None:
        if self.measurer is not None:
            self.measurer.set_camera_info(msg.k, msg.width, msg.height)

    # -- the shot list ----------------------------------------------------------------------------

    def _intended(self) -> dict[str, str]:
        take = self._recording[1] if self._recording else self.shots.current
        return take.intended if take is not None else {}

    def _publish_take(self) -> None:
        line = self.shots.line()
        if self._recording is not None:
            line = f'REC {self._recording[0]}: {self.shots.line(self._recording[1])}'
        data = {'line': line, 'factors': [f.name for f in self.protocol.factors],
                'recording': self._recording is not None, 'message': self._message,
                'participant': self.participant}
        self._take_pub.publish(String(data=json.dumps(data)))

    def _on_command(self, msg: String) -> None:
        command, _, argument = msg.data.strip().partition(' ')
        try:
            if self._recording is not None:
                raise RobodataError(f'episode {self._recording[0]} is recording this take: stop it first')
            if command == 'skip':
                self._message = self.shots.skip()
            elif command == 'cycle':
                self._message = self.shots.cycle(argument.strip())
            else:
                raise RobodataError(f'unknown take command {msg.data!r}: expected skip or cycle FACTOR')
        except RobodataError as err:
            self._message = str(err)
        self._publish_take()

    def _on_event(self, msg: EpisodeEvent) -> None:
        if msg.event == EpisodeEvent.START:
            take = self.shots.current
            if take is None:
                self._message = f'{msg.episode_id} records no take: every take is captured'
            else:
                self._recording = (msg.episode_id, take)
                self.check.start()
                self._message = f'recording take {take.number} as {msg.episode_id}'
            self._publish_take()
        elif msg.event in (EpisodeEvent.STOP, EpisodeEvent.DISCARD) and self._recording is not None \
                and self._recording[0] == msg.episode_id:
            self._finish(msg.episode_id, self._recording[1], msg.status)

    def _finish(self, episode_id: str, take: Take, status: str) -> None:
        self._recording = None
        if self.measurer is not None:
            # The take's frame still queued or being measured, and readings not yet taken by a tick, are its own.
            if not self.measurer.settle():
                self.get_logger().warning(f'{self.measurer.source}: the last frame of take {take.number} was not '
                                          f'measured within {SETTLE_S:g} s: the take is saved without it')
            self.measurer.drain_into(self.check)
        measured, shown = self.check.stop(take.intended)
        if status != 'complete':
            self._message = f'{episode_id} {status}: take {take.number} not counted, shown again'
        else:
            try:
                save_take(Dataset.open(self._root), episode_id,
                          take_record(self.protocol, self.participant, take.number, take.intended, measured),
                          shown, take.total)
                outside = [name for name, entry in shown.items() if entry.get('verdict') == 'outside']
                self._message = f'take {take.number} saved in {episode_id}' + (
                    f': out of spec ({", ".join(outside)})' if outside else '')
                self.shots.refresh(self._coverage())
            except RobodataError as err:
                self._message = f'take {take.number} of {episode_id} not saved: {err}'
                self.get_logger().error(self._message)
        self.get_logger().info(f'{self._message}; next: {self.shots.line()}')
        self._publish_take()

    # -- live check -------------------------------------------------------------------------------

    def _tick(self) -> None:
        now = time.monotonic()
        if self.measurer is not None:
            self.measurer.drain_into(self.check)
        flags = self.check.flags(self._intended(), now)
        if flags:
            status = (DiagnosticStatus.WARN, 'out of spec: ' + '; '.join(flag.text for flag in flags))
        else:
            status = (DiagnosticStatus.OK, 'within spec')
        if status == self._last_status and now - self._status_at < REPEAT_S:
            return
        self._last_status, self._status_at = status, now
        values = []
        for flag in flags:
            values += [KeyValue(key=f'{flag.factor}.intended', value=f'{flag.intended} {flag.unit}'.strip()),
                       KeyValue(key=f'{flag.factor}.measured', value=f'{flag.measured} {flag.unit}'.strip())]
        diag = DiagnosticStatus(level=status[0], name=TAKE_STATUS, message=status[1],
                                hardware_id=self.protocol.name, values=values)
        array = DiagnosticArray(status=[diag])
        array.header.stamp = self.get_clock().now().to_msg()
        self._diagnostics.publish(array)


    def destroy_node(self) -> None:
        if self.measurer is not None:
            self.measurer.close()
        super().destroy_node()


def main(args: list[str] | None = None) -> int:
    return run_node(lambda: ShotListNode(), args if args is not None else sys.argv)


if __name__ == '__main__':
    sys.exit(main())
