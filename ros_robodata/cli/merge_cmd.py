"""`robodata merge A B ... --into C`: datasets (of one robot or several) pooled into a new one, whole or not at all."""

from __future__ import annotations

import argparse
from pathlib import Path

from ros_robodata.cli.command_common import dataset_at, print_json, stdout
from ros_robodata.dataset.merge import MERGE_FILE, merge_datasets


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser('merge', help='pool datasets (of one robot or several) into a new dataset',
                       description='Copy every episode of the source datasets into a new dataset, built beside it and '
                                   'put in place whole. Datasets of different robots pool too: each episode keeps its '
                                   'own robot profile (profiles/<robot>.yaml, listed in dataset.yaml) and every '
                                   'command reads it with its own. Ids that clash get -2, -3... and merge.json keeps '
                                   "every source episode's new id. The sources are only read, but for a line "
                                   'per episode in their copies.jsonl (so `retire` in a source reaches the copy). '
                                   'Discarded episodes are left out '
                                   'unless --all.')
    p.add_argument('sources', nargs='+', metavar='DATASET', help='the datasets to pool')
    p.add_argument('--into', required=True, metavar='NEW', help='the new dataset (an absent or empty folder)')
    how = p.add_mutually_exclusive_group()
    how.add_argument('--link', action='store_true',
                     help='hard-link the bag files (copied, and said so, across file systems)')
    how.add_argument('--copy', action='store_true', help='copy the bag files (the default)')
    p.add_argument('--all', action='store_true', help='take discarded episodes too')
    p.add_argument('--name', help="the new dataset's name (default: its folder's name)")
    p.add_argument('--who', help='who (default: the login name)')
    p.add_argument('--json', action='store_true', help='print machine-readable JSON instead of text')
    p.set_defaults(func=run_merge)


def run_merge(args: argparse.Namespace) -> int:
    sources = [dataset_at(path) for path in args.sources]
    merged = merge_datasets(sources, Path(args.into), link=args.link, include_all=args.all, who=args.who,
                            name=args.name)
    if args.json:
        print_json(merged.to_json())
        return 0
    for path, run in merged.runs.items():
        renamed = [p for p in run.done if p.renamed]
        left = merged.left_out.get(path, [])
        stdout.print(f'{path}: {len(run.done)} episode(s)' + (f', {len(renamed)} renamed' if renamed else '')
                     + (f', {len(left)} discarded left out (--all takes them)' if left else ''), markup=False)
        for pooled in renamed:
            stdout.print(f'  {pooled.source_id} -> {pooled.new_id}', markup=False)
        for note in run.notes:
            stdout.print(f'  {note}', markup=False)
    robots = f', {len(merged.embodiments)} embodiments: {", ".join(merged.embodiments)}' \
        if len(merged.embodiments) > 1 else ''
    stdout.print(f'merged {merged.episodes} episode(s) into {merged.root} ({MERGE_FILE} maps every id{robots})',
                 markup=False)
    return 0
