"""`robodata record`: the recorder node, started without `ros2 launch` (what record.launch.xml runs)."""

from __future__ import annotations

import argparse
import json

from ros_robodata.errors import RobodataError


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
    p.add_argument('--use-sim-time', action='store_true', help='stamp receive times with /clock')


def ros_arguments(args: argparse.Namespace) -> list[str]:
    # --ros-args values are YAML: quote strings so a task named 007 stays '007'.
    params = {'profile': json.dumps(args.profile), 'dataset': json.dumps(args.dataset), 'task': json.dumps(args.task),
              'mode': json.dumps(args.mode), 'delete_discarded': 'true' if args.delete_discarded else 'false',
              'use_sim_time': 'true' if args.use_sim_time else 'false'}
    if args.operator is not None:
        params['operator'] = json.dumps(args.operator)
    out = ['robodata', '--ros-args']
    for name, value in params.items():
        out += ['-p', f'{name}:={value}']
    return out


def run(args: argparse.Namespace) -> int:
    try:
        from ros_robodata.nodes.recorder import main
    except ImportError as err:
        raise RobodataError(f'recording needs ROS 2 (rclpy and the built ros_robodata interfaces): {err}') from None
    return main(ros_arguments(args))
