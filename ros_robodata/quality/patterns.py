"""Judgements that need the whole dataset: a joint's travel over every episode (its end stops), findings that
hold in most episodes (a pattern of the rig or the source, said once, not a fault of each episode), and the
missing labels of imported episodes (a fact of their source)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from ros_robodata.dataset.episode import Episode
from ros_robodata.quality.episode_checks import EpisodeReport
from ros_robodata.quality.findings import INFO, WARN, Finding
from ros_robodata.quality.joint_stop import explain_stuck
from ros_robodata.quality.quality_format import PatternJson

__all__ = ['PATTERN_MIN_EPISODES', 'PATTERN_SHARE', 'Pattern', 'explain_jumps_over_dataset',
           'explain_stuck_over_dataset', 'find_patterns',
           'imported_outcomes']

STUCK = 'motion.stuck_joint'
JUMP = 'motion.velocity_jump'
JOINT_STEP_FACTOR = 3.0  # a jump within this many times the joint's usual big step (its p99) is its own motion
PATTERN_SHARE = 0.5  # a warning in more than this share of the episodes is a pattern of the dataset
PATTERN_MIN_EPISODES = 3  # ... and in at least this many
# An episode whose finding lasts this many times the pattern's median (and is a robust outlier among them) differs
# from the dataset's norm: its finding stays a warning.
BEYOND_FACTOR = 4.0
BEYOND_SIGMAS = 5.0
# Findings judged against the others already, or about each episode's own label: never a pattern.
NOT_PATTERNS = frozenset({'success.disagrees', 'consistency.outlier', 'motion.jerky', 'completeness.outcome'})


@dataclass(frozen=True)
class Pattern:
    """One warning that holds in most episodes of a dataset: which check, on what, where."""

    check: str
    topic: str
    subject: str  # the joint a motion finding is about ('' for a topic-level one)
    episodes: tuple[str, ...]
    of: int  # episodes scored
    example: str  # one episode's message
    beyond: tuple[str, ...] = ()  # episodes whose finding goes far beyond the pattern's usual: still warnings

    def line(self) -> str:
        what = f'{self.subject} on {self.topic}' if self.subject else (self.topic or 'the episode')
        line = (f'{self.check} on {what} in {len(self.episodes)} of {self.of} episodes: a pattern of this dataset '
                f'(an info in each), e.g. "{self.example}"')
        if self.beyond:
            line += f'; beyond it, still a warning: {", ".join(self.beyond)}'
        return line

    def to_json(self) -> PatternJson:
        return {'check': self.check, 'topic': self.topic, 'subject': self.subject, 'episodes': list(self.episodes),
                'of': self.of, 'example': self.example, 'beyond': list(self.beyond), 'message': self.line()}


def _subject(finding: Finding) -> str:
    return finding.message.split(' ', 1)[0] if finding.check == STUCK else ''


def explain_stuck_over_dataset(reports: Mapping[str, EpisodeReport]) -> int:
    """Re-judge each episode's stuck-joint warnings over the joint's travel in the whole dataset (the end of
    its travel is where the dataset's readings and commands end, not where one episode's do) and over its own
    physics there (its deadband, its latency: joint_stop.explain_stuck): an end stop, a hand closed on an object,
    a leader dithering inside the follower's deadband or a follower answering late becomes an info. Returns how
    many warnings became infos."""
    readings: dict[str, list[float]] = {}
    commands: dict[str, list[float]] = {}
    rests: dict[str, list[float]] = {}
    answers: dict[str, list[float]] = {}
    firsts: dict[str, list[float]] = {}
    for report in reports.values():
        for key, spans in (('ranges', readings), ('commands', commands)):
            for name, (low, high) in (report.motion_detail.get(key) or {}).items():
                seen = spans.setdefault(name, [low, high])
                seen[0], seen[1] = min(seen[0], low), max(seen[1], high)
        for key, per_joint in (('rest_error', rests), ('latency', answers), ('startup', firsts)):
            for name, value in (report.motion_detail.get(key) or {}).items():
                per_joint.setdefault(name, []).append(value)
    # A joint's deadband: the widest gap to its command it rests with in a typical episode; its latency: how late it
    # typically answers its command's moves. Each the median over the episodes that show it, so a few episodes of a
    # blocked or faulty joint (a frozen reading answers late too, once) do not move it.
    deadband = {name: float(np.median(gaps)) for name, gaps in rests.items() if len(gaps) >= PATTERN_MIN_EPISODES}
    latency = {name: float(np.median(s)) for name, s in answers.items() if len(s) >= PATTERN_MIN_EPISODES}
    startup = {name: float(np.median(s)) for name, s in firsts.items() if len(s) >= PATTERN_MIN_EPISODES}
    changed = 0
    for report in reports.values():
        stuck = report.motion_detail.get('stuck') or {}
        for k, finding in enumerate(report.findings):
            name = _subject(finding)
            if finding.check != STUCK or finding.severity != WARN or name not in stuck or name not in readings:
                continue
            why = explain_stuck(name, stuck[name], readings[name], commands.get(name), deadband=deadband.get(name),
                                latency=latency.get(name), startup=startup.get(name))
            if why:
                held = finding.message.split(' while ', 1)[-1].split(' (', 1)[0]
                report.findings[k] = replace(finding, severity=INFO, message=f'{name} held still while {held}: '
                                             f'{why}, over its travel in this dataset')
                changed += 1
    return changed


def explain_jumps_over_dataset(reports: Mapping[str, EpisodeReport]) -> int:
    """Re-judge each episode's velocity-jump warning against each jumping joint's own steps over the dataset:
    a joint that moves so in most episodes (a gripper's snap, a hand's grasp, a fast wrist) is doing what it does,
    not jumping. A jump is explained when every joint in it stepped by at most JOINT_STEP_FACTOR times the
    median, over the dataset's episodes, of that joint's 99th-percentile step; the warning becomes an info when
    every jump of the episode is explained. Returns how many warnings became infos."""
    steps: dict[str, list[float]] = {}
    for report in reports.values():
        for name, p99 in (report.motion_detail.get('change_p99') or {}).items():
            steps.setdefault(name, []).append(p99)
    if len(reports) < PATTERN_MIN_EPISODES:
        return 0
    typical = {name: float(np.median(values)) for name, values in steps.items()}
    changed = 0
    for report in reports.values():
        jumps = report.motion_detail.get('jumps') or []
        if not jumps or not all(all(change <= JOINT_STEP_FACTOR * typical.get(name, 0.0)
                                    for name, change in jump.items()) for jump in jumps):
            continue
        for k, finding in enumerate(report.findings):
            if finding.check == JUMP and finding.severity == WARN:
                joints = sorted({name for jump in jumps for name in jump})
                report.findings[k] = replace(finding, severity=INFO, message=f'{finding.message}; within the '
                                             f'steps {", ".join(joints)} take across this dataset')
                changed += 1
    return changed


def find_patterns(reports: Mapping[str, EpisodeReport]) -> list[Pattern]:
    """Warnings of one check on one topic (and joint) in most episodes: each becomes one Pattern, and in each
    episode an info, so a trait of the rig or of the source is said once instead of in every episode."""
    seen: dict[tuple[str, str, str], list[tuple[str, int]]] = {}
    for name, report in reports.items():
        keys = set()
        for k, finding in enumerate(report.findings):
            if finding.severity != WARN or finding.check in NOT_PATTERNS:
                continue
            key = (finding.check, finding.topic, _subject(finding))
            if key not in keys:
                keys.add(key)
                seen.setdefault(key, []).append((name, k))
    total = len(reports)
    patterns = []
    for (check, topic, subject), where in sorted(seen.items()):
        if len(where) < PATTERN_MIN_EPISODES or len(where) <= PATTERN_SHARE * total:
            continue
        first = reports[where[0][0]].findings[where[0][1]].message
        found = [reports[name].findings[k] for name, k in where]
        timed = all(f.ranges for f in found)  # compared in seconds where each says when, else in samples
        sizes = {name: _extent(f, timed) for (name, _), f in zip(where, found, strict=True)}
        beyond, usual = _beyond(sizes)
        patterns.append(Pattern(check, topic, subject, tuple(n for n, _ in where), total, first, tuple(beyond)))
        for name, _ in where:
            report = reports[name]
            for k, finding in enumerate(report.findings):
                if (finding.check, finding.topic, _subject(finding)) != (check, topic, subject) \
                        or finding.severity != WARN:
                    continue
                if name in beyond:
                    report.findings[k] = replace(finding, message=(
                        f'{finding.message} [this dataset shows it in {len(where)} of {total} episodes, but here '
                        f'{_said(sizes[name], timed)} against a usual {_said(usual, timed)}: beyond the pattern]'))
                else:
                    report.findings[k] = replace(finding, severity=INFO,
                                                 message=f'{finding.message} [a pattern of this dataset: '
                                                         f'{len(where)} of {total} episodes]')
    return patterns


def _extent(finding: Finding, timed: bool) -> float:
    """How much of an episode a finding covers: the seconds of its stretches, or the samples that fired."""
    return sum(end - start for start, end in finding.ranges) / 1e9 if timed else float(finding.count)


def _said(extent: float, timed: bool) -> str:
    return f'{extent:.3g} s' if timed else f'{extent:.0f} samples'


def _beyond(sizes: dict[str, float]) -> tuple[list[str], float]:
    """The episodes whose finding lasts far longer than the pattern's usual (a median and its robust spread over
    the episodes it holds in), and that usual."""
    array = np.array(list(sizes.values()), dtype=float)
    median = float(np.median(array))
    if len(array) < PATTERN_MIN_EPISODES or median <= 0:
        return [], median
    spread = 1.4826 * float(np.median(np.abs(array - median)))
    limit = max(BEYOND_FACTOR * median, median + BEYOND_SIGMAS * spread)
    return sorted(name for name, v in sizes.items() if v > limit), median


def imported_outcomes(episodes: Mapping[str, tuple[EpisodeReport, Episode | None]]) -> str | None:
    """An episode imported from elsewhere (a public dataset, another tool's bag) carries the outcome label its
    source had, usually none: that is a fact of the source, not a fault of each episode. Its missing label
    becomes an info, and the dataset gets one line (None when no imported episode lacks one). `episodes`: per
    name, its report and its catalog entry (None for a bag on its own)."""
    unlabelled = imported = 0
    for report, episode in episodes.values():
        if episode is None or not episode.source:
            continue  # recorded here: the rig's own recorder should have set the outcome
        imported += 1
        for k, finding in enumerate(report.findings):
            if finding.check == 'completeness.outcome':
                kind = episode.source.get('kind') or "another tool's"
                report.findings[k] = replace(finding, severity=INFO, message=f'no outcome label: imported from a '
                                             f'{kind} recording, which carries none')
                unlabelled += 1
    if not unlabelled:
        return None
    return (f'{unlabelled} of {imported} imported episode(s) carry no outcome label (their source has none): '
            'label them in review, or import with --outcome, before the success verdict or a training split '
            'leans on it')
