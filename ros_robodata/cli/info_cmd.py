"""`robodata info PATH`: what a bag, an episode or a dataset holds."""

from __future__ import annotations

import argparse
from typing import Any

from rich.table import Table

from ros_robodata.cli.command_common import add_json, add_target, human_bytes, print_json, resolve, stdout
from ros_robodata.dataset.describe import describe


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser('info', help='topics, counts, rates, duration, size and outcome of a bag, episode or dataset',
                       description='Describe a bag (directory, .mcap or .db3), a folder of bags, an episode folder or '
                                   'a dataset.')
    add_target(p)
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    target = resolve(args.target)
    data = describe(target)
    if args.json:
        print_json(data)
    elif target.kind == 'bags':
        for bag in data['bags']:
            _print_bag(bag, None)
        stdout.print(f'{len(data["bags"])} bag(s) in {target.path}')
    elif target.kind == 'dataset':
        _print_dataset(data)
    elif target.kind == 'episode':
        _print_bag(data['bag'], data)
    else:
        _print_bag(data, None)
    return 0


def _print_bag(bag: dict[str, Any] | None, episode: dict[str, Any] | None) -> None:
    if episode is not None:
        stdout.print(f'[bold]Episode[/] {episode["id"]}  task={episode["task"] or "-"}  operator='
                     f'{episode["operator"] or "-"}  mode={episode["mode"]}  outcome={episode["outcome"]}  '
                     f'status={episode["status"]}')
        if bag is None:
            stdout.print('  no bag')
            return
    assert bag is not None
    stdout.print(f'[bold]Bag[/] {bag["path"]}  ({bag["storage"]}, {", ".join(bag["files"])})')
    stdout.print(f'  duration {bag["duration_s"]:.3f} s   messages {bag["message_count"]}   '
                 f'size {human_bytes(bag["size_bytes"])}   ros_distro {bag["ros_distro"] or "-"}')
    for note in bag['notes']:
        stdout.print(f'  [yellow]note:[/] {note}')
    table = Table(box=None, pad_edge=False)
    for column in ('topic', 'type', 'count', 'rate Hz'):
        table.add_column(column, justify='right' if column in ('count', 'rate Hz') else 'left')
    for t in bag['topics']:
        rate = '-' if t['rate_hz'] is None else f'{t["rate_hz"]:.1f}'
        table.add_row(t['topic'] + (' (latched)' if t['latched'] else ''), t['type'], str(t['count']), rate)
    stdout.print(table)


def _print_dataset(data: dict[str, Any]) -> None:
    stdout.print(f'[bold]Dataset[/] {data["name"]} at {data["path"]}  robot={data["robot"] or "-"}')
    stdout.print(f'  {data["episodes"]} episodes, {data["duration_s"]:.1f} s, {data["message_count"]} messages, '
                 f'{human_bytes(data["size_bytes"])}')
    for key in ('outcomes', 'statuses', 'tasks'):
        if data[key]:
            stdout.print(f'  {key}: ' + ', '.join(f'{k or "-"} {v}' for k, v in sorted(data[key].items())))
    if data['episode_list']:
        table = Table(box=None, pad_edge=False)
        for column in ('episode', 'task', 'operator', 'mode', 'outcome', 'status', 'reviewed', 'duration s',
                       'messages', 'score'):  # the columns `robodata list` has
            table.add_column(column)
        for e in data['episode_list']:
            duration = '-' if e['duration_s'] is None else f'{e["duration_s"]:.1f}'
            table.add_row(e['id'], e['task'], e['operator'], e['mode'], e['outcome'], e['status'],
                          e['reviewed'] or '-', duration, str(e['messages']),
                          '-' if e['score'] is None else f'{e["score"]:.2f}')
        stdout.print(table)
