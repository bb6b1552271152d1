"""`robodata export frames`: episodes as stop-motion sequences of camera images and LiDAR scans for labeling.

Each bag is streamed once. Reference-camera frames are chosen by the schedule (schedule.py), every other
sensor is paired to them by header stamp (sync.py), and each settled frame is written at once, so memory
holds a few frames and a tolerance's worth of samples whatever the episode's length.

Layout, all names derived from the profile's camera/LiDAR names (never from topic names):

    DIR/manifest.json
    DIR/episodes/<episode_id>/frames.json             written last: its presence means the episode is whole
    DIR/episodes/<episode_id>/camera_<name>/<index:06d>.jpg|png
    DIR/episodes/<episode_id>/lidar_<name>/<index:06d>.pcd

Reruns are idempotent: an episode whose frames.json matches the settings and whose files match their
checksums is skipped untouched; anything else is redone, rewriting only files whose bytes change.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ros_robodata.bag.reader import BagMessage, BagReader
from ros_robodata.bag.sensor_files import cloud_points, encode_frame_image, write_pcd
from ros_robodata.bag.types import typestore
from ros_robodata.dataset.episode import check_episode_id
from ros_robodata.errors import BagError, RobodataError
from ros_robodata.events.offline import EventsDoc
from ros_robodata.export.export_plan import (
    GRIPPER,
    JOINT_STATES,
    ExportOptions,
    ExportPlan,
    Sensor,
    plan_export,
    sanitize_name,
)
from ros_robodata.export.face_blur import FaceBlur, blurred_frame_image
from ros_robodata.export.manifest import (
    EPISODE_FORMAT,
    FRAMES_FILE,
    write_json_atomic,
)
from ros_robodata.export.schedule import FrameScheduler
from ros_robodata.export.sensor_pairing import Frame, Match, Sample, Synchronizer
from ros_robodata.files import safe_path, write_atomic
from ros_robodata.signals import header_stamp_ns, read_gripper, read_joints

_SENSOR_DIR = re.compile(r'^(camera|lidar)_[a-z0-9_]+$')
_FRAME_FILE = re.compile(r'^[0-9]{6}\.(jpg|png|pcd)$')
STAGING_DIR = '.staging'  # an episode exported again is written here first, then swapped in whole


# -- one episode -------------------------------------------------------------------------------------------


def export_episode(bag: Path, episode_id: str, out_dir: Path, plan: ExportPlan, *,
                   events: EventsDoc | None = None, task: str = '', outcome: str = '') -> dict[str, Any]:
    """Export one bag into DIR/episodes/<episode_id>/ and return (and write, last) its frames.json."""
    with BagReader(bag) as reader:
        if plan.reference.topic not in reader.topics:
            raise BagError(f'{bag}: no {plan.reference.topic} (the reference camera) in this bag')
        export = EpisodeExport(episode_id, out_dir, plan, present=set(reader.topics), events=events, task=task,
                               outcome=outcome, start_ns=reader.start_ns or 0, decode=reader.decode)
        for message in reader.messages(export.topics):
            export.add(message.topic, message.msgtype, message.t_ns, message.data)
        export.bag_notes = list(reader.notes)  # a damaged chunk's frames are missing: the export says so
        return export.finish()


class EpisodeExport:
    """One episode's export fed message by message (from a bag, or live from a running session): frames are
    written as soon as their pairing is settled; finish() writes frames.json last."""

    def __init__(self, episode_id: str, out_dir: Path, plan: ExportPlan, *, present: set[str] | None = None,
                 events: EventsDoc | None = None, task: str = '', outcome: str = '', start_ns: int = 0,
                 decode: Callable[[BagMessage], Any] | None = None) -> None:
        check_episode_id(episode_id)
        self.episode_id, self.plan, self.task, self.outcome = episode_id, plan, task, outcome
        self.episode_dir = safe_path(out_dir, 'episodes', episode_id)
        (self.episode_dir / FRAMES_FILE).unlink(missing_ok=True)  # until written again the episode is unfinished
        self.episode_dir.mkdir(parents=True, exist_ok=True)
        options = plan.options
        if options.schedule.around_events and events is None:
            raise RobodataError(f'{episode_id}: no events.json: run `robodata segment` first (--around-events '
                                'needs it)')
        listed = events.get('events', []) if events is not None else []
        segments = events.get('timeline', []) if events is not None else []  # events.json of older robodata: none
        event_list = [(str(e['kind']), int(e['t_ns'])) for e in listed]
        timeline = [(str(s['name']), int(s['start_ns']), int(s['end_ns'])) for s in segments]
        self._writer = _FrameWriter(out_dir, self.episode_dir, episode_id, plan, event_list, timeline,
                                    decode or _decode)
        available = present if present is not None else {s.topic for s in (plan.reference, *plan.sensors)}
        sensors = [s for s in plan.sensors if s.topic in available]
        self._writer.missing = [s.name for s in plan.sensors if s.topic not in available]
        self._writer.start_ns = start_ns
        self._by_topic: dict[str, list[Sensor]] = {}
        for sensor in sensors:
            self._by_topic.setdefault(sensor.topic, []).append(sensor)
        self.topics = list(dict.fromkeys([plan.reference.topic, *self._by_topic]))
        self._scheduler: FrameScheduler[tuple[int, Sample]] = FrameScheduler(options.schedule, event_list)
        self._sync = Synchronizer([s.name for s in sensors], options.tolerance_ns)
        self.reference_frames = 0
        self.bag_notes: list[str] = []  # how the bag was read (damage, a cut-off file): kept in frames.json

    def add(self, topic: str, msgtype: str, t_ns: int, data: bytes | memoryview) -> int:
        """One message (CDR bytes, receive time t_ns); returns how many frames this settled and wrote."""
        raw = data if isinstance(data, bytes) else bytes(data)
        stamp = header_stamp_ns(raw)
        sample = Sample(t_ns if stamp is None else stamp, t_ns, BagMessage(topic, msgtype, t_ns, raw))
        if not self._writer.start_ns:
            self._writer.start_ns = t_ns
        if topic == self.plan.reference.topic:
            for index, chosen in self._scheduler.push(sample.stamp_ns, (self.reference_frames, sample)):
                self._sync.add_frame(chosen.stamp_ns, (index, chosen))
            self._sync.set_floor(self._scheduler.floor_ns)
            self.reference_frames += 1
        for sensor in self._by_topic.get(topic, ()):
            self._sync.add_sample(sensor.name, sample)
        frames = self._sync.advance(t_ns)
        for frame in frames:
            self._writer.write(frame)
        return len(frames)

    @property
    def frames(self) -> list[dict[str, Any]]:
        return self._writer.frames

    def finish(self) -> dict[str, Any]:
        """The remaining frames, stale files removed, then frames.json (written last)."""
        for index, chosen in self._scheduler.finish():
            self._sync.add_frame(chosen.stamp_ns, (index, chosen))
        for frame in self._sync.finish():
            self._writer.write(frame)
        self._writer.remove_stale()
        doc = {'format': EPISODE_FORMAT, 'episode_id': self.episode_id, 'task': self.task, 'outcome': self.outcome,
               'settings': self.plan.settings(), 'start_ns': self._writer.start_ns,
               'reference_frames': self.reference_frames, 'missing_sensors': self._writer.missing,
               'frames': self._writer.frames}
        if self.bag_notes:
            doc['bag_notes'] = list(self.bag_notes)
        if self._writer.blur is not None:  # how many faces this episode's images had blurred
            doc['faces_blurred'] = self._writer.blur.faces
        write_json_atomic(self.episode_dir / FRAMES_FILE, doc)
        return doc


def _decode(message: BagMessage) -> Any:
    return typestore().deserialize_cdr(message.data, message.msgtype)


class _FrameWriter:
    """Turns settled frames into files and manifest entries."""

    def __init__(self, out_dir: Path, episode_dir: Path, episode_id: str, plan: ExportPlan,
                 events: list[tuple[str, int]], timeline: list[tuple[str, int, int]],
                 decode: Callable[[BagMessage], Any]) -> None:
        self.out_dir, self.episode_dir, self.episode_id, self.plan = out_dir, episode_dir, episode_id, plan
        self.events, self.timeline = events, timeline
        self.sensors = {s.name: s for s in (plan.reference, *plan.sensors)}
        self.decode = decode
        self.missing: list[str] = []
        self.start_ns = 0
        self.frames: list[dict[str, Any]] = []
        self.written: set[Path] = set()
        self._scans: dict[tuple[str, int], dict[str, Any]] = {}
        self.blur = FaceBlur() if plan.options.blur_faces else None

    def write(self, frame: Frame) -> None:
        index = len(self.frames)
        source_index, reference = frame.payload
        sensors = {self.plan.reference.name: self._file(self.plan.reference, reference, index, 0)}
        unmatched = []
        joint_state = gripper = None
        tolerance = self.plan.options.tolerance_ns
        # A sensor whose topic is absent from the bag is listed once per episode (missing_sensors), not per frame.
        for match in sorted(frame.matches.values(), key=lambda m: self._order(m.sensor)):
            if match.sample is None or match.offset_ns is None:
                offset = None if match.offset_ns is None else _ms(match.offset_ns)
                unmatched.append({'sensor': match.sensor, 'nearest_offset_ms': offset})
                continue
            sensor = self.sensors[match.sensor]
            if sensor.kind == JOINT_STATES:
                joint_state = self._joint_state(match)
            elif sensor.kind == GRIPPER:
                gripper = self._gripper(match)
            else:
                sensors[sensor.name] = self._file(sensor, match.sample, index, match.offset_ns)
        active = [name for name, start, end in self.timeline if start <= frame.stamp_ns <= end]
        active += [kind for kind, t in sorted(self.events, key=lambda e: e[1]) if abs(t - frame.stamp_ns) <= tolerance]
        self.frames.append({
            'frame_id': f'{self.episode_id}/{index:06d}', 'episode_id': self.episode_id, 'index': index,
            'source_index': source_index, 't_ns': frame.stamp_ns,
            't_s': round((frame.stamp_ns - self.start_ns) / 1e9, 6), 'sensors': sensors, 'unmatched': unmatched,
            'joint_state': joint_state, 'gripper': gripper, 'events_active': list(dict.fromkeys(active)),
        })

    def _order(self, name: str) -> int:
        names = [s.name for s in self.plan.sensors]
        return names.index(name) if name in names else len(names)

    def _file(self, sensor: Sensor, sample: Sample, index: int, offset_ns: int) -> dict[str, Any]:
        folder = safe_path(self.episode_dir, sensor.name)
        folder.mkdir(exist_ok=True)
        entry: dict[str, Any] = {'topic': sensor.topic, 'stamp_ns': sample.stamp_ns, 'offset_ms': _ms(offset_ns)}
        if sensor.kind == 'camera':
            options = self.plan.options
            if self.blur is not None:
                data, ext, info = blurred_frame_image(self.decode(sample.payload), options.image_format,
                                                      options.jpeg_quality, self.blur)
            else:
                data, ext, info = encode_frame_image(self.decode(sample.payload), options.image_format,
                                                     options.jpeg_quality)
            path = safe_path(folder, f'{index:06d}.{ext}')
            digest = _put_bytes(path, data)
        else:
            # A 10 Hz scan is the nearest partner of several 30 Hz frames: it is written once, named by the
            # index of the first frame that took it, and shared by the others.
            key = (sensor.name, sample.stamp_ns)
            shared = self._scans.get(key)
            if shared is not None:
                return {**entry, **shared}
            options = self.plan.options
            points, fields, source = cloud_points(self.decode(sample.payload), sensor.msgtype,
                                                  crop=options.lidar_crop, voxel=options.lidar_voxel)
            path = safe_path(folder, f'{index:06d}.pcd')
            digest = write_pcd(path, points)
            info = {'points': int(points.shape[0]), 'source_points': source, 'fields': fields}
            self._scans[key] = {'file': path.relative_to(self.out_dir).as_posix(), 'sha256': digest, **info}
            if len(self._scans) > 64:  # frames come in stamp order: older scans will not be asked for again
                del self._scans[next(iter(self._scans))]
        self.written.add(path)
        entry.update({'file': path.relative_to(self.out_dir).as_posix(), 'sha256': digest, **info})
        return entry

    def _joint_state(self, match: Match) -> dict[str, Any]:
        assert match.sample is not None and match.offset_ns is not None
        payload = match.sample.payload
        joints = read_joints(payload.data, lambda: self.decode(payload))
        return {'names': joints.names, 'position': [_num(v) for v in joints.position],
                'stamp_ns': match.sample.stamp_ns, 'offset_ms': _ms(match.offset_ns)}

    def _gripper(self, match: Match) -> dict[str, Any] | None:
        spec = self.plan.gripper
        assert spec is not None and match.sample is not None and match.offset_ns is not None
        payload = match.sample.payload
        reading = read_gripper(payload.data, spec.joint, lambda: self.decode(payload))
        if reading is None:
            return None  # this message does not carry the finger joint
        position = reading.position
        stroke = spec.open_position - spec.closed_position
        opening = None if not math.isfinite(position) else min(1.0, max(0.0, (position - spec.closed_position)
                                                                            / stroke))
        return {'position': _num(position), 'opening': None if opening is None else round(opening, 4),
                'stamp_ns': match.sample.stamp_ns, 'offset_ms': _ms(match.offset_ns)}

    def remove_stale(self) -> None:
        """Files of an earlier export (other settings, more frames) that this one did not write."""
        if not self.episode_dir.is_dir():
            return
        for folder in sorted(self.episode_dir.iterdir()):
            if not folder.is_dir() or not _SENSOR_DIR.match(folder.name):
                continue
            for path in sorted(folder.iterdir()):
                stale = _FRAME_FILE.match(path.name) and path not in self.written
                if stale or path.name.endswith('.partial'):
                    path.unlink()


# -- files --------------------------------------------------------------------------------------------------


def _put_bytes(path: Path, data: bytes) -> str:
    """Write unless the file already holds exactly these bytes (a rerun leaves it and its mtime alone)."""
    write_atomic(path, data)
    return hashlib.sha256(data).hexdigest()


def _ms(ns: int) -> float:
    return round(ns / 1e6, 3)


def _num(value: float) -> float | None:
    return None if not math.isfinite(value) else float(value)


__all__ = ['STAGING_DIR', 'EpisodeExport', 'ExportOptions', 'ExportPlan', 'Sensor', 'export_episode', 'plan_export',
           'sanitize_name']
