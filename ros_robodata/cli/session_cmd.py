"""`robodata session`: recorder and segmenter for a real rig, in one process (launch/session.launch.xml)."""

from __future__ import annotations

import argparse

from ros_robodata.errors import RobodataError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        'session', help='run the recorder and the live segmenter together for a rig',
        description='Run the recorder and the segmenter nodes in one process (what launch/session.launch.xml '
                    'starts as separate processes). Drive episodes with `robodata keys`; segment events go to '
                    '/robodata/events and into each episode bag. Ctrl-C closes a running episode as interrupted.')
    p.add_argument('--profile', required=True, help='robot profile YAML')
    p.add_argument('--dataset', required=True, help='dataset folder (created if absent)')
    p.add_argument('--task', default='', help='task of new episodes, e.g. pick_place_cube')
    p.add_argument('--operator', default=None, help='operator of new episodes (default: login name)')
    p.add_argument('--mode', choices=['teleop', 'kinesthetic'], default='teleop', help='demonstration mode')
    p.add_argument('--delete-discarded', action='store_true', help='delete discarded episodes instead of keeping them')
    p.add_argument('--use-sim-time', action='store_true', help='use /clock instead of the wall clock')
    p.add_argument('--no-segmenter', action='store_true', help='record only')
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        from ros_robodata.nodes.session import run_session
    except ImportError as err:
        raise RobodataError(f'a session needs ROS 2 (rclpy and the built ros_robodata interfaces): {err}') from None
    return run_session(args.profile, args.dataset, task=args.task, operator=args.operator, mode=args.mode,
                       delete_discarded=args.delete_discarded, use_sim_time=args.use_sim_time,
                       segment=not args.no_segmenter)
