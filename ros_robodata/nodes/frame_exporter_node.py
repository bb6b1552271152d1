"""Node `frame_exporter`: labeling frames written live during a session, the same files and manifest as
`robodata export frames` (ros_robodata.export does the work).

Subscribes raw to the reference camera and the sensors it pairs; at each episode start (from the recorder's
/robodata/episode_events) it begins DIR/episodes/<id>/, writes frames as their pairing settles, and at the
stop writes frames.json and refreshes DIR/manifest.json. A discarded episode's frames are deleted. Encoding
runs on a worker thread fed through a bounded queue, so the intake (shared with a recorder in a session) never
waits on JPEG or PCD writing; if the queue overflows, messages are counted as dropped and reported.
"""

from __future__ import annotations

import queue
import shutil
import sys
import threading
from pathlib import Path
from typing import Any

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from ros_robodata.errors import RobodataError
from ros_robodata.export.frames import EpisodeExport, ExportOptions, plan_export
from ros_robodata.export.manifest import refresh_manifest
from ros_robodata.export.schedule import ScheduleSpec
from ros_robodata.msg import EpisodeEvent
from ros_robodata.nodes.node_runtime import TopicDiscovery, clock_of, declare, run_node
from ros_robodata.outputs import prepare_export_dir
from ros_robodata.profile import load_profile
from ros_robodata.vocabulary import parse_duration

EPISODE_EVENTS_TOPIC = '/robodata/episode_events'
_QUEUE = 2000  # messages (about 2 s of a rig's camera, joint and LiDAR traffic)


class FrameExporterNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__('frame_exporter', **kwargs)
        profile_path = declare(self, 'profile', '', 'Robot profile YAML: the cameras and LiDARs (required)')
        out = declare(self, 'out', '', 'Output folder, as `robodata export frames --out` (required)')
        every = declare(self, 'every', '0.5s', 'One frame per time step, e.g. 0.5s or 500ms (empty: every_n)')
        every_n = declare(self, 'every_n', 0, 'Every Nth reference frame (0: use `every`)')
        cameras = declare(self, 'cameras', '', 'Comma-separated camera names (empty: all)')
        reference = declare(self, 'reference', '', 'Camera whose frames define the export (empty: the first)')
        lidar = declare(self, 'lidar', False, 'Also write LiDAR scans as binary PCD')
        image_format = declare(self, 'format', 'jpg', 'Image format: jpg or png')
        jpeg_quality = declare(self, 'jpeg_quality', ExportOptions.jpeg_quality, 'JPEG quality 1..100')
        tolerance = declare(self, 'tolerance', '50ms', 'Largest stamp offset for a pairing')
        if not profile_path or not out:
            raise RobodataError('parameters `profile` and `out` are required')
        self.profile = load_profile(profile_path)
        schedule = ScheduleSpec(every_ns=parse_duration(every, 'every') if every and not every_n else None,
                                every_n=int(every_n) or None)
        options = ExportOptions(schedule=schedule, cameras=tuple(n for n in cameras.split(',') if n),
                                reference=reference or None, lidar=bool(lidar), image_format=image_format,
                                tolerance_ns=parse_duration(tolerance, 'tolerance'), jpeg_quality=int(jpeg_quality))
        self.plan = plan_export(self.profile, options, self.profile.robot.name)
        self.out = prepare_export_dir(Path(out), force=True)  # never into a dataset or a bag
        self._clock_ns = clock_of(self)
        self._queue: queue.Queue[tuple[str, ...] | tuple[str, str, str, int, bytes]] = queue.Queue(maxsize=_QUEUE)
        self.dropped = 0
        self.finished: list[str] = []
        self._export: EpisodeExport | None = None
        self._running = True
        self._worker = threading.Thread(target=self._work, name='frame-export', daemon=True)
        self._worker.start()
        latched = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.create_subscription(EpisodeEvent, EPISODE_EVENTS_TOPIC, self._on_episode, latched)
        specs = {spec.topic: spec for _, spec in self.profile.all_topics()}
        topics = dict.fromkeys([self.plan.reference.topic, *(s.topic for s in self.plan.sensors)])
        self._discovery = TopicDiscovery(self, {topic: specs[topic] for topic in topics}, self._subscribe)
        self.get_logger().info(f'exporting {", ".join(topics)} into {self.out} at each episode')

    def _subscribe(self, topic: str, spec: Any, qos: Any, msgclass: Any) -> None:
        if msgclass is None:
            self.get_logger().warning(f'cannot export {topic}: {spec.type} is not installed here')
            return
        self.create_subscription(msgclass, topic, self._receiver(topic, spec.type), qos, raw=True)

    def _receiver(self, topic: str, msgtype: str) -> Any:
        def receive(data: bytes) -> None:
            if self._export is None:
                return
            try:
                self._queue.put_nowait(('message', topic, msgtype, self._clock_ns(), data))
            except queue.Full:
                self.dropped += 1

        return receive

    def _on_episode(self, msg: EpisodeEvent) -> None:
        if msg.event == EpisodeEvent.START:
            self._queue.put(('start', msg.episode_id, msg.task))
        elif msg.event in (EpisodeEvent.STOP, EpisodeEvent.DISCARD):
            self._queue.put(('stop' if msg.event == EpisodeEvent.STOP else 'discard', msg.episode_id, msg.outcome))

    def _work(self) -> None:
        """Everything that touches files, in order, off the intake thread."""
        while self._running or not self._queue.empty():
            try:
                item = self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
            try:
                self._handle(item)
            except RobodataError as err:
                self.get_logger().error(f'frame export: {err}')
                self._export = None

    def _handle(self, item: tuple) -> None:
        kind = item[0]
        if kind == 'start':
            self._close('interrupted by a new start')
            self._export = EpisodeExport(item[1], self.out, self.plan, task=item[2])
        elif kind == 'message' and self._export is not None:
            _, topic, msgtype, t_ns, data = item
            self._export.add(topic, msgtype, t_ns, data)
        elif kind in ('stop', 'discard') and self._export is not None and self._export.episode_id == item[1]:
            if kind == 'discard':
                shutil.rmtree(self._export.episode_dir, ignore_errors=True)
                self._export = None
                refresh_manifest(self.out, self.plan.dataset, self.plan.settings())
                return
            self._export.outcome = item[2]
            self._close('stopped')

    def _close(self, why: str) -> None:
        export, self._export = self._export, None
        if export is None:
            return
        doc = export.finish()
        refresh_manifest(self.out, self.plan.dataset, self.plan.settings())
        self.finished.append(export.episode_id)
        dropped = f'; {self.dropped} message(s) dropped so far (queue full)' if self.dropped else ''
        self.get_logger().info(f'episode {export.episode_id} {why}: {len(doc["frames"])} frame(s) exported{dropped}')

    def destroy_node(self) -> None:
        self._running = False
        self._worker.join(timeout=10.0)
        if self._export is not None:  # Ctrl-C mid-episode: what was exported stays, with its frames.json
            self._close('interrupted')
        super().destroy_node()


def main(args: list[str] | None = None) -> int:
    return run_node(lambda: FrameExporterNode(), args if args is not None else sys.argv)


if __name__ == '__main__':
    sys.exit(main())
