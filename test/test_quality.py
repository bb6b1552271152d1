"""Quality checks: each fault the simulator injects is found where it happened, a clean episode is clean."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ros_robodata.cli.main import main
from ros_robodata.profile import load_profile
from ros_robodata.quality.episode_checks import EpisodeReport, score_of
from ros_robodata.quality.findings import ERROR, INFO, WARN, Finding
from ros_robodata.quality.joint_stop import explain_stuck
from ros_robodata.quality.motion import JointLimit, JointMotion, Trajectory, limits_from_urdf
from ros_robodata.quality.patterns import explain_jumps_over_dataset, explain_stuck_over_dataset, find_patterns
from ros_robodata.quality.scoring import score_bag
from ros_robodata.quality.timing import StreamTiming, TimingLimits
from ros_robodata.sim.faults import Fault
from ros_robodata.sim.to_bag import write_sim_episode
from test.profiles import PROFILE

MS = 1_000_000
START = 1_700_000_000_000_000_000


def _feed(timing: StreamTiming, stamps_ms: list[float], receive_ms: list[float] | None = None) -> None:
    for i, stamp in enumerate(stamps_ms):
        receive = receive_ms[i] if receive_ms else stamp + 1
        timing.add(START + round(stamp * MS), START + round(receive * MS))


def _checks(findings: list[Finding]) -> dict[str, Finding]:
    return {f.check: f for f in findings}


def test_timing_counts_lost_samples_and_names_the_gap() -> None:
    timing = StreamTiming('/joint_states', TimingLimits(rate_hz=100))
    stamps = [t * 10.0 for t in range(100) if not 40 <= t < 45]  # 5 samples lost at 0.40..0.44 s
    _feed(timing, stamps)
    found = _checks(timing.findings())
    assert set(found) == {'timing.gap'} and timing.lost == 5
    assert found['timing.gap'].ranges == ((START + 390 * MS, START + 450 * MS),)
    assert found['timing.gap'].message == ('/joint_states: one gap of 5 missing sample(s) over 0.06 s (stamp steps '
                                           'over 1.5 periods)')


def test_many_single_lost_samples_are_not_called_one_gap() -> None:
    """A lossy link drops one sample in ten for 100 s (as a real WidowX log does): the message says that, not
    'N samples missing in 1 gap', which sends the user looking for one long outage."""
    timing = StreamTiming('/joint_states', TimingLimits(rate_hz=100))
    _feed(timing, [t * 10.0 for t in range(10_000) if t % 10 != 5])
    gap = _checks(timing.findings())['timing.gap']
    assert gap.count == 1000 and timing.lost == 1000
    assert gap.message == ('/joint_states: 1000 single missing samples (never two in a row) spread over 99.92 s '
                           '(stamp steps over 1.5 periods)')
    runs = StreamTiming('/joint_states', TimingLimits(rate_hz=100))
    _feed(runs, [t * 10.0 for t in range(1000) if t % 100 not in (50, 51, 52)] + [10_000.0])
    assert _checks(runs.findings())['timing.gap'].message.startswith(
        '/joint_states: 30 samples missing in 10 gaps spread over ')
    assert 'the longest 3 in a row' in _checks(runs.findings())['timing.gap'].message


def _stalled(topic: str, rate_hz: float, stall_ms: tuple[float, float] | None) -> StreamTiming:
    """A topic over 4 s whose messages waited, during `stall_ms`, until the stall's end (a host that stopped
    taking messages, as a starved two-core computer does) before being received."""
    timing = StreamTiming(topic, TimingLimits(rate_hz=rate_hz, max_latency_ms=100))
    stamps = [i * 1000 / rate_hz for i in range(int(4 * rate_hz))]
    receive = [max(t + 1, stall_ms[1]) if stall_ms and stall_ms[0] <= t < stall_ms[1] else t + 1 for t in stamps]
    _feed(timing, stamps, receive)
    return timing


def test_every_topic_late_at_once_is_one_host_stall() -> None:
    """Seven topics late over the same half second are one finding naming the host, not seven naming drivers;
    a topic late on its own elsewhere keeps its own finding."""
    from ros_robodata.quality.host_stall import merge_host_stalls

    rates = {'/joint_states': 500, '/wrist/wrench': 500, '/gripper/joint_states': 100, '/camera/wrist': 30,
             '/camera/scene': 30, '/teleop/command': 100, '/lidar/points': 10}
    timings = [_stalled(topic, rate, (1800.0, 2300.0)) for topic, rate in rates.items()]
    timings.append(_stalled('/slow_driver', 50, (3000.0, 3400.0)))
    findings = [f for t in timings for f in t.findings()]
    assert sum(f.check == 'timing.latency' for f in findings) == 8
    merged = merge_host_stalls(findings, len(timings), start_ns=START)
    assert [f.topic for f in merged if f.check == 'timing.latency'] == ['/slow_driver']
    (stall,) = [f for f in merged if f.check == 'timing.host_stall']
    assert stall.message.startswith('7 of 8 topics arrived late at once (1.80-2.')
    assert 'the recording computer or its network stalled, not a driver' in stall.message
    assert len(score_of(merged)[1]) == 2  # the stall and the slow driver: two problems, two lines (not eight)
    stall_only = [f for t in timings[:7] for f in t.findings()]
    assert score_of(merge_host_stalls(stall_only, 7, start_ns=START)) == (
        0.9, [f'warn: {merge_host_stalls(stall_only, 7, start_ns=START)[0].message}'])
    two = [f for t in timings[:2] for f in t.findings()]
    assert merge_host_stalls(two, len(timings), start_ns=START) == two  # two topics of eight: not the host


def test_timing_backwards_duplicates_clock_jumps_latency_and_silence() -> None:
    timing = StreamTiming('/wrist/wrench', TimingLimits(rate_hz=100, silent_after_s=0.5, max_latency_ms=50))
    stamps = [t * 10.0 for t in range(50)]
    stamps[10] = stamps[9]  # a repeated stamp
    stamps[20], stamps[21] = stamps[21], stamps[20]  # two swapped
    receive = [s + 1 for s in stamps]
    receive[30] += 120  # one late message
    _feed(timing, stamps, receive)
    _feed(timing, [1000.0 + t * 10 for t in range(10)])  # after a 0.5 s silence
    _feed(timing, [1100.0 + 800 + t * 10 for t in range(10)], [1100.0 + t * 10 for t in range(10)])  # clock +0.8 s
    found = _checks(timing.findings(episode_end_ns=START + 3000 * MS))
    # (the swap also looks like one lost sample, and 70 messages in 3 s is far below 100 Hz)
    assert set(found) == {'timing.duplicate_stamp', 'timing.stamp_backwards', 'timing.latency', 'timing.silent',
                          'timing.clock_jump', 'timing.gap', 'timing.rate'}
    assert found['timing.stamp_backwards'].count == 1 and found['timing.duplicate_stamp'].count == 1
    assert found['timing.latency'].count == 1 and found['timing.latency'].value == pytest.approx(121, abs=1)
    assert found['timing.clock_jump'].value == pytest.approx(0.8, abs=0.02)
    # silent between 0.49 and 1.0 s, and again from the last message (1.19 s) to the end (3 s)
    assert len(found['timing.silent'].ranges) == 2 and found['timing.silent'].severity == ERROR


def test_a_publisher_catching_up_after_a_stall_is_latency_not_a_clock_jump() -> None:
    timing = StreamTiming('/joint_states', TimingLimits(rate_hz=100, max_latency_ms=100))
    stamps = [t * 10.0 for t in range(300)]
    receive = [s + 2 for s in stamps]
    for i in range(100, 180):  # the publisher stalled 0.8 s, then sent what it owed in one burst
        receive[i] = 1800 + 2 + (i - 100) * 0.01
    _feed(timing, stamps, receive)
    found = _checks(timing.findings())
    assert 'timing.clock_jump' not in found and 'timing.latency' in found


def test_a_live_monitor_that_ran_late_itself_does_not_blame_the_topic() -> None:
    """Its callbacks stalled 0.4 s (a bag closing in the same process): what waited in its queue then is not the
    topic's lateness; a message the stall cannot explain, and lateness with no stall, still count."""
    timing = StreamTiming('/joint_states', TimingLimits(rate_hz=100, max_latency_ms=100))
    timing.own_stalls = []
    stamps = [t * 10.0 for t in range(300)]
    receive = [s + 2 for s in stamps]
    for i in range(100, 140):  # the monitor's queue was stuck from 1.0 to 1.4 s, then drained
        receive[i] = 1400 + (i - 100) * 0.05
    receive[120] = 2000.0  # this one came 0.8 s late: more than the monitor's stall
    for i in range(250, 260):  # and 2.5 s on, the topic itself was late with no stall of the monitor
        receive[i] += 150
    _feed(timing, stamps, receive)
    timing.own_stalls.append((START + 950 * MS, START + 1450 * MS))  # the stall, give or take a 50 ms beat
    assert timing.settle_late(None, 0) == 11 and timing.excused_late == 30
    found = _checks(timing.findings())
    assert found['timing.latency'].count == 11
    assert found['timing.latency'].ranges == ((START + 1200 * MS, START + 1200 * MS), (START + 2500 * MS,
                                                                                       START + 2590 * MS))


def test_event_driven_and_latched_topics_carry_no_timing_expectations() -> None:
    events = StreamTiming('/robodata/events', TimingLimits(rate_hz=None))
    _feed(events, [0.0, 0.0, 5000.0, 1.0])
    urdf = StreamTiming('/robot_description', TimingLimits(rate_hz=None, latched=True))
    _feed(urdf, [0.0])
    assert events.findings(START + 10_000 * MS) == [] and urdf.findings(START + 10_000 * MS) == []


def test_motion_nan_limits_stuck_and_idle() -> None:
    urdf = ('<robot name="r"><joint name="a" type="revolute"><limit lower="-1" upper="1"/></joint>'
            '<joint name="b" type="prismatic"><limit lower="0" upper="0.5"/></joint>'
            '<joint name="c" type="continuous"/></robot>')
    limits = limits_from_urdf(urdf)
    assert set(limits) == {'a', 'b'}
    motion = JointMotion('/joint_states', ['a', 'b'], joint_limits=limits)
    for i in range(1000):  # 10 s at 100 Hz
        t = START + i * 10 * MS
        a = 0.5 * np.sin(i / 50) if i < 600 else 0.5 * np.sin(600 / 50)  # still from 6 s on: a stop, no jump
        b = 0.2 if i < 400 else 0.2 + 0.001 * (min(i, 600) - 400)
        if i == 300:
            a = float('nan')
        if 100 <= i < 110:
            a = 1.2  # beyond the limit
        if i == 500:
            a += 0.3  # one glitched sample: a jump far beyond the task's own motion
        motion.command(t, ['a', 'b'], [a, 0.2 + 0.05 * np.sin(i / 40)])  # b was commanded to move throughout
        motion.add(t, ['c', 'a', 'b'], [0.0, a, b])
    found = _checks(motion.findings())
    assert set(found) == {'motion.nan', 'motion.joint_limit', 'motion.stuck_joint', 'motion.idle',
                          'motion.velocity_jump'}
    assert found['motion.nan'].count == 1 and 'a' in found['motion.nan'].message
    stuck = found['motion.stuck_joint']
    assert stuck.message.startswith('b reported the same value') and 'while its command moved by' in stuck.message
    assert stuck.severity == WARN
    jump = found['motion.velocity_jump']
    # the glitch going up and coming back (and the limit excursion), not the ordinary stop at 6 s
    assert jump.severity == WARN and all(r[1] < START + 5900 * MS for r in jump.ranges), jump.ranges
    idle = found['motion.idle']
    # (the first still sample after motion waits one sample: a re-published sample or a stop, the next one tells)
    assert idle.ranges[0][0] == pytest.approx(START + 6000 * MS, abs=40 * MS) and motion.smoothness() is not None
    assert idle.severity == INFO and 'end: trim at 6.0 s' in idle.message  # a pause is no data fault


def test_a_joint_standing_still_is_stuck_only_when_it_should_have_moved() -> None:
    """Servo encoders read the same value at rest, and an operator may not use a joint at all: without a command
    saying it should have moved, a still joint is at most information (issue 14: 3 of 4 real episodes)."""
    motion = JointMotion('/joint_states', ['a', 'b'])
    for i in range(1000):
        t = START + i * 10 * MS
        a = 0.0 if i < 200 else 0.5 * np.sin((i - 200) / 50)  # 2 s at rest before the operator starts
        motion.add(t, ['a', 'b'], [a, 0.1])  # b never used
    found = _checks(motion.findings())
    assert found['motion.stuck_joint'].severity == INFO and 'never changed' in found['motion.stuck_joint'].message
    assert 'motion.velocity_jump' not in found  # the start from rest is no jump


HAND = ['kLeftElbow', 'kLeftHandThumbBend', 'kLeftWristYaw']


def _hand_episode(index_used: bool, wrist_dead: bool, limits: dict[str, JointLimit] | None = None) -> JointMotion:
    """10 s of a humanoid's arm and hand at 100 Hz: the elbow pinned at 0 (the end of its 0..1 travel) while its
    command hovers 0..0.15 just inside that end (or, `index_used`, moving over its travel); the thumb
    closing onto an object at 0.3 while its command goes on closing past it; the wrist following its command, or
    (`wrist_dead`) reading 0.0 mid-travel for 3 s while its command sweeps through it."""
    motion = JointMotion('/joint_states', HAND, joint_limits=limits)
    for i in range(1000):
        t = START + i * 10 * MS
        s = np.sin(i / 60)
        index = 0.5 + 0.5 * s if index_used else 0.0
        index_cmd = index if index_used else 0.075 + 0.075 * s
        thumb = 0.9 - 0.6 * min(i, 300) / 300
        thumb_cmd = thumb if i < 300 else 0.3 - 0.3 * (0.5 + 0.5 * s)
        wrist_cmd = 0.2 * np.sin(i / 40)
        wrist = 0.0 if wrist_dead and 400 <= i < 700 else wrist_cmd
        motion.command(t, HAND, [index_cmd, thumb_cmd, wrist_cmd])
        motion.add(t, HAND, [index, thumb, wrist])
    return motion


def _stuck(findings: list[Finding]) -> dict[str, Finding]:
    return {f.message.split()[0]: f for f in findings if f.check == 'motion.stuck_joint'}


def test_a_finger_at_its_end_stop_or_closed_on_an_object_is_no_stuck_encoder() -> None:
    """A humanoid (issue 27): a joint resting at the end of its travel while its command hovers just inside it,
    and a finger whose command went on closing past where the object held it, are information; a wrist that
    reads one value mid-travel while its command sweeps through it stays a warning."""
    stuck = _stuck(_hand_episode(False, True, {'kLeftElbow': JointLimit(0.0, 1.0)}).findings())
    assert stuck['kLeftElbow'].severity == INFO and 'end of its travel' in stuck['kLeftElbow'].message
    assert stuck['kLeftHandThumbBend'].severity == INFO and 'closed on an object' in \
        stuck['kLeftHandThumbBend'].message
    assert stuck['kLeftWristYaw'].severity == WARN and 'dead encoder' in stuck['kLeftWristYaw'].message


def test_the_end_of_a_joints_travel_is_where_the_dataset_ends_it_and_a_pattern_is_said_once() -> None:
    """Without a URDF, one episode cannot know the pinned elbow is at its end; the dataset can (another episode
    used it over 0..1). A warning in most episodes (a dead wrist in 3 of 4) becomes one dataset-level pattern and
    an info in each."""
    runs = [_hand_episode(False, True), _hand_episode(False, True), _hand_episode(False, True),
            _hand_episode(True, False)]
    reports = {}
    for k, motion in enumerate(runs):
        findings = motion.findings()
        reports[f'ep{k}'] = EpisodeReport(findings, {}, START, START + 10**10, None, list(motion.names),
                                          motion.stuck_detail())
    assert _stuck(reports['ep0'].findings)['kLeftElbow'].severity == WARN  # alone: its travel is unknown
    assert explain_stuck_over_dataset(reports) == 3
    assert all(_stuck(reports[f'ep{k}'].findings)['kLeftElbow'].severity == INFO for k in range(3))
    patterns = find_patterns(reports)
    # The dead wrist's jumps back to its command are the same pattern's other face.
    assert [(p.check, p.subject, p.episodes) for p in patterns] == [
        ('motion.stuck_joint', 'kLeftWristYaw', ('ep0', 'ep1', 'ep2')),
        ('motion.velocity_jump', '', ('ep0', 'ep1', 'ep2'))]
    assert patterns[0].line().startswith('motion.stuck_joint on kLeftWristYaw on /joint_states in 3 of 4 episodes')
    assert all(_stuck(reports[f'ep{k}'].findings)['kLeftWristYaw'].severity == INFO for k in range(3))
    assert not any(f.severity == WARN for r in reports.values() for f in r.findings if f.check == 'motion.stuck_joint')


def test_a_spike_in_the_first_seconds_is_found_once_the_motion_is_known() -> None:
    """One encoder spike 2 s into an episode, before 200 moving samples told the task's typical motion."""
    motion = JointMotion('/joint_states', ['a', 'b'])
    for i in range(360):  # 12 s at 30 Hz
        t = START + i * 33 * MS
        a, b = 0.4 * np.sin(i / 30), 0.3 * np.cos(i / 40)
        if i == 60:
            a += 0.5
        motion.add(t, ['a', 'b'], [a, b])
    jump = {f.check: f for f in motion.findings()}['motion.velocity_jump']
    assert jump.severity == WARN and jump.ranges[0][0] <= START + 62 * 33 * MS


def test_a_joint_that_snaps_in_every_episode_is_doing_its_job_but_a_spike_is_not() -> None:
    """Unnamed joints (a public dataset's joint_15, a gripper): its snap in every episode is judged against its own
    steps over the dataset and becomes an info; a one-frame spike on another joint stays a warning."""
    def episode(k: int, spike: bool) -> EpisodeReport:
        names = ['joint_0', 'joint_15']
        motion = JointMotion('/joint_states', names)
        for i in range(450):  # 15 s at 30 Hz
            t = START + i * 33 * MS
            arm = 0.4 * np.sin(i / 30 + k)
            phase = i % 150  # snaps open (in 4 frames) and shut again, three times an episode
            grip = 0.1 + 1.1 * min(1.0, max(0.0, (phase - 20) / 4)) * min(1.0, max(0.0, (100 - phase) / 4))
            if spike and i == 300:
                arm += 0.5
            motion.add(t, names, [arm, grip])
        return EpisodeReport(motion.findings(), {}, START, START + 15 * 10**9, None, names, motion.stuck_detail())

    reports = {f'ep{k}': episode(k, spike=k == 0) for k in range(5)}
    before = {n: {f.check: f.severity for f in r.findings}.get('motion.velocity_jump') for n, r in reports.items()}
    assert set(before.values()) == {WARN}  # alone, each snap looks like a jump
    assert explain_jumps_over_dataset(reports) == 4
    after = {n: {f.check: f.severity for f in r.findings}['motion.velocity_jump'] for n, r in reports.items()}
    assert after == {'ep0': WARN, 'ep1': INFO, 'ep2': INFO, 'ep3': INFO, 'ep4': INFO}


def test_a_follower_held_at_its_stop_while_its_leader_asks_past_it_is_an_end_stop() -> None:
    """An SO-101 follower's wrist reads 92.7 at the top of its travel while the leader goes on to 114: the
    follower cannot follow past its stop. The same reading mid-travel with the command on both sides is not
    explained, and a joint that never moved cannot tell which end it is at."""
    assert 'end stop' in explain_stuck('wrist_flex.pos', [(92.7, 92.4, 114.4)], (36.2, 92.9), (56.0, 114.4))
    assert explain_stuck('wrist_flex.pos', [(66.2, 40.0, 90.0)], (36.2, 92.9), (40.0, 114.4)) == ''
    assert explain_stuck('kLeftElbow', [(0.0, 0.0, 0.15)], (0.0, 0.0), (0.0, 0.15)) == ''
    # The real Robothon SO-101 episode: besides the stop, the wrist sat still mid-travel for 7 s while the leader
    # twitched by 0.4 (a hobby servo's deadband); the twitch is no stuck joint, a 20-degree move would be.
    at_stop, twitch = (92.7, 98.7, 113.6), (74.6, 73.4, 73.8)
    assert 'end stop' in explain_stuck('wrist_flex.pos', [at_stop, twitch], (53.7, 92.9), (53.0, 114.4))
    assert explain_stuck('wrist_flex.pos', [at_stop, (74.6, 60.0, 80.0)], (53.7, 92.9), (53.0, 114.4)) == ''


def test_a_hand_snapping_shut_in_a_frame_is_how_it_grasps_not_a_jump_fault() -> None:
    """Dexterous hands close in a snap (issue 27: 0.16 of the range in one frame): information; the same step on
    a wrist joint is a warning."""
    def run(snapping: str) -> Finding:
        names = ['kLeftWristYaw', 'kLeftHandIndex']
        motion = JointMotion('/joint_states', names)
        for i in range(900):  # 30 s at 30 Hz
            t = START + i * 33 * MS
            wrist, index = 0.3 * np.sin(i / 30), 0.4 + 0.3 * np.sin(i / 45)
            if i >= 600:  # one snap of 0.16 in a frame, held
                if snapping == 'kLeftHandIndex':
                    index += 0.16
                else:
                    wrist += 0.16
            motion.add(t, names, [wrist, index])
        return {f.check: f for f in motion.findings()}['motion.velocity_jump']

    hand, wrist = run('kLeftHandIndex'), run('kLeftWristYaw')
    assert hand.severity == INFO and 'hand or gripper joints only' in hand.message
    assert wrist.severity == WARN and 'in the motion itself' in wrist.message


def test_a_sample_republished_while_the_arm_moves_is_a_repeated_sample_not_a_jump() -> None:
    """An industrial arm's driver published the same joint sample twice while the arm moved at 0.66 rad/s, and
    its stamps step 40/58 ms now and then: neither is the arm jerking."""
    motion = JointMotion('/joint_states', ['a'])
    t = START
    rng = np.random.default_rng(0)
    last = 0.0
    for i in range(600):  # 30 s at 20 Hz, sampled on time but stamped 40/58 ms apart now and then
        step = 50 * MS if i % 37 else int(rng.choice([40, 58])) * MS
        t += step
        position = 0.66 * 0.05 * i if i % 25 else last  # 0.66 rad/s; every 25th sample re-published unchanged
        last = position
        motion.add(t, ['a'], [position])
    found = _checks(motion.findings())
    repeated = found['timing.repeated_sample']
    assert repeated.count == 23 and 'repeats a stale reading' in repeated.message
    assert 'motion.velocity_jump' not in found or found['motion.velocity_jump'].severity == INFO


def test_trajectory_memory_stays_bounded() -> None:
    short, long = Trajectory(capacity=500), Trajectory(capacity=500)
    for i in range(1000):
        short.add(i, [float(i)])
    for i in range(1_000_000):
        long.add(i, [float(i)])
    assert len(short.times) <= 500 and len(long.times) <= 500
    times, _ = long.arrays()
    assert times[0] == 0 and times[-1] > 990_000 and np.all(np.diff(times) > 0)


def test_score_is_the_product_of_penalties_with_reasons_worst_first() -> None:
    findings = [Finding('timing.gap', WARN, '/a', 'gap'), Finding('motion.nan', ERROR, '/b', 'nan')]
    score, reasons = score_of(findings)
    assert score == pytest.approx(0.7 * 0.9) and reasons == ['error: nan', 'warn: gap']
    # The same check on several topics (one stall made every topic late) costs once.
    late = [Finding('timing.latency', WARN, f'/t{i}', 'late') for i in range(7)]
    assert score_of(late)[0] == pytest.approx(0.9) and len(score_of(late)[1]) == 7
    assert score_of([]) == (1.0, [])


FAULTS = [Fault('joint_states', 'clock_jump', 3.0, 3.5), Fault('wrench', 'spike', 4.6, 4.62),
          Fault('joint_states', 'nan', 5.0, 5.1), Fault('wrench', 'silent', 6.0, 7.5),
          Fault('gripper', 'drop', 1.5, 2.5, fraction=0.5)]
EXPECTED = {'timing.clock_jump': ('/joint_states', 3.0, 3.5), 'contact.force_limit': ('/wrist/wrench', 4.6, 4.62),
            'contact.force_spike': ('/wrist/wrench', 4.6, 4.62), 'motion.nan': ('/joint_states', 5.0, 5.1),
            'timing.silent': ('/wrist/wrench', 6.0, 7.5), 'timing.gap': ('/gripper/joint_states', 1.5, 2.5)}


@pytest.fixture(scope='module')
def faulty_bag(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bag = tmp_path_factory.mktemp('quality') / 'faulty'
    write_sim_episode(bag, load_profile(PROFILE), seed=0, faults=FAULTS, cameras=True, lidar=True,
                      image_size=(64, 48))
    return bag


def test_every_injected_fault_is_found_in_its_window(faulty_bag: Path) -> None:
    report = score_bag(faulty_bag, load_profile(PROFILE), images=False).report
    found: dict[str, list[Finding]] = {}
    for f in report.findings:
        found.setdefault(f.check, []).append(f)
    # The camera frames pair with wrong arm poses while the joint clock is off: sync skew is a true finding too.
    assert set(found) - {'timing.sync_skew'} == set(EXPECTED)
    for check, (topic, start_s, end_s) in EXPECTED.items():
        (finding,) = found[check]
        assert finding.topic == topic
        a, b = START + start_s * 1e9, START + end_s * 1e9
        assert any(r0 <= b + 0.6e9 and r1 >= a - 0.1e9 for r0, r1 in finding.ranges), (check, finding.ranges)
    assert report.score < 0.2


def test_a_clean_simulated_episode_is_clean(tmp_path: Path) -> None:
    bag = tmp_path / 'clean'
    write_sim_episode(bag, load_profile(PROFILE), seed=1, cameras=True, lidar=True, image_size=(64, 48))
    report = score_bag(bag, load_profile(PROFILE), images=False, outcome='success').report
    assert report.findings == [] and report.score == 1.0
    assert report.metrics['topics']['/joint_states']['rate_hz'] == pytest.approx(500, rel=0.02)


def test_score_command_on_a_bare_bag_prints_the_findings(faulty_bag: Path, capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    assert main(['score', str(faulty_bag), '--profile', str(PROFILE), '--json', '--no-images']) == 0
    data = json.loads(capsys.readouterr().out)
    assert {f['check'] for f in data['findings']} >= set(EXPECTED)
    nan = next(f for f in data['findings'] if f['check'] == 'motion.nan')
    assert nan['ranges_s'][0][0] == pytest.approx(5.0, abs=0.05)


@pytest.fixture(scope='module')
def scored_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three simulated episodes (success, success, failure), scored by `robodata score --workers 2`."""
    from ros_robodata.dataset import Dataset
    from ros_robodata.dataset.episode import Episode

    profile = load_profile(PROFILE)
    root = tmp_path_factory.mktemp('scored') / 'ds'
    dataset = Dataset.create(root, profile=profile)
    for seed, outcome in ((0, 'success'), (1, 'success'), (2, 'failure')):
        episode_id = f'20260101-12000{seed}'
        faults = [Fault('joint_states', 'nan', 5.0, 5.1)] if seed == 1 else []
        write_sim_episode(dataset.bag_dir(episode_id), profile, seed=seed, cameras=True, lidar=True,
                          image_size=(64, 48), faults=faults)
        dataset.add_episode(Episode(id=episode_id, task='pick', status='complete', outcome=outcome))
    assert main(['score', str(root), '--workers', '2']) == 0
    return root


def test_score_writes_quality_files_and_catalog_scores(scored_dataset: Path) -> None:
    from ros_robodata.dataset import Dataset

    dataset = Dataset.open(scored_dataset)
    rows = {row.id: row for row in dataset.list()}
    quality = {i: json.loads((dataset.episode_dir(i) / 'quality.json').read_text()) for i in rows}
    clean, faulty, failed = (quality[f'20260101-12000{s}'] for s in (0, 1, 2))
    assert clean['score'] == 1.0 and clean['reasons'] == []
    assert faulty['score'] < 1.0 and any('NaN' in r for r in faulty['reasons'])
    assert rows['20260101-120001'].score == faulty['score'] and 'motion.nan' in rows['20260101-120001'].scores['checks']
    # The criteria agree with the labels: the scripted failure is judged a failure from its events.
    assert clean['success']['success'] is True and failed['success']['success'] is False
    assert not any(q['success']['disagrees'] for q in quality.values())
    assert all(q['consistency']['normalized'] is not None for q in quality.values())
    assert (dataset.episode_dir('20260101-120000') / 'events.json').is_file()  # segmented on the way
    summary = json.loads((scored_dataset / 'quality_summary.json').read_text())
    assert summary['outcomes']['success'] == 2 and summary['outcomes']['failure'] == 1
    assert summary['checks'] == {'motion.nan': 1}


def test_catalog_rebuild_keeps_the_scores(scored_dataset: Path) -> None:
    from ros_robodata.dataset import Dataset

    (scored_dataset / 'catalog.sqlite').unlink()
    for side in ('catalog.sqlite-wal', 'catalog.sqlite-shm'):
        (scored_dataset / side).unlink(missing_ok=True)
    assert main(['catalog', 'rebuild', str(scored_dataset)]) == 0
    rows = {row.id: row for row in Dataset.open(scored_dataset).list()}
    assert rows['20260101-120000'].score == 1.0 and rows['20260101-120001'].score < 1.0


def test_a_label_that_contradicts_the_evidence_is_flagged(scored_dataset: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(['set', str(scored_dataset / 'episodes' / '20260101-120002'), '--outcome', 'success',
                 '--reason', 'test']) == 0
    capsys.readouterr()
    assert main(['score', str(scored_dataset / 'episodes' / '20260101-120002'), '--json']) == 0
    data = json.loads(capsys.readouterr().out)['episodes']['20260101-120002']
    assert data['success']['disagrees'] is True
    assert any(f['check'] == 'success.disagrees' for f in data['findings']) and data['score'] < 1.0


def test_an_episode_much_jerkier_than_its_peers_is_flagged() -> None:
    from ros_robodata.quality.episode_checks import EpisodeReport
    from ros_robodata.quality.episode_score import EpisodeScore
    from ros_robodata.quality.peer_judges import flag_jerky

    values = [-15.0, -15.5, -14.8, -15.2, -21.0, -15.1]
    scores = {f'e{i}': EpisodeScore(f'e{i}', 'pick', 'success', EpisodeReport([], {'smoothness_ldlj': v}, 0, 1))
              for i, v in enumerate(values)}
    flag_jerky(scores)
    flagged = {i for i, s in scores.items() if any(f.check == 'motion.jerky' for f in s.extra)}
    assert flagged == {'e4'}


def test_a_force_drop_is_a_contact_letting_go_not_a_collision() -> None:
    """32 N to 5 N in one sample (issue 14): a contact let go; a rise and its way back down is one spike."""
    from ros_robodata.quality.contact import WrenchWatch

    watch = WrenchWatch('/wrist/wrench', None)
    for i in range(600):
        t = START + i * 2 * MS
        force = 32.0 if 100 <= i < 300 else 5.0 + 0.05 * np.sin(i)  # pressed, then let go
        if i == 450:
            force = 60.0  # a knock, back down at once
        watch.add(t, (0.0, 0.0, force))
    found = _checks(watch.findings())
    drop = found['contact.force_drop']
    assert drop.severity == INFO and 'dropped by up to 27 N' in drop.message and drop.count == 1
    spike = found['contact.force_spike']
    assert spike.severity == WARN and 'rose by up to' in spike.message and spike.count == 2  # 5 -> 32, 5 -> 60


def test_every_time_in_a_score_counts_from_the_first_header_stamp(tmp_path) -> None:
    """One time origin (issue 14: ranges_s started at -0.002 s, a receive-time origin for stamp ranges)."""
    from ros_robodata.bag.reader import BagReader
    from ros_robodata.profile import load_profile
    from ros_robodata.signals import header_stamp_ns
    from ros_robodata.sim.to_bag import write_sim_episode

    profile = load_profile(Path(__file__).resolve().parents[1] / 'config' / 'sim_cell.yaml')
    bag = tmp_path / 'bag'
    write_sim_episode(bag, profile, seed=2, max_duration_s=6.0, faults=FAULTS[1:2])  # a force spike
    scored = score_bag(bag, profile, images=False)
    with BagReader(bag) as reader:
        stamps = [s for m in reader.messages() if (s := header_stamp_ns(m.data)) is not None and s > 0]
    assert scored.report.start_ns == min(stamps)
    data = scored.report.to_json()
    for finding in data['findings']:
        assert all(a >= 0 for a, _ in finding.get('ranges_s', [])), finding
        assert finding['stretches'] == len(finding['ranges_ns'])


@pytest.mark.parametrize('kind, stream, start, end, check, topic', [
    ('repeat', 'joint_states', 2.0, 3.0, 'timing.repeated_sample', '/joint_states'),
    ('dark', 'camera/wrist', 2.0, 2.5, 'image.dark', '/camera/wrist/image_raw'),
    ('freeze', 'camera/scene', 2.0, 2.0 + 5.5 / 30, 'image.frozen', '/camera/scene/image_raw'),
])
def test_faults_the_10_fps_sampling_missed_are_found_in_their_window(tmp_path, kind, stream, start, end, check,
                                                                     topic) -> None:
    """A camera frozen for 5 frames at 30 Hz, a dark stretch, a burst of re-published joint samples (issue 14)."""
    from ros_robodata.profile import load_profile
    from ros_robodata.sim.faults import Fault
    from ros_robodata.sim.to_bag import write_sim_episode

    profile = load_profile(Path(__file__).resolve().parents[1] / 'config' / 'sim_cell.yaml')
    bag = tmp_path / 'bag'
    truth = write_sim_episode(bag, profile, seed=3, max_duration_s=4.0, cameras=True, image_size=(64, 48),
                              faults=[Fault(stream, kind, start, end, fraction=0.3)])
    found = [f for f in score_bag(bag, profile).report.findings if f.check == check and f.topic == topic]
    assert found, [f.check for f in score_bag(bag, profile).report.findings]
    zero = truth['start_ns']
    assert any(a <= zero + (end + 0.6) * 1e9 and b >= zero + (start - 0.1) * 1e9 for a, b in found[0].ranges)


def test_an_episode_far_beyond_a_datasets_pattern_stays_a_warning() -> None:
    """A camera that drops out for about a second in every episode is a trait of the rig (one dataset-level line, an
    info in each); the episode where it was gone for 12 s differs from that norm and stays a warning, said so."""
    def report(seconds: float, k: int) -> EpisodeReport:
        start = START + k * 10**9
        gap = Finding('timing.silent', WARN, '/camera/wrist/image_raw', f'no frame for {seconds:.1f} s',
                      value=seconds, threshold=0.5, ranges=((start, start + int(seconds * 1e9)),), count=1)
        return EpisodeReport([gap], {}, START, START + 30 * 10**9, None, [])

    lengths = [0.9, 1.1, 1.0, 1.3, 0.8, 1.2, 12.0]
    reports = {f'ep{k}': report(s, k) for k, s in enumerate(lengths)}
    (pattern,) = find_patterns(reports)
    assert pattern.episodes == tuple(reports) and pattern.beyond == ('ep6',)
    assert pattern.line().endswith('beyond it, still a warning: ep6')
    severities = {name: r.findings[0].severity for name, r in reports.items()}
    assert severities == {**{f'ep{k}': INFO for k in range(6)}, 'ep6': WARN}
    assert 'here 12 s against a usual 1.1 s: beyond the pattern' in reports['ep6'].findings[0].message
    assert pattern.to_json()['beyond'] == ['ep6']
