"""`robodata retire` (delete an episode's data everywhere, leave a tombstone) and `robodata participant`."""

from __future__ import annotations

import argparse
import time

from rich.table import Table

from ros_robodata.cli.command_common import (
    add_json,
    add_target,
    dataset_at,
    human_bytes,
    print_json,
    stdout,
)
from ros_robodata.dataset.participants import add_participant, read_participants
from ros_robodata.errors import RobodataError
from ros_robodata.governance.retire import expired_episodes, participant_episodes, retire


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser('retire', help="delete episodes' data everywhere the dataset knows it went; keep a tombstone",
                       description='Delete the bags, sidecars, annotations, review media and every export the dataset '
                                   'recorded (copies.jsonl) that hold the episodes, and retire their copies in '
                                   'other datasets (episodes copy, merge) there; leave a tombstone (id, file '
                                   'hashes, when, who, why: never the data) and an audit line, and mark each release '
                                   'that held them as affected. For consent withdrawal (--participant) and retention '
                                   '(--expired: dataset.yaml retention_days).')
    add_target(p, 'a dataset', 'DATASET')
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument('--episode', nargs='+', metavar='ID', help='these episodes')
    which.add_argument('--participant', metavar='ID',
                       help='every episode of this participant (consent withdrawn: the registry says so too)')
    which.add_argument('--expired', action='store_true',
                       help="unreleased episodes older than dataset.yaml's retention_days")
    p.add_argument('--why', required=True, help='why (kept in the tombstone and the audit log)')
    p.add_argument('--who', help='who retires (default: the login name)')
    p.add_argument('--dry-run', action='store_true', help='list what would be deleted; delete nothing')
    add_json(p)
    p.set_defaults(func=run_retire)

    p = sub.add_parser('participant', help='the participant registry (pseudonymous ids and consent)',
                       description='participants.yaml (readable by its owner only): the people recorded, by '
                                   'pseudonymous id, with the scope of their consent. Episodes name them with '
                                   '`robodata set EPISODE --participant ID`.')
    actions = p.add_subparsers(dest='action', metavar='ACTION', required=True)
    a = actions.add_parser('add', help='register a participant (or change their consent scope)')
    add_target(a, 'a dataset', 'DATASET')
    a.add_argument('id', metavar='ID', help='a pseudonym (e.g. P-0001), never a name')
    a.add_argument('--consent', required=True, help='what they consented to')
    add_json(a)
    a.set_defaults(func=run_participant_add)
    ls = actions.add_parser('list', help='the registry')
    add_target(ls, 'a dataset', 'DATASET')
    add_json(ls)
    ls.set_defaults(func=run_participant_list)


def run_retire(args: argparse.Namespace) -> int:
    dataset = dataset_at(args.target)
    if args.participant:
        ids = participant_episodes(dataset, args.participant)
    elif args.expired:
        ids = expired_episodes(dataset, time.time_ns())
    else:
        ids = list(args.episode)
    run = retire(dataset, ids, why=args.why, who=args.who, dry_run=args.dry_run, participant=args.participant)
    if args.json:
        print_json(run.to_json())
    else:
        table = Table(box=None, pad_edge=False)
        for column in ('episode', 'files', 'size', 'copies deleted', 'releases affected'):
            table.add_column(column)
        for r in run.retired:
            table.add_row(r.episode_id, str(r.files), human_bytes(r.bytes), '\n'.join(r.copies) or '-',
                          ', '.join(r.releases) or '-')
        if run.retired:
            stdout.print(table)
        for episode_id, why in run.refused.items():
            stdout.print(f'{episode_id}: not retired: {why}', markup=False)
        verb = 'would be retired (dry run: nothing deleted)' if args.dry_run else 'retired'
        what = (f'participant {args.participant}: ' if args.participant else '')
        stdout.print(f'{what}{len(run.retired)} episode(s) {verb}' + ('' if ids else ': none matched'), markup=False)
    if run.refused and not run.retired:
        raise RobodataError(f'nothing retired: {"; ".join(f"{k}: {v}" for k, v in run.refused.items())}')
    return 0


def run_participant_add(args: argparse.Namespace) -> int:
    dataset = dataset_at(args.target)
    entry = add_participant(dataset.root, args.id, args.consent)
    if args.json:
        print_json({'participant': args.id, **entry})
    else:
        stdout.print(f'participant {args.id} registered (consent: {args.consent})', markup=False)
    return 0


def run_participant_list(args: argparse.Namespace) -> int:
    dataset = dataset_at(args.target)
    people = read_participants(dataset.root)
    if args.json:
        print_json(people)
        return 0
    for pid, entry in sorted(people.items()):
        state = f'withdrawn {entry["withdrawn"]}' if entry.get('withdrawn') else f'consent: {entry.get("consent", "")}'
        stdout.print(f'{pid}  {state}', markup=False)
    if not people:
        stdout.print('no participant registered', markup=False)
    return 0
