"""Did the task succeed? The profile's success criteria checked against the segmenter's events and signals.

The operator's outcome label is what training filters on, and operators mislabel: a slip they did not notice, a
recovery filed as a plain success, a 'failure' pressed by habit. Each criterion here is evaluated from evidence
(events.json, the gripper opening, the tool height) and says why it passed or failed; the verdict is then
compared with the label, so a reviewer looks at the episodes where the two contradict.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ros_robodata.profile import Success
from ros_robodata.vocabulary import (
    EVENT_KINDS,
    FAILURE,
    GRASP,
    GRASP_FAILED,
    GRASP_START,
    LIFT,
    OUTCOMES,
    RECOVERY,
    RELEASE,
    SUCCESS,
    UNKNOWN,
)

if TYPE_CHECKING:  # a type only: the events package is not loaded for it
    from ros_robodata.events.event import EventJson

# Gripper opening (0 closed .. 1 open, in stroke units) that counts as open at the end.
OPEN_AT_END = 0.8
LET_GO_AT_END = 0.3  # of the stroke: open this far after a release, with no closing since, the object is let go


@dataclass(frozen=True)
class Criterion:
    """One success criterion: passed, failed, or None when it could not be evaluated (detail says why)."""

    name: str  # grasp_before_release | lift_held | lift_height | gripper_open_at_end | no_unrecovered_failure
    passed: bool | None
    detail: str  # one line, e.g. 'lifted for 3.9 s (needs 0.5 s)'


@dataclass(frozen=True)
class SuccessVerdict:
    """The evidence's verdict on one episode and how it compares with the operator's label."""

    success: bool | None  # every evaluable criterion passed; None if none could be evaluated
    criteria: tuple[Criterion, ...]
    operator_outcome: str  # success | failure | recovery | unknown
    disagrees: bool  # hard contradiction: verdict success vs label failure, or verdict failure vs success/recovery
    message: str  # one line for reports


@dataclass(frozen=True)
class _Ev:
    kind: str
    t_ns: int
    t_s: float | None  # episode-relative seconds, when events.json gives them


def evaluate_success(events: Sequence[EventJson], *, end_ns: int, gripper_opening_at_end: float | None,
                     tool_height: tuple[np.ndarray, np.ndarray] | None, criteria: Success,
                     operator_outcome: str, lift_sensed: bool = True) -> SuccessVerdict:
    """Check the profile's success criteria on one episode and compare the verdict with the operator's label.

    `events` are events.json entries ('kind', 't_ns'; 't_s' is used in the details when present). `end_ns` is
    the episode's end: a grasp with no release is held until then. `gripper_opening_at_end` is 0 (closed) to
    1 (open) in stroke units; `tool_height` is (stamps in ns, heights in m) of the tool, up to a constant.
    Criteria the profile does not ask for (lift_height_m null, gripper_open_at_end false) are left out.
    `lift_sensed`: the rig records what a lift event needs (the wrist wrench); without it, "lift held" is not
    evaluated rather than failed.
    """
    label = _label(operator_outcome)
    evs = _parse(events)
    grasp = _held_grasp(evs, end_ns)
    failure = _failure_check(evs)
    checks = [_grasp_before_release(evs),
              _lift_held(grasp, criteria.hold_s, sum(e.kind == GRASP for e in evs), lift_sensed)]
    if criteria.lift_height_m is not None:
        checks.append(_lift_height(grasp, tool_height, criteria.lift_height_m))
    if criteria.gripper_open_at_end:
        checks.append(_open_at_end(gripper_opening_at_end, evs))
    checks.append(failure.criterion)

    evaluable = [c for c in checks if c.passed is not None]
    success = all(c.passed for c in evaluable) if evaluable else None
    disagrees = (success is True and label == FAILURE) or (success is False and label in (SUCCESS, RECOVERY))
    message = _message(success, checks, label, disagrees, recovery=bool(success) and failure.recovered)
    return SuccessVerdict(success, tuple(checks), label, disagrees, message)


# -- events ------------------------------------------------------------------------------------------


def _label(value: str | None) -> str:
    name = str(value or UNKNOWN).strip().lower()
    if name not in OUTCOMES:
        raise ValueError(f'operator outcome {value!r} is not one of {", ".join(OUTCOMES)}')
    return name


def _parse(events: Sequence[Mapping[str, Any]]) -> list[_Ev]:
    """The events of known kinds in time order (stable, so same-stamp events keep the segmenter's order)."""
    out = []
    for n, e in enumerate(events):
        if 'kind' not in e or 't_ns' not in e:
            raise ValueError(f'event {n} has no {"kind" if "kind" not in e else "t_ns"}: expected events.json '
                             f'entries with kind and t_ns, got keys {sorted(e)}')
        if e['kind'] in EVENT_KINDS:
            t_s = e.get('t_s')
            out.append(_Ev(e['kind'], int(e['t_ns']), None if t_s is None else float(t_s)))
    return sorted(out, key=lambda e: e.t_ns)


def _at(e: _Ev) -> str:
    return f' at {e.t_s:.2f} s' if e.t_s is not None else ''


def _last(evs: Sequence[_Ev], kind: str) -> _Ev | None:
    return next((e for e in reversed(evs) if e.kind == kind), None)


@dataclass(frozen=True)
class _Grasp:
    """The last successful grasp: from its attempt's start (grasp_start) to its release or the episode end."""

    grasp: _Ev
    start_ns: int
    end_ns: int
    released: bool
    lift: _Ev | None


def _held_grasp(evs: list[_Ev], end_ns: int) -> _Grasp | None:
    """The last grasp not followed by a grasp_failed before the next grasp_start, with its lift and release."""
    found: _Grasp | None = None
    for i, e in enumerate(evs):
        if e.kind != GRASP:
            continue
        later = evs[i + 1:]
        attempt_end = next((k for k, x in enumerate(later) if x.kind == GRASP_START), len(later))
        if any(x.kind == GRASP_FAILED for x in later[:attempt_end]):
            continue
        begin = next((x for x in reversed(evs[:i]) if x.kind == GRASP_START), None)
        start_ns = e.t_ns if begin is None else begin.t_ns
        release = next((x for x in later[:attempt_end] if x.kind == RELEASE), None)
        stop_ns = release.t_ns if release else later[attempt_end].t_ns if attempt_end < len(later) else end_ns
        lift = next((x for x in evs if x.kind == LIFT and start_ns <= x.t_ns <= stop_ns), None)
        found = _Grasp(e, start_ns, max(stop_ns, e.t_ns), release is not None, lift)
    return found


# -- criteria ------------------------------------------------------------------------------------------


def _grasp_before_release(evs: list[_Ev]) -> Criterion:
    name = 'grasp_before_release'
    grasp, release = _last(evs, GRASP), _last(evs, RELEASE)
    if grasp is None:
        return Criterion(name, False, 'no grasp: the object was never held')
    if release is None or release.t_ns < grasp.t_ns:
        return Criterion(name, False, f'no release after the last grasp{_at(grasp)}: the object was dropped or '
                                      'is still held')
    held = (release.t_ns - grasp.t_ns) / 1e9
    return Criterion(name, True, f'released{_at(release)}, {held:.1f} s after the last grasp')


def _lift_held(grasp: _Grasp | None, hold_s: float, grasps: int, lift_sensed: bool = True) -> Criterion:
    name = 'lift_held'
    if grasp is None:
        why = f'all {grasps} grasp(s) failed' if grasps else 'there was no grasp'
        return Criterion(name, False, f'no grasp held: {why}')
    if grasp.lift is None and not lift_sensed:
        return Criterion(name, None, 'not evaluated: a lift is read from the wrist wrench, which this rig does not '
                                     'record')
    if grasp.lift is None:
        return Criterion(name, False, f'no lift during the grasp{_at(grasp.grasp)}')
    held = (grasp.end_ns - grasp.lift.t_ns) / 1e9
    until = 'its release' if grasp.released else 'the episode end'
    return Criterion(name, held >= hold_s, f'lifted for {held:.1f} s until {until} (needs {hold_s:g} s)')


def _lift_height(grasp: _Grasp | None, tool_height: tuple[np.ndarray, np.ndarray] | None,
                 needed_m: float) -> Criterion:
    """How far the tool rose while holding the object, from where it was when the grasp closed.

    Measured from the grasp, not the lift event: the lift event can be confirmed late (the object already
    high), but the tool sits at the object's resting height when the fingers close on it.
    """
    name = 'lift_height'
    if tool_height is None:
        return Criterion(name, None, 'not evaluated: needs the tool height over time, and none was given')
    if grasp is None:
        return Criterion(name, False, 'no grasp held, so nothing was lifted')
    times = np.asarray(tool_height[0]).reshape(-1)
    heights = np.asarray(tool_height[1], dtype=np.float64).reshape(-1)
    if len(times) != len(heights):
        raise ValueError(f'tool_height: {len(times)} stamps for {len(heights)} heights')
    keep = np.isfinite(heights)
    times, heights = times[keep], heights[keep]
    order = np.argsort(times, kind='stable')
    times, heights = times[order], heights[order]
    t0, t1 = grasp.grasp.t_ns, grasp.end_ns
    inside = (times >= t0) & (times <= t1)
    if not inside.any() or times[0] > t0 or times[-1] < t0:
        return Criterion(name, None, 'not evaluated: no tool height samples cover the grasp')
    start = float(np.interp(0.0, (times - t0).astype(np.float64), heights))
    rise = float(heights[inside].max()) - start
    return Criterion(name, rise >= needed_m, f'the tool rose {rise:.3f} m while holding (needs {needed_m:g} m)')


def _open_at_end(opening: float | None, evs: Sequence[_Ev] = ()) -> Criterion:
    """Open at the end: OPEN_AT_END of the stroke, or, after a release with no closing since, LET_GO_AT_END (many
    operators let go by opening part-way: a servo gripper set back to 80-120 of 255 has let its object go)."""
    name = 'gripper_open_at_end'
    if opening is None or not math.isfinite(opening):
        return Criterion(name, None, 'not evaluated: the gripper opening at the end is unknown')
    if opening >= OPEN_AT_END:
        return Criterion(name, True, f'gripper {opening:.0%} open at the end (needs {OPEN_AT_END:.0%})')
    last = next((e for e in reversed(evs) if e.kind in (RELEASE, GRASP_START, GRASP)), None)
    if last is not None and last.kind == RELEASE and opening >= LET_GO_AT_END:
        return Criterion(name, True, f'gripper {opening:.0%} open at the end, not closed again since its release'
                         f'{_at(last)} (a part-way opening lets go; needs {LET_GO_AT_END:.0%} after a release, '
                         f'{OPEN_AT_END:.0%} otherwise)')
    return Criterion(name, False, f'gripper {opening:.0%} not open at the end (needs {OPEN_AT_END:.0%}, or '
                     f'{LET_GO_AT_END:.0%} after a release)')


@dataclass(frozen=True)
class _FailureCheck:
    criterion: Criterion
    recovered: bool  # a grasp failed and a later grasp was released: the recovery pattern


def _failure_check(evs: list[_Ev]) -> _FailureCheck:
    name = 'no_unrecovered_failure'
    failed = _last(evs, GRASP_FAILED)
    if failed is None:
        return _FailureCheck(Criterion(name, True, 'no failed grasp'), False)
    count = sum(e.kind == GRASP_FAILED for e in evs)
    after = [e for e in evs if e.t_ns > failed.t_ns]
    regrasp = next((e for e in after if e.kind == GRASP), None)
    release = None if regrasp is None else next((e for e in after if e.kind == RELEASE and e.t_ns >= regrasp.t_ns),
                                                None)
    what = f'{count} failed grasp(s), the last{_at(failed)}'
    if regrasp is None or release is None:
        missing = 'no later grasp' if regrasp is None else f'the re-grasp{_at(regrasp)} was never released'
        return _FailureCheck(Criterion(name, False, f'{what}; {missing}'), False)
    gap = (regrasp.t_ns - failed.t_ns) / 1e9
    return _FailureCheck(Criterion(name, True, f'{what}; re-grasped {gap:.1f} s later and released'), True)


# -- verdict -------------------------------------------------------------------------------------------


def _message(success: bool | None, checks: list[Criterion], label: str, disagrees: bool, *, recovery: bool) -> str:
    skipped = [c.name for c in checks if c.passed is None]
    if success is None:
        text = 'not evaluated: ' + '; '.join(c.detail for c in checks)
    elif success:
        text = f'success: {len(checks) - len(skipped)} criteria pass'
    else:
        text = 'failure: ' + '; '.join(f'{c.name} ({c.detail})' for c in checks if c.passed is False)
    if skipped and success is not None:
        text += f' ({", ".join(skipped)} not evaluated)'
    if recovery:
        text += '; looks like a recovery (a grasp failed, then a re-grasp was released)'
        if label == SUCCESS:
            text += "; labelled 'success': should it be 'recovery'?"
    if disagrees:
        text += f"; contradicts the operator's label '{label}': check the episode"
    elif label == UNKNOWN and success is not None:
        suggestion = (RECOVERY if recovery else SUCCESS) if success else FAILURE
        text += f"; no operator label (evidence suggests '{suggestion}')"
    return text
