"""The robot profile's schema: one dataclass a section, fields with their defaults, rules and a comment each.
Adding a key means adding a field here; the validator (validate.py) reads the annotations."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ros_robodata.profile.validate import (
    _DERIVED,
    _file_safe_name,
    _fraction,
    _Invalid,
    _message_type,
    _no_repeats,
    _non_blank,
    _non_negative,
    _positive,
    _rule,
    _topic_name,
)

JOINT_STATE = 'sensor_msgs/msg/JointState'
WRENCH_STAMPED = 'geometry_msgs/msg/WrenchStamped'
IMAGE = 'sensor_msgs/msg/Image'
COMPRESSED_IMAGE = 'sensor_msgs/msg/CompressedImage'
POINT_CLOUD2 = 'sensor_msgs/msg/PointCloud2'
LASER_SCAN = 'sensor_msgs/msg/LaserScan'

Qos = Literal['auto', 'reliable', 'best_effort']
Storage = Literal['mcap', 'sqlite3']
Compression = Literal['zstd', 'none']



def _types(*allowed: str) -> Callable[[TopicSpec], None]:
    """A rule for a topic role that only makes sense with these message types."""

    def check(spec: TopicSpec) -> None:
        if spec.type not in allowed:
            raise _Invalid(f'expected {" or ".join(allowed)}, got {spec.type!r}', 'type')

    return check


@dataclass(frozen=True, kw_only=True)
class TopicSpec:
    """One topic to record, and what the quality checks should expect of it."""

    # ROS 2 topic name, e.g. /joint_states.
    topic: str = field(metadata=_rule(_topic_name))
    # Message type, e.g. sensor_msgs/msg/JointState.
    type: str = field(metadata=_rule(_message_type))
    # Expected rate; None: not checked.
    rate_hz: float | None = field(default=None, metadata=_rule(_positive))
    # 'auto' matches what the publisher offers.
    qos: Qos = 'auto'
    # Transient-local (like /tf_static): its last message is repeated into every episode.
    latched: bool = False


FLOAT64 = 'std_msgs/msg/Float64'
FLOAT32 = 'std_msgs/msg/Float32'
COMMAND_TYPES = (JOINT_STATE, FLOAT64, FLOAT32)


@dataclass(frozen=True, kw_only=True)
class GripperCommand:
    """What the operator commanded the gripper (a leader arm's gripper joint, a trigger): the segmenter tells a
    blocked close (contact) from a staged one, and a place from a slip, by it."""

    # A topic recorded under another role (actions, joint_states or extra): a JointState or a std_msgs Float64/32.
    topic: str = field(metadata=_rule(_topic_name))
    # The gripper joint's name when the topic is a JointState; None for a Float64/Float32 (its `data`).
    joint: str | None = field(default=None, metadata=_rule(_non_blank))
    # The command's value for fully open and fully closed, in its own units (a leader's 0..100, a trigger's 1..0).
    open_position: float
    closed_position: float

    def _validate(self) -> None:
        if self.open_position == self.closed_position:
            raise _Invalid(f'equals open_position ({self.open_position:g}): open and closed must differ',
                           'closed_position')


@dataclass(frozen=True, kw_only=True)
class GripperSpec(TopicSpec):
    """The gripper's joint state: the segmenter reads grasps and releases from its motion."""

    # Name of the finger joint in the JointState message.
    joint: str = field(metadata=_rule(_non_blank))
    # Joint position when fully open and fully closed; closed may be above or below open.
    open_position: float
    closed_position: float
    # Effort reported at full grip; None: unknown.
    max_effort: float | None = field(default=None, metadata=_rule(_positive))
    # The operator's gripper command, if the rig records one; None: the segmenter reads the fingers alone.
    command: GripperCommand | None = None

    def _validate(self) -> None:
        if self.open_position == self.closed_position:
            reason = f'equals open_position ({self.open_position:g}): open and closed must differ'
            raise _Invalid(reason, 'closed_position')


def _lux_model(value: str) -> None:
    if value not in LUX_MODELS:
        raise _Invalid(f'expected one of {", ".join(LUX_MODELS)}, got {value!r}')


LUX_MODELS = ('exposure_gain', 'brightness')


@dataclass(frozen=True, kw_only=True)
class LuxCalibrationSpec:
    """A camera's fitted light response, written by `robodata calibrate lux`: lux = a * x ** b, where x is the
    frame's mean 8-bit brightness divided by exposure x gain (model exposure_gain) or the brightness alone (model
    brightness: valid only at the fixed exposure and gain it was fitted at). Used for takes without a lux meter,
    marked as estimated with the fit's error; outside low..high (x 1.5) the light is "not measured"."""

    # exposure_gain or brightness (see above).
    model: str = field(metadata=_rule(_lux_model))
    # The fit's factor and exponent.
    a: float = field(metadata=_rule(_positive))
    b: float
    # The range of x the samples covered.
    low: float = field(metadata=_rule(_positive))
    high: float = field(metadata=_rule(_positive))
    # Takes fitted from, and the fit's residual in log10(lux) (0.05 is about +-12%).
    samples: int = field(metadata=_rule(_positive))
    rms_log10: float = field(metadata=_rule(_non_negative))
    # Where the camera publishes exposure and linear gain (std_msgs Float64/Float32), for model exposure_gain.
    exposure_topic: str | None = field(default=None, metadata=_rule(_topic_name))
    gain_topic: str | None = field(default=None, metadata=_rule(_topic_name))
    # When it was fitted (UTC, ISO 8601), from which dataset.
    fitted: str = ''

    def _validate(self) -> None:
        if self.high < self.low:
            raise _Invalid(f'is below low ({self.low:g})', 'high')
        if self.model == 'exposure_gain' and (self.exposure_topic is None or self.gain_topic is None):
            raise _Invalid('model exposure_gain needs exposure_topic and gain_topic', 'model')


@dataclass(frozen=True, kw_only=True)
class CameraSpec(TopicSpec):
    """A camera stream; `name` labels its frames in exports and reports."""

    # e.g. wrist: [a-z0-9_]+, unique among cameras; the role is camera/<name>.
    name: str = field(metadata=_rule(_file_safe_name))
    # The camera films people (operators, bystanders): its frames are personal data and are not exported (export
    # frames, export lerobot, review push) without --allow-pii or --blur-faces.
    pii: bool = False
    # Its light response, for takes without a lux meter (`robodata calibrate lux` writes it); None: not calibrated,
    # and such takes' light is "not measured".
    lux_calibration: LuxCalibrationSpec | None = None


@dataclass(frozen=True, kw_only=True)
class LidarSpec(TopicSpec):
    """A LiDAR stream; `name` labels its scans in exports and reports."""

    # e.g. top: [a-z0-9_]+, unique among lidars; the role is lidar/<name>.
    name: str = field(metadata=_rule(_file_safe_name))


@dataclass(frozen=True, kw_only=True)
class Robot:
    """Which rig this is."""

    # Identifies the rig in datasets, e.g. sim_cell_arm.
    name: str = field(metadata=_rule(_non_blank))
    description: str = ''
    # Joints in joint_states that belong to the arm; empty: all of them.
    arm_joints: list[str] = field(default_factory=list, metadata=_rule(_non_blank))
    # A joint whose position is the tool's height (a gantry's vertical axis), so the scorer can check
    # success.lift_height_m without a kinematic model; None: the height is unknown.
    height_joint: str | None = field(default=None, metadata=_rule(_non_blank))
    # The rig's fixed frame (RViz's Fixed Frame): live overlays (event labels, the quality panel) are drawn in it.
    base_frame: str = field(default='base_link', metadata=_rule(_non_blank))

    def _validate(self) -> None:
        _no_repeats('arm_joints', self.arm_joints, 'joint')
        if self.height_joint is not None and self.arm_joints and self.height_joint not in self.arm_joints:
            raise _Invalid(f'{self.height_joint!r} is not one of arm_joints', 'height_joint')


@dataclass(frozen=True, kw_only=True)
class Topics:
    """What to record, by role: the role tells later stages how to read each stream."""

    # The arm's joints; None for a rig without an arm (a camera-only capture studio, a vehicle).
    joint_states: TopicSpec | None = field(default=None, metadata=_rule(_types(JOINT_STATE)))
    # Operator commands from the teleop device, any type.
    actions: TopicSpec | None = None
    gripper: GripperSpec | None = field(default=None, metadata=_rule(_types(JOINT_STATE)))
    # Wrist force/torque.
    wrench: TopicSpec | None = field(default=None, metadata=_rule(_types(WRENCH_STAMPED)))
    cameras: list[CameraSpec] = field(default_factory=list, metadata=_rule(_types(IMAGE, COMPRESSED_IMAGE)))
    lidars: list[LidarSpec] = field(default_factory=list, metadata=_rule(_types(POINT_CLOUD2, LASER_SCAN)))
    # Anything else to record (tf, tf_static, camera_info, ...).
    extra: list[TopicSpec] = field(default_factory=list)

    def entries(self) -> Iterator[tuple[str, str, TopicSpec]]:
        """(key under `topics`, role, spec) for every topic, in a stable order."""
        for role in ('joint_states', 'actions', 'gripper', 'wrench'):
            spec = getattr(self, role)
            if spec is not None:
                yield role, role, spec
        for i, camera in enumerate(self.cameras):
            yield f'cameras[{i}]', f'camera/{camera.name}', camera
        for i, lidar in enumerate(self.lidars):
            yield f'lidars[{i}]', f'lidar/{lidar.name}', lidar
        for i, spec in enumerate(self.extra):
            yield f'extra[{i}]', 'extra', spec

    def _validate(self) -> None:
        if next(self.entries(), None) is None:
            raise _Invalid('names no topic at all: give at least one of joint_states, cameras, lidars, wrench, ...')
        _no_repeats('cameras', [c.name for c in self.cameras], 'name', suffix='.name')
        _no_repeats('lidars', [lidar.name for lidar in self.lidars], 'name', suffix='.name')
        seen: dict[str, str] = {}
        for key, role, spec in self.entries():
            if spec.topic in seen:
                if role == 'gripper' and self.gripper_in_joint_states:
                    continue  # many rigs publish the gripper joint in /joint_states: recorded once
                raise _Invalid(f'{spec.topic!r} is already recorded as {seen[spec.topic]}', f'{key}.topic')
            seen[spec.topic] = role
        command = self.gripper.command if self.gripper is not None else None
        if command is not None:
            where = {spec.topic: spec for key, _, spec in self.entries() if key != 'gripper'}
            commanded = where.get(command.topic)
            if commanded is None:
                raise _Invalid(f'{command.topic!r} is not recorded: list it under actions, joint_states or extra',
                               'gripper.command.topic')
            if commanded.type not in COMMAND_TYPES:
                raise _Invalid(f'{command.topic!r} is a {commanded.type}: a gripper command is read from a '
                               f'{", ".join(COMMAND_TYPES)}', 'gripper.command.topic')
            if (commanded.type == JOINT_STATE) != (command.joint is not None):
                why = ('name the gripper joint in that JointState' if command.joint is None else
                       f'{commanded.type} has no joints: leave joint out')
                raise _Invalid(why, 'gripper.command.joint')

    @property
    def gripper_in_joint_states(self) -> bool:
        """True when the gripper's joint is read from the joint_states topic itself."""
        return (self.gripper is not None and self.joint_states is not None
                and self.gripper.topic == self.joint_states.topic)


@dataclass(frozen=True, kw_only=True)
class Recording:
    """How episodes are written to disk."""

    # rosbag2 storage plugin.
    storage: Storage = 'mcap'
    # MCAP chunk compression (ignored by sqlite3).
    compression: Compression = 'zstd'
    # Seconds of data from before the start key that go into the episode.
    pre_roll_s: float = field(default=2.0, metadata=_rule(_non_negative))
    # An episode still open after this long is closed.
    max_episode_s: float = field(default=600.0, metadata=_rule(_positive))
    # At most this much recorded data is lost on a crash.
    flush_interval_s: float = field(default=1.0, metadata=_rule(_positive))
    # A stop sooner than this after the start is refused, with a word: the start key pressed twice (an episode of
    # pre-roll only). A discard is always taken.
    min_episode_s: float = field(default=1.0, metadata=_rule(_non_negative))
    # The recorder warns (keys screen, /diagnostics) when the dataset's disk holds less than this many seconds of
    # recording at the rig's measured write rate.
    disk_warn_s: float = field(default=120.0, metadata=_rule(_positive))


@dataclass(frozen=True, kw_only=True)
class Segmenter:
    """Thresholds for grasp/contact/release events; None derives them from the signals."""

    # Gripper speed (position units per second) that counts as closing or opening.
    gripper_velocity_threshold: float | None = field(default=None, metadata=_rule(_positive))
    # Wrist force (N) that counts as contact.
    contact_force_threshold_n: float | None = field(default=None, metadata=_rule(_positive))
    # Events of one kind closer together than this are one event.
    min_event_gap_s: float = field(default=0.1, metadata=_rule(_non_negative))


@dataclass(frozen=True, kw_only=True)
class Quality:
    """Limits for the live and offline data-quality checks."""

    # Warn when a topic runs slower than (1 - this) x its rate_hz.
    rate_tolerance: float = field(default=0.2, metadata=_rule(_fraction))
    # Largest gap between the header stamps of streams that should be in sync.
    max_sync_skew_ms: float = field(default=50.0, metadata=_rule(_positive))
    # Largest delay from header stamp to receive time.
    max_latency_ms: float = field(default=100.0, metadata=_rule(_positive))
    # A topic quiet for this long is reported silent.
    silent_after_s: float = field(default=1.0, metadata=_rule(_positive))
    # Image sharpness below this warns of blur; None: derived from the frames.
    blur_threshold: float | None = field(default=None, metadata=_rule(_positive))
    # Wrist force (N) above this warns; None: not checked.
    max_force_n: float | None = field(default=None, metadata=_rule(_positive))
    # An episode shorter than this is an error (a start/stop slip of the operator's finger).
    min_episode_s: float = field(default=1.0, metadata=_rule(_non_negative))
    # The arm standing still longer than this in all (s) warns; None: idle time is information, not a fault.
    max_idle_s: float | None = field(default=None, metadata=_rule(_positive))
    # Demonstrations of a task compare their arm paths relative to each demo's own mean pose (the task is done
    # wherever the object happens to be), not in absolute joint positions.
    consistency_relative: bool = False


@dataclass(frozen=True, kw_only=True)
class Success:
    """When an episode counts as a success (for scoring and outcome suggestions)."""

    # The object must rise this high (m) while grasped; None: lift not checked.
    lift_height_m: float | None = field(default=None, metadata=_rule(_positive))
    # The grasp must hold this long (s).
    hold_s: float = field(default=0.5, metadata=_rule(_non_negative))
    # The gripper must be open again at the end (the object was put down).
    gripper_open_at_end: bool = True


@dataclass(frozen=True, kw_only=True)
class Profile:
    """A validated robot profile: what the file says, with every default filled in. Every stage reads the rig
    through it (which topic is the arm, the gripper, each camera), so one file describes one robot.

    Made by load_profile() or profile_from_dict(), which check it.

    Args:
        robot: which rig this is (its name, arm joints, height joint, fixed frame).
        topics: what to record, by role (joint states, gripper, wrench, cameras, LiDARs, extras).
        recording: how episodes are written to disk (storage, pre-roll, limits).
        segmenter: thresholds for grasp, contact and release events; None ones come from the signals.
        quality: limits for the live and offline data-quality checks.
        success: when an episode counts as a success.
        source: the file it came from, or '<dict>'.
        sha256: the hash of its canonical content, so a dataset knows which profile recorded it.
    """

    robot: Robot
    topics: Topics
    recording: Recording = field(default_factory=Recording)
    segmenter: Segmenter = field(default_factory=Segmenter)
    quality: Quality = field(default_factory=Quality)
    success: Success = field(default_factory=Success)
    source: Path = field(metadata=_DERIVED)  # the file it came from, or '<dict>'
    sha256: str = field(metadata=_DERIVED)  # of the canonical JSON of to_dict()

    def all_topics(self) -> list[tuple[str, TopicSpec]]:
        """(role, spec) for every topic to record: joint_states, actions, gripper, wrench,
        camera/<name>..., lidar/<name>..., extra..., in that order: what a recorder subscribes to."""
        shared = self.topics.gripper_in_joint_states
        return [(role, spec) for _, role, spec in self.topics.entries() if not (shared and role == 'gripper')]

    def to_dict(self) -> dict[str, Any]:
        """The content as plain data (no source, no hash); profile_from_dict() reads it back."""
        return {
            f.name: dataclasses.asdict(getattr(self, f.name))
            for f in dataclasses.fields(self)
            if not f.metadata.get('derived')
        }

    def _validate(self) -> None:
        if self.topics.joint_states is None:
            for key in ('arm_joints', 'height_joint'):
                if getattr(self.robot, key):
                    raise _Invalid('names joints, but topics.joint_states is not given', f'robot.{key}')
        gripper = self.topics.gripper
        if gripper is not None and gripper.joint in self.robot.arm_joints:
            index = self.robot.arm_joints.index(gripper.joint)
            reason = f'{gripper.joint!r} is the gripper joint (topics.gripper.joint), not an arm joint'
            raise _Invalid(reason, f'robot.arm_joints[{index}]')


