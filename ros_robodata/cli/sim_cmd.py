"""`robodata sim`: the simulated cell as a rig (what launch/sim_cell.launch.xml runs), without `ros2 launch`."""

from __future__ import annotations

import argparse
from typing import Any

from ros_robodata.cli.demo_cmd import STREAMS, fault, image_size
from ros_robodata.cli.ros import node_arguments, require_ros
from ros_robodata.errors import RobodataError
from ros_robodata.paths import config_path
from ros_robodata.sim.faults import FAULT_SYNTAX, KINDS


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        'sim', help='run the simulated cell: a rig publishing the profile\'s topics, episode after episode',
        description='Run the simulated teleop cell (MuJoCo) as a rig: every topic of the profile at its rate, one '
                    'episode after another on one unbroken timeline (between episodes the arm goes home while the '
                    'next scene is set up; nothing stops publishing). With --start auto the scripted operator '
                    'starts, labels and stops each episode on the recorder (run `robodata session` or `robodata '
                    'record` beside it); with --start key the cell waits at home for the start key of `robodata '
                    'keys`. Runs until Ctrl-C, or --episodes. Stamps are the wall clock; --publish-clock adds /clock.')
    p.add_argument('--profile', default=None, help='robot profile YAML (default: the shipped config/sim_cell.yaml)')
    p.add_argument('--seed', type=int, default=0, help='seed of the first episode; episode i uses SEED + i')
    p.add_argument('--episodes', type=int, default=0, help='episodes to act out, then exit (default 0: until Ctrl-C)')
    p.add_argument('--mode', choices=['teleop', 'kinesthetic'], default='teleop', help='demonstration mode')
    p.add_argument('--start', choices=['auto', 'key'], default='auto',
                   help='auto: the scripted operator starts each episode itself; key: the cell waits for the '
                        'operator\'s start key (robodata keys)')
    p.add_argument('--recorder', default='/recorder',
                   help='with --start auto, the recorder node the scripted operator drives (default /recorder)')
    p.add_argument('--no-recorder', action='store_true', help='drive no recorder: only publish')
    p.add_argument('--image-size', default='320x240', metavar='WxH', help='camera image size (default 320x240)')
    p.add_argument('--fault', action='append', default=[], metavar=FAULT_SYNTAX,
                   help='inject a fault into every episode, e.g. camera/scene:silent:3:6 (seconds from the scene\'s '
                        f'start; kinds: {", ".join(KINDS)}; streams: {", ".join(STREAMS)}); repeatable')
    p.add_argument('--publish-clock', action='store_true', help='publish the cell\'s time on /clock')
    p.set_defaults(func=run)


def sim_parameters(args: argparse.Namespace) -> dict[str, Any]:
    """The sim_cell node's parameters from the options (what sim_cell.launch.xml sets from its args)."""
    if args.episodes < 0:
        raise RobodataError('--episodes must be 0 (until Ctrl-C) or more')
    for text in args.fault:
        fault(text)  # one line now rather than from the node
    width, height = image_size(args.image_size)
    return {'profile': args.profile or str(config_path('sim_cell.yaml')), 'seed': args.seed,
            'episodes': args.episodes, 'mode': args.mode, 'start': args.start,
            'recorder': '' if args.no_recorder else args.recorder, 'image_width': width, 'image_height': height,
            'faults': ';'.join(args.fault), 'publish_clock': args.publish_clock}


def run(args: argparse.Namespace) -> int:
    return require_ros('sim_cell_node', 'the simulated cell').main(node_arguments(sim_parameters(args), 'robodata sim'))
