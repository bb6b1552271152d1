"""`robodata session`: recorder, segmenter and quality monitor for a rig, in one process (session.launch.xml)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ros_robodata.capture.consent_check import check_participant
from ros_robodata.capture.lux_calibration import calibrated_camera
from ros_robodata.capture.protocol import SHIPPED_PROTOCOLS, load_protocol
from ros_robodata.cli.record_cmd import add_recording_arguments, recording_parameters
from ros_robodata.cli.ros import require_ros
from ros_robodata.errors import RobodataError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        'session', help='run the recorder, the live segmenter and the quality monitor together for a rig',
        description='Run the recorder, segmenter and quality_monitor nodes in one process (what '
                    'launch/session.launch.xml starts as separate processes). Drive episodes with `robodata keys`, '
                    'which also shows the live quality; segment events go to /robodata/events and into each '
                    'episode bag. Ctrl-C closes a running episode as interrupted. With --protocol the session '
                    'keeps a shot list: the keys screen shows the take to capture next (space records it, n skips '
                    'it, 1-9 change a condition), the take\'s measured conditions are checked live (a take out of '
                    'spec is a WARN on /diagnostics and the screen) and each episode\'s episode.yaml gets '
                    '`capture:` (intended and measured conditions, participant) and capture.json, which '
                    '`robodata coverage` counts.')
    add_recording_arguments(p)
    p.add_argument('--protocol', metavar='P',
                   help='capture to this protocol: a file, or a shipped one by name '
                        f'({", ".join(SHIPPED_PROTOCOLS)})')
    p.add_argument('--participant', metavar='ID', default='',
                   help='the participant recorded (a pseudonymous id in the dataset\'s participants.yaml); '
                        'required when the protocol requires consent, and refused without a valid one')
    p.add_argument('--illuminance-topic', default='/illuminance', metavar='TOPIC',
                   help='the lux meter (sensor_msgs/Illuminance) measuring the take\'s light (with --protocol)')
    p.add_argument('--range-topic', default='/range', metavar='TOPIC',
                   help='the rangefinder (sensor_msgs/Range, camera to participant) measuring the take\'s '
                        'distance (with --protocol)')
    p.add_argument('--camera', metavar='TOPIC', default='',
                   help='the camera filming the participant (sensor_msgs/Image, or CompressedImage on a topic ending '
                        '/compressed): the face found in its frames gives the distance and the face orientation (with '
                        '--protocol; a few frames a second, the latest each time)')
    p.add_argument('--camera-info', metavar='TOPIC', default='',
                   help="that camera's sensor_msgs/CameraInfo (default: camera_info beside the image topic)")
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
    capture = None
    if args.protocol:
        # Refused here, before any node starts: nothing records for a participant who may not be recorded.
        check_participant(Path(args.dataset), load_protocol(args.protocol), args.participant)
        capture = {'protocol': args.protocol, 'participant': args.participant,
                   'illuminance_topic': args.illuminance_topic, 'range_topic': args.range_topic,
                   'camera_topic': args.camera, 'camera_info_topic': args.camera_info,
                   'lux_calibration': calibrated_camera(args.profile, args.camera)}  # light from its frames
    elif args.participant:
        raise RobodataError('--participant is for a session capturing to a protocol: add --protocol P')
    session = require_ros('session_node', 'a session')
    return session.run_session(**recording_parameters(args), segment=not args.no_segmenter,
                               monitor=not args.no_monitor, capture=capture)
