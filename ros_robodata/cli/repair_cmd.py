"""`robodata repair`: make a crashed episode's bag whole and its records match what is on disk."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ros_robodata.bag.bag_repair import repair_bag
from ros_robodata.cli.command_common import (
    EXIT_OK,
    EXIT_PARTIAL,
    add_json,
    add_target,
    print_json,
    progress,
    resolve,
    stdout,
)
from ros_robodata.dataset.dataset_repair import DATASET_FILES, repair_dataset, repair_episode
from ros_robodata.errors import RobodataError
from ros_robodata.profile import load_profile

__all__ = ['add_parser', 'run']


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        'repair', help='recover after a crash: rewrite a missing metadata.yaml, salvage a truncated MCAP, register '
                       'a bag copied into a dataset by hand',
        description='Repair a bag, a folder of bags, an episode (its bag, then its episode.yaml and catalog row, '
                    'status "incomplete" if it was still "recording") or every episode folder of a dataset: a folder '
                    'under episodes/ holding a bag but no episode.yaml is registered as an episode, an empty one '
                    'left by a stopped recording or import is removed. Damaged originals are kept in bag/damaged/. '
                    'Every folder checked is listed.')
    add_target(p)
    p.add_argument('--profile', help="robot profile YAML to check registered bags against (default: the "
                                     "dataset's own, if it has one)")
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    target = resolve(args.target)
    results: list[dict[str, Any]] = []
    if target.kind == 'bag':
        report = repair_bag(target.path)  # a single bag that cannot be repaired is an error, said in one line
        results.append({'bag': str(target.path), 'actions': report.actions, 'messages': report.message_count})
    elif target.kind == 'bags':
        for recording in progress(target.recordings, 'repairing', quiet=args.json):
            if recording.kind != 'bag':
                results.append({'bag': str(recording.path), 'actions': [],
                                'problem': 'a bare bag file: nothing to repair in place (`robodata import` makes '
                                           'it an episode; `robodata repair` then works on its folder)'})
                continue
            try:
                report = repair_bag(recording.path)
                results.append({'bag': str(recording.path), 'actions': report.actions,
                                'messages': report.message_count})
            except RobodataError as err:
                results.append({'bag': str(recording.path), 'actions': [], 'problem': ' '.join(str(err).split())})
    elif target.kind == 'episode':
        assert target.dataset is not None and target.episode_id is not None
        results.append(repair_episode(target.dataset, target.episode_id))
    else:
        assert target.dataset is not None
        profile = load_profile(args.profile) if args.profile else _own_profile(target.dataset)
        results = [r.to_json() for r in repair_dataset(target.dataset, profile)]
    if args.json:
        print_json(results)
    else:
        for r in results:
            name = r.get('episode') or r['bag']
            if r.get('problem'):
                stdout.print(f'[red]{name}[/]: {r["problem"]}')
            else:
                stdout.print(f'{name}: ' + ('; '.join(r['actions']) if r['actions'] else 'whole, nothing to do'))
        problems = sum(1 for r in results if r.get('problem'))
        what = 'bag(s)' if target.kind in ('bag', 'bags') else 'episode folder(s)'
        folders = [r for r in results if r.get('episode') != DATASET_FILES]
        changed = sum(1 for r in folders if r['actions'])
        stdout.print(f'{len(folders)} {what} checked: {changed} repaired, {problems} not repairable, '
                     f'{len(folders) - changed - problems} whole')
    unrepairable = [r.get('episode') or r['bag'] for r in results if r.get('problem')]
    if unrepairable:  # the verdict where a script looks for why it did not exit 0; the details are on stdout
        print(f'robodata repair: {len(unrepairable)} not repairable: {", ".join(map(str, unrepairable[:5]))}'
              + (' ...' if len(unrepairable) > 5 else '') + ' (the reasons are on stdout)', file=sys.stderr)
    return EXIT_PARTIAL if unrepairable else EXIT_OK


def _own_profile(dataset: Any) -> Any:
    return dataset.profile if dataset.has_profile else None  # without one, bags are registered unchecked
