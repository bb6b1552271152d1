"""`robodata report`: the quality of a scored dataset as one HTML page that opens offline."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ros_robodata.cli.common import human_bytes, need, progress, resolve, stderr, stdout
from ros_robodata.errors import RobodataError
from ros_robodata.profile import load_profile
from ros_robodata.quality.report import REPORT_FILE, write_report
from ros_robodata.quality.score import QUALITY_FILE, SUMMARY_FILE
from ros_robodata.segment.offline import dataset_profile


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        'report', help='write a self-contained HTML quality report of a scored dataset',
        description=f'Read what `robodata score` wrote ({SUMMARY_FILE}, each episode\'s {QUALITY_FILE} and events) '
                    'and write one HTML page: the dataset summary, then per episode its reasons, a timeline of '
                    'the arm, gripper and wrist force with events and findings marked, and camera frames at the '
                    'flagged moments. Figures and frames are embedded: the file opens offline.')
    p.add_argument('dataset', help='a scored dataset')
    p.add_argument('--out', help=f'where to write the page (default: DATASET/{REPORT_FILE})')
    p.add_argument('--episodes', type=int, metavar='N',
                   help='detailed sections (timeline, frames) for the N worst-scoring episodes only (default all)')
    p.add_argument('--profile', help="robot profile YAML (default: the dataset's own)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.episodes is not None and args.episodes < 0:
        raise RobodataError('--episodes must be 0 or more')
    target = need(resolve(args.dataset), 'dataset')
    assert target.dataset is not None
    dataset = target.dataset
    profile = load_profile(args.profile) if args.profile else dataset_profile(dataset)
    result = write_report(dataset, profile, Path(args.out) if args.out else None, detail=args.episodes,
                          progress=lambda items: progress(items, 'reporting'))
    for episode_id, reason in result.problems.items():
        stderr.print(f'robodata report: {episode_id}: {reason}', markup=False, soft_wrap=True)
    stdout.print(str(result.path), markup=False)
    stderr.print(f'{result.episodes} episode(s), {result.detailed} in detail, {human_bytes(result.size_bytes)}',
                 markup=False)
    return 1 if result.problems else 0
