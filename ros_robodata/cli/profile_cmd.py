"""`robodata profile P`: validate a robot profile and show what it declares."""

from __future__ import annotations

import argparse

from rich.table import Table

from ros_robodata.cli.command_common import print_json, stdout
from ros_robodata.errors import RobodataError
from ros_robodata.profile import load_profile
from ros_robodata.profile.defaults import profile_keys


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser('profile', help='validate a robot profile and list its topics',
                       description='Validate a robot profile YAML (unknown keys, wrong types and missing entries '
                                   'are errors) and list the topics it records.')
    p.add_argument('path', nargs='?', help='robot profile YAML')
    p.add_argument('--json', action='store_true', help='print the validated profile, defaults filled, as JSON')
    p.add_argument('--defaults', action='store_true', help='print every key a profile can hold, its default '
                                                             '("(required)" when it has none) and what it means')
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.defaults:
        keys = profile_keys()
        if args.json:
            print_json([{'key': k, 'default': d, 'meaning': m} for k, d, m in keys])
            return 0
        table = Table('key', 'default', 'meaning', box=None, pad_edge=False)
        for key, default, meaning in keys:
            table.add_row(key, default, meaning)
        stdout.print(table)
        return 0
    if args.path is None:
        raise RobodataError('give a profile YAML to check, or --defaults to list every key and its default')
    profile = load_profile(args.path)
    if args.json:
        print_json({'source': str(profile.source), 'sha256': profile.sha256, **profile.to_dict()})
        return 0
    stdout.print(f'[bold]{profile.robot.name}[/] ({profile.source}) ok, sha256 {profile.sha256[:12]}')
    table = Table(box=None, pad_edge=False)
    for column in ('role', 'topic', 'type', 'rate Hz', 'qos'):
        table.add_column(column)
    for role, spec in profile.all_topics():
        qos = spec.qos + (' latched' if spec.latched else '')
        table.add_row(role, spec.topic, spec.type, '-' if spec.rate_hz is None else f'{spec.rate_hz:g}', qos)
    stdout.print(table)
    return 0
