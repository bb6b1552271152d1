"""`robodata import`: bags, long logs and videos recorded elsewhere become episodes of a dataset."""

from __future__ import annotations

import argparse
import os
import signal
from pathlib import Path
from typing import Any

from ros_robodata.cli.command_common import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_PARTIAL,
    add_ray,
    executor_from,
    print_json,
    print_json_line,
    progress,
    stderr,
    stdout,
)
from ros_robodata.dataset import MODES, OUTCOMES
from ros_robodata.dataset.importers import Imported, ImportOptions, dataset_for_import, import_recordings
from ros_robodata.dataset.sources import Recording
from ros_robodata.dataset.split import SplitSpec
from ros_robodata.errors import RobodataError
from ros_robodata.profile import load_profile
from ros_robodata.quality.intake import THEN_STEPS, AfterImport, after_import, then_steps, watch_folder
from ros_robodata.vocabulary import parse_duration, parse_time


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        'import', help='make episodes of bags, long logs and videos recorded elsewhere',
        description='Each SOURCE (a rosbag2 folder, a bare .mcap or .db3, a video, a LeRobot dataset folder, or a '
                    'folder holding any of these) becomes an episode of DATASET (each episode of a LeRobot dataset '
                    'becomes one): its bag copied in (or linked, or moved), episode.yaml '
                    'written from what the bag holds, a catalog row and an audit entry. A video becomes a rosbag2 '
                    'episode of JPEG frames (sensor_msgs/msg/CompressedImage). A long log can be cut into several '
                    'episodes. The same content is never imported twice; an import that was stopped is finished by '
                    'running it again. With --watch, a folder is watched and every recording that arrives is '
                    'imported once it is complete.')
    p.add_argument('sources', nargs='*', metavar='SOURCE', help='bags, videos, or folders of them')
    p.add_argument('--dataset', required=True, help='the dataset to import into (created if absent)')
    p.add_argument('--profile', help="robot profile YAML: for a new dataset (or one made without); checks every "
                                     "recording's topics against it")
    p.add_argument('--task', default='', help='task of the new episodes')
    p.add_argument('--operator', default='', help='who demonstrated (default: not known)')
    p.add_argument('--mode', choices=MODES, default='unknown',
                   help='how the episodes were made (default: unknown; videos: human)')
    p.add_argument('--outcome', choices=OUTCOMES, default='unknown', help='outcome of the new episodes')
    how = p.add_mutually_exclusive_group()
    how.add_argument('--copy', dest='method', action='store_const', const='copy',
                     help='copy the bag files into the dataset (default)')
    how.add_argument('--link', dest='method', action='store_const', const='link',
                     help='link to the bag files where they are: nothing copied, nothing read but the bag\'s index')
    how.add_argument('--move', dest='method', action='store_const', const='move',
                     help='move the bag files into the dataset (the source is removed once the episode is whole)')
    split = p.add_mutually_exclusive_group()
    split.add_argument('--split-on-gap', metavar='T', help='cut a log where the arm stood still, or the log was '
                                                           'silent, for T (e.g. 2s)')
    split.add_argument('--split-every', metavar='T', help='cut a log into episodes of length T (e.g. 60s)')
    split.add_argument('--split-on-topic', metavar='TOPIC', help='cut a log at markers on TOPIC: '
                                                                 'ros_robodata/msg/EpisodeEvent (START/STOP), '
                                                                 'std_msgs/msg/Bool (true starts, false stops) or '
                                                                 'std_msgs/msg/String (each one starts an episode; '
                                                                 '"stop"/"end"/"done" ends it)')
    split.add_argument('--ranges', metavar='CSV', help='cut a log into the rows of CSV: start, end[, task[, '
                                                       'outcome]] (seconds from the log\'s start, ns since the '
                                                       'epoch or ISO 8601 times)')
    p.add_argument('--id', dest='episode_id', help='episode id for a single recording imported whole (default: '
                                                   'its file or folder name)')
    p.add_argument('--start', help='a video\'s start time (ISO 8601, e.g. 2026-03-02T10:15:00Z, or seconds since '
                                   'the epoch); default: its creation time, else its file time')
    p.add_argument('--camera', help='the profile camera a video becomes (default: its only CompressedImage camera)')
    p.add_argument('--jpeg-quality', type=int, default=90, help='JPEG quality of a video\'s frames (default 90)')
    p.add_argument('--raw-images', action='store_true', help='a LeRobot dataset\'s video frames as uncompressed '
                                                             'sensor_msgs/msg/Image (default: JPEG CompressedImage)')
    p.add_argument('--then', metavar='STEPS', help=f'after importing, run these on the new episodes: '
                                                   f'{",".join(THEN_STEPS)} (comma-separated)')
    p.add_argument('--watch', metavar='DIR', help='watch DIR and import every recording that arrives in it, until '
                                                  'Ctrl-C')
    p.add_argument('--interval', default='2s', help='with --watch: how often DIR is looked at (default 2s)')
    p.add_argument('--settle', default='5s', help='with --watch: a finished recording without metadata.yaml (its MCAP '
                                                  'footer written, or a video) is taken once its files have not '
                                                  'changed for this long (default 5s)')
    p.add_argument('--incomplete-after', default='10min',
                   help='with --watch: a recording whose writer never finished it (no metadata.yaml and no MCAP '
                        'footer: a killed recorder) is taken as it is, salvaged as incomplete, once it has not '
                        'changed for this long (default 10min); the whole recording replaces it if it comes later')
    p.add_argument('--json', action='store_true', help='print machine-readable JSON')
    p.add_argument('--workers', type=int, default=1,
                   help="a LeRobot dataset's episodes converted in parallel (default 1)")
    add_ray(p, 'LeRobot episode')
    p.set_defaults(func=run, method='copy')


def options_from_args(args: argparse.Namespace) -> ImportOptions:
    split = None
    if args.split_on_gap:
        split = SplitSpec('gap', parse_duration(args.split_on_gap, '--split-on-gap') / 1e9)
    elif args.split_every:
        split = SplitSpec('every', parse_duration(args.split_every, '--split-every') / 1e9)
    elif args.split_on_topic:
        split = SplitSpec('topic', topic=args.split_on_topic)
    elif args.ranges:
        if not Path(args.ranges).is_file():
            raise RobodataError(f'--ranges: {args.ranges}: no such file')
        split = SplitSpec('ranges', ranges=Path(args.ranges))
    options = ImportOptions(task=args.task, operator=args.operator, mode=args.mode, outcome=args.outcome,
                            method=args.method, split=split, episode_id=args.episode_id,
                            video_start_ns=None if args.start is None else parse_time(args.start, 0, '--start'),
                            jpeg_quality=args.jpeg_quality, camera=args.camera, raw_images=args.raw_images)
    options.check()
    return options


def run(args: argparse.Namespace) -> int:
    options = options_from_args(args)
    if args.workers < 1:
        raise RobodataError('--workers must be at least 1')
    if args.ray is not None and args.watch:
        raise RobodataError('--ray converts the episodes of the sources given; --watch imports on this machine')
    workers = min(args.workers, os.cpu_count() or 1) if args.ray is None else args.workers
    steps = then_steps(args.then)
    if args.watch and args.sources:
        raise RobodataError('--watch DIR takes no SOURCE arguments: it imports what arrives in DIR')
    if not args.watch and not args.sources:
        raise RobodataError('nothing to import: give SOURCE(s), or --watch DIR')
    if args.watch:
        return _watch(args, options, steps)

    def on_result(result: Imported | Recording, failure: str | None) -> None:
        if args.json:
            return
        if failure is not None:
            stderr.print(f'robodata import: error: {failure}', markup=False)
        else:
            assert isinstance(result, Imported)
            _say(result)

    profile = load_profile(args.profile) if args.profile else None
    run = import_recordings(args.sources, args.dataset, options, profile=profile, on_result=on_result,
                            progress=lambda it: progress(it, 'importing', quiet=args.json),
                            executor=executor_from(args, workers))
    dataset = run.dataset
    if not args.json:
        for path in run.skipped:
            stderr.print(f'robodata import: {path}: inside the dataset itself: skipped', markup=False)
        if run.created:
            stdout.print(f'created dataset {dataset.name} at {dataset.root}', markup=False)
    if run.removed:  # every source failed into a dataset this run made: nothing is left behind
        if args.json:
            print_json({'dataset': str(dataset.root), 'created': False, 'imported': [], 'failed': run.failed,
                        'skipped': run.skipped, 'then': {}})
        else:
            stdout.print(f'nothing imported: {dataset.root} was not created', markup=False)
        return EXIT_ERROR
    checked = dataset.profile if dataset.has_profile else None
    after = after_import(dataset, checked, run.episodes, steps)
    if not args.json:
        _say_after(after)
    if args.json:
        print_json({'dataset': str(dataset.root), 'created': run.created,
                    'imported': [r.to_json() for r in run.imported], 'failed': run.failed, 'skipped': run.skipped,
                    'then': after.to_json()})
    else:
        existing = sum(len(r.existing) for r in run.imported if not r.episodes)
        stdout.print(f'{len(run.episodes)} episode(s) imported into {dataset.root}'
                     + (f', {existing} already there' if existing else '')
                     + (f', {len(run.failed)} source(s) failed' if run.failed else ''), markup=False)
    if run.failed:  # every source failed: bad input; some did: finished, with failures
        return EXIT_PARTIAL if run.imported else EXIT_ERROR
    return EXIT_OK


def _say(result: Imported) -> None:
    source, dataset = result.recording.path, result.dataset
    for note in result.notes:
        stdout.print(f'{source}: note: {note}', markup=False)
    for episode_id in result.episodes:
        episode = dataset.episode(episode_id)
        count = sum(int(t.get('count', 0)) for t in episode.topics.values())
        duration = f'{episode.duration_s:.1f} s' if episode.duration_s is not None else '-'
        flag = f' [{episode.status}]' if episode.status != 'complete' else ''
        stdout.print(f'{source} -> episode {episode_id}: {count} messages, {duration}{flag}', markup=False)
    if result.existing and not result.episodes:
        stdout.print(f'{source}: already imported as {", ".join(result.existing)}: skipped', markup=False)


def _say_after(after: AfterImport) -> None:
    """What the steps after the import found, as `robodata segment` and `robodata score` would say it."""
    if after.segment_skipped is not None or after.segmented is not None:
        stdout.print(f'segmented: {after.to_json()["segment"]}', markup=False)
    if after.scores is not None:
        for line in after.skipped_checks:
            stdout.print(f'score: {line}', markup=False)
        stdout.print('scored: ' + ', '.join(f'{i} {s:.2f}' for i, s in after.scores.items()), markup=False)


def _watch(args: argparse.Namespace, options: ImportOptions, steps: tuple[str, ...]) -> int:
    if not Path(args.watch).is_dir():
        raise RobodataError(f'--watch: {args.watch}: no such folder')
    interval = parse_duration(args.interval, '--interval') / 1e9
    settle = parse_duration(args.settle, '--settle', allow_zero=True) / 1e9
    incomplete_after = parse_duration(args.incomplete_after, '--incomplete-after') / 1e9
    if incomplete_after < settle:
        raise RobodataError(f'--incomplete-after {args.incomplete_after}: shorter than --settle {args.settle}: a '
                            'finished recording would be taken as unfinished')
    dataset, profile, created = dataset_for_import(args.dataset, load_profile(args.profile) if args.profile else None)
    if created and not args.json:
        stdout.print(f'created dataset {dataset.name} at {dataset.root}', markup=False)
    stopping = False

    def on_imported(result: Imported, after: AfterImport) -> None:
        if args.json:
            print_json_line({'event': 'imported', **result.to_json()})
            then = after.to_json()
            if then:
                print_json_line({'event': 'then', 'episodes': result.episodes, **then})
        else:
            _say(result)
            _say_after(after)

    def on_failed(recording: Recording, reason: str) -> None:
        if args.json:
            print_json_line({'event': 'failed', 'source': str(recording.path), 'reason': reason})
        stderr.print(f'robodata import: error: {reason}', markup=False)

    def on_note(path: Path, text: str) -> None:
        if args.json:
            print_json_line({'event': 'note', 'path': str(path), 'note': text})
        else:
            stderr.print(f'robodata import: {path}: {text}', markup=False)

    def stop_on_term(_signum: int, _frame: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop_on_term)
    if args.json:
        print_json_line({'event': 'watching', 'folder': str(args.watch), 'dataset': str(dataset.root),
                         'created': created, 'interval_s': interval, 'settle_s': settle,
                         'incomplete_after_s': incomplete_after})
    else:
        stdout.print(f'watching {args.watch} (every {interval:g} s) -> {dataset.root}; Ctrl-C stops', markup=False)
    watched = watch_folder(Path(args.watch), dataset, options, profile, steps, interval_s=interval, settle_s=settle,
                           incomplete_after_s=incomplete_after, on_imported=on_imported, on_failed=on_failed,
                           on_note=on_note, stop=lambda: stopping)
    if args.json:
        print_json_line({'event': 'stopped', 'imported': len(watched.imported), 'seconds': round(watched.seconds)})
    else:
        stdout.print(f'stopped watching {args.watch}: {len(watched.imported)} episode(s) imported in '
                     f'{watched.seconds:.0f} s', markup=False)
    return 0
