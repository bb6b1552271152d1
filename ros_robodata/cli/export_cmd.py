"""`robodata export frames`: camera images and LiDAR scans of episodes, with robot state, for annotation tools."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ros_robodata import untrusted
from ros_robodata.cli import export_lerobot_cmd
from ros_robodata.cli.command_common import (
    EXIT_OK,
    EXIT_PARTIAL,
    add_analysis_arguments,
    add_ray,
    executor_from,
    filters_from,
    print_json,
    progress,
    stderr,
    stdout,
)
from ros_robodata.cli.pii_options import add_pii_arguments
from ros_robodata.cli.ros import node_arguments, require_ros
from ros_robodata.cluster import ClusterStats
from ros_robodata.dataset.targets import Target, prepare
from ros_robodata.errors import RobodataError
from ros_robodata.export.export_plan import ExportOptions, ExportPlan, plan_export
from ros_robodata.export.frames_run import ExportResult, export_work
from ros_robodata.export.label_tasks import TOOLS, write_task_files
from ros_robodata.export.manifest import FRAMES_FILE, MANIFEST_FILE
from ros_robodata.export.schedule import ScheduleSpec
from ros_robodata.labeling.taxonomy import load_taxonomy
from ros_robodata.paths import config_path
from ros_robodata.vocabulary import parse_duration

SHOWN_UNMATCHED = 20


def add_parser(sub: Any) -> None:
    p = sub.add_parser('export', help='export episodes for other tools: frames for labeling, a LeRobot training set',
                       description='Export episodes in formats other tools read.')
    kinds = p.add_subparsers(dest='export_kind', metavar='KIND', required=True)
    f = kinds.add_parser(
        'frames', help='camera images (and LiDAR scans) at set times, with the robot state, for annotation',
        description='Take frames of the reference camera on a schedule (every frame, every Nth, one per time '
                    'step, or around segmenter events), pair every other sensor by header stamp within a '
                    f'tolerance, and write images/PCDs, a per-episode {FRAMES_FILE} and DIR/{MANIFEST_FILE}. '
                    'Re-running into the same folder skips episodes already exported; an interrupted export '
                    'resumes. The episodes of several robots (a merged dataset) go into DIR/<robot>/, one export '
                    'per robot read with its own profile (a robot whose profile names no camera is left out, said).')
    add_analysis_arguments(f)
    f.add_argument('--out', required=True, help='output folder (created if absent)')
    f.add_argument('--every', help='one frame per time step, e.g. 0.5s or 500ms (default: every frame)')
    f.add_argument('--every-n', help='every Nth frame of the reference camera')
    f.add_argument('--around-events', help='only frames near these event kinds, e.g. grasp,release '
                                           '(needs events.json: run `robodata segment` first)')
    f.add_argument('--window', help='with --around-events: how far either side of an event, e.g. 1s')
    f.add_argument('--cameras', help='comma-separated camera names from the profile (default: all)')
    f.add_argument('--reference', help='camera whose frames define the export (default: the first camera)')
    f.add_argument('--lidar', action='store_true', help='include LiDAR scans as binary PCD')
    f.add_argument('--lidar-voxel', help='voxel size in metres to downsample scans, e.g. 0.02')
    f.add_argument('--lidar-crop', help='keep points in xmin,ymin,zmin,xmax,ymax,zmax (sensor frame, metres); '
                                        'write --lidar-crop=-1,-1,0,1,1,2 when it starts with a minus')
    f.add_argument('--format', default='jpg', help='image format: jpg (default) or png; 16-bit mono is always png')
    f.add_argument('--jpeg-quality', type=int, default=ExportOptions.jpeg_quality, metavar='Q',
                   help=f'JPEG quality 1..100 (default {ExportOptions.jpeg_quality}); changing it redoes the episodes')
    f.add_argument('--tolerance', default='50ms', help='largest stamp offset for a pairing (default 50ms)')
    f.add_argument('--workers', type=int, default=1, help='episodes exported in parallel (default 1)')
    add_ray(f)
    f.add_argument('--tasks', default=','.join(TOOLS),
                   help=f'task files for labeling tools: any of {",".join(TOOLS)}, or none (default: all)')
    f.add_argument('--taxonomy', help='class taxonomy YAML for the task files (default: config/taxonomy.yaml)')
    f.add_argument('--no-video', action='store_true', help='no per-episode MP4 for the timeline tasks')
    f.add_argument('--force', action='store_true',
                   help='export into a folder that holds files other than an earlier export (never into a dataset '
                        'or a bag)')
    add_pii_arguments(f)
    f.set_defaults(func=run)
    live = kinds.add_parser(
        'live', help='run the frame_exporter node: frames written during each episode of a running session',
        description='Run the frame_exporter node (what launch/frames.launch.xml starts): at each episode the '
                    'recorder starts, frames are exported into OUT as `robodata export frames` would, and the '
                    'manifest is refreshed at its stop; a discarded episode is deleted.')
    live.add_argument('--profile', required=True, help='robot profile YAML')
    live.add_argument('--out', required=True, help='output folder (created if absent)')
    live.add_argument('--every', default='0.5s', help='one frame per time step (default 0.5s)')
    live.add_argument('--every-n', type=int, default=0, help='every Nth reference frame instead')
    live.add_argument('--cameras', default='', help='comma-separated camera names (default: all)')
    live.add_argument('--lidar', action='store_true', help='include LiDAR scans as binary PCD')
    live.add_argument('--format', default='jpg', help='jpg (default) or png')
    live.add_argument('--jpeg-quality', type=int, default=ExportOptions.jpeg_quality, metavar='Q',
                      help=f'JPEG quality 1..100 (default {ExportOptions.jpeg_quality})')
    live.add_argument('--tolerance', default='50ms', help='largest stamp offset for a pairing (default 50ms)')
    live.set_defaults(func=run_live)
    export_lerobot_cmd.add_parser(kinds)


def run_live(args: argparse.Namespace) -> int:
    exporter = require_ros('frame_exporter_node', 'live export')
    return exporter.main(node_arguments({
        'profile': args.profile, 'out': args.out, 'every': args.every if not args.every_n else '',
        'every_n': args.every_n, 'cameras': args.cameras, 'lidar': args.lidar, 'format': args.format,
        'jpeg_quality': _jpeg_quality(args.jpeg_quality), 'tolerance': args.tolerance}, 'robodata export live'))


def options_from_args(args: argparse.Namespace) -> ExportOptions:
    """The CLI's strings as checked options; RobodataError (one line, exit 1) for any bad value."""
    every_n = None
    if args.every_n is not None:
        try:
            every_n = int(args.every_n)
        except ValueError:
            raise RobodataError(f'--every-n: {args.every_n!r} is not a whole number') from None
    schedule = ScheduleSpec(
        every_ns=None if args.every is None else parse_duration(args.every, '--every'),
        every_n=every_n,
        around_events=tuple(_names(args.around_events)),
        window_ns=None if args.window is None else parse_duration(args.window, '--window'))
    return ExportOptions(
        schedule=schedule, cameras=tuple(_names(args.cameras)), reference=args.reference, lidar=args.lidar,
        lidar_voxel=None if args.lidar_voxel is None else _floats(args.lidar_voxel, '--lidar-voxel', 1)[0],
        lidar_crop=None if args.lidar_crop is None else _floats(args.lidar_crop, '--lidar-crop', 6),  # type: ignore[arg-type]
        image_format=str(args.format).lower().lstrip('.').replace('jpeg', 'jpg'),
        tolerance_ns=parse_duration(args.tolerance, '--tolerance', allow_zero=True),
        jpeg_quality=_jpeg_quality(getattr(args, 'jpeg_quality', ExportOptions.jpeg_quality)),
        allow_pii=args.allow_pii, blur_faces=args.blur_faces)


def run(args: argparse.Namespace) -> int:
    if args.workers < 1:
        raise RobodataError('--workers must be at least 1')
    options = options_from_args(args)
    tools = () if args.tasks.strip() == 'none' else tuple(_names(args.tasks))
    if unknown := [t for t in tools if t not in TOOLS]:
        raise RobodataError(f'--tasks: unknown tool(s) {", ".join(unknown)} (one of {", ".join(TOOLS)}, or none)')
    taxonomy = load_taxonomy(args.taxonomy or config_path('taxonomy.yaml')) if tools else None
    filters = filters_from(args)
    work = prepare(args.target, args.profile, filters)
    target = work.target
    if options.schedule.around_events and target.dataset is None:
        raise RobodataError(f'{target.path}: --around-events needs the events of episodes of a dataset: run '
                            f'`robodata import {target.path} --dataset D` and `robodata segment D` first')
    if not work.mixed:  # every option checked before any file is written (several robots: by export_work)
        plan_export(work.profile, options)
    say = (lambda text: None) if args.json else (lambda text: stdout.print(text, markup=False))
    for group in work.robots:
        if group.profile.topics.joint_states is None and group.profile.topics.cameras:
            say(f'{group.name + ": " if work.mixed else ""}no joint_states in the profile: frames carry no joint state')
    workers = min(args.workers, os.cpu_count() or 1) if args.ray is None else args.workers
    stats = ClusterStats()
    result = export_work(work, args.out, options, filters=filters, workers=workers, force=args.force,
                         progress=lambda jobs: progress(jobs, 'exporting', quiet=args.json),
                         executor=executor_from(args, workers), stats=stats)
    profiles = {g.name: g.profile for g in work.robots}
    parts = list(result.robots.items()) if work.mixed else [('', result)]  # several robots: one export each
    for robot, why in result.left_out.items():
        say(f'{robot}: {why}')
    written: dict[str, list[Path]] = {}
    kept: list[str] = []
    pii: list[str] = []
    for robot, part in parts:
        profile = profiles[robot] if robot else work.profile
        plan = plan_export(profile, options)
        mark = f'{robot}: ' if robot else ''
        _say_part(part, plan, options, target, say, mark)
        pii.extend(c for c in plan.pii if c not in pii)
        if taxonomy is not None and part.manifest['frames']:
            made = write_task_files(part.manifest, Path(part.out_dir), taxonomy, tools=tools,
                                    video=not args.no_video, notes=kept)
            for tool, paths in made.items():
                written.setdefault(tool, []).extend(paths)
            say(f'{mark}task files: ' + '; '.join(f'{tool} {len(paths)} file(s)' for tool, paths in made.items()))
    for line in kept:
        stderr.print(f'robodata export: {line}', markup=False)
    if args.json:
        blurred = _faces_blurred_all(parts) if options.blur_faces else None
        print_json({'out': str(result.out_dir),
                    'manifest': None if work.mixed else str(Path(result.out_dir) / MANIFEST_FILE),
                    'exported': result.exported, 'already_current': result.skipped, 'failed': result.failed,
                    'frames': len(result.manifest['frames']), 'files': result.files,
                    'unmatched_frames': len(result.unmatched_frames),
                    'missing_sensors': result.missing, 'notes': result.notes,
                    'task_files': {tool: [str(p) for p in paths] for tool, paths in written.items()},
                    'kept': kept, 'pii_cameras': pii, 'faces_blurred': blurred,
                    **({'robots': {robot: {'out': str(part.out_dir), 'manifest': str(part.out_dir / MANIFEST_FILE),
                                           'exported': part.exported, 'frames': len(part.manifest['frames'])}
                                   for robot, part in parts}, 'left_out': result.left_out} if work.mixed else {}),
                    **({'cluster': stats.to_json()} if args.ray else {})})
    for episode_id, reason in result.failed.items():
        stderr.print(f'robodata export: {episode_id}: {reason}', markup=False)
    return EXIT_PARTIAL if result.failed else EXIT_OK


def _say_part(result: ExportResult, plan: ExportPlan, options: ExportOptions, target: Target,
              say: Callable[[str], None], mark: str) -> None:
    """What one export (one robot's, `mark` naming it, in a run of several) did: its notes on stderr, missing
    sensors, unmatched frames, the counts, faces blurred and pii cameras."""
    for episode_id, notes in result.notes.items():  # a damaged bag's frames are missing: said, as score says it
        for note in notes:
            stderr.print(f'robodata export: {episode_id}: note: {note}', markup=False)
    for episode_id, sensors in result.missing.items():
        topics = ', '.join(s.topic for s in (plan.reference, *plan.sensors) if s.name in sensors)
        say(f'{episode_id}: no {topics} in its bag: its frames have no {", ".join(sensors)}')
    unmatched = result.unmatched_frames
    for frame in unmatched[:SHOWN_UNMATCHED]:
        partners = ', '.join(f'{u["sensor"]} ({_offset(u["nearest_offset_ms"])})' for u in frame['unmatched'])
        say(f'{frame["frame_id"]} t={frame["t_s"]:.3f}s: no partner within tolerance: {partners}')
    if len(unmatched) > SHOWN_UNMATCHED:
        say(f'... and {len(unmatched) - SHOWN_UNMATCHED} more frame(s) with unmatched sensors '
            f'(see "unmatched" in {MANIFEST_FILE})')
    manifest = result.manifest
    skipped = f', {len(result.skipped)} already current' if result.skipped else ''
    say(f'{mark}{len(manifest["episodes"])} episode(s){skipped}, {len(manifest["frames"])} frame(s), '
        f'{result.files} file(s), {len(unmatched)} frame(s) with unmatched sensors -> {result.out_dir}')
    blurred = _faces_blurred(Path(result.out_dir), result.exported) if options.blur_faces else None
    if blurred is not None:
        say(f'{mark}faces blurred: {blurred} in the images of this run')
    if plan.pii:
        audit = 'recorded in ' + str(target.dataset.audit_path) if target.dataset is not None else \
            'not recorded in an audit: the target is not a dataset'
        say(f'{mark}pii camera(s) {", ".join(plan.pii)} exported '
            f'{"with faces blurred" if options.blur_faces else "as recorded (--allow-pii)"}: {audit}')


def _faces_blurred_all(parts: list[tuple[str, ExportResult]]) -> int:
    return sum(_faces_blurred(Path(part.out_dir), part.exported) for _, part in parts)


def _faces_blurred(out: Path, episodes: list[str]) -> int:
    """The faces blurred in these episodes' images, as their frames.json say."""
    total = 0
    for episode_id in episodes:
        try:
            doc = untrusted.read_json(out / 'episodes' / episode_id / FRAMES_FILE)
        except RobodataError:
            continue
        count = doc.get('faces_blurred') if isinstance(doc, dict) else None
        total += count if isinstance(count, int) else 0
    return total


def _jpeg_quality(value: int) -> int:
    if not 1 <= value <= 100:
        raise RobodataError(f'--jpeg-quality: {value} is not between 1 and 100')
    return value


def _names(text: str | None) -> list[str]:
    return [] if not text else [n.strip() for n in text.split(',') if n.strip()]


def _floats(text: str, option: str, count: int) -> tuple[float, ...]:
    try:
        values = tuple(float(v) for v in text.split(','))
    except ValueError:
        raise RobodataError(f'{option}: {text!r} is not {count} comma-separated number(s)') from None
    if len(values) != count:
        raise RobodataError(f'{option}: expected {count} comma-separated number(s), got {len(values)}')
    return values


def _offset(value: float | None) -> str:
    return 'no sample' if value is None else f'nearest {value:+.1f} ms'
