"""`robodata segment`: grasp, contact and release events of an episode, a bag or a whole dataset."""

from __future__ import annotations

import argparse
import os
from collections import Counter
from pathlib import Path
from typing import Any

from ros_robodata.cli.command_common import (
    EXIT_OK,
    EXIT_PARTIAL,
    TARGETS,
    add_analysis_arguments,
    add_ray,
    executor_from,
    filters_from,
    print_json,
    progress,
    stderr,
    stdout,
    target_in_store,
)
from ros_robodata.cluster import ClusterStats
from ros_robodata.cluster.remote_jobs import RemoteRoot
from ros_robodata.dataset.targets import prepare, why_none
from ros_robodata.errors import RobodataError
from ros_robodata.events.event import SegmentResult
from ros_robodata.events.offline import EVENTS_FILE, segment_groups
from ros_robodata.vocabulary import EVENT_KINDS


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        'segment', help='find grasp/contact/release events in a dataset, an episode, a bag or a folder of bags',
        description='Find grasp_start, contact, grasp, lift, release, contact_lost and grasp_failed events from '
                    f'the gripper and wrist wrench topics. In a dataset, writes {EVENTS_FILE} into each episode; '
                    'a bag on its own (or a folder of them, with --profile) is read and printed, nothing written; '
                    'so is a LeRobot dataset folder, read in place (give --profile naming its gripper). A dataset of '
                    'several robots is segmented robot by robot, each with its own profile, unless --profile.')
    add_analysis_arguments(p, TARGETS + ', or a dataset in object storage (s3://bucket/path: docs/ray.md)')
    p.add_argument('--no-wrench', action='store_true', help='ignore the wrench topic (gripper only)')
    p.add_argument('--no-gripper', action='store_true', help='ignore the gripper topic (wrench only)')
    p.add_argument('--workers', type=int, default=1, help='episodes segmented in parallel (default 1)')
    add_ray(p)
    p.set_defaults(func=run)


def _gripper_hint(root: Path) -> str:
    """What to do when a LeRobot folder's state names a gripper or hand joint its info.json cannot say the stroke of
    (which end is open, in what units): a profile that names it."""
    from ros_robodata.dataset.importers.import_lerobot import STATE_TOPIC
    from ros_robodata.dataset.lerobot_episode_source import lerobot_source
    from ros_robodata.quality.joint_stop import is_hand_joint

    try:
        source = lerobot_source(root)
        names = source.names(source.state_key, int(source.info['features'][source.state_key]['shape'][0]))
    except (RobodataError, KeyError, IndexError, TypeError, ValueError):
        return ''
    todo = (f'pass --profile FILE naming it (topics: gripper: topic {STATE_TOPIC}, joint, open_position, '
            'closed_position from its datasheet; docs/profile.md)')
    if names == [f'joint_{i}' for i in range(len(names))]:
        return (f'; meta/info.json names none of its {len(names)} state dimensions (read as joint_0 .. '
                f'joint_{len(names) - 1}): if one of them is a gripper, {todo}')
    hands = [n for n in names if is_hand_joint(n)]
    if not hands:
        return ''
    more = ' ...' if len(hands) > 4 else ''
    return (f'; its state names {", ".join(hands[:4])}{more} (a gripper or a hand?): meta/info.json does not say '
            f'where that opens and closes, so {todo}')


def run(args: argparse.Namespace) -> int:
    with target_in_store(args, 'segment') as (where, remote):  # a dataset in object storage: staged, put back
        return _run(args, where, remote)


def _run(args: argparse.Namespace, where: str, remote: RemoteRoot | None) -> int:
    if args.no_gripper and args.no_wrench:
        raise RobodataError('--no-gripper and --no-wrench together leave nothing to segment from')
    if args.workers < 1:
        raise RobodataError('--workers must be at least 1')
    workers = min(args.workers, os.cpu_count() or 1) if args.ray is None else args.workers
    stats = ClusterStats()
    filters = filters_from(args)
    work = prepare(where, args.profile, filters, in_place=True)  # a LeRobot folder is read where it lies
    target = work.target
    if not work.items:
        raise RobodataError(f'{target.path}: nothing to segment: {why_none(target, filters)}')
    run = segment_groups(work.robots, use_gripper=not args.no_gripper, use_wrench=not args.no_wrench,
                         progress=lambda it: progress(it, 'segmenting', quiet=args.json,
                                                      total=None if work.mixed else len(work.items)),
                         executor=executor_from(args, workers, remote), stats=stats)
    if run.nothing_to_do:
        why = run.nothing_to_do + (_gripper_hint(target.path) if target.kind == 'lerobot' and not args.profile else '')
        if args.json:
            print_json({'episodes': {}, 'failed': {}, 'nothing_to_do': why})
        else:
            stdout.print(f'nothing to segment: {why}', markup=False)
        return EXIT_OK
    if target.kind in ('episode', 'bag'):
        name = work.items[0].name if target.kind == 'episode' else str(target.path)
        if run.failed:
            raise RobodataError(next(iter(run.failed.values())))
        _show(args, name, next(iter(run.results.values())))
        return EXIT_OK
    left_out = {robot: own.nothing_to_do for robot, own in run.robots.items() if own.nothing_to_do}
    if args.json:
        print_json({'episodes': {k: v.to_json() for k, v in run.results.items()}, 'failed': run.failed,
                    **({'nothing_to_do': left_out} if left_out else {}),
                    **({'cluster': stats.to_json()} if args.ray else {})})
    else:
        written = f' ({EVENTS_FILE} written)' if target.kind == 'dataset' else ' (nothing written)'
        name = target.dataset.name if target.dataset is not None else str(target.path)
        from rich.table import Table  # start-up time: ~0.1 s, and --json prints none

        table = Table('bag' if target.kind in ('bag', 'bags') else 'episode', *EVENT_KINDS,
                      title=f'{name}: events per episode{written}')
        for episode_id, result in run.results.items():
            counts = Counter(e.kind for e in result.events)
            table.add_row(episode_id, *(str(counts.get(k, 0)) for k in EVENT_KINDS))
        stdout.print(table)
    for episode_id, result in run.results.items():
        for note in result.notes:
            stderr.print(f'robodata segment: {episode_id}: note: {note}', markup=False)
        for warning in result.warnings:
            stderr.print(f'robodata segment: {episode_id}: warning: {warning}', markup=False)
    if not args.json:  # where the signals came from, once for the run rather than once an episode
        said = Counter(line for result in run.results.values() for line in result.inputs)
        for line, count in said.items():
            stdout.print(f'{line} ({count} of {len(run.results)})', markup=False)
        for robot, own in (run.robots or {'': run}).items():  # a dataset of several robots: pooled per robot
            if own.priors is not None:
                stdout.print(f'{robot + ": " if robot else ""}strokes pooled over the {len(own.results)} episodes: '
                             f'{own.priors.describe()}; {len(own.repeated)} episode(s) segmented again from them',
                             markup=False)
        for robot, why in left_out.items():
            stdout.print(f'{robot}: nothing to segment: {why}', markup=False)
    summary = warning_summary(run.results)
    if summary:
        stderr.print(f'robodata segment: {summary}', markup=False)
    for episode_id, reason in run.failed.items():
        stderr.print(f'robodata segment: {episode_id}: {reason}', markup=False)
    return EXIT_PARTIAL if run.failed else EXIT_OK


def warning_summary(results: dict[str, SegmentResult]) -> str:
    """One line for a run of several episodes: how many had warnings, and of which kind (their words before the
    first number), most frequent first; '' when none had any."""
    warned = {name: r.warnings for name, r in results.items() if r.warnings}
    if len(results) < 2 or not warned:
        return ''
    kinds = Counter(_kind(w) for warnings in warned.values() for w in set(map(_kind, warnings)))
    listed = '; '.join(f'{count} {kind}' for kind, count in kinds.most_common())
    return f'{len(warned)} of {len(results)} episodes had warnings: {listed}'


def _kind(warning: str) -> str:
    """A warning's words up to its first number or colon (at most eight): what kind of warning it is."""
    words = []
    for word in warning.split():
        if any(ch.isdigit() for ch in word):
            break
        words.append(word.rstrip(':'))
        if word.endswith(':'):
            break
    return ' '.join(words[:8])


def _show(args: argparse.Namespace, name: str, result: SegmentResult) -> None:
    for note in result.notes:  # the bag was damaged, or read in some unusual way: said first, on stderr
        stderr.print(f'robodata segment: {name}: note: {note}', markup=False)
    for warning in result.warnings:
        stderr.print(f'robodata segment: {name}: warning: {warning}', markup=False)
    if args.json:
        print_json(result.to_json())
        return
    from rich.table import Table  # start-up time: ~0.1 s, and --json prints none

    table = Table('t_s', 'event', 'confidence', 'evidence', title=f'{name}: {len(result.events)} event(s) from '
                  f'{" + ".join(result.sources)}')
    for event in result.to_json()['events']:
        evidence = ', '.join(f'{e["signal"]}={e["value"]:.4g} (threshold {e["threshold"]:.4g})'
                             for e in event['evidence'] if e['value'] is not None and e['threshold'] is not None)
        table.add_row(f'{event["t_s"]:.3f}', event['kind'], f'{event["confidence"]:.2f}',
                      evidence + (f' — {event["note"]}' if 'note' in event else ''))
    stdout.print(table)
    for line in result.inputs:
        stdout.print(line, markup=False)
    if result.timeline:
        stdout.print('subtasks: ' + ', '.join(f'{s["name"]} {s["start_s"]:.2f}-{s["end_s"]:.2f}'
                                               for s in result.to_json()['timeline']))
