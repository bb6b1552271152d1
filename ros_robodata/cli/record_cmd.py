"""`robodata record`: the recorder node, started without `ros2 launch` (what record.launch.xml runs)."""

from __future__ import annotations

import argparse
from typing import Any

from ros_robodata.cli.ros import node_arguments, require_ros


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        'record', help='run the recorder node: one rosbag2 per episode from the robot profile',
        description='Run the recorder node (as launch/record.launch.xml does). Drive it with `robodata keys` or '
                    'its services /recorder/start_episode, stop_episode, discard_episode, set_outcome. '
                    'Ctrl-C closes a running episode as interrupted.')
    add_recording_arguments(p)
    p.set_defaults(func=run)


def add_recording_arguments(p: argparse.ArgumentParser) -> None:
    """What a recording needs; `robodata session` takes the same."""
    p.add_argument('--profile', required=True, help='robot profile YAML')
    p.add_argument('--dataset', required=True, help='dataset folder (created if absent)')
    p.add_argument('--task', default='', help='task of new episodes, e.g. pick_place_cube')
    p.add_argument('--operator', default=None, help='operator of new episodes (default: login name)')
    p.add_argument('--mode', choices=['teleop', 'kinesthetic'], default='teleop', help='demonstration mode')
    p.add_argument('--delete-discarded', action='store_true', help='delete discarded episodes instead of keeping them')
    p.add_argument('--min-episode-s', type=float, default=None, metavar='S',
                   help="shortest episode a stop accepts; a quicker stop is taken for a double press and refused "
                        "(default: the profile's recording.min_episode_s, 1 s unless set)")
    p.add_argument('--use-sim-time', action='store_true', help='stamp receive times with /clock')


def recording_parameters(args: argparse.Namespace) -> dict[str, Any]:
    """The recorder's parameters from the options record and session share."""
    return {'profile': args.profile, 'dataset': args.dataset, 'task': args.task, 'operator': args.operator,
            'mode': args.mode, 'delete_discarded': args.delete_discarded, 'use_sim_time': args.use_sim_time,
            'min_episode_s': args.min_episode_s}


def run(args: argparse.Namespace) -> int:
    return require_ros('recorder_node', 'recording').main(node_arguments(recording_parameters(args), 'robodata record'))
