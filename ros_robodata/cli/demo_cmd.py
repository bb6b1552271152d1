"""`robodata demo`: the simulated cell and the recorder on real DDS, a scripted operator, a summary.

The command only parses and checks its arguments; the ROS side is ros_robodata/nodes/demo_nodes.py.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ros_robodata.cli.ros import require_ros
from ros_robodata.errors import RobodataError
from ros_robodata.sim.faults import FAULT_SYNTAX, KINDS, Fault, parse_fault
from ros_robodata.sim.sim_samples import DEFAULT_RATES_HZ

STREAMS = tuple(DEFAULT_RATES_HZ)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        'demo', help='record episodes of the simulated cell with a scripted operator (no robot needed)',
        description='Run the simulated teleop cell (MuJoCo, in a process of its own, as drivers are) and the '
                    'recorder, the live segmenter and the quality monitor (as `robodata session`) on real DDS, record '
                    'EPISODES episodes acted out by a scripted operator (episode i uses seed SEED + i; every 6 '
                    'hold a failure and a recovery), write each episode\'s physics ground truth as '
                    'ground_truth.json next to it, and summarize. Ctrl-C closes a running episode as interrupted.')
    p.add_argument('--out', default='robodata_demo', help='output folder; the dataset is OUT/dataset')
    p.add_argument('--episodes', type=int, default=6, help='episodes to record (default 6)')
    p.add_argument('--seed', type=int, default=0, help='seed of the first episode (default 0)')
    p.add_argument('--mode', choices=['teleop', 'kinesthetic'], default='teleop', help='demonstration mode')
    p.add_argument('--image-size', default='320x240', metavar='WxH', help='camera image size (default 320x240)')
    p.add_argument('--fault', action='append', default=[], metavar=FAULT_SYNTAX,
                   help='inject a fault into every episode, e.g. camera/wrist:blur:2:3 or wrench:spike:4:4.02 '
                        f'(kinds: {", ".join(KINDS)}; streams: {", ".join(STREAMS)}); repeatable')
    p.set_defaults(func=run)


MAX_IMAGE = (1280, 960)  # the scene's offscreen buffer (sim/scene.py: offwidth, offheight)


def image_size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split('x'))
    except ValueError:
        raise RobodataError(f'--image-size {text!r}: expected WIDTHxHEIGHT, e.g. 320x240') from None
    if w < 16 or h < 16:
        raise RobodataError(f'--image-size {text!r}: at least 16x16')
    if w > MAX_IMAGE[0] or h > MAX_IMAGE[1]:  # the simulated cameras render offscreen into a buffer of this size
        raise RobodataError(f'--image-size {text!r}: at most {MAX_IMAGE[0]}x{MAX_IMAGE[1]} (the simulated cameras\' '
                            'render buffer)')
    return w, h


def fault(text: str) -> Fault:
    """--fault TEXT, for argparse: one line saying what is wrong."""
    try:
        return parse_fault(text)
    except ValueError as err:
        raise RobodataError(f'--fault {err}') from None


def run(args: argparse.Namespace) -> int:
    if args.episodes < 1:
        raise RobodataError('--episodes must be at least 1')
    args.faults = [fault(text) for text in args.fault]
    size = image_size(args.image_size)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise RobodataError(f'--out {out}: a file is there; the demo writes a folder (OUT/dataset): give another path')
    return require_ros('demo_nodes', 'the demo').run_demo(args, size)
