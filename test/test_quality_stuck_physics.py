"""A follower that holds still is stuck only when physics does not explain it (issue 27, a bimanual arm with two
dexterous hands): a teleop loop's latency (the follower answering its leader a second late, as drivers enabling at
an episode's start do) and a leader dithering inside the follower's deadband (an idle arm whose leader twitches by
one code while the follower rests a little off it) are no faults; a follower that does not answer a real move of its
command still is. Each judged by the streaming check and by the batch path on arrays, which must agree."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
import pytest

from ros_robodata.quality.batch_motion import MotionRun, feed_motion
from ros_robodata.quality.episode_checks import EpisodeReport
from ros_robodata.quality.findings import INFO, WARN, Finding
from ros_robodata.quality.joint_stop import explain_stuck
from ros_robodata.quality.motion import JointMotion
from ros_robodata.quality.patterns import explain_stuck_over_dataset
from ros_robodata.quality.quality_format import EpisodeMetrics

START = 1_700_000_000_000_000_000
FPS = 30
PERIOD_NS = 1_000_000_000 // FPS
Signal = Callable[[float], float]


def _both(names: Sequence[str], seconds: float, reading: dict[str, Signal], command: dict[str, Signal]
          ) -> tuple[JointMotion, JointMotion]:
    """One episode at 30 Hz through the streaming check (command, then joint sample, one at a time) and through
    the batch path (feed_motion on arrays, the commands interleaved by sequence number as a bag orders them)."""
    n = int(seconds * FPS)
    stamps = START + np.arange(n, dtype=np.int64) * PERIOD_NS
    times = [i / FPS for i in range(n)]
    q = np.array([[reading[name](t) for name in names] for t in times])
    c = np.array([[command[name](t) for name in names] for t in times])
    streamed = JointMotion('/joint_states', list(names))
    for i in range(n):
        streamed.command(int(stamps[i]), names, c[i].tolist())
        streamed.add(int(stamps[i]), names, q[i].tolist())
    batched = JointMotion('/joint_states', list(names))
    seqs = np.arange(n, dtype=np.int64) * 2
    feed_motion(batched, [MotionRun(seqs + 1, tuple(names), stamps, q)], [MotionRun(seqs, tuple(names), stamps, c)])
    return streamed, batched


def _report(found: list[Finding], names: Sequence[str], detail: dict[str, Any]) -> EpisodeReport:
    """What the dataset's judgement reads of an episode: its findings and its motion detail."""
    return EpisodeReport(found, cast(EpisodeMetrics, {}), START, None, None, list(names), detail)


def _agree(streamed: JointMotion, batched: JointMotion) -> list[Finding]:
    found = streamed.findings()
    assert [(f.check, f.severity, f.message, f.ranges) for f in found] == \
        [(f.check, f.severity, f.message, f.ranges) for f in batched.findings()]
    assert json.dumps(streamed.stuck_detail()) == json.dumps(batched.stuck_detail())
    return found


def _late(delay_s: float, moves_at: float = 1.5, pause: float = 1.5) -> Signal:
    """A command still until `moves_at`, then reaching out by 0.5 in 0.8 s and working there, moving for 1.2 s and
    pausing for `pause` s in turn (an operator's stop and go); as read by a follower `delay_s` late (delay 0: the
    command itself)."""
    def signal(t: float) -> float:
        s = max(0.0, t - delay_s - moves_at)
        laps, into = divmod(max(0.0, s - 0.8), 1.2 + pause)
        return 0.3 + 0.5 * min(1.0, s / 0.8) + 0.3 * abs((laps * 1.2 + min(into, 1.2)) % 2.0 - 1.0)
    return signal


def _sweep(t: float) -> float:
    return 0.5 * math.sin(t / 1.5)


def test_a_follower_answering_a_second_late_is_latency_but_one_that_never_answers_is_stuck() -> None:
    """The dataset's right arm answered its leader late all along, so at each episode's start it stood still for
    2.4 s while its command had moved for 0.9 of them. Alone, an episode cannot tell that from a joint that did not
    answer (a warning); over the dataset the joint's usual first answer says it starts late, not stuck (an info).
    So is a stop of 2.8 s the follower answers as late as it answers the operator's shorter stops. The same joint
    still 2.5 s after its command first moved in one episode, and a wrist frozen for 3.5 s while its command sweeps,
    stay warnings."""
    names = ('shoulder', 'elbow', 'wrist')
    reports = {}
    for k in range(5):
        pause = 2.8 if k == 1 else 1.5
        command = {'shoulder': _late(0.0), 'elbow': _late(0.0, pause=pause), 'wrist': _sweep}
        reading = {'shoulder': _late(0.9), 'elbow': _late(2.5 if k == 0 else 0.9, pause=pause),
                   'wrist': (lambda t: _sweep(min(t, 5.0) if t < 8.5 else t)) if k == 0 else _sweep}
        streamed, batched = _both(names, 12.0, reading, command)
        found = _agree(streamed, batched)
        detail = streamed.stuck_detail()
        reports[f'ep{k}'] = _report(found, names, detail)
        assert 0.6 < detail['startup']['shoulder'] < 1.0  # from its command's first move to its own
        assert 0.6 < detail['latency']['shoulder'] < 1.0  # ... and after the operator's stops
        stuck = {f.message.split()[0]: f for f in found if f.check == 'motion.stuck_joint'}
        assert stuck['shoulder'].severity == WARN and stuck['shoulder'].ranges[0][0] == START
        assert (k == 1) == (len(stuck['elbow'].ranges) > 1)  # the long stops: still for more than 2 s each
    explain_stuck_over_dataset(reports)
    after = {(n, f.message.split()[0]): f for n, r in reports.items() for f in r.findings
             if f.check == 'motion.stuck_joint'}
    for k in range(5):
        assert after[(f'ep{k}', 'shoulder')].severity == INFO
        assert "starts answering its command late at an episode's start" in after[(f'ep{k}', 'shoulder')].message
    assert after[('ep0', 'elbow')].severity == WARN and 'dead encoder' in after[('ep0', 'elbow')].message
    assert after[('ep1', 'elbow')].severity == INFO and 'answers its command late (typically' in \
        after[('ep1', 'elbow')].message
    wrist = after[('ep0', 'wrist')]
    assert wrist.severity == WARN and abs(wrist.ranges[0][0] - (START + 5 * 10**9)) <= 6 * PERIOD_NS


def _idle_arm(seed: int, command_moves: bool) -> JointMotion:
    """15 s of an idle 7-DoF arm's joint (degrees, a 0.022-degree encoder) resting 0.2 below its leader, whose
    reading quantized to 0.1 dithers by one code now and then, smoothed as the leader's driver smooths it (the
    dataset's left arm); the other arm working. `command_moves`: the leader is moved by 1.5 degrees at 6 s and the
    follower does not answer (a blocked joint)."""
    rng = np.random.default_rng(seed)
    dither = np.zeros(15 * FPS)
    for start in rng.choice(np.arange(10, 15 * FPS - 20), size=12, replace=False):
        dither[start:start + int(rng.integers(4, 12))] = float(rng.choice([-0.1, 0.1]))
    smooth = np.zeros_like(dither)
    for i in range(1, len(dither)):
        smooth[i] = smooth[i - 1] + 0.6 * (dither[i] - smooth[i - 1])
    code = 0.022 * (1 + int(rng.integers(0, 3)))  # where this episode's follower came to rest

    def idle_command(t: float) -> float:
        move = min(1.5, max(0.0, t - 6.0) * 1.5) if command_moves else 0.0
        return 43.3 + code + float(smooth[min(int(t * FPS), len(smooth) - 1)]) + move

    def idle_reading(t: float) -> float:
        flicker = 0.022 if int(t * FPS) % 130 == 0 else 0.0  # the encoder's last bit, now and then
        return 43.1 + code + flicker

    streamed, batched = _both(('left_joint_3', 'right_joint_1'), 15.0,
                              {'left_joint_3': idle_reading, 'right_joint_1': _late(0.0)},
                              {'left_joint_3': idle_command, 'right_joint_1': _late(0.0)})
    _agree(streamed, batched)
    return streamed


def test_a_leader_dithering_inside_the_followers_deadband_is_no_stuck_joint_but_a_real_move_is() -> None:
    """Alone, an episode cannot tell a leader's one-code dither from a move the follower ignored (its command
    moved by all it did in the episode); over the dataset the joint shows it rests up to 0.2-0.27 off its command,
    so a command wandering by 0.2 inside that band is its deadband (an info), while a 1.5-degree move it did not
    answer stays a warning."""
    runs = [_idle_arm(k, command_moves=k == 3) for k in range(6)]
    reports = {f'ep{k}': _report(m.findings(), m.names, m.stuck_detail()) for k, m in enumerate(runs)}
    gaps = [m.stuck_detail()['rest_error']['left_joint_3'] for m in runs]
    assert all(0.19 < gap < 0.28 for gap in gaps), gaps  # the offset it rests with, seen at rest
    before = {n: {f.message.split()[0]: f.severity for f in r.findings if f.check == 'motion.stuck_joint'}
              .get('left_joint_3') for n, r in reports.items()}
    assert before['ep3'] == WARN and sum(s == WARN for s in before.values()) >= 4, before
    explain_stuck_over_dataset(reports)
    after = {n: [f for f in r.findings if f.check == 'motion.stuck_joint' and f.message.startswith('left_joint_3')]
             for n, r in reports.items()}
    assert after['ep3'][0].severity == WARN and 'dead encoder' in after['ep3'][0].message
    for name, found in after.items():
        if name != 'ep3' and found:
            assert found[0].severity == INFO and "follower's deadband" in found[0].message, found[0].message


@pytest.mark.parametrize(('span', 'commands', 'explained'), [((43.1, 43.2, 43.4), (43.0, 43.5), True),
                                                           ((43.1, 43.2, 44.7), (43.0, 44.8), False)])
def test_a_command_within_twice_the_deadband_is_explained_and_beyond_it_is_not(
        span: tuple[float, float, float], commands: tuple[float, float], explained: bool) -> None:
    """A servo resting up to 0.21 off its command does not answer a command wandering 0.2 (either side of that
    band), though that is most of what its command did in the dataset; a 1.5-degree move is no deadband. Without a
    deadband (no rests seen), neither is explained."""
    why = explain_stuck('left.joint_3.pos', [span], (42.9, 43.2), commands, deadband=0.21)
    assert bool(why) == explained and (not why or 'deadband' in why)
    assert explain_stuck('left.joint_3.pos', [span], (42.9, 43.2), commands) == ''
