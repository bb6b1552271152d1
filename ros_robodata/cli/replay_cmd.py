"""`robodata replay`: an episode played back into ROS with its events, findings and labels drawn (replay.launch.xml)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from ros_robodata.cli.ros import node_arguments, require_ros
from ros_robodata.dataset.dataset import Dataset, is_dataset
from ros_robodata.errors import RobodataError
from ros_robodata.files import write_yaml


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        'replay', help='play an episode (or any bag) back into ROS for review, with its labels drawn for RViz',
        description='Run the player node (the bag\'s own bytes at their recorded timing, each topic with the QoS it '
                    'was recorded with) and the overlay node (events, subtask, quality findings, human labels and '
                    'status as markers on /robodata/overlay/markers, annotated images on '
                    '/robodata/overlay/<camera>/image) in one process: what launch/replay.launch.xml starts. On a '
                    'terminal: space pause/resume, left/right arrows seek 5 s, n/p next/previous event, +/- rate, '
                    '. one message while paused, q quit. Services as rosbag2\'s player: /player/pause, /resume, '
                    '/toggle_paused, /play_next, /seek, /set_rate, and /player/next_event, /previous_event. Open '
                    'RViz with config/review.rviz.')
    p.add_argument('target', metavar='EPISODE|BAG',
                   help='an episode folder (DATASET/episodes/<id>), a dataset with --episode, or a bag')
    p.add_argument('--episode', metavar='ID', help='the episode to replay when EPISODE|BAG is a dataset; next: the '
                   'first one of the review queue (`robodata select`) not reviewed yet')
    p.add_argument('--rate', type=float, default=1.0, help='speed: 1.0 recorded time, 2.0 twice as fast (default 1)')
    p.add_argument('--start', type=float, default=0.0, metavar='S',
                   help='start this many seconds after the bag\'s first message')
    p.add_argument('--loop', action='store_true', help='start over at the end, until stopped')
    p.add_argument('--paused', action='store_true', help='start paused')
    p.add_argument('--topics', nargs='+', default=[], metavar='TOPIC', help='replay only these topics')
    p.add_argument('--exclude', nargs='+', default=[], metavar='PATTERN',
                   help='leave out these topics (names or patterns such as /camera/*)')
    p.add_argument('--remap', nargs='+', default=[], metavar='FROM:=TO', help='publish a topic under another name')
    p.add_argument('--clock', nargs='?', type=float, const=40.0, default=0.0, metavar='HZ',
                   help='publish /clock (at HZ, default 40) for nodes on use_sim_time')
    p.add_argument('--profile', help='robot profile YAML for the overlay (default: the dataset\'s own)')
    p.add_argument('--taxonomy', help='class taxonomy for the drawn labels (default: config/taxonomy.yaml)')
    p.add_argument('--frames', nargs='+', default=[], metavar='DIR',
                   help='frame exports (robodata export frames --out) that box and polygon labels were drawn on, when '
                        'they are not where the labels were imported from')
    p.add_argument('--no-overlay', action='store_true', help='run the player alone')
    p.set_defaults(func=run)


def episode_folder(target: str, episode: str | None) -> Path:
    """The episode folder or bag to play: a dataset needs --episode, and --episode needs a dataset."""
    path = Path(target)
    if is_dataset(path):
        if not episode:
            ids = Dataset.open(path).episode_ids()
            shown = ', '.join(ids[:5]) + (f' and {len(ids) - 5} more' if len(ids) > 5 else '') if ids else 'none'
            raise RobodataError(f'{path}: a dataset: name the episode to replay with --episode ID (it has: {shown})')
        if episode == NEXT:
            episode = _next_in_queue(Dataset.open(path))
        folder = Dataset.open(path).episode_dir(episode)
        if not folder.is_dir():
            raise RobodataError(f'{path}: no episode {episode} (`robodata list {path}` shows them)')
        return folder
    if episode:
        raise RobodataError(f'{path}: --episode is for a dataset, and this is not one')
    return path


NEXT = 'next'  # --episode next: the first episode of the review queue not reviewed yet


def _next_in_queue(dataset: Dataset) -> str:
    """What a reviewer watches next: the best-ranked episode of the stored review queue without a reviewed
    verdict."""
    queued = sorted((row for row in dataset.list() if row.review_rank is not None), key=lambda r: r.review_rank or 0)
    if not queued:
        raise RobodataError(f'{dataset.root}: --episode next plays the review queue, and there is none yet: run '
                            f'`robodata select {dataset.root}` first')
    waiting = [row for row in queued if not row.reviewed_outcome]
    if not waiting:
        raise RobodataError(f'{dataset.root}: every episode of the review queue ({len(queued)}) has been reviewed')
    return waiting[0].id


def _episode_of(folder: Path) -> Path | None:
    """The episode folder a replay target belongs to (itself, or the episode of its bag/ folder); None for a bag."""
    episode = folder.parent if folder.name == 'bag' else folder
    return episode if (episode / 'episode.yaml').is_file() else None


def _profile_file(folder: Path, given: str | None, scratch: Path) -> str | None:
    """The overlay's profile: --profile, else the snapshot of the dataset the episode belongs to (written to a
    scratch file, never into the dataset); None for a bag on its own."""
    if given:
        return given
    episode = _episode_of(folder)
    root = episode.resolve().parent.parent if episode is not None else None
    if root is None or not is_dataset(root) or not Dataset.open(root).has_profile:
        return None
    path = scratch / 'profile.yaml'
    write_yaml(path, Dataset.open(root).profile.to_dict())
    return str(path)


def player_parameters(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """The player node's parameters for these options (what replay.launch.xml sets from its arguments)."""
    params: dict[str, Any] = {'bag': str(folder), 'rate': float(args.rate), 'start': float(args.start),
                              'loop': bool(args.loop), 'paused': bool(args.paused), 'clock': float(args.clock or 0.0)}
    params.update({name: list(values) for name, values in (('topics', args.topics), ('exclude', args.exclude),
                                                           ('remap', args.remap)) if values})
    return params


def overlay_parameters(args: argparse.Namespace, folder: Path, profile: str) -> dict[str, Any]:
    """The overlay node's parameters: the episode whose sidecars it draws ('' for a bag on its own)."""
    episode = _episode_of(folder)
    return {'profile': profile, 'episode': str(episode) if episode is not None else '',
            'taxonomy': args.taxonomy, 'frames': os.pathsep.join(args.frames) if args.frames else None}


def run(args: argparse.Namespace) -> int:
    folder = episode_folder(args.target, args.episode)
    if not folder.exists():
        raise RobodataError(f'{folder}: no such episode or bag')
    player = require_ros('player_node', 'replay')
    # Optional dependency: session_node imports rclpy, which the command line works without (require_ros checked).
    from ros_robodata.nodes.session_node import parameters

    with tempfile.TemporaryDirectory(prefix='robodata-replay-') as scratch:
        overlay: list[str] | None = None
        if not args.no_overlay:
            profile = _profile_file(folder, args.profile, Path(scratch))
            if profile is None:
                print(f'robodata replay: {folder} belongs to no dataset with a robot profile: replaying without the '
                      'overlay (pass --profile to draw it)', file=sys.stderr)
            else:
                overlay = node_arguments(overlay_parameters(args, folder, profile), 'robodata replay (overlay)')
        return player.run_player(parameters(**player_parameters(args, folder)), overlay=overlay)
