"""Success criteria from the segmenter's events, and the verdict against the operator's label."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ros_robodata.bag.reader import BagReader
from ros_robodata.events.offline import segment_bag
from ros_robodata.profile import Profile, Success, load_profile
from ros_robodata.quality.success import SuccessVerdict, evaluate_success
from ros_robodata.sim.to_bag import write_sim_episode

SIM_CELL_PROFILE = Path(__file__).resolve().parent.parent / 'config' / 'sim_cell.yaml'
T0_NS = 1_700_000_000_000_000_000
END_S = 12.0
NO_HEIGHT = Success(lift_height_m=None, hold_s=0.5, gripper_open_at_end=True)
WITH_HEIGHT = Success(lift_height_m=0.05, hold_s=0.5, gripper_open_at_end=True)


def _events(*pairs: tuple[str, float]) -> list[dict]:
    """events.json entries from (kind, seconds into the episode)."""
    return [{'kind': kind, 't_ns': T0_NS + round(t * 1e9), 't_s': t, 'confidence': 1.0} for kind, t in pairs]


PICK = _events(('grasp_start', 1.0), ('contact', 1.02), ('grasp', 1.05), ('lift', 1.6), ('release', 5.0),
               ('contact_lost', 5.0))
SLIP_THEN_RECOVERY = _events(('grasp_start', 1.0), ('contact', 1.02), ('grasp', 1.05), ('lift', 1.6),
                             ('grasp_failed', 3.0), ('contact_lost', 3.1), ('grasp_start', 5.0), ('contact', 5.02),
                             ('grasp', 5.05), ('lift', 5.7), ('release', 9.0), ('contact_lost', 9.0))
MISS_AND_GIVE_UP = _events(('grasp_start', 1.0), ('grasp_failed', 1.03))
SLIP_AND_GIVE_UP = _events(('grasp_start', 1.0), ('contact', 1.02), ('grasp', 1.05), ('lift', 1.6),
                           ('grasp_failed', 3.0), ('contact_lost', 3.1))


def _evaluate(events: list[dict], label: str = 'unknown', *, criteria: Success = NO_HEIGHT, opening: float | None = 1.0,
              height: tuple[np.ndarray, np.ndarray] | None = None, end_s: float = END_S) -> SuccessVerdict:
    return evaluate_success(events, end_ns=T0_NS + round(end_s * 1e9), gripper_opening_at_end=opening,
                            tool_height=height, criteria=criteria, operator_outcome=label)


def _by_name(verdict: SuccessVerdict) -> dict[str, tuple[bool | None, str]]:
    return {c.name: (c.passed, c.detail) for c in verdict.criteria}


def _tool_height(profile: list[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    """Tool height sampled at 100 Hz, linear between (seconds, metres) knots."""
    t = np.arange(0.0, END_S, 0.01)
    knots_t, knots_h = zip(*profile, strict=True)
    return T0_NS + np.round(t * 1e9).astype(np.int64), np.interp(t, knots_t, knots_h)


# -- event patterns -----------------------------------------------------------------------------------


def test_a_clean_pick_and_place_passes_every_criterion():
    verdict = _evaluate(PICK, 'success')
    assert verdict.success is True and not verdict.disagrees
    assert [c.name for c in verdict.criteria] == ['grasp_before_release', 'lift_held', 'gripper_open_at_end',
                                                  'no_unrecovered_failure']
    assert all(c.passed for c in verdict.criteria)
    assert _by_name(verdict)['lift_held'][1] == 'lifted for 3.4 s until its release (needs 0.5 s)'
    assert verdict.message.startswith('success: 4 criteria pass')
    assert 'recovery' not in verdict.message


def test_slip_then_recovery_succeeds_and_is_recognised_as_a_recovery():
    verdict = _evaluate(SLIP_THEN_RECOVERY, 'recovery')
    assert verdict.success is True and not verdict.disagrees
    passed, detail = _by_name(verdict)['no_unrecovered_failure']
    assert passed is True and 're-grasped 2.0 s later and released' in detail
    # The hold is the re-grasp's, not the slipped first one's.
    assert _by_name(verdict)['lift_held'][1].startswith('lifted for 3.3 s')
    assert 'looks like a recovery' in verdict.message


def test_a_recovery_labelled_success_is_a_hint_not_a_contradiction():
    verdict = _evaluate(SLIP_THEN_RECOVERY, 'success')
    assert verdict.success is True and not verdict.disagrees
    assert "should it be 'recovery'" in verdict.message


def test_a_miss_without_a_second_try_fails():
    verdict = _evaluate(MISS_AND_GIVE_UP, 'failure')
    assert verdict.success is False and not verdict.disagrees
    checks = _by_name(verdict)
    assert checks['grasp_before_release'] == (False, 'no grasp: the object was never held')
    assert checks['lift_held'] == (False, 'no grasp held: there was no grasp')
    assert checks['no_unrecovered_failure'][0] is False
    assert 'no later grasp' in checks['no_unrecovered_failure'][1]
    assert verdict.message.startswith('failure: grasp_before_release (no grasp')


def test_a_slip_without_a_second_try_fails():
    verdict = _evaluate(SLIP_AND_GIVE_UP, 'failure')
    assert verdict.success is False and not verdict.disagrees
    checks = _by_name(verdict)
    assert checks['grasp_before_release'][0] is False
    assert checks['lift_held'] == (False, 'no grasp held: all 1 grasp(s) failed')
    assert checks['no_unrecovered_failure'][0] is False


def test_no_lift_fails_lift_held():
    verdict = _evaluate(_events(('grasp_start', 1.0), ('grasp', 1.05), ('release', 5.0)))
    assert verdict.success is False
    assert _by_name(verdict)['lift_held'] == (False, 'no lift during the grasp at 1.05 s')
    assert _by_name(verdict)['grasp_before_release'][0] is True


@pytest.mark.parametrize(('release_s', 'passed'), [(4.9, False), (5.2, True)])
def test_the_hold_must_last_hold_s(release_s, passed):
    verdict = _evaluate(_events(('grasp_start', 1.0), ('grasp', 1.05), ('lift', 4.7), ('release', release_s)))
    lift_held = _by_name(verdict)['lift_held']
    assert lift_held[0] is passed and verdict.success is passed
    assert lift_held[1] == f'lifted for {release_s - 4.7:.1f} s until its release (needs 0.5 s)'


def test_a_grasp_never_released_holds_until_the_end_but_is_not_placed():
    verdict = _evaluate(_events(('grasp_start', 1.0), ('grasp', 1.05), ('lift', 1.6)), end_s=4.0)
    checks = _by_name(verdict)
    assert checks['lift_held'] == (True, 'lifted for 2.4 s until the episode end (needs 0.5 s)')
    assert checks['grasp_before_release'][0] is False
    assert verdict.success is False


def test_put_down_and_picked_again_uses_the_last_grasp():
    events = _events(('grasp_start', 1.0), ('grasp', 1.05), ('lift', 1.5), ('release', 3.0), ('grasp_start', 4.0),
                     ('grasp', 4.1), ('lift', 4.5), ('release', 7.0))
    verdict = _evaluate(events, 'success')
    assert verdict.success is True
    assert _by_name(verdict)['lift_held'][1].startswith('lifted for 2.5 s')
    assert 'recovery' not in verdict.message  # nothing failed: an adjustment, not a recovery


@pytest.mark.parametrize(('opening', 'passed'), [(0.2, False), (0.8, True), (None, None)])
def test_gripper_open_at_end(opening, passed):
    verdict = _evaluate(PICK, opening=opening)
    assert _by_name(verdict)['gripper_open_at_end'][0] is passed
    # Not knowing the opening does not fail the episode; an unreleased grip does.
    assert verdict.success is (passed is not False)


def test_a_part_way_opening_after_the_release_lets_go_but_one_closed_again_does_not():
    """A servo gripper let go by setting it back to 100 of 255: released, not open to 80%, and no failure."""
    verdict = _evaluate(PICK, 'success', opening=0.5)
    passed, detail = _by_name(verdict)['gripper_open_at_end']
    assert passed is True and 'since its release at 5.00 s' in detail and verdict.success is True
    closed_again = _evaluate(PICK + _events(('grasp_start', 6.0)), 'success', opening=0.5)
    assert _by_name(closed_again)['gripper_open_at_end'][0] is False and closed_again.disagrees


def test_criteria_the_profile_does_not_ask_for_are_left_out():
    verdict = _evaluate(PICK, criteria=Success(lift_height_m=None, hold_s=0.5, gripper_open_at_end=False),
                        opening=0.0)
    assert 'gripper_open_at_end' not in _by_name(verdict) and 'lift_height' not in _by_name(verdict)
    assert verdict.success is True


# -- lift height ---------------------------------------------------------------------------------------------


def test_lift_height_without_the_tool_height_is_not_evaluated():
    verdict = _evaluate(PICK, 'success', criteria=WITH_HEIGHT)
    passed, detail = _by_name(verdict)['lift_height']
    assert passed is None and detail.startswith('not evaluated')
    assert verdict.success is True  # judged on what could be evaluated
    assert '(lift_height not evaluated)' in verdict.message


@pytest.mark.parametrize(('top_m', 'passed'), [(0.42, True), (0.35, False)])
def test_lift_height_from_the_tool_height(top_m, passed):
    # Resting on the table at 0.32 m when grasped; carried at top_m, lowered at the zone.
    height = _tool_height([(0.0, 0.5), (1.0, 0.32), (1.6, 0.32), (2.5, top_m), (4.5, top_m), (5.0, 0.32),
                           (6.0, 0.5)])
    verdict = _evaluate(PICK, criteria=WITH_HEIGHT, height=height)
    checks = _by_name(verdict)
    assert checks['lift_height'][0] is passed
    assert checks['lift_height'][1] == f'the tool rose {top_m - 0.32:.3f} m while holding (needs 0.05 m)'
    # The approach from 0.5 m down to the object is not a lift.
    assert verdict.success is passed


def test_lift_height_counts_from_the_grasp_when_the_lift_is_confirmed_late():
    late_lift = _events(('grasp_start', 1.0), ('grasp', 1.05), ('lift', 4.3), ('release', 5.0))
    height = _tool_height([(0.0, 0.5), (1.0, 0.32), (1.6, 0.32), (2.5, 0.42), (4.0, 0.42), (5.0, 0.32)])
    assert _by_name(_evaluate(late_lift, criteria=WITH_HEIGHT, height=height))['lift_height'][0] is True


# -- the operator's label ----------------------------------------------------------------------------------


@pytest.mark.parametrize(('events', 'label', 'disagrees'), [
    (PICK, 'success', False), (PICK, 'failure', True), (PICK, 'recovery', False), (PICK, 'unknown', False),
    (MISS_AND_GIVE_UP, 'failure', False), (MISS_AND_GIVE_UP, 'success', True), (MISS_AND_GIVE_UP, 'recovery', True),
    (MISS_AND_GIVE_UP, 'unknown', False),
])
def test_contradictions_with_the_label(events, label, disagrees):
    verdict = _evaluate(events, label)
    assert verdict.operator_outcome == label
    assert verdict.disagrees is disagrees
    assert ("contradicts the operator's label" in verdict.message) is disagrees


def test_an_unlabelled_episode_gets_a_suggestion():
    assert "evidence suggests 'success'" in _evaluate(PICK).message
    assert "evidence suggests 'recovery'" in _evaluate(SLIP_THEN_RECOVERY).message
    assert "evidence suggests 'failure'" in _evaluate(SLIP_AND_GIVE_UP, '').message


def test_bad_input_is_refused_with_a_reason():
    with pytest.raises(ValueError, match="operator outcome 'partial'"):
        _evaluate(PICK, 'partial')
    with pytest.raises(ValueError, match='event 1 has no t_ns'):
        _evaluate([*PICK[:1], {'kind': 'grasp'}])


def test_events_out_of_order_and_unknown_kinds_are_handled():
    shuffled = [PICK[4], {'kind': 'wave', 't_ns': T0_NS}, *PICK[:4]]
    assert _evaluate(shuffled).criteria == _evaluate(PICK).criteria


def test_no_events_is_a_failure():
    verdict = _evaluate([], 'success')
    assert verdict.success is False and verdict.disagrees


# -- end to end on simulated episodes ---------------------------------------------------------------------


def _signals(bag_dir: Path, profile: Profile) -> tuple[float, tuple[np.ndarray, np.ndarray]]:
    """The gripper opening at the end (0 closed .. 1 open) and the tool height: the gantry's prismatic z
    joint (joint3) is the tool's height up to a constant."""
    gripper = profile.topics.gripper
    assert gripper is not None
    stamps, heights, finger = [], [], float('nan')
    with BagReader(bag_dir) as reader:
        for message, msg in reader.read([profile.topics.joint_states.topic, gripper.topic]):
            if message.topic == gripper.topic:
                finger = float(msg.position[list(msg.name).index(gripper.joint)])
            else:
                stamps.append(msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec)
                heights.append(float(msg.position[list(msg.name).index('joint3')]))
    opening = (finger - gripper.closed_position) / (gripper.open_position - gripper.closed_position)
    return opening, (np.array(stamps, dtype=np.int64), np.array(heights))


@pytest.fixture(scope='module')
def sim_profile() -> Profile:
    return load_profile(SIM_CELL_PROFILE)


@pytest.mark.parametrize(('seed', 'expected'), [(0, 'success'), (2, 'failure'), (4, 'recovery')])
def test_simulated_episodes_agree_with_the_physics(tmp_path, sim_profile, seed, expected):
    bag_dir = tmp_path / 'bag'
    truth = write_sim_episode(bag_dir, sim_profile, seed=seed)
    assert truth['outcome'] == expected
    result = segment_bag(bag_dir, sim_profile)
    events = [e.to_json(result.start_ns) for e in result.events]
    opening, height = _signals(bag_dir, sim_profile)
    assert sim_profile.success.lift_height_m is not None

    def verdict(label: str) -> SuccessVerdict:
        return evaluate_success(events, end_ns=result.end_ns, gripper_opening_at_end=opening, tool_height=height,
                                criteria=sim_profile.success, operator_outcome=label)

    honest = verdict(truth['outcome'])
    assert honest.success is (expected != 'failure')
    assert not honest.disagrees
    assert all(c.passed is not None for c in honest.criteria)  # every criterion had its evidence
    assert _by_name(honest)['lift_height'][0] is (expected != 'failure')
    assert ('looks like a recovery' in honest.message) is (expected == 'recovery')
    # The operator pressing the wrong key is caught.
    wrong = verdict('success' if expected == 'failure' else 'failure')
    assert wrong.disagrees
