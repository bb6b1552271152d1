"""`robodata approve`: approve the episodes a written policy admits, reject the rest, each with its reasons."""

from __future__ import annotations

import argparse

from rich.table import Table

from ros_robodata.cli.command_common import (
    add_filters,
    add_json,
    add_target,
    filters_from,
    need,
    print_json,
    resolve,
    stdout,
)
from ros_robodata.dataset.targets import select_rows, why_none
from ros_robodata.governance import approve, load_approval_policy


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser('approve', help='approve the episodes a written policy admits, reject the rest',
                       description='Judge every episode (of those the filters pick) against a written approval policy '
                                   '(config/policies/*.yaml: minimum score, no error findings, a reviewers\' verdict, '
                                   'required events, allowed outcomes, the share of recoveries): approve those it '
                                   'admits, reject the rest, each with its reasons. Each decision sets the status '
                                   '(approved/rejected), keeps what it rests on in episode.yaml and appends an audit '
                                   'line with who and why. Released and retired episodes are never re-judged.')
    add_target(p, 'a dataset', 'DATASET')
    p.add_argument('--policy', required=True, metavar='FILE', help='the approval policy (YAML)')
    p.add_argument('--who', help='who approves (default: the login name)')
    p.add_argument('--why', default='', help='why (kept with every decision and in the audit log)')
    p.add_argument('--dry-run', action='store_true', help='show what would change; change nothing')
    add_filters(p)
    add_json(p)
    p.set_defaults(func=run_approve)


def run_approve(args: argparse.Namespace) -> int:
    target = need(resolve(args.target), 'dataset')
    assert target.dataset is not None
    policy = load_approval_policy(args.policy)
    filters = filters_from(args)
    rows = select_rows(target.dataset, filters)
    run = approve(target.dataset, rows, policy, who=args.who, why=args.why, dry_run=args.dry_run)
    if args.json:
        print_json(run.to_json())
        return 0
    if not rows:
        stdout.print(f'nothing to judge: {why_none(target, filters, need_bag=False)}', markup=False)
        return 0
    table = Table(box=None, pad_edge=False)
    for column in ('episode', 'was', 'now', 'reasons'):
        table.add_column(column)
    for d in run.decisions:
        now = {'approved': '[green]approved[/]', 'rejected': '[red]rejected[/]'}.get(d.verdict, '-')
        table.add_row(d.episode_id, d.before, now, '; '.join(d.reasons))
    stdout.print(table)
    for warning in run.warnings:
        stdout.print(f'[yellow]warning[/] {warning}')
    would = 'would be ' if args.dry_run else ''
    stdout.print(f'policy {policy.name}: {run.count("approved")} {would}approved, {run.count("rejected")} {would}'
                 f'rejected, {run.count("unchanged")} unchanged' + (' (dry run: nothing changed)' if args.dry_run
                                                                    else ''), markup=False)
    return 0
