"""Dataset housekeeping: `init`, `list`, `set` (outcome/status/task/operator with an audit entry, one episode or
those a --where picks), `verify`, `catalog`."""

from __future__ import annotations

import argparse
import sys

from rich.table import Table

from ros_robodata.cli.command_common import (
    EXIT_PARTIAL,
    Filters,
    add_filters,
    add_json,
    add_target,
    filters_from,
    need,
    print_json,
    progress,
    resolve,
    stdout,
)
from ros_robodata.dataset import OUTCOMES, STATUSES, Dataset
from ros_robodata.dataset.dataset import UNREADABLE
from ros_robodata.dataset.targets import HIDDEN, select_rows
from ros_robodata.dataset.verify import verify_bag, verify_dataset
from ros_robodata.errors import RobodataError
from ros_robodata.profile import load_profile


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser('init', help='create an empty dataset', description='Create an empty dataset folder.')
    add_target(p, 'folder for the new dataset (must be absent or empty)', 'DATASET')
    p.add_argument('--profile', help='robot profile YAML to snapshot into dataset.yaml')
    p.add_argument('--name', help='dataset name (default: the folder name)')
    add_json(p)
    p.set_defaults(func=run_init)

    p = sub.add_parser('list', help="list a dataset's episodes",
                       description="List a dataset's episodes from its catalog (discarded and retired ones only "
                                   "with --status discarded / retired, or a --where that names them).")
    add_target(p, 'a dataset', 'DATASET')
    add_filters(p)
    add_json(p)
    p.set_defaults(func=run_list)

    p = sub.add_parser('set', help="change episodes' outcome, status, task or operator (recorded in audit.jsonl)",
                       description="Change an episode's outcome, status, task, operator or participant, or those of "
                                   "every episode of a dataset a --where query picks; each change is appended to "
                                   "the dataset's audit.jsonl with who, when, old and new value and the reason.")
    add_target(p, 'an episode folder (DATASET/episodes/ID), or a dataset with --where', 'EPISODE|DATASET')
    p.add_argument('--where', metavar='EXPR',
                   help='with a DATASET: the episodes to change, a condition on the catalog as in `robodata list '
                        '--where` (e.g. "operator = ana and task = pick"); discarded ones only if it names them')
    p.add_argument('--outcome', choices=OUTCOMES, help='new outcome')
    p.add_argument('--status', choices=[s for s in STATUSES if s != 'retired'],
                   help='new status (retired only through `robodata retire`)')
    p.add_argument('--task', help='new task name')
    p.add_argument('--operator', help='new operator')
    p.add_argument('--participant', metavar='ID',
                   help="the pseudonymous id of the person recorded (registered with `robodata participant add`)")
    p.add_argument('--reason', '--why', dest='reason', default='', help='why (kept in the audit log)')
    p.add_argument('--who', help='who decided (default: the login name)')
    p.add_argument('--dry-run', action='store_true', help='list the episodes that would change; change nothing')
    add_json(p)
    p.set_defaults(func=run_set)

    p = sub.add_parser('verify', help="check every bag file against its recorded sha256",
                       description='Check that each episode has its files, that they match the sha256 recorded '
                                   'when they were written, and that the catalog agrees with episode.yaml; a bag on '
                                   'its own has no recorded checksums, so every message is read instead. Exit status '
                                   '1 when anything is wrong.')
    add_target(p)
    add_json(p)
    p.set_defaults(func=run_verify)

    p = sub.add_parser('catalog', help='rebuild catalog.sqlite from the episode folders',
                       description='Recreate catalog.sqlite rows from every episodes/*/episode.yaml.')
    p.add_argument('action', choices=['rebuild'], help='what to do')
    add_target(p, 'a dataset', 'DATASET')
    add_json(p)
    p.set_defaults(func=run_catalog)


def run_init(args: argparse.Namespace) -> int:
    profile = load_profile(args.profile) if args.profile else None
    dataset = Dataset.create(args.target, name=args.name, profile=profile)
    if args.json:
        print_json({'dataset': str(dataset.root), 'name': dataset.name,
                    'profile_sha256': profile.sha256 if profile else None})
    else:
        stdout.print(f'created dataset {dataset.name} at {dataset.root}', markup=False)
    return 0


def run_list(args: argparse.Namespace) -> int:
    target = need(resolve(args.target), 'dataset')
    assert target.dataset is not None
    filters = filters_from(args)
    rows = select_rows(target.dataset, filters)
    if args.json:
        print_json([r.to_dict() for r in rows])
        return 0
    table = Table(box=None, pad_edge=False)
    queued = any(r.review_rank is not None for r in rows)  # `robodata select` stored a queue: its rank per episode
    for column in ('episode', 'task', 'operator', 'mode', 'outcome', 'status', 'state', 'reviewed', 'duration s',
                   'messages',
                   'score', *(['review'] if queued else [])):
        table.add_column(column)
    for r in rows:
        table.add_row(r.id, r.task, r.operator, r.mode, r.outcome, r.status, r.state, r.reviewed_outcome or '-',
                      '-' if r.duration_s is None else f'{r.duration_s:.1f}', str(r.message_count),
                      '-' if r.score is None else f'{r.score:.2f}',
                      *([f'#{r.review_rank}' if r.review_rank is not None else '-'] if queued else []))
    stdout.print(table)
    for status in HIDDEN:  # left out first: say how many, and how to see them
        hidden = len(target.dataset.list(status=status)) if filters.status is None and not filters.shows_discarded \
            else 0
        if hidden:
            stdout.print(f'{hidden} {status} episode(s) not listed (--status {status} lists them)', markup=False)
    missing = target.dataset.folders_not_in_catalog()
    if missing:  # "no episode yet" over a folder of episodes the catalog lost would be a lie
        stdout.print(f'{len(missing)} folder(s) under episodes/ not in the catalog ({", ".join(missing[:3])}'
                     f'{" ..." if len(missing) > 3 else ""}): `robodata catalog rebuild {target.dataset.root}` adds '
                     'them or says why not', markup=False)
    elif not rows:
        stdout.print('no episode' + (' matches these filters' if filters != Filters() else ' yet'), markup=False)
    return 0


def run_set(args: argparse.Namespace) -> int:
    target = need(resolve(args.target), 'episode', 'dataset')
    dataset = target.dataset
    assert dataset is not None
    changes = {name: getattr(args, name) for name in ('participant', 'task', 'operator', 'outcome', 'status')
               if getattr(args, name) is not None}
    if not changes:
        raise RobodataError(f'{args.target}: nothing to change: give --outcome, --status, --task, --operator and/or '
                            '--participant')
    if target.kind == 'episode':
        assert target.episode_id is not None
        if args.where is not None:
            raise RobodataError(f'{args.target}: --where picks episodes of a dataset: name the dataset, not an episode')
        ids = [target.episode_id]
    elif args.where is None:
        raise RobodataError(f'{args.target}: a dataset, not an episode: give --where to pick its episodes to change '
                            '(e.g. --where "operator = ana"), or name one episode folder')
    else:
        ids = [row.id for row in select_rows(dataset, Filters(where=args.where))]
    setters = {'participant': dataset.set_participant, 'task': dataset.set_task, 'operator': dataset.set_operator,
               'outcome': dataset.set_outcome, 'status': dataset.set_status}
    if not args.dry_run:
        for episode_id in ids:
            for name, value in changes.items():
                setters[name](episode_id, value, args.who, args.reason)
    episodes = [dataset.episode(i) for i in ids]
    if args.json:
        rows = [{'episode': e.id, 'task': e.task, 'operator': e.operator, 'outcome': e.outcome, 'status': e.status,
                 'participant': e.participant} for e in episodes]
        print_json(rows[0] if target.kind == 'episode' and not args.dry_run else
                   {'changed': [] if args.dry_run else rows, 'would_change': rows if args.dry_run else [],
                    'set': changes})
        return 0
    for e in episodes:
        now = f'{e.id}: outcome={e.outcome} status={e.status}' + (f' task={e.task}' if 'task' in changes else '') \
            + (f' operator={e.operator}' if 'operator' in changes else '') \
            + (f' participant={e.participant}' if e.participant else '')
        stdout.print(now, markup=False)
    if target.kind == 'dataset' or args.dry_run:
        what = ' '.join(f'{k}={v}' for k, v in changes.items())
        stdout.print(f'{len(ids)} episode(s) {"would be" if args.dry_run else ""} set to {what}'.replace('  ', ' ')
                     + (' (dry run: nothing changed)' if args.dry_run else '')
                     + ('' if ids else f': --where {args.where!r} picks none'), markup=False)
    return 0


def run_verify(args: argparse.Namespace) -> int:
    target = resolve(args.target)
    if target.kind in ('bag', 'bags'):
        problems = [p for r in progress(target.recordings, 'verifying', total=len(target.recordings), quiet=args.json)
                    for p in verify_bag(r.path)]
        checked = len(target.recordings)
    elif target.kind == 'episode':
        assert target.episode_id is not None and target.dataset is not None
        episode_id = target.episode_id
        problems = [p for p in verify_dataset(target.dataset, lambda ids: [episode_id]) if p.episode == episode_id]
        checked = 1
    else:
        assert target.dataset is not None
        checked = len(target.dataset.episode_ids())
        problems = verify_dataset(target.dataset,
                                  lambda ids: progress(ids, 'verifying', total=checked, quiet=args.json))
    if args.json:
        print_json({'checked': checked, 'ok': not problems,
                    'problems': [{'episode': p.episode, 'problem': p.what} for p in problems]})
    else:
        for problem in problems:
            stdout.print(f'[red]FAIL[/] {problem}')
        what = 'bag(s)' if target.kind in ('bag', 'bags') else 'episode(s)'
        stdout.print(f'{checked} {what} checked, {len(problems)} problem(s)')
    if problems:  # the verdict where a script looks for why it failed; the list is on stdout
        bad = len({p.episode for p in problems})
        print(f'robodata verify: error: {len(problems)} problem(s) in {bad} of {checked} checked (listed on stdout)',
              file=sys.stderr)
    return 1 if problems else 0


def run_catalog(args: argparse.Namespace) -> int:
    dataset = Dataset.open(args.target, check_catalog=False)  # the catalog may be what is broken
    count = dataset.rebuild_catalog()
    skipped = dataset.skipped_folders()
    # an episode whose episode.yaml cannot be read is left out of the catalog: done, but not all of it
    code = EXIT_PARTIAL if any(why.startswith(UNREADABLE) for _, why in skipped) else 0
    if code:
        unreadable = sum(why.startswith(UNREADABLE) for _, why in skipped)
        print(f'robodata catalog: rebuilt with {count} episode(s); {unreadable} episode folder(s) left out: their '
              'episode.yaml cannot be read (listed on stdout)', file=sys.stderr)
    if args.json:
        print_json({'episodes': count, 'skipped': [{'folder': name, 'why': why} for name, why in skipped]})
        return code
    for name, why in skipped:
        stdout.print(f'[yellow]skipped[/] episodes/{name}: {why}')
    stdout.print(f'catalog rebuilt: {count} episode(s)' + (f', {len(skipped)} folder(s) skipped' if skipped else ''))
    return code
