"""Scoring recorded episodes: every check streamed through each bag, then what needs the whole dataset
(consistency across demonstrations of a task, the outcome mix), then quality.json and the catalog's scores. A dataset
of several robots is scored robot by robot (each with its own profile, compared only with its own episodes) and
summed up in one quality_summary.json with each robot's own summary under `robots`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ros_robodata.bag.reader import BagReader
from ros_robodata.bag.time_origin import time_origin
from ros_robodata.cluster import ClusterStats, Executor, JobFailure, content_key, files_fingerprint, map_jobs
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.lerobot_ref import LeRobotRef
from ros_robodata.dataset.targets import Filters, Item, RobotGroup, TargetLike, Work, prepare, why_none
from ros_robodata.errors import RobodataError
from ros_robodata.events.calibration import Priors, read_prior
from ros_robodata.events.event import EventJson, SegmentResult
from ros_robodata.events.offline import EVENTS_FILE, read_events_file, write_events
from ros_robodata.events.segmenter import Segmenter, episode_input_start
from ros_robodata.events.stroke import Stroke
from ros_robodata.files import write_json
from ros_robodata.profile import Profile
from ros_robodata.quality.batch_pass import BatchQuality
from ros_robodata.quality.episode_checks import EpisodeQuality, EpisodeReport, score_of
from ros_robodata.quality.episode_score import EpisodeScore, catalog_scores, num
from ros_robodata.quality.findings import ERROR, Finding
from ros_robodata.quality.outcome_mix import outcome_mix
from ros_robodata.quality.patterns import (
    explain_jumps_over_dataset,
    explain_stuck_over_dataset,
    find_patterns,
    imported_outcomes,
)
from ros_robodata.quality.peer_judges import flag_jerky, judge_consistency, judge_success
from ros_robodata.quality.quality_format import QualitySummary
from ros_robodata.quality.take_spec import take_findings, take_verdicts

QUALITY_FILE = 'quality.json'
SUMMARY_FILE = 'quality_summary.json'


class PooledSummary(QualitySummary, total=False):
    """quality_summary.json of a run over several robots: the figures over all of them, and per robot (by its
    embodiment name) the summary a run over that robot's episodes alone writes."""

    robots: dict[str, QualitySummary]


@dataclass
class BagScore:
    """One bag's checks, plus what the dataset-level steps need from it."""

    report: EpisodeReport
    gripper_opening_at_end: float | None = None  # 0 closed .. 1 open, in the stroke the segmenter found
    notes: list[str] = field(default_factory=list)
    segments: SegmentResult | None = None  # when asked to segment in the same pass
    gripper_last: float | None = None  # the last gripper reading in its own units

    def opening_in(self, calibration: Any) -> None:
        """The gripper's opening at the end in the stroke its events were found with (events.json's calibration),
        not the profile's nominal one: a gripper that opens to 40 of a documented 100 is fully open at 40."""
        stroke = Stroke.from_json(calibration.get('gripper')) if isinstance(calibration, dict) else None
        if stroke is not None and self.gripper_last is not None:
            self.gripper_opening_at_end = stroke.fraction(self.gripper_last)


def score_bag(path: str | Path, profile: Profile, *, outcome: str | None = None, images: bool = True,
              image_rate_hz: float = 0.0, segment: bool = False, segment_since_ns: int | None = None,
              priors: Priors | None = None, batch: bool = True, lerobot: LeRobotRef | None = None) -> BagScore:
    """Stream one bag through every check (one pass, a few thousand messages held at most); with `segment`, the
    segmenter reads the same pass (from `segment_since_ns` and `priors`, as `robodata segment` does), so an
    unsegmented episode is not read twice. `batch`: the checks run on arrays of a chunk of messages
    (quality/batch_pass.py); False feeds them one message at a time, as a live monitor does (the same findings,
    slower). `lerobot`: an episode of a LeRobot folder, read in place as the bag its import would make."""
    checks = EpisodeQuality(profile, images=images, image_rate_hz=image_rate_hz)
    segmenter = Segmenter(profile, since_ns=segment_since_ns, priors=priors) \
        if segment and (profile.topics.gripper or profile.topics.wrench) else None
    if lerobot is not None:  # imported here for start-up time: reading a LeRobot folder brings PyAV and pyarrow
        from ros_robodata.dataset.lerobot_episode_source import open_episode
    with BagReader(path) if lerobot is None else open_episode(lerobot, images) as reader:
        feeder = BatchQuality(checks, reader.decode) if batch else None
        # A reader that holds its streams in memory (a LeRobot episode in place) hands them over as arrays.
        ordered = reader.ordered_messages() if feeder is not None and segmenter is None else None
        if feeder is not None and ordered is not None:
            feeder.add_ordered(ordered)
        for message in reader.messages() if ordered is None else ():
            if feeder is not None:
                feeder.add(message)
            else:
                checks.add(message.topic, message.t_ns, message.data, partial(reader.decode, message))
            if segmenter is not None and message.topic in segmenter.topics:
                segmenter.add_cdr(message.topic, message.data, partial(reader.decode, message), message.t_ns)
        if feeder is not None:
            feeder.finish()
        origin = time_origin(reader, [spec.topic for _, spec in profile.all_topics()])  # events.json's too
        report = checks.report(outcome=outcome, min_episode_s=profile.quality.min_episode_s, start_ns=origin)
        opening = checks.gripper_opening()
        if not reader.complete:
            report.findings.append(Finding('completeness.damaged_bag', ERROR, '',
                                           'the bag is damaged or was not closed: ' + '; '.join(reader.notes)))
        segments = None
        if segmenter is not None and any(topic in reader.topics for topic in segmenter.topics):
            segmenter.finish()
            segments = segmenter.result(start_ns=origin)
        scored = BagScore(report, opening, list(reader.notes), segments, checks.gripper_last())
        if segments is not None:
            scored.opening_in(segments.calibration)
        return scored


@dataclass(frozen=True)
class ScoreJob:
    """One bag for a scoring worker (pickled to its process): where it is, where its results go (the episode's
    folder; None for a bag on its own), its label, and how to read it."""

    name: str
    bag: Path
    folder: Path | None
    outcome: str | None
    profile: Profile
    images: bool
    since_ns: int | None  # a live-recorded episode's input start: the segmenter reads from there, as live
    lerobot: LeRobotRef | None = None  # an episode of a LeRobot folder read in place (no bag)

    @classmethod
    def of(cls, item: Item, profile: Profile, images: bool) -> ScoreJob:
        episode = item.episode  # recorded live (no import source): the segmenter reads from its input start
        since = episode_input_start(episode.start_ns) if episode is not None and not episode.source else None
        return cls(item.name, item.bag, item.folder, item.outcome, profile, images, since, item.lerobot)

    def content_key(self) -> str | None:
        """What the result depends on: this job (profile and options included) and the files it reads (the
        episode's folder but its quality.json, or the bag's files); None when one cannot be read."""
        if self.folder is not None:
            files = [p for p in self.folder.rglob('*') if p.is_file() and p.name != QUALITY_FILE]
        else:
            files = [p for p in Path(self.bag).rglob('*') if p.is_file()] if Path(self.bag).is_dir() else [self.bag]
        fingerprint = files_fingerprint(files)
        return None if fingerprint is None else content_key('score', self, fingerprint)


def _score_one(job: ScoreJob) -> tuple[str, BagScore | str, list[EventJson] | None]:
    """Worker: score one bag and make sure it has events. An episode without events.json is segmented in the same
    pass (its events.json is written by the caller, the one process that writes); a bag on its own (no folder) is
    segmented in memory. An events.json that cannot be read is said in the bag's notes (with its path), and the
    success criteria are not judged. Writes nothing: it may run on another machine."""
    events_path = job.folder / EVENTS_FILE if job.folder is not None else None
    has_events = events_path is not None and events_path.is_file()
    try:
        live, priors = read_prior(job.folder) if job.folder is not None and job.since_ns is not None else (False, None)
        scored = score_bag(job.bag, job.profile, outcome=job.outcome, images=job.images, segment=not has_events,
                           segment_since_ns=job.since_ns, priors=priors if live else None, lerobot=job.lerobot)
    except RobodataError as err:
        return job.name, ' '.join(str(err).split()), None
    events = None
    if scored.segments is not None:
        events = [e.to_json(scored.segments.start_ns) for e in scored.segments.events]
    elif events_path is not None and has_events:
        try:
            doc = read_events_file(events_path)
            events = doc['events']
            scored.opening_in(doc.get('calibration'))
        except RobodataError as err:
            scored.notes.append(f'{" ".join(str(err).split())}; success criteria not judged')
    return job.name, scored, events


@dataclass
class ScoreRun:
    """What scoring a set of episodes or bags found: per name its score, what failed (and why), the dataset-level
    summary (outcome mix, mean score, which checks fired), the events each was judged with, and what the
    profile's rig made impossible to check (said once, not per episode).

    Args:
        scores: per episode or bag name, its score and findings.
        failed: per name that could not be scored, why.
        summary: the dataset-level summary (outcome mix, mean score, which checks fired).
        events: per name, the segment events (grasp, release...) it was judged with; None when it had none.
        skipped: checks the profile's rig makes impossible (no joint states, no gripper or wrench, no camera).
        notes: per name, how its bag was read (damage skipped, sidecars not read).
    """

    scores: dict[str, EpisodeScore]
    failed: dict[str, str]
    summary: QualitySummary
    events: dict[str, list[EventJson] | None] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    notes: dict[str, list[str]] = field(default_factory=dict)  # per name: how its bag was read, sidecars unread


def _write_events(job: ScoreJob, scored: BagScore) -> bool:
    """The events an unsegmented episode was segmented into while scored, into its events.json; a failed write is
    said in its notes."""
    assert job.folder is not None and scored.segments is not None
    path = job.folder / EVENTS_FILE
    try:
        write_events(path, scored.segments, {'episode_id': job.name})
    except OSError as err:
        scored.notes.append(f'{path}: cannot write: {err.strerror or err}')
        return False
    return True


def score_items(items: list[Item], profile: Profile, *, workers: int = 1, images: bool = True,
                progress: Callable[[Iterable[Any]], Iterator[Any]] | None = None, executor: Executor | None = None,
                stats: ClusterStats | None = None) -> ScoreRun:
    """Score episodes or bags (in `workers` processes, or where `executor` says: a Ray cluster), then compare them
    with each other: consistency across demonstrations of a task, smoothness against its peers, success criteria
    against the operator's label. Nothing is written except the events.json of an episode that had none; see
    score_episodes."""
    skipped = skipped_checks(profile)
    jobs = [ScoreJob.of(item, profile, images) for item in items]
    by_name = {item.name: item for item in items}
    scores: dict[str, EpisodeScore] = {}
    failures: dict[str, str] = {}
    notes: dict[str, list[str]] = {}
    events: dict[str, list[EventJson] | None] = {}
    openings: dict[str, float | None] = {}
    executor = executor or Executor(workers=workers)
    cache = executor.result_cache()
    if executor.ray is not None:  # a Ray worker's working directory is not ours
        jobs = [replace(job, bag=job.bag.absolute(), folder=job.folder.absolute() if job.folder else None,
                        lerobot=replace(job.lerobot, root=job.lerobot.root.absolute()) if job.lerobot else None)
                for job in jobs]
    ran = map_jobs(_score_one, jobs, executor, progress=progress, stats=stats, cache=cache,
                   key=ScoreJob.content_key)
    collected = [(job.name, r.reason, None) if isinstance(r, JobFailure) else r
                 for job, r in zip(jobs, ran, strict=True)]
    for job, result in zip(jobs, collected, strict=True):
        name, scored, item_events = result
        if isinstance(scored, str):
            failures[name] = scored
            continue
        if scored.segments is not None and job.folder is not None and _write_events(job, scored) and cache:
            key = job.content_key()  # as the folder is now, with its events.json: a rerun finds it
            if key is not None:
                cache.put(key, result)
        item = by_name[name]
        scores[name] = EpisodeScore(name, item.task, item.outcome or 'unknown', scored.report,
                                    fps=item.lerobot.fps if item.lerobot is not None else None)
        if item.episode is not None and item.episode.capture:  # a take to a protocol: its verdicts, its faults
            scores[name].capture = take_verdicts(item.episode.capture)
            scores[name].extra.extend(take_findings(item.episode.capture))
        events[name] = item_events
        openings[name] = scored.gripper_opening_at_end
        if scored.notes:
            notes[name] = list(scored.notes)

    imported_note = imported_outcomes({n: (s.report, by_name[n].episode) for n, s in scores.items()})
    reports = {name: s.report for name, s in scores.items()}
    explain_stuck_over_dataset(reports)
    explain_jumps_over_dataset(reports)
    patterns = find_patterns(reports) if len(reports) > 1 else []
    judge_success(scores, events, openings, profile, labelled={n for n, i in by_name.items() if i.episode})
    judge_consistency(scores, profile, events)
    flag_jerky(scores)
    labels = {i.name: i.outcome for i in items if i.outcome is not None}
    mix = outcome_mix(labels) if labels else None
    summary: QualitySummary = {
        'format': 'ros_robodata.quality_summary/1', 'episodes': len(scores), 'failed': failures,
        'outcomes': mix.counts if mix else {}, 'outcome_ratios': mix.ratios if mix else {},
        'warnings': [w for w in (mix.warnings if mix else [])
                     if not (imported_note and w.endswith('have no outcome label'))]
        + ([imported_note] if imported_note else [])
        + [p.line() for p in patterns],
        'patterns': [p.to_json() for p in patterns],
        'mean_score': num(float(np.mean([score_of(s.findings)[0] for s in scores.values()]))) if scores else None,
        'checks': _check_counts(scores.values()), 'skipped': skipped}
    return ScoreRun(scores, failures, summary, events, skipped, notes)


def score_groups(groups: tuple[RobotGroup, ...], *, workers: int = 1, images: bool = True,
                 progress: Callable[[Iterable[Any]], Iterator[Any]] | None = None, executor: Executor | None = None,
                 stats: ClusterStats | None = None) -> ScoreRun:
    """score_items per robot (each group read with its profile and compared with its own episodes only: the same
    scores as a run over that robot's episodes alone), the runs then summed up in one (pooled_run); one group is
    score_items itself. Nothing is written but events.json, as score_items."""
    if len(groups) == 1:
        return score_items(groups[0].items, groups[0].profile, workers=workers, images=images, progress=progress,
                           executor=executor, stats=stats)
    executor = executor or Executor(workers=workers)
    runs = {g.name: score_items(g.items, g.profile, images=images, progress=progress, executor=executor, stats=stats)
            for g in groups}
    return pooled_run(runs, [item for g in groups for item in g.items])


def pooled_run(runs: dict[str, ScoreRun], items: list[Item]) -> ScoreRun:
    """One run of several robots' (by name): every episode's score as its robot's run found it, in `items`' order;
    a summary over all (episodes, outcomes, mean score, checks fired) whose warnings, patterns and skipped checks
    each name their robot, and every robot's own summary under `robots`."""
    order = {item.name: n for n, item in enumerate(items)}
    scores = dict(sorted(((name, s) for run in runs.values() for name, s in run.scores.items()),
                         key=lambda kv: order.get(kv[0], len(order))))
    failed = {name: why for run in runs.values() for name, why in run.failed.items()}
    skipped = [f'{robot}: {line}' for robot, run in runs.items() for line in run.skipped]
    labels = {i.name: i.outcome for i in items if i.outcome is not None}
    mix = outcome_mix(labels) if labels else None
    summary: PooledSummary = {
        'format': 'ros_robodata.quality_summary/1', 'episodes': len(scores), 'failed': failed,
        'outcomes': mix.counts if mix else {}, 'outcome_ratios': mix.ratios if mix else {},
        'warnings': [f'{robot}: {w}' for robot, run in runs.items() for w in run.summary['warnings']],
        'patterns': [p for run in runs.values() for p in run.summary['patterns']],
        'mean_score': num(float(np.mean([score_of(s.findings)[0] for s in scores.values()]))) if scores else None,
        'checks': _check_counts(scores.values()), 'skipped': skipped,
        'robots': {robot: run.summary for robot, run in runs.items()}}
    return ScoreRun(scores, failed, summary, {n: e for run in runs.values() for n, e in run.events.items()}, skipped,
                    {n: notes for run in runs.values() for n, notes in run.notes.items()})


def score_episodes(dataset: Dataset, profile: Profile, episode_ids: list[str], *, workers: int = 1,
                   images: bool = True, progress: Callable[[Iterable[Any]], Iterator[Any]] | None = None
                   ) -> ScoreRun:
    """Score episodes of a dataset by id (what a recorder or an import that just wrote them holds), then write
    the results down; see score_dataset_items."""
    chosen = [Item(i, dataset.bag_dir(i), dataset.episode(i), dataset) for i in episode_ids]
    return score_dataset_items(dataset, profile, chosen, workers=workers, images=images, progress=progress)


def score_dataset_items(dataset: Dataset, profile: Profile, items: list[Item], *, workers: int = 1,
                        images: bool = True, progress: Callable[[Iterable[Any]], Iterator[Any]] | None = None,
                        executor: Executor | None = None, stats: ClusterStats | None = None) -> ScoreRun:
    """score_items over episodes of a dataset, then written down (by this process alone, wherever the episodes
    were scored): quality.json into each episode, the scores into the catalog and quality_summary.json into the
    dataset."""
    run = score_items(items, profile, workers=workers, images=images, progress=progress, executor=executor,
                      stats=stats)
    write_scores(dataset, run)
    return run


def write_scores(dataset: Dataset, run: ScoreRun) -> None:
    """A run's results written down: quality.json into each episode, the scores into the catalog and
    quality_summary.json into the dataset."""
    for episode_id, s in run.scores.items():
        write_json(dataset.episode_dir(episode_id) / QUALITY_FILE, s.to_json())
        score, _ = score_of(s.findings)
        dataset.catalog.set_scores(episode_id, score, catalog_scores(s))
    write_json(dataset.root / SUMMARY_FILE, run.summary)


def score_work(work: Work, *, workers: int = 1, images: bool = True,
               progress: Callable[[Iterable[Any]], Iterator[Any]] | None = None, filters: Filters | None = None,
               executor: Executor | None = None, stats: ClusterStats | None = None) -> ScoreRun:
    """Score what `prepare()` resolved: a dataset's chosen episodes (results written), or bags (in memory); the
    episodes of several robots robot by robot, each with its own profile (score_groups).

    Args:
        work: the target, its profile and the chosen episodes or bags, resolved once by `prepare()`.
        workers: processes that score in parallel.
        images: run the camera checks (they decode every frame).
        progress: wraps the jobs to show progress.
        filters: the filters `work` was chosen with, to say why nothing was picked.
        executor: where the episodes are scored (a Ray cluster); `workers` local processes when None.
        stats: filled with episodes and seconds per node.

    Raises:
        RobodataError: nothing was picked (the line says why).
    """
    if not work.items:
        raise RobodataError(f'{work.target.path}: nothing to score: {why_none(work.target, filters)}')
    run = score_groups(work.robots, workers=workers, images=images, progress=progress, executor=executor,
                       stats=stats)
    if work.target.dataset is not None:
        write_scores(work.target.dataset, run)
    return run


def score(target: TargetLike, *, profile: Profile | str | None = None, filters: Filters | None = None,
          workers: int = 1, images: bool = True, progress: Callable[[Iterable[Any]], Iterator[Any]] | None = None
          ) -> ScoreRun:
    """Check and score a dataset's episodes (quality.json, catalog scores and quality_summary.json written), one
    episode, a bag or a folder of bags (scored and compared with each other in memory, nothing written).

    Args:
        target: a Dataset, or a path to a dataset, an episode, a bag or a folder of bags.
        profile: the robot profile (a Profile or a YAML path); the dataset's own unless given (each episode's own in
            a dataset of several robots; required for bags).
        filters: which episodes of a dataset (task, outcome, status, since).
        workers: processes that score in parallel.
        images: run the camera checks.
        progress: wraps the jobs to show progress.

    Raises:
        RobodataError: the target or profile cannot be used, or nothing was picked.
    """
    return score_work(prepare(target, profile, filters, in_place=True), workers=workers, images=images,
                      progress=progress, filters=filters)


def skipped_checks(profile: Profile) -> list[str]:
    """What this rig's profile leaves unchecked, for a command to say once (not per episode)."""
    t = profile.topics
    out = []
    if t.joint_states is None:
        out.append('no joint_states in the profile: motion, camera-to-joint sync, consistency and smoothness '
                   'checks skipped')
    if t.gripper is None and t.wrench is None:
        out.append('no gripper or wrench in the profile: no grasp events, success criteria not evaluated')
    if not t.cameras:
        out.append('no camera in the profile: image checks skipped')
    return out


def _check_counts(scores: Iterable[EpisodeScore]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for s in scores:
        for check in {f.check for f in s.findings}:
            counts[check] = counts.get(check, 0) + 1
    return dict(sorted(counts.items()))
