"""What an export of frames will hold, checked against the profile before any file is written: the reference
camera whose frames define the export, every other sensor paired to it, and the settings that decide the output
(an episode exported under other settings is redone)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from ros_robodata.errors import RobodataError
from ros_robodata.export.face_blur import DETECTOR
from ros_robodata.export.pii_guard import check_pii
from ros_robodata.export.schedule import ScheduleSpec
from ros_robodata.profile import GripperSpec, Profile

IMAGE_FORMATS = ('jpg', 'png')
JOINT_STATES = 'joint_states'
GRIPPER = 'gripper'


def sanitize_name(text: str) -> str:
    """Lowercase letters, digits and '_' only: safe as a folder name on every filesystem."""
    name = re.sub(r'[^a-z0-9_]', '_', str(text).lower()).strip('_')
    if not name:
        raise RobodataError(f'sensor name {text!r} has nothing usable as a file name')
    return name


@dataclass(frozen=True)
class ExportOptions:
    """What `robodata export frames` was asked for: which sensors' frames go to a labeling tool, and how;
    validated against the profile by plan_export().

    Args:
        schedule: which frames of the reference camera (every frame, a time step, every Nth, around events).
        cameras: the profile camera names to export; empty: all.
        reference: the camera whose frame stamps define the frames; None: the first one selected.
        lidar: export LiDAR scans too, as binary PCD.
        lidar_voxel: voxel size in metres to downsample each scan; None: every point.
        lidar_crop: keep points in (xmin, ymin, zmin, xmax, ymax, zmax), sensor frame, metres; None: all.
        image_format: 'jpg' or 'png' (16-bit mono is always PNG).
        tolerance_ns: the largest stamp offset between the reference frame and another sensor's sample.
        jpeg_quality: JPEG quality 1..100.
        allow_pii: export cameras the profile marks `pii: true` as they are (the caller audits it).
        blur_faces: blur every face found in every exported image (and so export pii cameras too).
    """

    schedule: ScheduleSpec = field(default_factory=ScheduleSpec)
    cameras: tuple[str, ...] = ()  # profile camera names; empty: all
    reference: str | None = None  # camera whose stamps define frames; None: the first selected
    lidar: bool = False
    lidar_voxel: float | None = None
    lidar_crop: tuple[float, float, float, float, float, float] | None = None
    image_format: str = 'jpg'
    tolerance_ns: int = 50_000_000
    jpeg_quality: int = 95
    allow_pii: bool = False  # export pii cameras as they are
    blur_faces: bool = False  # blur every face in every exported image


@dataclass(frozen=True)
class Sensor:
    """One exported stream: `name` is its folder and its key in the manifest."""

    name: str
    kind: str  # 'camera' | 'lidar' | 'joint_states' | 'gripper'
    topic: str
    msgtype: str


@dataclass(frozen=True)
class ExportPlan:
    """Options checked against the profile: the reference camera and every other sensor, in a fixed order."""

    options: ExportOptions
    reference: Sensor
    sensors: tuple[Sensor, ...]
    cameras: tuple[str, ...]
    gripper: GripperSpec | None
    dataset: str = ''
    pii: tuple[str, ...] = ()  # the cameras exported that the profile marks pii

    def settings(self) -> dict[str, Any]:
        """Everything that decides the output; an episode exported under other settings is redone."""
        o = self.options
        blurred = {'blur_faces': DETECTOR} if o.blur_faces else {}  # absent when off: earlier exports stay current
        return {
            'dataset': self.dataset,
            'schedule': {**o.schedule.to_json(), 'cameras': list(self.cameras), 'lidar': o.lidar,
                         'lidar_voxel': o.lidar_voxel,
                         'lidar_crop': None if o.lidar_crop is None else list(o.lidar_crop), 'format': o.image_format,
                         **blurred},
            'sync': {'reference': self.reference.name, 'tolerance_ms': o.tolerance_ns / 1e6},
            'sensors': [{'name': s.name, 'topic': s.topic} for s in (self.reference, *self.sensors)],
            'jpeg_quality': o.jpeg_quality,
        }


def plan_export(profile: Profile, options: ExportOptions, dataset: str = '') -> ExportPlan:
    """Check the options against the profile; one-line RobodataError for anything that cannot work.

    Args:
        profile: the robot profile the episodes were recorded with.
        options: what the export was asked for.
        dataset: the dataset's name, kept in the settings.

    Raises:
        RobodataError: an option names what the profile lacks or is out of range.
        ExportError: a camera chosen is marked pii and neither allow_pii nor blur_faces is set.
    """
    topics = profile.topics
    if not topics.cameras:
        raise RobodataError(f'{profile.source}: the profile names no camera: nothing to export frames from')
    known = [c.name for c in topics.cameras]
    if unknown := [c for c in options.cameras if c not in known]:
        raise RobodataError(f'--cameras: unknown camera {", ".join(map(repr, unknown))}; the profile has: '
                            f'{", ".join(known)}')
    chosen = [c for c in topics.cameras if not options.cameras or c.name in options.cameras]
    reference = options.reference or chosen[0].name
    if reference not in known:
        raise RobodataError(f'--reference: unknown camera {reference!r}; the profile has: {", ".join(known)}')
    if reference not in [c.name for c in chosen]:
        raise RobodataError(f'--reference {reference!r} is not among --cameras {",".join(options.cameras)}')
    if options.image_format not in IMAGE_FORMATS:
        raise RobodataError(f'--format: {options.image_format!r} is not supported; use jpg or png')
    if options.tolerance_ns < 0:
        raise RobodataError('--tolerance must be 0 or more')
    if not 1 <= options.jpeg_quality <= 100:
        raise RobodataError(f'jpeg quality must be 1..100, got {options.jpeg_quality}')
    if not options.lidar and (options.lidar_voxel is not None or options.lidar_crop is not None):
        raise RobodataError('--lidar-voxel and --lidar-crop need --lidar')
    if options.lidar and not topics.lidars:
        raise RobodataError(f'--lidar: the profile {profile.source} names no LiDAR')
    if options.lidar_voxel is not None and not (math.isfinite(options.lidar_voxel) and options.lidar_voxel > 0):
        raise RobodataError(f'--lidar-voxel must be greater than 0, got {options.lidar_voxel}')
    if options.lidar_crop is not None:
        crop = options.lidar_crop
        if len(crop) != 6 or not all(math.isfinite(v) for v in crop) or not all(crop[i] < crop[i + 3]
                                                                                 for i in range(3)):
            raise RobodataError('--lidar-crop needs xmin,ymin,zmin,xmax,ymax,zmax with each min below its max')
    pii = check_pii(profile, [c.name for c in chosen], allow_pii=options.allow_pii, blur_faces=options.blur_faces)
    by_name = {c.name: c for c in chosen}
    ref = by_name[reference]
    ref_sensor = Sensor(f'camera_{sanitize_name(ref.name)}', 'camera', ref.topic, ref.type)
    others = [Sensor(f'camera_{sanitize_name(c.name)}', 'camera', c.topic, c.type) for c in chosen if c is not ref]
    if options.lidar:
        others += [Sensor(f'lidar_{sanitize_name(s.name)}', 'lidar', s.topic, s.type) for s in topics.lidars]
    if topics.joint_states is not None:  # a rig without an arm has no robot state to pair
        others.append(Sensor(JOINT_STATES, JOINT_STATES, topics.joint_states.topic, topics.joint_states.type))
    if topics.gripper is not None:
        others.append(Sensor(GRIPPER, GRIPPER, topics.gripper.topic, topics.gripper.type))
    names = [ref_sensor.name, *(s.name for s in others)]
    if len(set(names)) != len(names):
        raise RobodataError(f'sensor names collide once made file-safe: {", ".join(names)}')
    return ExportPlan(options, ref_sensor, tuple(others), tuple(c.name for c in chosen), topics.gripper,
                      dataset, tuple(pii))
