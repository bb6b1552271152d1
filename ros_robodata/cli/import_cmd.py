"""`robodata import`: bags, long logs and videos recorded elsewhere become episodes of a dataset."""

from __future__ import annotations

import argparse
import contextlib
import signal
import time
from pathlib import Path
from typing import Any

from ros_robodata.cli.command_common import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_PARTIAL,
    print_json,
    print_json_line,
    progress,
    stderr,
    stdout,
)
from ros_robodata.dataset import MODES, OUTCOMES, Dataset
from ros_robodata.dataset.importer import Imported, ImportOptions, dataset_for_import, import_recordings
from ros_robodata.dataset.sources import Recording
from ros_robodata.dataset.split import SplitSpec
from ros_robodata.dataset.watch import Watcher
from ros_robodata.errors import RobodataError
from ros_robodata.profile import Profile, load_profile
from ros_robodata.vocabulary import parse_duration, parse_time

THEN_STEPS = ('segment', 'score')


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


def _then_steps(text: str | None) -> list[str]:
    steps = [s.strip() for s in (text or '').split(',') if s.strip()]
    if unknown := [s for s in steps if s not in THEN_STEPS]:
        raise RobodataError(f'--then: unknown step(s) {", ".join(unknown)} (any of {", ".join(THEN_STEPS)})')
    return steps


def run(args: argparse.Namespace) -> int:
    options = options_from_args(args)
    steps = _then_steps(args.then)
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

    run = import_recordings(args.sources, args.dataset, options, profile=args.profile, on_result=on_result,
                            progress=lambda it: progress(it, 'importing', quiet=args.json))
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
    after = _then(dataset, checked, run.episodes, steps, quiet=args.json)
    if args.json:
        print_json({'dataset': str(dataset.root), 'created': run.created,
                    'imported': [r.to_json() for r in run.imported], 'failed': run.failed, 'skipped': run.skipped,
                    'then': after})
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


def _then(dataset: Dataset, profile: Profile | None, episode_ids: list[str], steps: list[str], *,
          quiet: bool) -> dict[str, Any]:
    """Segment and/or score the new episodes (the offline steps a watcher runs on each arrival)."""
    out: dict[str, Any] = {}
    if not steps or not episode_ids:
        return out
    if profile is None:
        raise RobodataError(f'--then {",".join(steps)}: {dataset.root} has no robot profile to read the episodes '
                            'with; import with --profile')
    if 'segment' in steps:
        from ros_robodata.events.offline import segment_episode

        if profile.topics.gripper is None and profile.topics.wrench is None:
            out['segment'] = 'skipped: the profile has no gripper or wrench topic'
        else:
            events: dict[str, Any] = {}
            for episode_id in episode_ids:
                try:
                    events[episode_id] = len(segment_episode(dataset, episode_id, profile).events)
                except RobodataError as err:
                    events[episode_id] = ' '.join(str(err).split())
            out['segment'] = events
        if not quiet:
            stdout.print(f'segmented: {out["segment"]}', markup=False)
    if 'score' in steps:
        from ros_robodata.quality.scoring import score_episodes

        run = score_episodes(dataset, profile, episode_ids)
        out['score'] = {i: s.report.score for i, s in run.scores.items()} | {i: r for i, r in run.failed.items()}
        if not quiet:
            for line in run.skipped:
                stdout.print(f'score: {line}', markup=False)
            stdout.print('scored: ' + ', '.join(f'{i} {s.to_json()["score"]:.2f}' for i, s in run.scores.items()),
                         markup=False)
    return out


def _watch(args: argparse.Namespace, options: ImportOptions, steps: list[str]) -> int:
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
    imported: list[str] = []
    stopping = False

    def on_imported(result: Imported) -> None:
        if args.json:
            print_json_line({'event': 'imported', **result.to_json()})
        else:
            _say(result)
        imported.extend(result.episodes)
        then = _then(dataset, profile, result.episodes, steps, quiet=args.json)
        if args.json and then:
            print_json_line({'event': 'then', 'episodes': result.episodes, **then})

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
    watcher = Watcher(Path(args.watch), dataset, options, profile, settle, on_imported, on_failed, on_note,
                      incomplete_after)
    if args.json:
        print_json_line({'event': 'watching', 'folder': str(args.watch), 'dataset': str(dataset.root),
                         'created': created, 'interval_s': interval, 'settle_s': settle,
                         'incomplete_after_s': incomplete_after})
    else:
        stdout.print(f'watching {args.watch} (every {interval:g} s) -> {dataset.root}; Ctrl-C stops', markup=False)
    started = time.monotonic()
    with contextlib.suppress(KeyboardInterrupt):
        watcher.run(interval, stop=lambda: stopping)
    if args.json:
        print_json_line({'event': 'stopped', 'imported': len(imported), 'seconds': round(time.monotonic() - started)})
    else:
        stdout.print(f'stopped watching {args.watch}: {len(imported)} episode(s) imported in '
                     f'{time.monotonic() - started:.0f} s', markup=False)
    return 0
