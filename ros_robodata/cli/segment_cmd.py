"""`robodata segment`: grasp, contact and release events of an episode, a bag or a whole dataset."""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Any

from rich.table import Table

from ros_robodata.cli.common import print_json, progress, resolve, stderr, stdout
from ros_robodata.errors import RobodataError
from ros_robodata.profile import Profile, load_profile
from ros_robodata.segment.events import KINDS, SegmentResult
from ros_robodata.segment.offline import EVENTS_FILE, dataset_profile, segment_bag, segment_episode


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        'segment', help='find grasp/contact/release events in an episode, a bag or every episode of a dataset',
        description='Find grasp_start, contact, grasp, lift, release, contact_lost and grasp_failed events from '
                    f'the gripper and wrist wrench topics. In a dataset, writes {EVENTS_FILE} into each episode.')
    p.add_argument('target', help='a dataset, an episode folder, or a bag')
    p.add_argument('--profile', help="robot profile YAML (default: the dataset's own; required for a bare bag)")
    p.add_argument('--json', action='store_true', help='print JSON instead of a table')
    p.add_argument('--no-wrench', action='store_true', help='ignore the wrench topic (gripper only)')
    p.add_argument('--no-gripper', action='store_true', help='ignore the gripper topic (wrench only)')
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    target = resolve(args.target)
    options = {'use_gripper': not args.no_gripper, 'use_wrench': not args.no_wrench}
    if target.kind == 'bag':
        if not args.profile:
            raise RobodataError(f'{target.path}: a bare bag needs --profile (which topic is the gripper?)')
        result = segment_bag(target.path, load_profile(args.profile), **options)
        _show(args, str(target.path), result)
        return 0
    assert target.dataset is not None
    profile = load_profile(args.profile) if args.profile else dataset_profile(target.dataset)
    if target.kind == 'episode':
        assert target.episode_id is not None
        result = segment_episode(target.dataset, target.episode_id, profile, **options)
        _show(args, target.episode_id, result)
        return 0
    return _run_dataset(args, target.dataset, profile, options)


def _run_dataset(args: argparse.Namespace, dataset: Any, profile: Profile, options: dict[str, bool]) -> int:
    results: dict[str, SegmentResult] = {}
    failed: dict[str, str] = {}
    ids = [e.id for e in dataset.list() if dataset.bag_files(e.id)]
    for episode_id in progress(ids, 'segmenting', total=len(ids), quiet=args.json):
        try:
            results[episode_id] = segment_episode(dataset, episode_id, profile, **options)
        except RobodataError as err:
            failed[episode_id] = ' '.join(str(err).split())
    if args.json:
        print_json({'episodes': {k: v.to_json() for k, v in results.items()}, 'failed': failed})
    else:
        table = Table('episode', *KINDS, title=f'{dataset.name}: events per episode ({EVENTS_FILE} written)')
        for episode_id, result in results.items():
            counts = Counter(e.kind for e in result.events)
            table.add_row(episode_id, *(str(counts.get(k, 0)) for k in KINDS))
        stdout.print(table)
    for episode_id, reason in failed.items():
        stderr.print(f'robodata segment: {episode_id}: {reason}')
    return 1 if failed else 0


def _show(args: argparse.Namespace, name: str, result: SegmentResult) -> None:
    if args.json:
        print_json(result.to_json())
        return
    table = Table('t_s', 'event', 'confidence', 'evidence', title=f'{name}: {len(result.events)} event(s) from '
                  f'{" + ".join(result.sources)}')
    for event in result.to_json()['events']:
        evidence = ', '.join(f'{e["signal"]}={e["value"]:.4g} (threshold {e["threshold"]:.4g})'
                             for e in event['evidence'] if e['value'] is not None and e['threshold'] is not None)
        table.add_row(f'{event["t_s"]:.3f}', event['kind'], f'{event["confidence"]:.2f}',
                      evidence + (f' — {event["note"]}' if 'note' in event else ''))
    stdout.print(table)
    if result.timeline:
        stdout.print('subtasks: ' + ', '.join(f'{s["name"]} {s["start_s"]:.2f}-{s["end_s"]:.2f}'
                                               for s in result.to_json()['timeline']))
