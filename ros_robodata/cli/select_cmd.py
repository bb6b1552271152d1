"""`robodata select`: the review queue, the episodes worth a human's time, with the reasons for each pick."""

from __future__ import annotations

import argparse
import os
from typing import Any

from ros_robodata.cli.command_common import (
    EXIT_OK,
    add_filters,
    add_json,
    add_ray,
    add_target,
    executor_from,
    filters_from,
    print_json,
    progress,
)
from ros_robodata.console import stderr, stdout
from ros_robodata.errors import RobodataError
from ros_robodata.selection import DEFAULT_BUDGET, MIN_SCORE, QUEUE_FILE, REVIEW_DIR, select_for_review

SHOWN_EXCLUDED = 10


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        'select', help='rank a scored dataset\'s episodes for human review and store the queue',
        description='Filter out the episodes whose quality makes them unusable (each with its reason), rank the rest '
                    'by what the dataset knows (the success verdict against the operator\'s label, doubtful or '
                    'contradictory events, a score near the usability line, novelty against the task\'s other '
                    'demonstrations, recoveries and failures, and --uncertainty from your own policy), pick them '
                    'greedily so the picks differ from each other (k-center on the trajectories), and store the '
                    f'queue in DATASET/{REVIEW_DIR}/{QUEUE_FILE} and the catalog. The same inputs give the same '
                    'queue. Run `robodata segment` and `robodata score` first.')
    add_target(p, 'a scored dataset', 'DATASET')
    p.add_argument('--budget', default=DEFAULT_BUDGET,
                   help=f'how many episodes to pick: N, or P%% of the episodes considered (default '
                        f'{DEFAULT_BUDGET.replace("%", "%%")})')
    p.add_argument('--uncertainty', metavar='FILE',
                   help='per-episode or per-frame scores from your policy (ensemble disagreement, action-prediction '
                        'loss): CSV with episode and score columns, or JSON {episode: score or [scores]}')
    p.add_argument('--min-score', type=float, default=MIN_SCORE,
                   help=f'the usability line: episodes scoring under it are filtered out (default {MIN_SCORE})')
    p.add_argument('--include-reviewed', action='store_true',
                   help='consider episodes whose verdict a reviewer already gave (annotations.json) too')
    p.add_argument('--dry-run', action='store_true', help='show the queue without storing it')
    p.add_argument('--who', help='who asked for the queue, for audit.jsonl (default: login name)')
    p.add_argument('--workers', type=int, default=1,
                   help='episodes whose trajectories are read in parallel, when not cached (default 1)')
    add_ray(p)
    add_filters(p)
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.workers < 1:
        raise RobodataError('--workers must be at least 1')
    workers = min(args.workers, os.cpu_count() or 1) if args.ray is None else args.workers
    run_ = select_for_review(args.target, budget=args.budget, uncertainty=args.uncertainty,
                             filters=filters_from(args), include_reviewed=args.include_reviewed,
                             min_score=args.min_score, write=not args.dry_run, who=args.who,
                             progress=lambda it: progress(it, 'reading trajectories', quiet=args.json),
                             executor=executor_from(args, workers))
    if args.json:
        print_json({**run_.queue, 'path': None if run_.path is None else str(run_.path)})
        return EXIT_OK
    queue = run_.queue
    stdout.print(f'{queue["picked"]} of {queue["candidates"]} candidate(s) picked for review ({queue["considered"]} '
                 f'considered, {len(queue["excluded"])} filtered out; budget {queue["budget"]["asked"]})',
                 markup=False)
    for entry in queue['queue']:
        reasons = '; '.join(entry['reasons']) or 'no signal: picked to fill the budget'
        stdout.print(f'{entry["rank"]:>3}. {entry["episode_id"]}  priority {entry["priority"]:.2f}  {reasons}',
                     markup=False)
    for item in queue['excluded'][:SHOWN_EXCLUDED]:
        stdout.print(f'     filtered out: {item["episode_id"]}: {item["reason"]}', markup=False)
    if len(queue['excluded']) > SHOWN_EXCLUDED:
        stdout.print(f'     ... and {len(queue["excluded"]) - SHOWN_EXCLUDED} more filtered out (see --json)',
                     markup=False)
    for note in queue['notes']:
        stderr.print(f'robodata select: note: {note}', markup=False)
    stdout.print(f'queue -> {run_.path}' if run_.path else 'not stored (--dry-run)', markup=False)
    return EXIT_OK


