"""`robodata score`: quality checks and a score in [0, 1] for every episode of a dataset (or one episode)."""

from __future__ import annotations

import argparse
import os
from typing import Any, cast

from ros_robodata.cli.command_common import (
    EXIT_OK,
    EXIT_PARTIAL,
    TARGETS,
    add_analysis_arguments,
    add_ray,
    executor_from,
    filters_from,
    print_json,
    progress,
    stdout,
    target_in_store,
)
from ros_robodata.cluster import ClusterStats
from ros_robodata.cluster.remote_jobs import RemoteRoot
from ros_robodata.console import say
from ros_robodata.dataset.targets import prepare
from ros_robodata.errors import RobodataError
from ros_robodata.quality.episode_score import EpisodeScore, catalog_scores
from ros_robodata.quality.quality_format import QualitySummary
from ros_robodata.quality.scoring import QUALITY_FILE, SUMMARY_FILE, PooledSummary, score_work, skipped_checks


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        'score', help='check the quality of episodes or bags and score them (quality.json, catalog scores)',
        description='Stream every episode bag through the timing, motion, contact, image and completeness '
                    'checks; compare demonstrations of a task by DTW; evaluate the success criteria against the '
                    f'operator\'s label. Writes {QUALITY_FILE} into each episode, the scores into the catalog and '
                    f'{SUMMARY_FILE} into the dataset. Bags on their own (a bag or a folder of bags, with --profile) '
                    'are checked, compared with each other and printed; nothing is written. A LeRobot dataset '
                    '(v2.1/v3.0 folder) is read in place as its import would read it (its profile derived as the '
                    'import derives it, unless --profile); findings name its episode indices; nothing is written. '
                    'A dataset of several robots is scored robot by robot, each with its own profile (episodes '
                    'compared only with their own robot\'s), unless --profile names one for all.')
    add_analysis_arguments(p, TARGETS + ', or a dataset in object storage (s3://bucket/path: docs/ray.md)')
    p.add_argument('--workers', type=int, default=1, help='episodes scored in parallel (default 1; the consistency '
                   "check's DTW matrix uses every core either way)")
    p.add_argument('--no-images', action='store_true',
                   help='skip the camera checks (they decode every frame of every camera)')
    add_ray(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with target_in_store(args, 'score') as (where, remote):  # a dataset in object storage: staged, put back
        return _run(args, where, remote)


def _run(args: argparse.Namespace, where: str, remote: RemoteRoot | None) -> int:
    if args.workers < 1:
        raise RobodataError('--workers must be at least 1')
    workers = min(args.workers, os.cpu_count() or 1) if args.ray is None else args.workers
    filters = filters_from(args)
    work = prepare(where, args.profile, filters, in_place=True)  # a LeRobot folder is read where it lies
    target = work.target
    for group in work.robots:  # said before the work starts; the run keeps the same lines
        for line in skipped_checks(group.profile):
            say(f'robodata score: {group.name + ": " if work.mixed else ""}{line}')
    stats = ClusterStats()
    run = score_work(work, workers=workers, images=not args.no_images, filters=filters,
                     progress=lambda jobs: progress(jobs, 'scoring', quiet=args.json),
                     executor=executor_from(args, workers, remote), stats=stats)
    if target.kind in ('episode', 'bag') and run.failed:
        raise RobodataError(next(iter(run.failed.values())))
    if args.json and target.kind == 'bag':
        print_json(next(iter(run.scores.values())).to_json())
    elif args.json:
        print_json({'episodes': {i: s.to_json() for i, s in run.scores.items()}, 'failed': run.failed,
                    'summary': run.summary, **({'cluster': stats.to_json()} if args.ray else {})})
    elif target.kind in ('episode', 'bag'):
        name, scored = next(iter(run.scores.items()))
        _show_findings(name if target.kind == 'episode' else str(target.path), scored)
    else:
        name = target.dataset.name if target.dataset is not None else str(target.path)
        _show_dataset(name, run.scores, run.summary)
    for episode_id, notes in run.notes.items():
        for note in notes:
            say(f'robodata score: {episode_id}: note: {note}')
    for episode_id, reason in run.failed.items():
        say(f'robodata score: {episode_id}: {reason}')
    return EXIT_PARTIAL if run.failed else EXIT_OK


def _show_dataset(name: str, scores: dict[str, EpisodeScore], summary: QualitySummary) -> None:
    from rich.table import Table  # start-up time: ~0.1 s, and --json prints none

    table = Table('episode', 'task', 'outcome', 'score', 'errors', 'warnings', 'verdict', 'consistency', 'worst',
                  title=f'{name}: {len(scores)} episode(s) scored, mean {summary["mean_score"]}')
    for episode_id, s in scores.items():
        counts = catalog_scores(s)
        said = s.success['success'] if s.success else None
        verdict_text = {True: 'success', False: 'failure', None: '-'}[said]
        if s.success and s.success['disagrees']:
            verdict_text += ' (disagrees)'
        consistency = s.consistency['normalized'] if s.consistency else None
        reasons = s.reasons
        table.add_row(episode_id, s.task, s.outcome, f'{s.score:.2f}', str(counts['errors']), str(counts['warnings']),
                      verdict_text, '-' if consistency is None else f'{consistency:.2f}', reasons[0] if reasons else '')
    stdout.print(table)
    for robot, own in cast(PooledSummary, summary).get('robots', {}).items():  # several robots: each on its own
        stdout.print(f'{robot}: {own["episodes"]} episode(s) scored with its own profile, mean {own["mean_score"]}',
                     markup=False)
    for warning in summary['warnings']:
        stdout.print(f'[yellow]dataset: {warning}[/]')


def _show_findings(name: str, scored: EpisodeScore) -> None:
    start_ns = scored.report.start_ns
    from rich.table import Table  # start-up time: ~0.1 s, and --json prints none

    table = Table('check', 'severity', 'topic', 'when (s)', 'message', title=f'{name}: score {scored.score:.2f}')
    for f in scored.findings:
        spans = f.ranges_s(start_ns) if start_ns is not None else []
        when = ', '.join(f'{a:.1f}-{b:.1f}' for a, b in spans[:4])
        if len(spans) > 4:
            when += ', ...'
        table.add_row(f.check, f.severity, f.topic, when, f.message)
    stdout.print(table)
    if scored.success:
        stdout.print(f'success criteria: {scored.success["message"]}')
