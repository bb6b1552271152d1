"""The robot profile: one YAML file that describes a rig, checked before anything runs.

Every node and every CLI command takes the same file, so a mistake in it must stop the work at once
with one line naming the file, the key and the reason, instead of surfacing later as a silent topic
or an empty bag. The schema is the dataclasses below; a small validator walks their type
annotations, so adding a key means adding a field with a default and a comment. Rules beyond the
type ride on the field (`_rule`) or, when they involve several keys, in the class's `_validate`.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import math
import os
import re
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

import yaml

from ros_robodata.errors import ProfileError

JOINT_STATE = 'sensor_msgs/msg/JointState'
WRENCH_STAMPED = 'geometry_msgs/msg/WrenchStamped'
IMAGE = 'sensor_msgs/msg/Image'
COMPRESSED_IMAGE = 'sensor_msgs/msg/CompressedImage'
POINT_CLOUD2 = 'sensor_msgs/msg/PointCloud2'
LASER_SCAN = 'sensor_msgs/msg/LaserScan'

Qos = Literal['auto', 'reliable', 'best_effort']
Storage = Literal['mcap', 'sqlite3']
Compression = Literal['zstd', 'none']

T = TypeVar('T')


class _Invalid(Exception):
    """A value broke a rule; `key` is the dotted key at fault, relative to where it is caught."""

    def __init__(self, reason: str, key: str = '') -> None:
        super().__init__(reason)
        self.reason = reason
        self.key = key


def _join(path: str, key: str) -> str:
    """Dotted key of `key` under `path`; list indexes ('[2]') attach without a dot."""
    if not path or not key:
        return path or key
    return f'{path}{key}' if key.startswith('[') else f'{path}.{key}'


def _rule(check: Callable[[Any], None]) -> dict[str, Any]:
    """Field metadata: the value must pass `check` (each item, for a list; not called on null)."""
    return {'check': check}


# Profile fields that are not read from the file but computed from it.
_DERIVED = {'derived': True}


# -- rules -------------------------------------------------------------------------------------


def _positive(value: float) -> None:
    if value <= 0:
        raise _Invalid(f'must be greater than 0, got {value:g}')


def _non_negative(value: float) -> None:
    if value < 0:
        raise _Invalid(f'must be 0 or more, got {value:g}')


def _fraction(value: float) -> None:
    if not 0 <= value < 1:
        raise _Invalid(f'must be a fraction from 0 up to (not including) 1, got {value:g}')


def _non_blank(value: str) -> None:
    if not value.strip():
        raise _Invalid('must not be empty')


def _file_safe_name(value: str) -> None:
    """Camera and LiDAR names become role names and file names, so keep them plain."""
    if not re.fullmatch(r'[a-z0-9_]+', value):
        raise _Invalid(f'{value!r} is not a valid name: use lowercase letters, digits and _ only')


def topic_name_problem(name: str) -> str | None:
    """Why `name` is not a valid ROS 2 topic name, or None if it is."""
    if not name:
        return 'it is empty'
    if not (name[0] in '/~' or (name[0].isascii() and name[0].isalpha())):
        return "it must start with '/', '~' or a letter"
    bad = sorted(set(re.sub(r'[A-Za-z0-9_/~{}]', '', name)))
    if bad:
        return f'character {bad[0]!r} is not allowed (only letters, digits, _ / ~ {{}})'
    if '//' in name:
        return "it contains '//'"
    if name.endswith('/'):
        return "it ends with '/'"
    if '~' in name[1:]:
        return "'~' is only allowed as the first character"
    if name.startswith('~') and len(name) > 1 and name[1] != '/':
        return "'~' must be followed by '/'"
    if any(token[:1].isdigit() for token in name.split('/')):
        return 'a part of the name starts with a digit'
    if re.search(r'[{}]', re.sub(r'\{[A-Za-z0-9_]+\}', '', name)):
        return "unbalanced '{' or '}'"
    return None


def _topic_name(value: str) -> None:
    problem = topic_name_problem(value)
    if problem:
        raise _Invalid(f'{value!r} is not a valid ROS 2 topic name: {problem}')


def _message_type(value: str) -> None:
    if not re.fullmatch(r'[a-z][a-z0-9_]*/msg/[A-Z][A-Za-z0-9]*', value):
        raise _Invalid(f"expected a message type like 'sensor_msgs/msg/JointState', got {value!r}")


def _types(*allowed: str) -> Callable[[TopicSpec], None]:
    """A rule for a topic role that only makes sense with these message types."""

    def check(spec: TopicSpec) -> None:
        if spec.type not in allowed:
            raise _Invalid(f'expected {" or ".join(allowed)}, got {spec.type!r}', 'type')

    return check


# -- schema ------------------------------------------------------------------------------------


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

    def _validate(self) -> None:
        if self.open_position == self.closed_position:
            reason = f'equals open_position ({self.open_position:g}): open and closed must differ'
            raise _Invalid(reason, 'closed_position')


@dataclass(frozen=True, kw_only=True)
class CameraSpec(TopicSpec):
    """A camera stream; `name` labels its frames in exports and reports."""

    # e.g. wrist: [a-z0-9_]+, unique among cameras; the role is camera/<name>.
    name: str = field(metadata=_rule(_file_safe_name))


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
    """A validated robot profile: what the file says, with every default filled in."""

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
        camera/<name>..., lidar/<name>..., extra..., in that order."""
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


def _no_repeats(key: str, values: list[str], what: str, suffix: str = '') -> None:
    seen: set[str] = set()
    for i, value in enumerate(values):
        if value in seen:
            raise _Invalid(f'{what} {value!r} is listed twice', f'{key}[{i}]{suffix}')
        seen.add(value)


# -- validator ---------------------------------------------------------------------------------


def _show(value: object) -> str:
    """A value as the user wrote it in YAML, short enough for a one-line error."""
    if value is None:
        return 'null'
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, Mapping):
        return 'a mapping'
    if isinstance(value, list):
        return 'a list'
    text = repr(value) if isinstance(value, (str, int, float)) else str(value)
    return text if len(text) <= 60 else text[:57] + '...'


def _is_optional(tp: Any) -> bool:
    return get_origin(tp) in (Union, types.UnionType) and type(None) in get_args(tp)


def _is_container(tp: Any) -> bool:
    return get_origin(tp) is list or dataclasses.is_dataclass(tp)


def _scalar(tp: Any, value: object) -> Any:
    """Check a YAML scalar against a plain type: bool is never a number, float is never an int."""
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Invalid(f'expected a number, got {_show(value)}')
        if not math.isfinite(value):
            raise _Invalid(f'expected a finite number, got {_show(value)}')
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Invalid(f'expected a whole number, got {_show(value)}')
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise _Invalid(f'expected true or false, got {_show(value)}')
        return value
    if tp is str:
        if not isinstance(value, str):
            raise _Invalid(f'expected a string, got {_show(value)}')
        return value
    raise TypeError(f'profile schema uses an unsupported type: {tp!r}')


def _convert(tp: Any, value: object, key: str, check: Callable[[Any], None] | None) -> Any:
    """Value checked against annotation `tp` (and `check`), with nested mappings built."""
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        inner = [arg for arg in get_args(tp) if arg is not type(None)]
        if len(inner) != 1:
            raise TypeError(f'profile schema supports only `X | None` unions, not {tp!r}')
        if value is None and _is_optional(tp):
            return None
        return _convert(inner[0], value, key, check)
    if origin is list:
        if not isinstance(value, list):
            raise _Invalid(f'expected a list, got {_show(value)}', key)
        (item_tp,) = get_args(tp)
        return [_convert(item_tp, item, f'{key}[{i}]', check) for i, item in enumerate(value)]
    if origin is Literal:
        allowed = get_args(tp)
        if not isinstance(value, str) or value not in allowed:
            choices = ', '.join(repr(a) for a in allowed)
            raise _Invalid(f'expected one of {choices}, got {_show(value)}', key)
        result = value
    elif dataclasses.is_dataclass(tp):
        result = _build(tp, value, key)
    else:
        result = _at(key, _scalar, tp, value)
    if check is not None:
        _at(key, check, result)
    return result


def _at(key: str, fn: Callable[..., T], *args: Any) -> T:
    """Call `fn`; an _Invalid it raises gets `key` put in front of its own key."""
    try:
        return fn(*args)
    except _Invalid as exc:
        raise _Invalid(exc.reason, _join(key, exc.key)) from None


def _fields(cls: type, data: object, path: str) -> dict[str, Any]:
    """Keyword arguments for `cls` from a mapping, with unknown, missing and mistyped keys refused."""
    schema = {f.name: f for f in dataclasses.fields(cls) if not f.metadata.get('derived')}
    if not isinstance(data, Mapping):
        raise _Invalid(f'expected a mapping with keys {", ".join(schema)}; got {_show(data)}', path)
    for key in data:
        if not isinstance(key, str):
            raise _Invalid(f'keys must be strings, got {_show(key)}', path)
        if key not in schema:
            close = difflib.get_close_matches(key, list(schema), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ''
            raise _Invalid(f'unknown key{hint}; allowed: {", ".join(schema)}', _join(path, key))
    hints = get_type_hints(cls)
    values: dict[str, Any] = {}
    for name, f in schema.items():
        key = _join(path, name)
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        if name not in data:
            if not has_default:
                raise _Invalid('required key is missing', key)
            continue
        value = data[name]
        if value is None and has_default and _is_container(hints[name]):
            continue  # a section or list left empty (all entries commented out) keeps its default
        values[name] = _convert(hints[name], value, key, f.metadata.get('check'))
    return values


def _build(cls: type[T], data: object, path: str) -> T:
    obj = cls(**_fields(cls, data, path))
    validate = getattr(obj, '_validate', None)
    if validate is not None:
        _at(path, validate)
    return obj


# -- loading -----------------------------------------------------------------------------------


class _Loader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice (PyYAML keeps the last one silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != 'tag:yaml.org,2002:merge':
                key = self.construct_object(key_node)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f'duplicate key {key!r}', key_node.start_mark
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


# YAML 1.1 reads '1e3' (no dot, or no exponent sign) as a string; users mean a number, as in YAML 1.2.
_Loader.add_implicit_resolver(
    'tag:yaml.org,2002:float',
    re.compile(r'^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$'),
    list('-+0123456789'),
)


def _yaml_problem(exc: yaml.MarkedYAMLError) -> str:
    """'line L, column C: invalid YAML: problem (context, line L0)' on one line."""
    problem = ' '.join(str(exc.problem or exc.context or 'syntax error').split())
    mark = exc.problem_mark or exc.context_mark
    at = f'line {mark.line + 1}, column {mark.column + 1}: ' if mark else ''
    if exc.problem and exc.context and exc.context_mark and exc.context_mark is not mark:
        problem += f' ({" ".join(exc.context.split())}, line {exc.context_mark.line + 1})'
    return f'{at}invalid YAML: {problem}'


def load_profile(path: str | os.PathLike[str]) -> Profile:
    """Read and check the profile in `path`; every problem is a one-line ProfileError."""
    where = os.fspath(path)
    try:
        text = Path(path).read_text(encoding='utf-8')
    except UnicodeDecodeError as exc:
        raise ProfileError(f'{where}: not UTF-8 text (bad byte at offset {exc.start})') from None
    except OSError as exc:
        raise ProfileError(f'{where}: cannot read: {exc.strerror or exc}') from None
    try:
        data = yaml.load(text, Loader=_Loader)  # _Loader is a SafeLoader: no arbitrary objects
    except yaml.MarkedYAMLError as exc:
        raise ProfileError(f'{where}: {_yaml_problem(exc)}') from None
    except yaml.YAMLError as exc:
        raise ProfileError(f'{where}: invalid YAML: {" ".join(str(exc).split())}') from None
    if data is None:
        raise ProfileError(f'{where}: the file is empty; expected sections robot, topics, ...')
    return profile_from_dict(data, source=path)


def profile_from_dict(data: Mapping[str, Any], source: str | os.PathLike[str] = '<dict>') -> Profile:
    """Check plain data (parsed YAML, or Profile.to_dict()) and build the Profile from it."""
    try:
        profile = Profile(**_fields(Profile, data, ''), source=Path(source), sha256='')
        _at('', profile._validate)
    except _Invalid as exc:
        where = f'{os.fspath(source)}: {exc.key}' if exc.key else os.fspath(source)
        raise ProfileError(f'{where}: {exc.reason}') from None
    canonical = json.dumps(profile.to_dict(), sort_keys=True, separators=(',', ':'), allow_nan=False)
    return dataclasses.replace(profile, sha256=hashlib.sha256(canonical.encode('utf-8')).hexdigest())
