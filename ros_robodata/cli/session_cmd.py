"""`robodata session`: recorder, segmenter and quality monitor for a rig, in one process (session.launch.xml)."""

from __future__ import annotations

import argparse

from ros_robodata.cli.record_cmd import add_recording_arguments, recording_parameters
from ros_robodata.cli.ros import require_ros


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        'session', help='run the recorder, the live segmenter and the quality monitor together for a rig',
        description='Run the recorder, segmenter and quality_monitor nodes in one process (what '
                    'launch/session.launch.xml starts as separate processes). Drive episodes with `robodata keys`, '
                    'which also shows the live quality; segment events go to /robodata/events and into each '
                    'episode bag. Ctrl-C closes a running episode as interrupted.')
    add_recording_arguments(p)
    p.add_argument('--no-segmenter', action='store_true', help='do not run the segmenter')
    p.add_argument('--no-monitor', action='store_true', help='do not run the quality monitor')
    p.set_defaults(func=run)


def add_monitor_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        'monitor', help='run the live segmenter and quality monitor next to a recorder or a bag replay',
        description='Run the segmenter and quality_monitor nodes in one process (what launch/monitor.launch.xml '
                    'starts), watching whatever publishes the profile\'s topics: a rig recorded by a separate '
                    'recorder, or a bag being replayed.')
    p.add_argument('--profile', required=True, help='robot profile YAML')
    p.add_argument('--no-images', action='store_true', help='skip the camera checks')
    p.add_argument('--use-sim-time', action='store_true', help='use /clock instead of the wall clock')
    p.set_defaults(func=run_monitor)


def run_monitor(args: argparse.Namespace) -> int:
    return require_ros('session_node', 'monitoring').run_monitor(args.profile, images=not args.no_images,
                                                             use_sim_time=args.use_sim_time)


def run(args: argparse.Namespace) -> int:
    session = require_ros('session_node', 'a session')
    return session.run_session(**recording_parameters(args), segment=not args.no_segmenter,
                               monitor=not args.no_monitor)
