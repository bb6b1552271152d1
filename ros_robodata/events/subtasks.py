"""An episode's subtasks from its events: reach, grasp, transport, release, retreat, one set per attempt."""

from __future__ import annotations

from ros_robodata.events.event import Event, Segment
from ros_robodata.vocabulary import GRASP_FAILED, GRASP_START, LIFT, RELEASE


def subtask_timeline(events: list[Event], marks: list[tuple[int, str]], start: int, end: int) -> list[Segment]:
    """The segments between `start` and `end`; `marks`: the detector's own moments ('opened': the gripper open
    again after a release or a miss)."""
    ordered = sorted([(e.stamp_ns, e.kind) for e in events] + marks)
    segments: list[Segment] = []
    phase, since, attempt = 'reach', start, 1

    def close(at: int, next_phase: str) -> None:
        nonlocal phase, since
        if at > since:
            segments.append(Segment(phase, since, at, attempt))
        phase, since = next_phase, max(since, at)

    failed = False  # after a failed grasp, the reopened gripper starts the next attempt's reach
    for at, kind in ordered:
        if kind == GRASP_START and phase in ('reach', 'retreat'):
            if phase == 'retreat':
                close(at, 'reach')
                attempt += 1
            close(at, 'grasp')
            failed = False
        elif kind == LIFT and phase == 'grasp':
            close(at, 'transport')
        elif kind == RELEASE and phase in ('grasp', 'transport'):
            close(at, 'release')
        elif kind == 'opened' and phase == 'release':
            close(at, 'retreat')
        elif kind == 'opened' and phase == 'retreat' and failed:
            close(at, 'reach')
            attempt, failed = attempt + 1, False
        elif kind == GRASP_FAILED and phase in ('grasp', 'transport'):
            close(at, 'retreat')
            failed = True
    close(end, phase)
    return segments
