"""`robodata keys`: the operator's keyboard for a running recorder.

Needs ROS 2 (rclpy and the built ros_robodata interfaces), so the node is imported only when the
command runs: `robodata --help` and the offline commands keep working on machines without ROS.
"""

from __future__ import annotations

import argparse

from ros_robodata.cli.ros import node_arguments, require_ros


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        'keys', help="the operator's keyboard: start/stop episodes and label their outcome",
        description='Drive a running recorder from any terminal (works over SSH, no display): space starts or '
                    'stops an episode, s success, f failure, r recovery, d discard, q quit. Shows the current '
                    'episode and its duration, the last outcome, and live warnings from the recorder and the '
                    'quality monitor. With a pipe on stdin, keys are read as they come and end of input quits.')
    p.add_argument('--recorder', default='/recorder', metavar='NAME',
                   help="the recorder node's name; its services are NAME/start_episode, ... (default: /recorder)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return require_ros('keys_node', 'the keyboard').keys(node_arguments({'recorder': args.recorder}, 'robodata keys'))
