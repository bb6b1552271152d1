"""`robodata score`: quality checks and a score in [0, 1] for every episode of a dataset (or one episode)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from rich.table import Table

from ros_robodata.cli.common import print_json, progress, resolve, stderr, stdout
from ros_robodata.errors import RobodataError
from ros_robodata.profile import load_profile
from ros_robodata.quality.score import QUALITY_FILE, SUMMARY_FILE, score_bag, score_episodes
from ros_robodata.segment.offline import dataset_profile


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        'score', help='check the quality of episodes and score them (quality.json, catalog scores)',
        description='Stream every episode bag through the timing, motion, contact, image and completeness '
                    'checks; compare demonstrations of a task by DTW; evaluate the success criteria against the '
                    f'operator\'s label. Writes {QUALITY_FILE} into each episode, the scores into the catalog and '
                    f'{SUMMARY_FILE} into the dataset. A bare bag is checked and printed, nothing written.')
    p.add_argument('target', help='a dataset, an episode folder, or a bag')
    p.add_argument('--profile', help="robot profile YAML (default: the dataset's own; required for a bare bag)")
    p.add_argument('--json', action='store_true', help='print JSON instead of tables')
    p.add_argument('--workers', type=int, default=1, help='episodes scored in parallel (default 1)')
    p.add_argument('--no-images', action='store_true', help='skip the camera checks (they decode every frame)')
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.workers < 1:
        raise RobodataError('--workers must be at least 1')
    workers = min(args.workers, os.cpu_count() or 1)
    target = resolve(args.target)
    if target.kind == 'bag':
        if not args.profile:
            raise RobodataError(f'{target.path}: a bare bag needs --profile')
        report = score_bag(target.path, load_profile(args.profile), images=not args.no_images).report
        if args.json:
            print_json(report.to_json())
        else:
            _show_findings(str(target.path), report.to_json())
        return 0
    assert target.dataset is not None
    dataset = target.dataset
    profile = load_profile(args.profile) if args.profile else dataset_profile(dataset)
    if target.kind == 'episode':
        assert target.episode_id is not None
        ids = [target.episode_id]
    else:
        ids = [e.id for e in dataset.list() if e.status != 'discarded' and dataset.bag_files(e.id)]
    if not ids:
        raise RobodataError(f'{dataset.root}: no recorded episode to score')
    scores, failures, summary = score_episodes(
        dataset, profile, ids, workers=workers, images=not args.no_images,
        progress=lambda items: progress(items, 'scoring', total=len(ids), quiet=args.json))
    if args.json:
        print_json({'episodes': {i: s.to_json() for i, s in scores.items()}, 'failed': failures,
                    'summary': summary})
    elif target.kind == 'episode' and scores:
        _show_findings(ids[0], next(iter(scores.values())).to_json())
    else:
        _show_dataset(dataset.name, scores, summary)
    for episode_id, reason in failures.items():
        stderr.print(f'robodata score: {episode_id}: {reason}')
    return 1 if failures else 0


def _show_dataset(name: str, scores: dict[str, Any], summary: dict[str, Any]) -> None:
    table = Table('episode', 'task', 'outcome', 'score', 'errors', 'warnings', 'verdict', 'consistency', 'worst',
                  title=f'{name}: {len(scores)} episode(s) scored, mean {summary["mean_score"]}')
    for episode_id, s in scores.items():
        data = s.to_json()
        catalog = data['catalog']
        verdict = data['success'] or {}
        verdict_text = {True: 'success', False: 'failure', None: '-'}[verdict.get('success')]
        if verdict.get('disagrees'):
            verdict_text += ' (disagrees)'
        consistency = (data['consistency'] or {}).get('normalized')
        table.add_row(episode_id, s.task, s.outcome, f'{data["score"]:.2f}', str(catalog['errors']),
                      str(catalog['warnings']), verdict_text, '-' if consistency is None else f'{consistency:.2f}',
                      data['reasons'][0] if data['reasons'] else '')
    stdout.print(table)
    for warning in summary['warnings']:
        stdout.print(f'[yellow]dataset: {warning}[/]')


def _show_findings(name: str, data: dict[str, Any]) -> None:
    table = Table('check', 'severity', 'topic', 'when (s)', 'message', title=f'{name}: score {data["score"]:.2f}')
    for f in data['findings']:
        when = ', '.join(f'{a:.1f}-{b:.1f}' for a, b in f.get('ranges_s', [])[:4])
        if len(f.get('ranges_s', [])) > 4:
            when += ', ...'
        table.add_row(f['check'], f['severity'], f['topic'], when, f['message'])
    stdout.print(table)
    if data.get('success'):
        stdout.print(f'success criteria: {data["success"]["message"]}')
