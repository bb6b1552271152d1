"""`robodata report`: the quality of a scored dataset as one HTML page that opens offline."""

from __future__ import annotations

import argparse
from typing import Any

from ros_robodata.capture.protocol import SHIPPED_PROTOCOLS, load_protocol
from ros_robodata.cli.command_common import (
    EXIT_OK,
    EXIT_PARTIAL,
    add_analysis_arguments,
    filters_from,
    human_bytes,
    print_json,
    progress,
    stderr,
    stdout,
)
from ros_robodata.errors import RobodataError
from ros_robodata.quality.scoring import QUALITY_FILE, SUMMARY_FILE
from ros_robodata.report.build import REPORT_FILE, report_target, report_work

DETAILED_BY_DEFAULT = 100  # episodes with figures and frames (about 80 KiB each on a page)


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        'report', help='write a self-contained HTML quality report of a scored dataset (or of bags, or of a LeRobot '
                       'dataset where it lies)',
        description=f'Read what `robodata score` wrote ({SUMMARY_FILE}, each episode\'s {QUALITY_FILE} and events; '
                    'nothing is scored again) and write one HTML page: the dataset summary (outcomes, score '
                    'distribution, findings by check), the review queue, every episode as one row of a table the '
                    'page draws a page of rows at a time, and for the worst (--episodes) their reasons, a timeline '
                    'of the arm, gripper and wrist force with events and findings marked, and camera frames at the '
                    'flagged moments. Figures and frames are embedded: the file opens offline. In a dataset of '
                    'several robots (`robodata merge`) each episode is drawn with its own robot profile. Bags on '
                    'their own (a bag or a folder of bags, with --profile) are scored in memory first; nothing is '
                    'written beside them. A LeRobot dataset (v2.1/v3.0 folder) is read and scored in place as '
                    '`robodata score` reads it (episodes named by their LeRobot index, findings also in frames); the '
                    'page says what it lacks without a dataset\'s catalog (review queue, operator labels) and nothing '
                    'is written into the folder.')
    add_analysis_arguments(p, 'a scored dataset, an episode folder (its dataset is reported), a bag, a folder of '
                              'bags, or a LeRobot dataset folder (read in place)')
    p.add_argument('--out', help=f'the .html file to write (default: DATASET/{REPORT_FILE}; for bags or a LeRobot '
                                 f'folder, ./<name>_{REPORT_FILE} in the current folder, never inside the LeRobot '
                                 'folder)')
    p.add_argument('--episodes', default=str(DETAILED_BY_DEFAULT), metavar='N|all',
                   help='detailed sections (timeline, frames; ~80 KiB each) for the N worst-scoring episodes only, '
                        f'every episode still a row of the table (~75 bytes each) (default {DETAILED_BY_DEFAULT}: the '
                        'page of a 10,000-episode dataset is ~8 MiB; "all" for every one)')
    p.add_argument('--workers', type=int, default=1,
                   help='processes that draw the detailed episodes (and score bags) in parallel (default 1)')
    p.add_argument('--force', action='store_true',
                   help='replace --out even when it is a file robodata did not write (never a recording or a '
                        "dataset's own file)")
    p.add_argument('--protocol', metavar='P',
                   help='add the coverage of a capture protocol (a file, or a shipped one by name: '
                        f'{", ".join(SHIPPED_PROTOCOLS)}): a heatmap of its combinations against the participants\' '
                        'demographic groups, as `robodata coverage` counts them (datasets only)')
    p.set_defaults(func=run)


def _detail(text: str) -> int | None:
    """--episodes: a count of 0 or more, or 'all' (None)."""
    if text.strip().lower() == 'all':
        return None
    try:
        count = int(text)
    except ValueError:
        count = -1
    if count < 0:
        raise RobodataError(f'--episodes must be a count of 0 or more, or all; got {text!r}')
    return count


def run(args: argparse.Namespace) -> int:
    detail = _detail(args.episodes)
    filters = filters_from(args)
    protocol = load_protocol(args.protocol) if args.protocol else None  # a bad protocol: one line, before any work
    result = report_work(report_target(args.target, args.profile, filters), args.out, filters=filters,
                         detail=detail, workers=max(1, args.workers),
                         progress=lambda it: progress(it, 'reporting', quiet=args.json), force=args.force,
                         protocol=protocol)
    for episode_id, reason in result.problems.items():
        stderr.print(f'robodata report: {episode_id}: {reason}', markup=False)
    if args.json:
        print_json({'path': str(result.path), 'episodes': result.episodes, 'detailed': result.detailed,
                    'size_bytes': result.size_bytes, 'problems': result.problems})
    else:
        stdout.print(str(result.path), markup=False)
        stderr.print(f'{result.episodes} episode(s), {result.detailed} in detail, {human_bytes(result.size_bytes)}',
                     markup=False)
    return EXIT_PARTIAL if result.problems else EXIT_OK
