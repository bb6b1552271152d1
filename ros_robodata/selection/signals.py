"""Why an episode is worth a human's time, signal by signal, each in [0, 1] with the sentence that explains it; and
why an episode is not worth it at all (unusable: filtered out before anybody sees it).

Every signal reads what the dataset already knows (selection.evidence); the weights say how much a reviewer's
time each one is worth, and `robodata select --json` gives each one's value, weight and contribution per pick.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ros_robodata.selection.evidence import Evidence
from ros_robodata.vocabulary import (
    COLLISION,
    CONTACT,
    FAILURE,
    GRASP,
    GRASP_FAILED,
    LIFT,
    RECOVERY,
    RELEASE,
    SUCCESS,
    UNKNOWN,
)

# How much a pick's review is worth per signal at full strength. A contradicted label or the team's own policy's
# doubt is worth most; diversity (k-center on the trajectory embedding) is added while picking, see rank.py.
WEIGHTS = {
    'label_disagrees': 3.0,   # the success verdict contradicts the operator's outcome label
    'reviewers_disagree': 3.0,  # reviewers already looked and disagreed (robodata review agreement)
    'unlabelled': 2.0,        # no outcome label at all
    'uncertainty': 3.0,       # --uncertainty FILE: the team's policy is unsure here (0..1 between the candidates)
    'doubtful_events': 2.0,   # low-confidence key events, or events that contradict each other or the label
    'near_usability_line': 1.0,  # a quality score just above the line below which an episode is unusable
    'novelty': 1.0,           # far from its task's other demonstrations, yet not broken
    'rare_outcome': 1.0,      # recoveries and failures: rare and valuable
    'diversity': 1.5,         # far from every episode already picked
}
MIN_SCORE = 0.5  # the usability line: an episode scoring under it is unusable (two errors, or an error and more)
NEAR_LINE_SPAN = 0.4  # a score this far above the line or more is not near it
FATAL_CHECKS = ('completeness.missing_topic', 'completeness.empty', 'completeness.too_short',
                'completeness.damaged_bag', 'motion.nan')
KEY_EVENTS = (CONTACT, GRASP, LIFT, RELEASE)
DOUBT_SPAN = 0.15  # a key event this far below its kind's typical confidence in the dataset is fully doubtful


@dataclass(frozen=True)
class Signal:
    value: float  # 0..1
    why: str      # one sentence, empty when the value is 0


def unusable(evidence: Evidence, min_score: float = MIN_SCORE) -> str | None:
    """Why the episode is not worth reviewing at all, or None: not scored, still recording, rejected, or quality
    errors that make it unusable for training (a missing stream, NaN joints, a damaged bag, or a score under the
    line, unless the success criteria contradict its label)."""
    if evidence.status == 'recording':
        return 'still recording'
    if evidence.status == 'rejected':
        return 'rejected by a reviewer'
    if not evidence.scored or evidence.score is None:
        return 'not scored: run `robodata score` first'
    fatal = [f for f in evidence.findings if f.get('severity') == 'error' and f.get('check') in FATAL_CHECKS]
    if fatal:
        return f'unusable: {fatal[0].get("check")}: {_clip(str(fatal[0].get("message", "")))}'
    if evidence.score < min_score and not evidence.success.get('disagrees'):
        # An episode whose label the success criteria contradict stays reviewable under the line: the label is
        # what the reviewer fixes, and a true recovery scores low for the very moves that made it one.
        worst = next((f for f in evidence.findings if f.get('severity') == 'error'), None)
        detail = f' ({worst.get("check")}: {_clip(str(worst.get("message", "")))})' if worst else ''
        return f'unusable: quality score {evidence.score:.2f} under the line {min_score:.2f}{detail}'
    return None


def typical_confidence(episodes: list[Evidence]) -> dict[str, float]:
    """The median confidence of each key event kind over `episodes`: what the segmenter gives on this rig (a
    gripper without effort never reaches the confidence of one with it), so doubt is judged against it."""
    by_kind: dict[str, list[float]] = {}
    for e in episodes:
        for ev in e.events or []:
            if ev.get('kind') in KEY_EVENTS and _is_number(ev.get('confidence')):
                by_kind.setdefault(str(ev['kind']), []).append(float(ev['confidence']))
    return {kind: float(np.median(values)) for kind, values in sorted(by_kind.items())}


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def episode_signals(evidence: Evidence, *, uncertainty: tuple[float, str] | None = None, min_score: float = MIN_SCORE,
                    typical: dict[str, float] | None = None) -> dict[str, Signal]:
    """Every signal but diversity (which depends on what was picked before). `typical`: each key event kind's
    usual confidence in the dataset (typical_confidence); `uncertainty`: (0..1, why) from the team's policy
    (uncertainty.scaled), absent when no file was given."""
    out = {'label_disagrees': _label_disagrees(evidence), 'unlabelled': _unlabelled(evidence),
           'reviewers_disagree': Signal(1.0, f'reviewers disagree: {_clip(evidence.reviewers_disagree)}')
           if evidence.reviewers_disagree else Signal(0.0, ''),
           'doubtful_events': _doubtful_events(evidence, typical or {}),
           'near_usability_line': _near_line(evidence, min_score),
           'novelty': _novelty(evidence), 'rare_outcome': _rare_outcome(evidence)}
    if uncertainty is not None:
        out['uncertainty'] = Signal(uncertainty[0], uncertainty[1] if uncertainty[0] > 0 else '')
    return out


def _clip(text: str, limit: int = 120) -> str:
    text = ' '.join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + '...'


def _label_disagrees(e: Evidence) -> Signal:
    if e.success.get('disagrees') is not True:
        return Signal(0.0, '')
    verdicts: dict[object, str] = {True: 'success', False: 'failure'}
    verdict = verdicts.get(e.success.get('success'), 'unclear')
    return Signal(1.0, f'the success criteria say {verdict}, the operator labelled {e.outcome}: '
                       f'{_clip(str(e.success.get("message", "")))}')


def _unlabelled(e: Evidence) -> Signal:
    return Signal(1.0, 'no outcome label') if e.outcome == UNKNOWN else Signal(0.0, '')


def _doubtful_events(e: Evidence, typical: dict[str, float]) -> Signal:
    """The machine's events are doubtful where their confidence is below what their kind usually gets, where they
    contradict each other (a lift or release with no grasp before it) or the label (a fumble in a plain success, no
    grasp in a success), where the segmenter itself warned, or where something hit the wrist."""
    if e.events is None:
        return Signal(0.0, '')
    kinds = [str(ev['kind']) for ev in sorted(e.events, key=lambda ev: ev.get('t_ns') or 0)]
    doubts: list[tuple[float, str]] = []
    if e.event_warnings:
        doubts.append((1.0, f'the segmenter warns: {_clip(e.event_warnings[0])}'))
    grasped = False
    for kind in kinds:
        if kind == GRASP:
            grasped = True
        elif kind in (LIFT, RELEASE) and not grasped:
            doubts.append((1.0, f'a {kind} with no grasp before it'))
            break
    if GRASP_FAILED in kinds and e.outcome == SUCCESS:
        doubts.append((1.0, 'a failed grasp in an episode labelled a plain success (a recovery?)'))
    if GRASP not in kinds and e.outcome in (SUCCESS, RECOVERY):
        doubts.append((1.0, f'no grasp event in an episode labelled {e.outcome}'))
    if COLLISION in kinds:
        doubts.append((0.8, 'a collision event'))
    below = [(typical[ev['kind']] - float(ev['confidence']), ev) for ev in e.events
             if ev.get('kind') in typical and _is_number(ev.get('confidence'))]
    if below:
        gap, weakest = max(below, key=lambda x: x[0])
        value = min(1.0, max(0.0, gap / DOUBT_SPAN))
        if value > 0:
            when = f' at {weakest["t_s"]:.1f} s' if _is_number(weakest.get('t_s')) else ''
            doubts.append((value, f'{weakest["kind"]}{when} detected with confidence {weakest["confidence"]:.2f} '
                                  f'(its kind usually {typical[weakest["kind"]]:.2f})'))
    if not doubts:
        return Signal(0.0, '')
    value = max(v for v, _ in doubts)
    return Signal(value, '; '.join(why for v, why in doubts if v == value))


def _near_line(e: Evidence, min_score: float) -> Signal:
    if e.score is None or e.score < min_score:
        return Signal(0.0, '')
    value = min(1.0, max(0.0, 1.0 - (e.score - min_score) / NEAR_LINE_SPAN))
    if value <= 0:
        return Signal(0.0, '')
    worst = next((f for f in e.findings if f.get('severity') in ('error', 'warn')), None)
    detail = f': {worst.get("check")}' if worst else ''
    return Signal(value, f'quality score {e.score:.2f}, just above the usability line {min_score:.2f}{detail}')


def _novelty(e: Evidence) -> Signal:
    z = e.consistency.get('robust_z')
    if not isinstance(z, (int, float)) or isinstance(z, bool) or z <= 1.0:
        return Signal(0.0, '')
    value = min(1.0, (float(z) - 1.0) / 2.5)
    what = 'a consistency outlier' if e.consistency.get('outlier') is True else 'novel'
    return Signal(value, f'{what}: moves unlike the other {e.task!r} demonstrations (robust z {z:.1f})')


def _rare_outcome(e: Evidence) -> Signal:
    if e.outcome == RECOVERY:
        return Signal(1.0, 'a recovery (rare and valuable)')
    if e.outcome == FAILURE:
        return Signal(0.7, 'a failure (rare and valuable)')
    return Signal(0.0, '')
