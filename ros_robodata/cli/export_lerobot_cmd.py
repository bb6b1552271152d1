"""`robodata export lerobot`: a curated training set in LeRobot's dataset format v3.0."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ros_robodata.cli.command_common import EXIT_OK, EXIT_PARTIAL, print_json, progress, stderr, stdout
from ros_robodata.cli.pii_options import add_pii_arguments
from ros_robodata.dataset import Dataset
from ros_robodata.dataset.targets import Filters, select_rows
from ros_robodata.dataset.tombstones import read_tombstones
from ros_robodata.errors import ExportError, RobodataError
from ros_robodata.export.lerobot import LeRobotOptions, Policy, export_lerobot, parse_ratio, parse_split
from ros_robodata.export.lerobot.lerobot_check import GATES, DatasetCheck, check_lerobot_dataset, lerobot_python
from ros_robodata.export.lerobot.lerobot_pool import MIXTURE_FILE, export_pool, parse_weights
from ros_robodata.export.lerobot.lerobot_video import CODECS
from ros_robodata.governance.release import read_release, verify_release
from ros_robodata.vocabulary import OUTCOMES


def add_parser(kinds: Any) -> None:
    p = kinds.add_parser(
        'lerobot', help='a curated training set in LeRobot dataset format v3.0',
        description='Write the episodes of DATASET that pass the curation policy as a LeRobot v3.0 dataset in OUT '
                    '(data and episode parquet files, one MP4 per camera holding several episodes, stats.json as '
                    'LeRobot computes it, a dataset card README.md). State, action and camera frames are put on '
                    'the fps grid by their header stamps. OUT must be new or empty; it appears only when whole.')
    p.add_argument('dataset', metavar='DATASET', help='a ros_robodata dataset')
    p.add_argument('--out', required=True, help='the LeRobot dataset folder to write (new or empty)')
    p.add_argument('--task', help='only episodes of this task')
    p.add_argument('--where', metavar='EXPR', help='only episodes this condition on the catalog picks, e.g. '
                                                    '"score >= 0.8 and operator = kim" (the grammar of robodata list)')
    p.add_argument('--release', metavar='NAME',
                   help='exactly the episodes of this release (robodata release create), checked against its manifest '
                        'first; its manifest sha256 goes into meta/info.json and the dataset card, so a model '
                        'trained on the export names the exact data. Curation options that would drop episodes '
                        '(--task, --min-score, --outcomes, --recovery-ratio) are refused with it')
    policy = p.add_argument_group('curation policy')
    policy.add_argument('--min-score', type=float, help='only episodes whose quality score is at least this (0..1; '
                                                        'needs robodata score)')
    policy.add_argument('--outcomes',
                        help=f'outcomes to export, comma-separated from {",".join(OUTCOMES)} (default '
                             'success,recovery)')
    policy.add_argument('--recovery-ratio', metavar='LOW:HIGH', help='wanted share of recoveries, e.g. 0.1:0.3: '
                                                                     'too few warns how many to record, too many are '
                                                                     'capped')
    policy.add_argument('--trim-idle', action='store_true', help='cut the idle start and end the quality checks '
                                                                 'found (needs robodata score)')
    policy.add_argument('--exclude-flagged', action='store_true',
                        help='cut the windows the quality checks flagged; an episode cut in the middle becomes '
                             'several LeRobot episodes')
    policy.add_argument('--split', default='train:1', help='splits by episode, deterministic, e.g. train:0.9,val:0.1 '
                                                           '(default train:1)')
    how = p.add_argument_group('format')
    how.add_argument('--fps', type=int, help='frame rate of the grid (default: the first camera\'s rate_hz, else 30)')
    how.add_argument('--cameras', help='comma-separated profile camera names (default: all)')
    how.add_argument('--action-topic', help='the topic the action comes from (default: the profile\'s actions topic; '
                                            '"none": the next state)')
    how.add_argument('--codec', choices=sorted(CODECS), default='h264', help='video codec (default h264)')
    how.add_argument('--crf', type=int, default=23, help='video quality, lower is better (default 23)')
    how.add_argument('--gop', type=int, default=2, help='frames between key frames (default 2, as LeRobot)')
    how.add_argument('--data-file-mb', type=float, default=100.0,
                     help='a data parquet file is closed past this size, between episodes (default 100, as LeRobot)')
    how.add_argument('--video-file-mb', type=float, default=500.0,
                     help='a camera\'s MP4 is closed past this size, between episodes (default 500, as LeRobot)')
    pool = p.add_argument_group('a training mix across robots (a dataset of several: robodata merge)')
    pool.add_argument('--pool', action='store_true',
                      help='one LeRobot dataset per robot (embodiment) in OUT/<robot>/, each with its own state and '
                           'action, the curation policy applied to each robot\'s episodes alone, and OUT/mixture.json: '
                           'per source (robot) its sampling weight, embodiment tag, counts and the normalisation '
                           'statistics of its state and action')
    pool.add_argument('--weights', metavar='W',
                      help='sampling weights in mixture.json: "episodes" (by episode count, the default), "hours" (by '
                           'duration), or per source, e.g. sim_cell_arm=0.7,reachy2=0.3 (normalised to add up to 1)')
    pool.add_argument('--unify', choices=['pad'],
                      help='pad: one dataset instead, state and action padded with zeros to the widest robot, '
                           'observation.state_mask and action_mask (1.0: a real dimension) and an embodiment column; '
                           'cameras are left out; implies --pool')
    p.add_argument('--check', action='store_true',
                   help='then check each dataset written as a trainer needs it: fps, timestamps on the fps grid, no '
                        'NaN in state or action, statistics for every feature, and LeRobot\'s own LeRobotDataset loads '
                        'it and draws a batch (in $ROBODATA_LEROBOT_PYTHON, else .venv-lerobot: '
                        'tools/lerobot_venv.py makes it); a failed gate exits 1, the export stays')
    add_pii_arguments(p, 'video frame')
    p.add_argument('--json', action='store_true', help='print machine-readable JSON')
    p.set_defaults(func=run)


def options_from_args(args: argparse.Namespace, release: tuple[str, str] | None = None) -> LeRobotOptions:
    if release is not None:
        dropping = [flag for flag, value in (('--task', args.task), ('--where', args.where),
                                             ('--min-score', args.min_score),
                                             ('--outcomes', args.outcomes), ('--recovery-ratio', args.recovery_ratio))
                    if value is not None]
        if dropping:
            raise RobodataError(f'--release {release[0]}: exports exactly the release\'s episodes; '
                                f'{", ".join(dropping)} would leave some out (make a release of the episodes wanted '
                                'instead)')
    text = args.outcomes if args.outcomes is not None else 'success,recovery'
    outcomes = OUTCOMES if release is not None else tuple(o.strip() for o in text.split(',') if o.strip())
    policy = Policy(min_score=args.min_score, outcomes=outcomes,
                    recovery_ratio=parse_ratio(args.recovery_ratio) if args.recovery_ratio else None,
                    trim_idle=args.trim_idle, exclude_flagged=args.exclude_flagged, split=parse_split(args.split))
    action = args.action_topic
    cameras = tuple(c.strip() for c in args.cameras.split(',') if c.strip()) if args.cameras else None
    options = LeRobotOptions(policy=policy, fps=args.fps, cameras=cameras,
                             action_topic=None if action == 'none' else (action or ''), codec=args.codec,
                             crf=args.crf, gop=args.gop, data_file_mb=args.data_file_mb,
                             video_file_mb=args.video_file_mb, allow_pii=args.allow_pii, blur_faces=args.blur_faces,
                             release=release)
    options.check()
    return options


def _release(dataset: Dataset, name: str) -> tuple[tuple[str, str], list[str]]:
    """(name, manifest sha256) and the episodes of a release whose files are all as it froze them."""
    check = verify_release(dataset, name, read_tombstones(dataset.root))
    if not check.ok:
        raise RobodataError(f'--release {name}: the dataset no longer holds exactly this release ({len(check.changes)} '
                            f'change(s), first: {check.changes[0]}): `robodata release verify {dataset.root} {name}` '
                            'lists them; make a new release')
    release, _ = read_release(dataset, name)
    return (name, release.sha256), release.episodes


def run(args: argparse.Namespace) -> int:
    dataset = Dataset.open(args.dataset)
    release, ids = _release(dataset, args.release) if args.release else (None, None)
    options = options_from_args(args, release)
    if not dataset.has_profile:
        raise RobodataError(f'{dataset.root}: has no robot profile to read its episodes with')
    if args.task or args.where:
        ids = [row.id for row in select_rows(dataset, Filters(task=args.task, where=args.where))]
    if args.pool or args.unify:
        return _run_pool(args, dataset, options, ids)
    if args.weights:
        raise RobodataError('--weights: weighs the sources of a pooled export: add --pool')
    if args.check:
        lerobot_python()  # before the work: a check that cannot run is said first
    result = export_lerobot(dataset, args.out, options, episode_ids=ids,
                            progress=lambda it: progress(it, 'exporting', quiet=args.json))
    checks = _checks([result.out_dir], options.fps, quiet=args.json) if args.check else []
    if args.json:
        print_json({**result.to_json(), **({'check': [c.to_json() for c in checks]} if args.check else {})})
    else:
        for warning in result.selection.warnings + result.notes:
            stdout.print(f'warning: {warning}', markup=False)
        left = len(result.selection.left_out)
        splits: dict[str, int] = {}
        for split in result.selection.split_of.values():
            splits[split] = splits.get(split, 0) + 1
        stdout.print(f'{result.episodes} LeRobot episode(s) from {len(result.selection.kept) - len(result.failed)} '
                     f'source episode(s), {result.frames} frame(s) at {_fps(result)} fps -> {result.out_dir} '
                     f'({", ".join(f"{k} {v}" for k, v in splits.items())}; {left} left out: see README.md)',
                     markup=False)
        if result.faces_blurred is not None:
            stdout.print(f'faces blurred: {result.faces_blurred}', markup=False)
    for episode_id, reason in result.failed.items():
        stderr.print(f'robodata export: {episode_id}: {reason}', markup=False)
    _check_verdict(checks)
    return EXIT_PARTIAL if result.failed else EXIT_OK


def _checks(roots: list[Path], fps: int | None, *, quiet: bool) -> list[DatasetCheck]:
    """--check on each dataset written, said per dataset (unless --json)."""
    out = []
    for root in roots:
        check = check_lerobot_dataset(root, fps=fps)
        out.append(check)
        if quiet:
            continue
        if check.ok:
            shapes = ', '.join(f'{k} {v}' for k, v in check.batch.get('shapes', {}).items()
                               if k.startswith(('observation', 'action')))
            stdout.print(f'check {root}: {", ".join(GATES)}: ok ({shapes})', markup=False)
        for gate, problem in check.problems.items():
            if problem:
                stdout.print(f'check {root}: {gate}: FAILED: {problem}', markup=False)
    return out


def _check_verdict(checks: list[DatasetCheck]) -> None:
    failed = [c for c in checks if not c.ok]
    if failed:
        first = next(f'{g}: {p}' for g, p in failed[0].problems.items() if p)
        raise ExportError(f'{failed[0].root}: the export is written but fails --check ({first}'
                          + (f'; {len(failed) - 1} more dataset(s) fail' if len(failed) > 1 else '') + ')')


def _run_pool(args: argparse.Namespace, dataset: Dataset, options: LeRobotOptions, ids: list[str] | None) -> int:
    weights = parse_weights(args.weights)
    if args.check:
        lerobot_python()  # before the work: a check that cannot run is said first
    result = export_pool(dataset, args.out, options, episode_ids=ids, weights=weights,
                         unify=args.unify, progress=lambda it: progress(it, 'exporting', quiet=args.json))
    roots = [result.out_dir] if args.unify else [result.out_dir / s['path'] for s in result.mixture['sources']]
    checks = _checks(roots, options.fps, quiet=args.json) if args.check else []
    if args.json:
        print_json({**result.to_json(), **({'check': [c.to_json() for c in checks]} if args.check else {})})
    else:
        for warning in [w for part in result.parts.values() for w in part.selection.warnings + part.notes] \
                + result.notes:
            stdout.print(f'warning: {warning}', markup=False)
        for name, why in result.left_out.items():
            stdout.print(f'{name}: left out: {why}', markup=False)
        for source in result.mixture['sources']:
            stdout.print(f'{source["name"]}: {source["lerobot_episodes"]} LeRobot episode(s), {source["frames"]} '
                         f'frame(s) at {source["fps"]} fps, state {len(source["state_names"])} / action '
                         f'{len(source["action_names"])}, weight {source["weight"]:.3f}', markup=False)
        how = 'one padded dataset' if args.unify else f'{len(result.parts)} dataset(s)'
        stdout.print(f'{how} and {MIXTURE_FILE} -> {result.out_dir}', markup=False)
    for episode_id, reason in result.failed.items():
        stderr.print(f'robodata export: {episode_id}: {reason}', markup=False)
    _check_verdict(checks)
    return EXIT_PARTIAL if result.failed else EXIT_OK


def _fps(result: Any) -> Any:
    return json.loads((result.out_dir / 'meta' / 'info.json').read_text())['fps']
