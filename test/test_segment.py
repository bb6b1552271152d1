"""The segmenter against physics ground truth, and against the ways real signals go wrong."""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from ros_robodata.cli.main import main
from ros_robodata.events import EventDetector, SegmenterSettings
from ros_robodata.events.order import StampOrder
from ros_robodata.events.segmenter import (
    GRIPPER,
    INPUT_GUARD_NS,
    WRENCH,
    Segmenter,
    before_input_start,
    episode_input_start,
)
from ros_robodata.profile import load_profile
from ros_robodata.signals import GripperReading, WrenchReading
from ros_robodata.sim import sim_samples as S
from ros_robodata.sim.cell import SimCell
from ros_robodata.sim.to_bag import write_sim_episode
from test.profiles import PROFILE

TOLERANCE_S = 0.05
TRUTH_OF = {'grasp_start': 'closing', 'contact': 'contact_begin', 'grasp': 'secured', 'lift': 'lift_off',
            'release': 'released', 'grasp_failed': ('missed', 'dropped')}


def _simulate(seed: int, index: int, mode: str = 'teleop') -> tuple[list, list, dict]:
    gripper, wrench = [], []
    with SimCell(seed, index, mode, streams=[S.GRIPPER, S.WRENCH]) as cell:
        while not cell.finished:
            for s in cell.step_until(cell.time + 0.1):
                ns = round(s.stamp * 1e9)
                if s.stream == S.GRIPPER:
                    gripper.append(GripperReading(ns, *(float(v[0]) for v in (s.data.position, s.data.velocity,
                                                                              s.data.effort))))
                else:
                    wrench.append(WrenchReading(ns, tuple(map(float, s.data.force)), tuple(map(float, s.data.torque)),
                                                'ft_sensor'))
        return gripper, wrench, cell.ground_truth()


@pytest.fixture(scope='module')
def episodes() -> dict[str, tuple[list, list, dict]]:
    return {'success': _simulate(0, 0), 'recovery': _simulate(4, 4), 'miss': _simulate(8, 2),
            'kinesthetic': _simulate(7, 7, 'kinesthetic')}


SIM = SegmenterSettings(open_position=0.04, closed_position=0.0)


def _run(gripper: list, wrench: list, settings: SegmenterSettings = SIM) -> EventDetector:
    detector = EventDetector(settings)
    for _, kind, reading in sorted([(r.stamp_ns, 0, r) for r in gripper] + [(r.stamp_ns, 1, r) for r in wrench],
                                   key=lambda item: item[:2]):
        (detector.gripper if kind == 0 else detector.wrench)(reading)
    return detector


def _times(detector: EventDetector, kind: str) -> list[float]:
    return [e.stamp_ns / 1e9 for e in detector.events if e.kind == kind]


def _truth(truth: dict, kind: str) -> list[float]:
    wanted = TRUTH_OF[kind]
    wanted = wanted if isinstance(wanted, tuple) else (wanted,)
    return [e['t_s'] for e in truth['events'] if e['kind'] in wanted]


def _assert_matches(detector: EventDetector, truth: dict, kinds: tuple[str, ...]) -> None:
    for kind in kinds:
        found, expected = _times(detector, kind), _truth(truth, kind)
        assert len(found) == len(expected), (kind, found, expected)
        for f, t in zip(found, expected, strict=True):
            assert abs(f - t) <= TOLERANCE_S, (kind, found, expected)


@pytest.mark.parametrize('name', ['success', 'recovery', 'kinesthetic'])
def test_events_agree_with_physics(episodes: dict, name: str) -> None:
    gripper, wrench, truth = episodes[name]
    detector = _run(gripper, wrench)
    _assert_matches(detector, truth, ('grasp_start', 'contact', 'grasp', 'lift', 'release', 'grasp_failed'))
    # Each event is reported as soon as its evidence is complete: well under a quarter second.
    assert all(e.detected_ns - e.stamp_ns < 250_000_000 for e in detector.events)


def test_a_missed_grasp_is_a_failure_without_contact(episodes: dict) -> None:
    gripper, wrench, truth = episodes['miss']
    detector = _run(gripper, wrench)
    kinds = [e.kind for e in detector.events]
    assert kinds == ['grasp_start', 'grasp_failed']
    assert abs(_times(detector, 'grasp_failed')[0] - _truth(truth, 'grasp_failed')[0]) <= TOLERANCE_S
    failed = next(e for e in detector.events if e.kind == 'grasp_failed')
    assert failed.evidence[0].signal == 'gripper.opening' and failed.evidence[0].value < failed.evidence[0].threshold


def test_timeline_covers_the_episode_in_order(episodes: dict) -> None:
    gripper, wrench, truth = episodes['recovery']
    detector = _run(gripper, wrench)
    timeline = detector.timeline(0, round(truth['duration_s'] * 1e9))
    names = [(s.name, s.attempt) for s in timeline]
    assert names == [('reach', 1), ('grasp', 1), ('transport', 1), ('retreat', 1), ('reach', 2), ('grasp', 2),
                     ('transport', 2), ('release', 2), ('retreat', 2)]
    assert timeline[0].start_ns == 0 and timeline[-1].end_ns == round(truth['duration_s'] * 1e9)
    assert all(a.end_ns == b.start_ns for a, b in itertools.pairwise(timeline))


def test_gripper_in_other_units_and_direction_gives_the_same_events(episodes: dict) -> None:
    """A gripper reporting millimetres of closure (0 open, 85 closed) instead of metres of opening."""
    gripper, wrench, _ = episodes['success']
    scale = 85 / 0.04
    flipped = [replace(r, position=85 - r.position * scale, velocity=-r.velocity * scale, effort=r.effort * 7.5)
               for r in gripper]
    detector = _run(flipped, wrench, replace(SIM, open_position=0.0, closed_position=85.0))
    reference = _run(gripper, wrench)
    assert [(e.kind, e.stamp_ns) for e in detector.events] == [(e.kind, e.stamp_ns) for e in reference.events]


def test_noise_gaps_and_nans_do_not_break_it(episodes: dict) -> None:
    gripper, wrench, truth = episodes['recovery']
    rng = np.random.default_rng(1)
    noisy_gripper = []
    for i, r in enumerate(gripper):
        if rng.random() < 0.02:
            continue  # a lost sample
        position = math.nan if i % 250 == 0 else r.position + rng.normal(0, 0.0002)
        noisy_gripper.append(replace(r, position=position, velocity=r.velocity + rng.normal(0, 0.005),
                                     effort=r.effort + rng.normal(0, 0.2)))
    noisy_wrench = [replace(r, force=tuple(np.array(r.force) + rng.normal(0, 0.1, 3))) for r in wrench
                    if rng.random() > 0.02]
    noisy_wrench.insert(100, replace(noisy_wrench[100], force=(math.nan, 0.0, 0.0)))
    detector = _run(noisy_gripper, noisy_wrench)
    _assert_matches(detector, truth, ('contact', 'grasp', 'release', 'grasp_failed'))
    assert detector.skipped['gripper_not_finite'] >= 1 and detector.skipped['wrench_not_finite'] == 1


def test_repeated_stamps_are_dropped(episodes: dict) -> None:
    gripper, wrench, truth = episodes['success']
    doubled = [r for r in gripper for _ in (0, 1)]
    detector = _run(doubled, wrench)
    assert detector.skipped['gripper_stamp_not_increasing'] == len(gripper)
    _assert_matches(detector, truth, ('contact', 'grasp', 'release'))


def test_gripper_only_and_wrench_only(episodes: dict) -> None:
    gripper, wrench, truth = episodes['success']
    only_gripper = _run(gripper, wrench, replace(SIM, use_wrench=False))
    _assert_matches(only_gripper, truth, ('grasp_start', 'contact', 'grasp', 'release'))
    assert not _times(only_gripper, 'lift')  # lifting needs the wrist to feel the weight
    only_wrench = _run(gripper, wrench, replace(SIM, use_gripper=False))
    contacts = _times(only_wrench, 'contact')
    assert contacts and abs(contacts[0] - _truth(truth, 'contact')[0]) <= TOLERANCE_S
    assert not _times(only_wrench, 'grasp')


def test_stamp_order_does_not_depend_on_arrival_interleaving() -> None:
    a = [('gripper', t) for t in range(0, 100, 10)]
    b = [('wrench', t) for t in range(0, 100, 2)]
    orders = []
    for seed in range(5):
        rng = np.random.default_rng(seed)
        arrivals, ia, ib = [], 0, 0
        while ia < len(a) or ib < len(b):  # each stream keeps its own order; the interleaving is random
            if ib >= len(b) or (ia < len(a) and rng.random() < 0.3):
                arrivals.append(a[ia])
                ia += 1
            else:
                arrivals.append(b[ib])
                ib += 1
        order = StampOrder(['gripper', 'wrench'])
        out = [item for stream, t in arrivals for item in order.push(stream, t, (stream, t))]
        orders.append([x[2] for x in out + order.flush()])
    assert all(o == orders[0] for o in orders)
    assert [t for _, t in orders[0]] == sorted(t for _, t in orders[0])


def _stream(episodes: dict, names: tuple[str, ...], gap_ns: int = 1_500_000_000) -> list[tuple[str, object, int]]:
    """The episodes' samples one after the other as a rig would publish them: (role, reading, received ns)."""
    out: list[tuple[str, object, int]] = []
    offset = 1_800_000_000_000_000_000
    for name in names:
        gripper, wrench, _ = episodes[name]
        items = sorted([(r.stamp_ns, 0, GRIPPER, r) for r in gripper] + [(r.stamp_ns, 1, WRENCH, r) for r in wrench],
                       key=lambda item: item[:2])
        for stamp, _, role, reading in items:
            out.append((role, replace(reading, stamp_ns=stamp + offset), stamp + offset + 1_000_000))
        offset += items[-1][0] + gap_ns
    return out


def test_a_segmenter_started_afresh_at_the_episodes_data_start_finds_what_the_offline_pass_finds(episodes):
    """Live, the segmenter runs through everything and restarts at each episode from the samples it kept; offline,
    it reads the bag, which holds what was received from the episode's first message on. Same samples, same
    events: to the nanosecond (run on through the success before, the detector puts this lift 2 ms earlier)."""
    profile = load_profile(PROFILE)
    stream = _stream(episodes, ('success', 'recovery'))
    second = next(i for i, (_, r, _) in enumerate(stream) if i and r.stamp_ns - stream[i - 1][1].stamp_ns > 1e9)
    data_start = stream[second][2] - 1_000_000_000  # a 1 s pre-roll reaches back into the gap and the tail before
    press = next(i for i, (_, _, received) in enumerate(stream) if received >= data_start + 1_500_000_000)

    live = Segmenter(profile)
    for role, reading, received in stream[:press]:
        live.add(role, reading, received)
    live = Segmenter(profile, since_ns=episode_input_start(data_start))  # the START event came in
    published = [e for role, reading, received in stream for e in live.add(role, reading, received)]

    offline = Segmenter(profile, since_ns=episode_input_start(data_start))
    bag = [(role, reading, received) for role, reading, received in stream if received >= data_start]
    found = [e for role, reading, received in bag for e in offline.add(role, reading, received)]
    found += offline.finish()
    assert [e.kind for e in found] == ['grasp_start', 'contact', 'grasp', 'lift', 'grasp_failed', 'contact_lost',
                                       'grasp_start', 'contact', 'grasp', 'lift', 'release', 'contact_lost']
    assert [(e.kind, e.stamp_ns) for e in published] == [(e.kind, e.stamp_ns) for e in found]


def test_samples_stamped_on_another_clock_are_judged_by_when_they_came():
    """A bag of last week replayed live into a recording: its stamps say nothing about this episode's start."""
    week = 7 * 86400 * 10**9
    since = 1_800_000_000_000_000_000
    assert before_input_start(since, since - 1, since + 1_000)  # same clock: the stamp decides
    assert not before_input_start(since, since, since + 1_000)
    assert not before_input_start(since, since - week, since + 5)  # replayed: received after the start
    assert before_input_start(since, since - week, since - 5)
    assert episode_input_start(None) is None and episode_input_start(since) == since + INPUT_GUARD_NS


def test_segment_command_writes_events_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = load_profile(PROFILE)
    bag = tmp_path / 'bag'
    truth = write_sim_episode(bag, profile, seed=0)
    assert main(['segment', str(bag), '--profile', str(PROFILE), '--json']) == 0
    data = json.loads(capsys.readouterr().out)
    grasp = next(e for e in data['events'] if e['kind'] == 'grasp')
    assert abs(grasp['t_s'] - truth['secured_s']) <= TOLERANCE_S
    assert grasp['evidence'] and {'signal', 'value', 'threshold'} <= set(grasp['evidence'][0])
    assert [s['name'] for s in data['timeline']] == ['reach', 'grasp', 'transport', 'release', 'retreat']

    assert main(['segment', str(bag)]) == 1
    assert 'or pass --profile to work on it alone' in capsys.readouterr().err


def test_segment_dataset_writes_each_episode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ros_robodata.dataset import Dataset
    from ros_robodata.dataset.episode import Episode

    profile = load_profile(PROFILE)
    dataset = Dataset.create(tmp_path / 'ds', profile=profile)
    ids = []
    for seed in (0, 8):
        episode_id = f'2026010{seed}-120000'
        write_sim_episode(dataset.bag_dir(episode_id), profile, seed=seed, episode_index=2 if seed == 8 else 0)
        dataset.add_episode(Episode(id=episode_id, task='pick', status='complete'))
        ids.append(episode_id)
    assert main(['segment', str(dataset.root)]) == 0
    out = capsys.readouterr().out
    assert all(i in out for i in ids)
    first = json.loads((dataset.episode_dir(ids[0]) / 'events.json').read_text())
    second = json.loads((dataset.episode_dir(ids[1]) / 'events.json').read_text())
    assert first['episode_id'] == ids[0] and 'release' in [e['kind'] for e in first['events']]
    assert [e['kind'] for e in second['events']] == ['grasp_start', 'grasp_failed']


def test_a_bag_without_the_topics_says_so(tmp_path: Path, write_demo_bag, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    bag = tmp_path / 'other'
    write_demo_bag(bag)
    assert main(['segment', str(bag), '--profile', str(PROFILE)]) == 1
    err = capsys.readouterr().err
    # names what is missing and what the bag has instead: never "0 events" (issue 13)
    assert 'the gripper topic /gripper/joint_states is not in this bag; it has ' in err
    assert '/joint_states' in err.split('it has', 1)[1]


def test_cdr_fast_path_reads_what_the_typestore_reads(tmp_path: Path) -> None:
    """Offline the gripper and wrench are parsed straight from their bytes; every value must equal rosbags'."""
    from ros_robodata.bag.reader import BagReader
    from ros_robodata.signals import joint_reading, read_gripper, read_joints, read_wrench
    from ros_robodata.signals.cdr import gripper_from_cdr, joint_state_from_cdr, wrench_from_cdr
    from ros_robodata.signals.samples import gripper_reading, wrench_reading

    profile = load_profile(PROFILE)
    write_sim_episode(tmp_path / 'bag', profile, seed=3, max_duration_s=3.0)
    checked = 0
    with BagReader(tmp_path / 'bag') as reader:
        for message in reader.messages([profile.topics.gripper.topic, profile.topics.wrench.topic,
                                        profile.topics.joint_states.topic]):
            decoded = reader.decode(message)
            if message.topic == profile.topics.wrench.topic:
                assert wrench_from_cdr(message.data) == wrench_reading(decoded)
            else:
                joint = 'finger_joint' if message.topic == profile.topics.gripper.topic else 'joint4'
                assert gripper_from_cdr(message.data, joint) == gripper_reading(decoded, joint)
                assert gripper_from_cdr(message.data, 'no_such_joint') is False
                assert joint_state_from_cdr(message.data) == joint_reading(decoded)
            checked += 1
    assert checked > 2000
    assert wrench_from_cdr(b'\x00\x01\x00\x00' + bytes(10)) is None  # short: the caller decodes it the slow way

    # Where the fast path gives up (big-endian CDR, as some DDS vendors send), the readers decode instead of
    # dropping the sample, and get the same values.
    with BagReader(tmp_path / 'bag') as reader:
        store = reader.typestore
        for message in reader.messages([profile.topics.gripper.topic, profile.topics.wrench.topic]):
            decoded = reader.decode(message)
            big_endian = store.serialize_cdr(decoded, message.msgtype, little_endian=False)
            assert gripper_from_cdr(big_endian, 'finger_joint') is None and wrench_from_cdr(big_endian) is None
            slow = lambda m=decoded: m  # noqa: E731
            if message.topic == profile.topics.wrench.topic:
                assert read_wrench(big_endian, slow) == read_wrench(message.data, slow) == wrench_reading(decoded)
            else:
                assert read_gripper(big_endian, 'finger_joint', slow) == gripper_reading(decoded, 'finger_joint')
                assert read_joints(big_endian, slow) == read_joints(message.data, slow)


def test_a_tared_wrist_sensor_still_sees_the_lift(episodes: dict) -> None:
    """With the sensor zeroed at start the tool's weight direction is unknown: the lift is a step to a new level."""
    gripper, wrench, truth = episodes['success']
    offset = np.median([r.force for r in wrench[100:300]], axis=0)
    tared = [replace(r, force=tuple(np.array(r.force) - offset)) for r in wrench]
    detector = _run(gripper, tared)
    lifts = [e for e in detector.events if e.kind == 'lift']
    assert len(lifts) == 1 and lifts[0].evidence[0].signal == 'wrench.load_step'
    assert abs(lifts[0].stamp_ns / 1e9 - truth['lift_off_s']) < 0.1
    _assert_matches(detector, truth, ('contact', 'grasp', 'release'))
