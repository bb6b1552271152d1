"""The robot profile: shipped configs load, defaults fill in, and every mistake is one clear line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ros_robodata.errors import ProfileError, RobodataError
from ros_robodata.profile import (
    CameraSpec,
    GripperSpec,
    Profile,
    TopicSpec,
    load_profile,
    profile_from_dict,
)

CONFIG = Path(__file__).resolve().parent.parent / 'config'

MINIMAL = """\
robot:
  name: test_arm
topics:
  joint_states:
    topic: /joint_states
    type: sensor_msgs/msg/JointState
"""

# A complete profile whose values are easy to break one at a time.
FULL = """\
robot:
  name: test_arm
  arm_joints: [j1, j2]
topics:
  joint_states: {topic: /joint_states, type: sensor_msgs/msg/JointState, rate_hz: 100}
  gripper:
    topic: /gripper/joint_states
    type: sensor_msgs/msg/JointState
    joint: finger
    open_position: 0.04
    closed_position: 0.0
  wrench: {topic: /wrench, type: geometry_msgs/msg/WrenchStamped}
  cameras:
    - {name: wrist, topic: /wrist/image, type: sensor_msgs/msg/Image, rate_hz: 30}
    - {name: scene, topic: /scene/image, type: sensor_msgs/msg/CompressedImage}
  lidars:
    - {name: top, topic: /points, type: sensor_msgs/msg/PointCloud2}
  extra:
    - {topic: /tf_static, type: tf2_msgs/msg/TFMessage, latched: true}
"""


def write(tmp_path: Path, text: str, name: str = 'profile.yaml') -> Path:
    path = tmp_path / name
    path.write_text(text, encoding='utf-8')
    return path


def error_of(path: Path) -> str:
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    message = str(info.value)
    assert '\n' not in message
    return message


# -- the shipped configs -------------------------------------------------------------------------


@pytest.mark.parametrize('name', ['sim_cell.yaml', 'example_arm.yaml'])
def test_shipped_configs_load(name: str) -> None:
    profile = load_profile(CONFIG / name)
    assert profile.source == CONFIG / name
    assert len(profile.sha256) == 64
    roles = [role for role, _ in profile.all_topics()]
    assert roles[:4] == ['joint_states', 'actions', 'gripper', 'wrench']
    assert any(role.startswith('camera/') for role in roles)
    assert any(role.startswith('lidar/') for role in roles)
    assert any(spec.latched for _, spec in profile.all_topics())  # a fixed fact repeated into every episode


def test_sim_cell_describes_the_simulated_rig() -> None:
    profile = load_profile(CONFIG / 'sim_cell.yaml')
    assert profile.robot.name == 'sim_cell_arm'
    assert profile.robot.arm_joints == [f'joint{i}' for i in range(1, 7)]
    assert [(role, spec.topic) for role, spec in profile.all_topics()] == [
        ('joint_states', '/joint_states'),
        ('actions', '/teleop/command'),
        ('gripper', '/gripper/joint_states'),
        ('wrench', '/wrist/wrench'),
        ('camera/wrist', '/camera/wrist/image_raw'),
        ('camera/scene', '/camera/scene/image_raw'),
        ('lidar/scene', '/lidar/points'),
        ('extra', '/robot_description'),
        ('extra', '/robodata/events'),
    ]
    gripper = profile.topics.gripper
    assert isinstance(gripper, GripperSpec)
    assert (gripper.joint, gripper.open_position, gripper.closed_position) == ('finger_joint', 0.04, 0.0)
    assert profile.topics.joint_states.rate_hz == 500.0
    assert profile.topics.extra[1].type == 'ros_robodata/msg/SegmentEvent'


def test_example_arm_has_a_compressed_camera_and_a_gripper_that_closes_upwards() -> None:
    profile = load_profile(CONFIG / 'example_arm.yaml')
    assert len(profile.robot.arm_joints) == 7
    assert {c.type for c in profile.topics.cameras} == {
        'sensor_msgs/msg/Image',
        'sensor_msgs/msg/CompressedImage',
    }
    gripper = profile.topics.gripper
    assert gripper is not None
    assert gripper.closed_position > gripper.open_position
    assert profile.topics.wrench is not None
    assert profile.topics.wrench.rate_hz == 1000.0


# -- defaults, hashing, round trip ---------------------------------------------------------------


def test_defaults_are_filled(tmp_path: Path) -> None:
    profile = load_profile(write(tmp_path, MINIMAL))
    assert profile.robot.description == ''
    assert profile.robot.arm_joints == []
    assert profile.topics.actions is None
    assert profile.topics.gripper is None
    assert profile.topics.wrench is None
    assert profile.topics.cameras == []
    assert profile.topics.lidars == []
    assert profile.topics.extra == []
    spec = profile.topics.joint_states
    assert (spec.rate_hz, spec.qos, spec.latched) == (None, 'auto', False)
    assert profile.recording.storage == 'mcap'
    assert profile.recording.compression == 'zstd'
    assert (profile.recording.pre_roll_s, profile.recording.max_episode_s) == (2.0, 600.0)
    assert profile.recording.flush_interval_s == 1.0
    assert profile.segmenter.gripper_velocity_threshold is None
    assert profile.segmenter.contact_force_threshold_n is None
    assert profile.segmenter.min_event_gap_s == 0.1
    assert profile.quality.rate_tolerance == 0.2
    assert profile.quality.max_sync_skew_ms == 50.0
    assert profile.quality.max_latency_ms == 100.0
    assert profile.quality.silent_after_s == 1.0
    assert profile.quality.blur_threshold is None
    assert profile.quality.max_force_n is None
    assert (profile.success.lift_height_m, profile.success.hold_s) == (None, 0.5)
    assert profile.success.gripper_open_at_end is True
    assert profile.all_topics() == [('joint_states', spec)]


def test_empty_section_keeps_its_defaults(tmp_path: Path) -> None:
    text = MINIMAL + '  cameras:\n    # - {name: wrist}\nrecording:\n  # storage: sqlite3\n'
    profile = load_profile(write(tmp_path, text))
    assert profile.topics.cameras == []
    assert profile.recording.storage == 'mcap'


def test_int_accepted_where_a_number_is_wanted(tmp_path: Path) -> None:
    profile = load_profile(write(tmp_path, MINIMAL + '    rate_hz: 500\nquality:\n  max_force_n: 1e3\n'))
    assert profile.topics.joint_states.rate_hz == 500.0
    assert isinstance(profile.topics.joint_states.rate_hz, float)
    assert profile.quality.max_force_n == 1000.0


def test_hash_ignores_comments_whitespace_key_order_and_spelled_out_defaults(tmp_path: Path) -> None:
    plain = load_profile(write(tmp_path, FULL, 'a.yaml'))
    data = yaml.safe_load(FULL)
    data = {key: data[key] for key in reversed(list(data))}
    data['topics']['gripper'] = dict(reversed(list(data['topics']['gripper'].items())))
    data['recording'] = {'storage': 'mcap', 'pre_roll_s': 2}
    reordered = '# a comment\n\n' + yaml.safe_dump(data, sort_keys=False, indent=4)
    other = load_profile(write(tmp_path, reordered, 'b.yaml'))
    assert other.sha256 == plain.sha256
    assert other.source != plain.source

    changed = load_profile(write(tmp_path, FULL.replace('rate_hz: 30', 'rate_hz: 15'), 'c.yaml'))
    assert changed.sha256 != plain.sha256


def test_a_camera_not_marked_pii_keeps_the_hash_datasets_recorded(tmp_path: Path) -> None:
    """`pii` came after datasets recorded their profiles' hashes: at its default it must not change them, so an
    episode recorded before still names the profile it was recorded with."""
    data = yaml.safe_load(FULL)
    plain = load_profile(write(tmp_path, yaml.safe_dump(data), 'a.yaml'))
    data['topics']['cameras'][0]['pii'] = False
    spelled = load_profile(write(tmp_path, yaml.safe_dump(data), 'b.yaml'))
    data['topics']['cameras'][0]['pii'] = True
    marked = load_profile(write(tmp_path, yaml.safe_dump(data), 'c.yaml'))
    assert spelled.sha256 == plain.sha256 and marked.sha256 != plain.sha256
    assert marked.topics.cameras[0].pii and not plain.topics.cameras[0].pii


def test_to_dict_round_trips(tmp_path: Path) -> None:
    profile = load_profile(CONFIG / 'example_arm.yaml')
    data = json.loads(json.dumps(profile.to_dict()))  # plain data: survives JSON
    assert 'source' not in data
    assert 'sha256' not in data
    again = profile_from_dict(data, source=profile.source)
    assert again == profile
    assert isinstance(again.topics.cameras[0], CameraSpec)
    assert profile_from_dict(data).source == Path('<dict>')
    yaml_copy = load_profile(write(tmp_path, yaml.safe_dump(profile.to_dict())))
    assert yaml_copy.sha256 == profile.sha256


def test_profile_is_immutable() -> None:
    profile = load_profile(CONFIG / 'sim_cell.yaml')
    with pytest.raises(AttributeError):
        profile.robot.name = 'other'  # type: ignore[misc]
    assert isinstance(profile, Profile)
    assert isinstance(profile.topics.joint_states, TopicSpec)


# -- errors: one line, file, dotted key, reason --------------------------------------------------


@pytest.mark.parametrize(
    ('tail', 'line'),
    [
        ('  wrench:\n    topic: /w\n   type: x\n', 9),  # bad indentation
        ('  wrench: {topic: /w\n', 8),  # unclosed brace: found at end of file
        ('  extra: [a, b\nrecording: {}\n', 8),
    ],
)
def test_yaml_syntax_error_names_file_and_line(tmp_path: Path, tail: str, line: int) -> None:
    path = write(tmp_path, MINIMAL + tail)
    message = error_of(path)
    assert message.startswith(f'{path}: line {line}, column ')
    assert 'invalid YAML' in message


def test_yaml_tab_indentation_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, 'robot:\n\tname: x\n')
    assert error_of(path).startswith(f'{path}: line 2')


def test_key_given_twice_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + '    topic: /other\n')
    message = error_of(path)
    assert message.startswith(f'{path}: line 7')
    assert "duplicate key 'topic'" in message


def test_unknown_key_is_named_with_the_allowed_ones(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + '  camras: []\n')
    message = error_of(path)
    assert message.startswith(f'{path}: topics.camras: unknown key')
    assert "did you mean 'cameras'" in message
    assert 'allowed: joint_states, actions, gripper, wrench, cameras, lidars, extra' in message


def test_unknown_top_level_section(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + 'qualty:\n  max_force_n: 10\n')
    message = error_of(path)
    assert message.startswith(f'{path}: qualty: unknown key')
    assert 'robot, topics, recording, segmenter, quality, success' in message
    assert 'source' not in message
    assert 'sha256' not in message


def test_wrong_type_names_key_and_value(tmp_path: Path) -> None:
    path = write(tmp_path, FULL.replace('open_position: 0.04', "open_position: 'abc'"))
    assert error_of(path) == f"{path}: topics.gripper.open_position: expected a number, got 'abc'"


@pytest.mark.parametrize(
    ('old', 'new', 'key', 'reason'),
    [
        ('rate_hz: 100}', 'rate_hz: true}', 'topics.joint_states.rate_hz', 'expected a number, got true'),
        ('rate_hz: 30}', 'rate_hz: .nan}', 'topics.cameras[0].rate_hz', 'expected a finite number'),
        ('latched: true}', 'latched: 1}', 'topics.extra[0].latched', 'expected true or false, got 1'),
        ('name: test_arm', 'name: 42', 'robot.name', 'expected a string, got 42'),
        ('[j1, j2]', 'j1', 'robot.arm_joints', "expected a list, got 'j1'"),
        ('joint: finger', 'joint: {a: 1}', 'topics.gripper.joint', 'expected a string, got a mapping'),
        ('extra:\n    - {topic', 'extra: {topic', 'topics.extra', 'expected a list, got a mapping'),
    ],
)
def test_wrong_types(tmp_path: Path, old: str, new: str, key: str, reason: str) -> None:
    assert old in FULL
    path = write(tmp_path, FULL.replace(old, new, 1))
    message = error_of(path)
    assert message.startswith(f'{path}: {key}: {reason}'), message


def test_bad_choice_lists_the_choices(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + 'recording:\n  storage: bag\n')
    assert error_of(path) == f"{path}: recording.storage: expected one of 'mcap', 'sqlite3', got 'bag'"


@pytest.mark.parametrize(
    ('text', 'key'),
    [
        ('topics:\n  joint_states: {topic: /js, type: sensor_msgs/msg/JointState}\n', 'robot'),
        ('robot: {name: x}\n', 'topics'),
        (MINIMAL.replace('  name: test_arm\n', '  description: no name\n'), 'robot.name'),
        (MINIMAL.replace('    type: sensor_msgs/msg/JointState\n', ''), 'topics.joint_states.type'),
        (FULL.replace('    joint: finger\n', ''), 'topics.gripper.joint'),
        (FULL.replace('{name: top, ', '{'), 'topics.lidars[0].name'),
    ],
)
def test_missing_required_key(tmp_path: Path, text: str, key: str) -> None:
    path = write(tmp_path, text)
    assert error_of(path) == f'{path}: {key}: required key is missing'


def test_a_profile_that_names_no_topic_is_refused(tmp_path: Path) -> None:
    path = tmp_path / 'empty_topics.yaml'
    path.write_text('robot: {name: x}\ntopics: {}\n')
    assert error_of(path).startswith(f'{path}: topics: names no topic at all')


@pytest.mark.parametrize('name', ['capture_studio.yaml', 'vehicle.yaml', 'phone_video.yaml'])
def test_rigs_without_an_arm_validate(name: str) -> None:
    """A camera-only capture studio and a camera + LiDAR vehicle have no joint states; their profiles load and say
    so, and every topic they record is a camera or a LiDAR (or an extra)."""
    profile = load_profile(CONFIG / name)
    assert profile.topics.joint_states is None and profile.topics.gripper is None
    roles = [role for role, _ in profile.all_topics()]
    assert roles and all(r.startswith(('camera/', 'lidar/')) or r == 'extra' for r in roles)


def test_arm_joints_without_joint_states_are_refused(tmp_path: Path) -> None:
    path = tmp_path / 'no_arm.yaml'
    path.write_text('robot: {name: x, arm_joints: [j1]}\n'
                    'topics:\n  cameras: [{name: c, topic: /c, type: sensor_msgs/msg/Image}]\n')
    assert error_of(path) == f'{path}: robot.arm_joints: names joints, but topics.joint_states is not given'



@pytest.mark.parametrize(
    'topic',
    ['/camera//image', '/camera/', 'camera image', '9lives', '/arm/2nd', '/a~b', '~x', '/{ns/x', '', '/é'],
)
def test_bad_topic_name(tmp_path: Path, topic: str) -> None:
    path = write(tmp_path, FULL.replace('topic: /wrench,', f"topic: '{topic}',"))
    message = error_of(path)
    assert message.startswith(f'{path}: topics.wrench.topic: ')
    assert 'not a valid ROS 2 topic name' in message


@pytest.mark.parametrize(
    'topic', ['/joint_states', 'relative/name', '~/private', '/{node}/points', '/a_b/C9']
)
def test_good_topic_names(tmp_path: Path, topic: str) -> None:
    text = FULL.replace('topic: /joint_states,', f"topic: '{topic}',") if topic != '/joint_states' else FULL
    assert load_profile(write(tmp_path, text)).topics.joint_states.topic == topic


@pytest.mark.parametrize('bad', ['sensor_msgs/PointCloud2', 'PointCloud2', 'sensor_msgs/msg/pointCloud2'])
def test_bad_message_type(tmp_path: Path, bad: str) -> None:
    path = write(tmp_path, FULL.replace('sensor_msgs/msg/PointCloud2', bad))
    message = error_of(path)
    assert message.startswith(f'{path}: topics.lidars[0].type: expected a message type like')


def test_role_needs_its_message_type(tmp_path: Path) -> None:
    path = write(tmp_path, FULL.replace('geometry_msgs/msg/WrenchStamped', 'geometry_msgs/msg/Wrench'))
    expected = "expected geometry_msgs/msg/WrenchStamped, got 'geometry_msgs/msg/Wrench'"
    assert error_of(path) == f'{path}: topics.wrench.type: {expected}'


def test_duplicate_topic_names_the_second_entry(tmp_path: Path) -> None:
    path = write(tmp_path, FULL.replace('topic: /tf_static', 'topic: /wrist/image'))
    assert (
        error_of(path) == f"{path}: topics.extra[0].topic: '/wrist/image' is already recorded as camera/wrist"
    )


def test_gripper_open_equal_to_closed(tmp_path: Path) -> None:
    path = write(tmp_path, FULL.replace('closed_position: 0.0', 'closed_position: 0.04'))
    message = error_of(path)
    assert message.startswith(f'{path}: topics.gripper.closed_position: equals open_position')


@pytest.mark.parametrize(
    ('old', 'new', 'key'),
    [
        ('rate_hz: 100}', 'rate_hz: 0}', 'topics.joint_states.rate_hz'),
        ('rate_hz: 30}', 'rate_hz: -30}', 'topics.cameras[0].rate_hz'),
    ],
)
def test_rates_must_be_positive(tmp_path: Path, old: str, new: str, key: str) -> None:
    path = write(tmp_path, FULL.replace(old, new))
    assert error_of(path).startswith(f'{path}: {key}: must be greater than 0')


def test_recording_bounds(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + 'recording:\n  pre_roll_s: -1\n')
    assert error_of(path) == f'{path}: recording.pre_roll_s: must be 0 or more, got -1'
    path = write(tmp_path, MINIMAL + 'recording:\n  max_episode_s: 0\n')
    assert error_of(path) == f'{path}: recording.max_episode_s: must be greater than 0, got 0'


@pytest.mark.parametrize('name', ['Wrist', 'wrist cam', 'wrist-cam', '../up', ''])
def test_camera_name_must_be_file_safe(tmp_path: Path, name: str) -> None:
    path = write(tmp_path, FULL.replace('{name: wrist,', f"{{name: '{name}',"))
    assert error_of(path).startswith(f'{path}: topics.cameras[0].name: ')


def test_camera_names_unique(tmp_path: Path) -> None:
    path = write(tmp_path, FULL.replace('{name: scene,', '{name: wrist,'))
    assert error_of(path) == f"{path}: topics.cameras[1].name: name 'wrist' is listed twice"


def test_arm_joints_must_not_hold_the_gripper_joint(tmp_path: Path) -> None:
    path = write(tmp_path, FULL.replace('[j1, j2]', '[j1, finger]'))
    assert error_of(path).startswith(f"{path}: robot.arm_joints[1]: 'finger' is the gripper joint")


def test_unreadable_empty_and_non_mapping_files(tmp_path: Path) -> None:
    missing = tmp_path / 'nope.yaml'
    assert error_of(missing) == f'{missing}: missing'
    empty = write(tmp_path, '# nothing here\n', 'empty.yaml')
    assert error_of(empty).startswith(f'{empty}: the file is empty')
    listed = write(tmp_path, '- robot\n- topics\n', 'list.yaml')
    assert (
        error_of(listed) == f'{listed}: expected a mapping with keys robot, topics, recording, segmenter, '
        'quality, success; got a list'
    )


def test_profile_error_is_a_robodata_error(tmp_path: Path) -> None:
    with pytest.raises(RobodataError):
        profile_from_dict({'robot': {'name': 'x'}}, source='inline.yaml')
    with pytest.raises(ProfileError, match=r'^inline\.yaml: topics: required key is missing$'):
        profile_from_dict({'robot': {'name': 'x'}}, source='inline.yaml')


def test_a_float_is_never_taken_for_a_whole_number() -> None:
    # No key is an int yet; this pins the rule for the first one that is.
    from ros_robodata.profile.validate import _convert, _Invalid

    assert _convert(int, 3, 'k', None) == 3
    for value in (2.0, True):
        with pytest.raises(_Invalid, match='expected a whole number'):
            _convert(int, value, 'k', None)


def test_core_does_not_import_rclpy() -> None:
    code = 'import sys, ros_robodata.profile; sys.exit(1 if "rclpy" in sys.modules else 0)'
    assert subprocess.run([sys.executable, '-c', code], check=False).returncode == 0


def test_a_gripper_joint_inside_joint_states_is_recorded_once(tmp_path: Path) -> None:
    path = write(tmp_path, FULL.replace('topic: /gripper/joint_states', 'topic: /joint_states'))
    profile = load_profile(path)
    assert profile.topics.gripper_in_joint_states
    assert profile.topics.gripper is not None and profile.topics.gripper.joint == 'finger'
    topics = [spec.topic for _, spec in profile.all_topics()]
    assert topics.count('/joint_states') == 1 and 'gripper' not in [role for role, _ in profile.all_topics()]


def test_only_the_gripper_may_share_the_joint_states_topic(tmp_path: Path) -> None:
    for text in (FULL, FULL.replace('topic: /gripper/joint_states', 'topic: /joint_states')):
        path = write(tmp_path, text.replace('topic: /wrench,', 'topic: /joint_states,'))
        assert "topics.wrench.topic: '/joint_states' is already recorded as joint_states" in error_of(path)


def test_profile_defaults_list_every_key_with_the_default_the_code_uses(capsys) -> None:
    """`robodata profile --defaults` is read from the schema, so it cannot drift from what a profile gets; every
    key the shipped sim_cell.yaml sets is in it (issue 14: the YAML claimed defaults it did not have)."""
    import json

    import yaml

    from ros_robodata.cli.main import main
    from ros_robodata.profile.defaults import REQUIRED, profile_keys

    keys = {k: d for k, d, _ in profile_keys()}
    assert keys['quality.max_force_n'] == 'null' and keys['success.lift_height_m'] == 'null'
    assert keys['robot.name'] == REQUIRED and keys['recording.pre_roll_s'] == '2.0'
    assert keys['topics.gripper.command.joint'] == 'null' and keys['quality.max_idle_s'] == 'null'

    def flatten(data: object, prefix: str = '') -> list[str]:
        out: list[str] = []
        for key, value in (data.items() if isinstance(data, dict) else ()):
            if isinstance(value, list) and all(isinstance(item, dict) for item in value) and value:
                out += [prefix + key + '[]'] + [k for item in value for k in flatten(item, prefix + key + '[].')]
            else:
                out += [prefix + key, *flatten(value, prefix + key + '.')]
        return out

    shipped = yaml.safe_load((Path(__file__).resolve().parents[1] / 'config' / 'sim_cell.yaml').read_text())
    assert [k for k in flatten(shipped) if k not in keys] == []
    assert main(['profile', '--defaults', '--json']) == 0
    listed = json.loads(capsys.readouterr().out)
    assert {row['key'] for row in listed} == set(keys) and all(row['meaning'] for row in listed
                                                                if row['key'].startswith('quality.'))
