"""The segmenter on rigs it was not first written on (issue 13): bench/rig_families.py's leader/follower gripper
(30 Hz, 0..100, no effort, zero-filled velocity, staged closes, a leader command) and compliant gripper (inverted,
wrist F/T, a Float64 trigger, place-downs that unload before the fingers open, bumps), and a real Reachy 2
recording (LeRobot, test/data/lerobot)."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import yaml

from ros_robodata.bag.types import header, typestore
from ros_robodata.bag.writer import BagWriter
from ros_robodata.cli.main import main
from ros_robodata.errors import ProfileError
from ros_robodata.events.segmenter import Segmenter
from ros_robodata.profile import load_profile, profile_from_dict
from ros_robodata.vocabulary import COLLISION, CONTACT, GRASP, GRASP_FAILED, RELEASE

BENCH = Path(__file__).resolve().parents[1] / 'bench'
TOLERANCE_NS = 50_000_000
TRUTH = {GRASP: ('secured',), CONTACT: ('contact_begin',), RELEASE: ('released',),
         GRASP_FAILED: ('missed', 'dropped'), COLLISION: ('bump',)}


def _bench_module(name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCH / f'{name}.py')
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


rigs = _bench_module('rig_families')


def _unmatched(ep: Any, seg: Segmenter, kinds: tuple[str, ...]) -> list[str]:
    """Per kind, truth and found stamps that do not pair up within 50 ms (empty: every event right)."""
    out = []
    for kind in kinds:
        truth = sorted(t for t, k in ep.truth if k in TRUTH[kind])
        found = sorted(e.stamp_ns for e in seg.detector.events if e.kind == kind)
        if len(truth) != len(found) or any(abs(a - b) > TOLERANCE_NS for a, b in zip(truth, found, strict=True)):
            out.append(f'{kind}: truth {[round(t / 1e9, 3) for t in truth]} found {[round(t / 1e9, 3) for t in found]}')
    return out


@pytest.mark.parametrize('scenario', rigs.SCENARIOS)
@pytest.mark.parametrize('family', sorted(rigs.FAMILIES))
def test_each_rig_finds_what_happened_within_50_ms(family: str, scenario: str) -> None:
    kinds = (GRASP, CONTACT, RELEASE, GRASP_FAILED) + ((COLLISION,) if family == 'compliant' else ())
    for seed in range(3):
        ep = rigs.FAMILIES[family](seed, scenario)
        seg = rigs.segment(ep)
        assert _unmatched(ep, seg, kinds) == [], (family, scenario, seed)
        if family == 'compliant':  # the fingers alone find the same grasps (fusion never worse)
            assert _unmatched(ep, rigs.segment(ep, use_wrench=False), (GRASP, CONTACT, RELEASE, GRASP_FAILED)) == []


def test_a_place_that_unloads_the_wrist_before_the_fingers_open_is_a_release_not_a_slip() -> None:
    for seed in range(4):
        ep = rigs.compliant(seed, 'success')
        for command in (True, False):
            kinds = [e.kind for e in rigs.segment(ep, command=command).detector.events]
            assert RELEASE in kinds and GRASP_FAILED not in kinds, (seed, command, kinds)


def test_a_zero_filled_velocity_is_replaced_by_the_positions_and_said() -> None:
    ep = rigs.leader_follower(0, 'success')  # even seeds carry a velocity array of zeros
    assert all(r.velocity == 0.0 for r in ep.gripper)
    seg = rigs.segment(ep)
    assert [e.kind for e in seg.detector.events if e.kind in (GRASP, RELEASE)] == [GRASP, RELEASE]
    said = seg.result().inputs
    assert any('positions and stamps' in line and 'all zeros' in line for line in said), said


def test_a_velocity_in_another_unit_is_dropped_for_the_positions() -> None:
    """A driver that reports the finger speed in degrees/s against positions in radians (x57.3), or with its sign
    flipped: the speeds disagree with the positions, so the positions decide, and the events stay right."""
    from dataclasses import replace

    base = rigs.leader_follower(1, 'success')  # odd seeds carry no velocity: fill one in from the positions
    stamps = np.array([r.stamp_ns for r in base.gripper], dtype=np.float64) / 1e9
    speed = np.gradient(np.array([r.position for r in base.gripper]), stamps)
    for factor, says in ((57.3, 'sign or unit'), (-1.0, 'sign or unit')):
        ep = replace(base, gripper=[replace(r, velocity=float(factor * v)) for r, v in zip(base.gripper, speed,
                                                                                            strict=True)])
        seg = rigs.segment(ep)
        assert _unmatched(ep, seg, (GRASP, CONTACT, RELEASE)) == [], factor
        assert any(says in line for line in seg.result().inputs), seg.result().inputs


@pytest.mark.parametrize('pause_s', [0.6, 1.6])
def test_the_command_tells_a_staged_close_from_contact(pause_s: float) -> None:
    """With the command, a pause on the way is never contact. Without it (and without effort), a stop must last a
    second to be contact: shorter pauses are waited out, a longer one is the limit that remains."""
    for seed in range(4):
        ep = rigs.leader_follower(seed, 'staged', pause_s=pause_s)
        assert _unmatched(ep, rigs.segment(ep), (CONTACT, GRASP)) == [], seed
        fingers_alone = _unmatched(ep, rigs.segment(ep, command=False), (CONTACT,))
        assert (fingers_alone == []) == (pause_s < 1.0), (seed, fingers_alone)


# -- through bags and the command line ------------------------------------------------------------------------


def _write_bag(ep: Any, path: Path) -> None:
    """The episode as its rig would record it: JointState gripper, WrenchStamped, the command topic."""
    types = typestore().types
    profile = rigs.profile(ep.family)
    gripper = profile.topics.gripper
    command = gripper.command

    def joint_state(ns: int, name: str, position: float, velocity: float = math.nan) -> Any:
        empty = np.array([], dtype=np.float64)
        return types['sensor_msgs/msg/JointState'](
            header=header(ns), name=[name], position=np.array([position]),
            velocity=empty if math.isnan(velocity) else np.array([velocity]), effort=empty)

    messages = [(r.stamp_ns, gripper.topic, joint_state(r.stamp_ns, gripper.joint, r.position, r.velocity))
                for r in ep.gripper]
    if command.joint is None:
        messages += [(r.stamp_ns, command.topic, types['std_msgs/msg/Float64'](data=r.position)) for r in ep.command]
    else:
        messages += [(r.stamp_ns, command.topic, joint_state(r.stamp_ns, command.joint, r.position))
                     for r in ep.command]
    if profile.topics.wrench is not None:
        wrench = types['geometry_msgs/msg/WrenchStamped']
        vector = types['geometry_msgs/msg/Vector3']
        messages += [(r.stamp_ns, profile.topics.wrench.topic, wrench(
            header=header(r.stamp_ns, 'ft'), wrench=types['geometry_msgs/msg/Wrench'](
                force=vector(x=r.force[0], y=r.force[1], z=r.force[2]), torque=vector(x=0.0, y=0.0, z=0.0))))
            for r in ep.wrench]
    messages.sort(key=lambda m: m[0])
    with BagWriter(path) as writer:
        for _, spec in profile.all_topics():
            if not writer.has_topic(spec.topic):
                writer.add_topic(spec.topic, spec.type)
        for t, topic, msg in messages:
            writer.write_message(topic, t + 2_000_000, msg)  # received 2 ms after the stamp


def _profile_file(family: str, tmp_path: Path, change: Any = None) -> Path:
    data = rigs.profile(family).to_dict()
    if change is not None:
        change(data)
    path = tmp_path / f'{family}.yaml'
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_float64_trigger_and_a_bump_through_a_bag_and_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                               ) -> None:
    ep = rigs.compliant(1, 'bump')
    _write_bag(ep, tmp_path / 'bag')
    assert main(['segment', str(tmp_path / 'bag'), '--profile', str(_profile_file('compliant', tmp_path)),
                 '--json']) == 0
    import json

    result = json.loads(capsys.readouterr().out)
    kinds = [e['kind'] for e in result['events']]
    assert kinds.count(COLLISION) == 1 and kinds.count(GRASP) == 1 and kinds.count(RELEASE) == 1, kinds
    collision = next(e for e in result['events'] if e['kind'] == COLLISION)
    assert collision['evidence'][0]['signal'] == 'wrench.peak_force' and collision['evidence'][0]['value'] > 10
    assert 'command' in result['sources'] and any('gripper command' in line for line in result['inputs'])
    bump = next(t for t, k in ep.truth if k == 'bump')
    assert abs(collision['t_ns'] - bump) < TOLERANCE_NS
    assert collision['t_s'] == pytest.approx((collision['t_ns'] - result['start_ns']) / 1e9, abs=1e-3)
    first_stamp = min(r.stamp_ns for r in (*ep.gripper, *ep.wrench))
    assert result['start_ns'] == first_stamp  # one time origin: header stamps, not receive times


def test_a_misspelled_gripper_joint_names_the_joints_there_are(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                              ) -> None:
    _write_bag(rigs.leader_follower(0, 'success'), tmp_path / 'bag')

    def misspell(data: dict[str, Any]) -> None:
        data['topics']['gripper']['joint'] = 'griper'

    assert main(['segment', str(tmp_path / 'bag'), '--profile', str(_profile_file('leader_follower', tmp_path,
                                                                                  misspell))]) == 1
    err = capsys.readouterr().err
    assert "the gripper joint 'griper' is in no message of /follower/joint_states; its joints are gripper" in err


def test_positions_in_another_unit_than_the_profile_are_warned_about(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A profile in 0..1 for a gripper that reports 0..100: no silent zero, a warning naming the range."""
    _write_bag(rigs.leader_follower(1, 'success'), tmp_path / 'bag')

    def fractions(data: dict[str, Any]) -> None:
        data['topics']['gripper'].update(open_position=1.0, closed_position=0.0)
        data['topics']['gripper'].pop('command')

    assert main(['segment', str(tmp_path / 'bag'), '--profile', str(_profile_file('leader_follower', tmp_path,
                                                                                  fractions))]) == 0
    err = capsys.readouterr().err
    assert "warning: gripper positions rested between" in err and "outside the profile's 0..1" in err
    assert 'another unit in the profile?' in err


@pytest.mark.parametrize('command, says', [
    ({'topic': '/nowhere', 'joint': 'g', 'open_position': 1, 'closed_position': 0}, "'/nowhere' is not recorded"),
    ({'topic': '/wrist/wrench', 'open_position': 1, 'closed_position': 0}, 'a gripper command is read from'),
    ({'topic': '/teleop/leader', 'open_position': 1, 'closed_position': 0}, 'name the gripper joint'),
    ({'topic': '/trigger', 'joint': 'g', 'open_position': 1, 'closed_position': 0}, 'has no joints'),
    ({'topic': '/trigger', 'open_position': 1, 'closed_position': 1}, 'open and closed must differ'),
])
def test_a_gripper_command_the_profile_cannot_read_is_refused(command: dict[str, Any], says: str) -> None:
    data = {'robot': {'name': 'arm'}, 'topics': {
        'actions': {'topic': '/teleop/leader', 'type': 'sensor_msgs/msg/JointState'},
        'gripper': {'topic': '/gripper', 'type': 'sensor_msgs/msg/JointState', 'joint': 'finger',
                    'open_position': 1.0, 'closed_position': 0.0, 'command': command},
        'wrench': {'topic': '/wrist/wrench', 'type': 'geometry_msgs/msg/WrenchStamped'},
        'extra': [{'topic': '/trigger', 'type': 'std_msgs/msg/Float32'}]}}
    with pytest.raises(ProfileError, match=r'gripper\.command') as caught:
        profile_from_dict(data)
    assert says in str(caught.value)


# -- real data ---------------------------------------------------------------------------------------------------


def test_a_real_reachy2_recording_is_segmented_where_its_command_says(tmp_path: Path) -> None:
    """Pollen's apple_storage (real VR teleoperation, LeRobot): each episode's grasp and release within 0.3 s of
    the reference the command channel gives (bench/segment_real.py's rule), and nothing else."""
    real = _bench_module('segment_real')
    profile = load_profile(BENCH / 'profiles' / 'reachy2_apple_storage.yaml')
    bags = real.convert(Path(__file__).resolve().parent / 'data' / 'lerobot' / 'reachy2_apple_storage', tmp_path)
    assert len(bags) == 3
    for bag in bags:
        ref_grasp, ref_release = real.reference(bag, profile)
        result = real.segment_bag(bag, profile)
        kinds = [e.kind for e in result.events]
        assert kinds == ['grasp_start', 'contact', 'grasp', 'release', 'contact_lost'], (bag.name, kinds)
        grasp = next(e.stamp_ns for e in result.events if e.kind == GRASP)
        release = next(e.stamp_ns for e in result.events if e.kind == RELEASE)
        assert abs(grasp - ref_grasp) <= 300_000_000 and abs(release - ref_release) <= 300_000_000
        assert result.warnings == []
