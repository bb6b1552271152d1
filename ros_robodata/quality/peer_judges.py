"""What only a set of episodes shows about each of them: how it moves against the other demonstrations of its task
(consistency, smoothness), and whether the success criteria agree with the operator's label; plus the phase of the
task an episode was in at a moment, from its events."""

from __future__ import annotations

import numpy as np

from ros_robodata.events.event import EventJson
from ros_robodata.profile import Profile
from ros_robodata.quality.episode_score import EpisodeScore, num
from ros_robodata.quality.findings import INFO, WARN, Finding
from ros_robodata.quality.success import evaluate_success
from ros_robodata.vocabulary import COLLISION, CONTACT, CONTACT_LOST, GRASP, GRASP_FAILED, GRASP_START, LIFT, RELEASE

__all__ = ['flag_jerky', 'judge_consistency', 'judge_success', 'phase_at']


# Where an episode is in its task, from the last segment event before a moment.
_PHASE_AFTER = {GRASP_START: 'the grasp', CONTACT: 'the grasp', GRASP: 'the transport', LIFT: 'the transport',
                RELEASE: 'the retreat after the release', CONTACT_LOST: 'the retreat after the release',
                GRASP_FAILED: 'the time after a failed grasp', COLLISION: 'the time after a collision'}


def phase_at(events: list[EventJson] | None, t_ns: int) -> str | None:
    """The subtask an episode was in at `t_ns` by its segment events (reach, grasp, transport, retreat); None
    without events."""
    if not events:
        return None
    before = [e for e in events if isinstance(e.get('t_ns'), int) and e['t_ns'] <= t_ns and e.get('kind') in
              _PHASE_AFTER]
    if not before:
        return 'the reach'
    return _PHASE_AFTER[max(before, key=lambda e: e['t_ns'])['kind']]


def judge_consistency(scores: dict[str, EpisodeScore], profile: Profile,
                       events: dict[str, list[EventJson] | None]) -> None:
    """Each episode against the other demonstrations of its task (quality.consistency), by joint name: the
    episodes of a task are compared on the joints they all have, in one order."""
    # Start-up time: dtaidistance (~10 ms over NumPy, ~75 ms alone), which only a dataset-level run needs.
    from ros_robodata.quality.consistency import WARN_MIN_DEMOS, resample_trajectory, task_consistency

    by_task: dict[str, list[str]] = {}
    for name, s in scores.items():
        if s.report.trajectory is not None and s.report.joint_names:
            by_task.setdefault(s.task, []).append(name)
    gripper = profile.topics.gripper.joint if profile.topics.gripper is not None else None
    for task, names in by_task.items():
        shared = [j for j in scores[names[0]].report.joint_names
                  if all(j in scores[n].report.joint_names for n in names)]
        trajectories = {}
        for name in names:
            report = scores[name].report
            assert report.trajectory is not None  # only episodes with a trajectory are grouped
            times, rows = report.trajectory
            columns = [report.joint_names.index(j) for j in shared]
            try:
                trajectories[name] = resample_trajectory(times, np.asarray(rows)[:, columns])
            except (ValueError, IndexError):
                continue
        if not shared or not trajectories:
            continue
        found = task_consistency(trajectories, task, names=shared, gripper=[gripper] if gripper in shared else [],
                                 relative=profile.quality.consistency_relative)
        for name, c in found.items():
            s = scores[name]
            s.consistency = {'distance': num(c.distance), 'normalized': num(c.normalized),
                             'robust_z': num(c.robust_z), 'outlier': c.outlier, 'medoid': c.medoid_id,
                             'reference': c.reference_id or None, 'far_joints': list(c.far_joints),
                             'far_span': list(c.far_span) if c.far_span else None,
                             'idle_joints': list(c.idle_joints), 'rest_offsets': c.rest_offsets}
            if c.outlier:
                phase = None
                if c.far_span is not None and s.report.trajectory is not None:
                    times = s.report.trajectory[0]
                    middle = (c.far_span[0] + c.far_span[1]) / 2
                    phase = phase_at(events.get(name), int(times[0] + middle * (times[-1] - times[0])))
                s.consistency['far_phase'] = phase
                few = len(found) < WARN_MIN_DEMOS
                s.extra.append(Finding('consistency.outlier', INFO if few else WARN, '', f'moves unlike the other '
                                       f'{s.task!r} demonstrations: DTW distance {c.normalized:.1f}x the typical one '
                                       f'to its nearest demos (robust z {c.robust_z:.1f}): {c.explanation()}'
                                       + (f', during {phase}' if phase else '')
                                       + (f' ({len(found)} demos of this task are too few to hold it against this '
                                          f'one: under {WARN_MIN_DEMOS} it is no warning)' if few else ''),
                                       c.robust_z, 3.5))
            if c.rest_offsets:
                moved = ', '.join(f'{j} {v:+.3g}' for j, v in c.rest_offsets.items())
                s.extra.append(Finding('consistency.rest_pose', INFO, '', f'joints idle in {s.task!r} rest away '
                                       f'from their usual pose: {moved}'))


def flag_jerky(scores: dict[str, EpisodeScore], z_limit: float = 3.5, floor: float = 1.0) -> None:
    """Smoothness is judged against the other demonstrations of the task: log dimensionless jerk has no absolute
    scale across robots and tasks, but an episode far rougher than its peers teaches a shaky policy."""
    by_task: dict[str, list[tuple[str, float]]] = {}
    for episode_id, s in scores.items():
        value = s.report.metrics.get('smoothness_ldlj')
        if value is not None:
            by_task.setdefault(s.task, []).append((episode_id, float(value)))
    for values in by_task.values():
        if len(values) < 5:
            continue
        ldlj = np.array([v for _, v in values])
        centre = float(np.median(ldlj))
        spread = 1.4826 * float(np.median(np.abs(ldlj - centre)))
        for episode_id, value in values:
            z = (value - centre) / spread if spread > 0 else 0.0
            if z < -z_limit and value < centre - floor:
                scores[episode_id].extra.append(Finding(
                    'motion.jerky', WARN, '', f'much jerkier than the other {scores[episode_id].task!r} demonstrations '
                    f'(log dimensionless jerk {value:.1f} against a typical {centre:.1f})', value, centre - floor))


def judge_success(scores: dict[str, EpisodeScore], events: dict[str, list[EventJson] | None],
                   openings: dict[str, float | None], profile: Profile, labelled: set[str]) -> None:
    """The success criteria from events and signals; compared with the operator's label where there is one (a
    bag on its own has none: its verdict is shown, never called a disagreement)."""
    height_joint = profile.robot.height_joint
    for episode_id, s in scores.items():
        episode_events = events.get(episode_id)
        if episode_events is None or s.report.end_ns is None:
            continue
        height = None
        if height_joint and s.report.trajectory is not None and height_joint in s.report.joint_names:
            times, rows = s.report.trajectory
            height = (times, rows[:, s.report.joint_names.index(height_joint)])
        verdict = evaluate_success(episode_events, end_ns=s.report.end_ns,
                                   gripper_opening_at_end=openings.get(episode_id), tool_height=height,
                                   criteria=profile.success,
                                   operator_outcome=s.outcome if episode_id in labelled else 'unknown',
                                   lift_sensed=profile.topics.wrench is not None)
        s.success = {'success': verdict.success, 'disagrees': verdict.disagrees, 'message': verdict.message,
                     'criteria': [{'name': c.name, 'passed': c.passed, 'detail': c.detail} for c in verdict.criteria]}
        if verdict.disagrees:
            s.extra.append(Finding('success.disagrees', WARN, '', verdict.message))
