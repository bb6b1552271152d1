"""`robodata episodes copy|move|delete`: episodes between datasets of one robot, and a recorded discard."""

from __future__ import annotations

import argparse
import sys

from ros_robodata.cli.command_common import (
    EXIT_PARTIAL,
    add_json,
    add_target,
    dataset_at,
    print_json,
    stdout,
)
from ros_robodata.dataset.episode_moves import PoolRun, copy_episodes, discard_episodes
from ros_robodata.errors import RobodataError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser('episodes', help='copy or move episodes into another dataset of the same robot; discard them',
                       description='Episodes between datasets of one robot profile (pooling different embodiments '
                                   'is not supported yet), each whole or not at all, with an audit line in both '
                                   'datasets; and a recorded, reversible discard.')
    actions = p.add_subparsers(dest='action', metavar='ACTION', required=True)
    for action, help_text in (
            ('copy', 'copy episodes (bag, episode.yaml, sidecars) into another dataset; the id kept, or ID-2... '
                     'when taken there'),
            ('move', 'copy, then remove from this dataset (released and retired episodes are refused)')):
        a = actions.add_parser(action, help=help_text, description=help_text[0].upper() + help_text[1:] + '.')
        add_target(a, 'the dataset the episodes are in', 'DATASET')
        a.add_argument('--episode', nargs='+', required=True, metavar='ID', help='the episodes, by id')
        a.add_argument('--into', required=True, metavar='OTHER', help='the dataset they go to (same robot profile)')
        if action == 'copy':
            a.add_argument('--link', action='store_true',
                           help='hard-link the bag files instead of copying them (copied, and said so, across '
                                'file systems)')
        a.add_argument('--why', default='', help='why (kept in the audit logs)')
        a.add_argument('--who', help='who (default: the login name)')
        add_json(a)
        a.set_defaults(func=run_copy, move=action == 'move')
    d = actions.add_parser('delete', help='discard episodes (status discarded, recorded and reversible)',
                           description='Discard episodes: their status becomes discarded, with an audit line and '
                                       'the reason; `robodata set EPISODE --status complete` takes it back. Nothing '
                                       'is deleted: `robodata retire` deletes data for good (with a tombstone). '
                                       'Released and retired episodes are refused.')
    add_target(d, 'the dataset the episodes are in', 'DATASET')
    d.add_argument('--episode', nargs='+', required=True, metavar='ID', help='the episodes, by id')
    d.add_argument('--why', required=True, help='why (kept in the audit log)')
    d.add_argument('--who', help='who (default: the login name)')
    add_json(d)
    d.set_defaults(func=run_delete)


def _report(run: PoolRun, args: argparse.Namespace, verb: str) -> int:
    if args.json:
        print_json(run.to_json())
    else:
        for pooled in run.done:
            stdout.print(f'{pooled.source_id} -> {pooled.new_id}' + (' (renamed: the id was taken)' if
                                                                      pooled.renamed else ''), markup=False)
        for note in run.notes:
            stdout.print(note, markup=False)
        stdout.print(f'{len(run.done)} episode(s) {verb}', markup=False)
    if run.refused and not run.done:
        raise RobodataError(f'nothing {verb}: ' + '; '.join(f'{k}: {v}' for k, v in run.refused.items()))
    for episode_id, why in run.refused.items():
        print(f'robodata episodes: {episode_id}: not {verb}: {why}', file=sys.stderr)
    return EXIT_PARTIAL if run.refused else 0


def run_copy(args: argparse.Namespace) -> int:
    source, target = dataset_at(args.target), dataset_at(args.into)
    run = copy_episodes(source, target, list(args.episode), link=getattr(args, 'link', False), move=args.move,
                        who=args.who, reason=args.why)
    return _report(run, args, 'moved' if args.move else 'copied')


def run_delete(args: argparse.Namespace) -> int:
    run = discard_episodes(dataset_at(args.target), list(args.episode), why=args.why, who=args.who)
    return _report(run, args, 'discarded')
