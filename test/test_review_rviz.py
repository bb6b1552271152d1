"""config/review.rviz and launch/replay.launch.xml, checked without RViz or ros2 launch (neither installs here)."""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import yaml

from ros_robodata.profile import load_profile
from test.profiles import PROFILE, ROOT

RVIZ = ROOT / 'config' / 'review.rviz'
# The plugin classes rviz_default_plugins declares (rviz_default_plugins/plugins_description.xml of ros2/rviz at
# f7112b1ae4337363c4d8177bffe7cce6bbcabf29, version 14.3.1), and rviz_common's panels: a misspelt class is a
# display RViz silently cannot load.
RVIZ_DEFAULT_PLUGINS = frozenset(f'rviz_default_plugins/{name}' for name in (
    'AccelStamped', 'Axes', 'Camera', 'CameraInfo', 'DepthCloud', 'Effort', 'FPS', 'FluidPressure', 'FocusCamera',
    'Grid', 'GridCells', 'Illuminance', 'Image', 'Interact', 'InteractiveMarkers', 'LaserScan', 'Map', 'Marker',
    'MarkerArray', 'Measure', 'MoveCamera', 'Odometry', 'Orbit', 'Path', 'PointCloud', 'PointCloud2',
    'PointStamped', 'Polygon', 'Pose', 'PoseArray', 'PoseWithCovariance', 'PublishPoint', 'Range',
    'RelativeHumidity', 'RobotModel', 'Select', 'SetGoal', 'SetInitialPose', 'TF', 'Temperature',
    'ThirdPersonFollower', 'TopDownOrtho', 'TwistStamped', 'Wrench', 'XYOrbit'))
RVIZ_COMMON_PANELS = frozenset(f'rviz_common/{name}' for name in (
    'Displays', 'Selection', 'Tool Properties', 'Views', 'Time'))
# What the overlay node publishes for a profile (ros_robodata/nodes/overlay_node.py).
OVERLAY_MARKERS = '/robodata/overlay/markers'
OVERLAY_IMAGE = '/robodata/overlay/{camera}/image'


def _config() -> dict[str, Any]:
    return yaml.safe_load(RVIZ.read_text(encoding='utf-8'))


def _displays(config: dict[str, Any]) -> list[dict[str, Any]]:
    return config['Visualization Manager']['Displays']


def _topic(display: dict[str, Any]) -> str | None:
    topic = display.get('Topic') or display.get('Description Topic')
    return topic.get('Value') if isinstance(topic, dict) else topic


def test_review_rviz_parses_and_names_only_plugin_classes_rviz_ships() -> None:
    config = _config()
    manager = config['Visualization Manager']
    classes = [d['Class'] for d in _displays(config)] + [t['Class'] for t in manager['Tools']]
    classes.append(manager['Views']['Current']['Class'])
    assert set(classes) <= RVIZ_DEFAULT_PLUGINS, set(classes) - RVIZ_DEFAULT_PLUGINS
    assert {p['Class'] for p in config['Panels']} <= RVIZ_COMMON_PANELS
    assert len({d['Name'] for d in _displays(config)}) == len(_displays(config))  # RViz keys settings by name


def test_every_topic_review_rviz_shows_is_replayed_from_an_episode_or_drawn_by_the_overlay() -> None:
    profile = load_profile(PROFILE)
    recorded = {spec.topic: spec for _, spec in profile.all_topics()}
    drawn = {OVERLAY_MARKERS} | {OVERLAY_IMAGE.format(camera=c.name) for c in profile.topics.cameras}
    shown = {_topic(d): d for d in _displays(_config()) if _topic(d)}
    assert set(shown) <= set(recorded) | drawn, set(shown) - set(recorded) - drawn
    # the reviewer's view: both annotated cameras, the markers, the robot, the cloud and the raw cameras
    assert drawn <= set(shown)
    assert {c.topic for c in profile.topics.cameras} | {s.topic for s in profile.topics.lidars} <= set(shown)
    robot = next(d for d in _displays(_config()) if d['Class'] == 'rviz_default_plugins/RobotModel')
    assert robot['Description Source'] == 'Topic' and _topic(robot) == '/robot_description'
    # the description is latched: only a transient-local subscription gets it from a player that sent it already
    assert recorded['/robot_description'].latched
    assert robot['Description Topic']['Durability Policy'] == 'Transient Local'
    # markers are drawn in the profile's fixed frame: RViz must show that frame
    assert _config()['Visualization Manager']['Global Options']['Fixed Frame'] == profile.robot.base_frame


def test_replay_launch_runs_what_robodata_replay_runs(tmp_path: Path) -> None:
    from ros_robodata.cli.main import build_parser
    from ros_robodata.cli.replay_cmd import overlay_parameters, player_parameters

    launch = ET.parse(ROOT / 'launch' / 'replay.launch.xml').getroot()
    nodes = {node.get('exec'): node for node in launch.iter('node')}
    assert set(nodes) == {'player', 'overlay', 'rviz2'}
    params = {name: {p.get('name'): p.get('value') for p in nodes[name].findall('param')}
              for name in ('player', 'overlay')}
    args = build_parser().parse_args(['replay', str(tmp_path), '--rate', '2', '--clock'])
    assert isinstance(args, argparse.Namespace)
    assert set(params['player']) == set(player_parameters(args, tmp_path))
    assert set(params['overlay']) == set(overlay_parameters(args, tmp_path, str(PROFILE)))
    assert player_parameters(args, tmp_path)['clock'] == 40.0  # --clock alone: rosbag2's default rate
    # RViz opens the review configuration by default, from the package's share folder
    rviz_config = next(a for a in launch.iter('arg') if a.get('name') == 'rviz_config')
    assert rviz_config.get('default') == '$(find-pkg-share ros_robodata)/config/review.rviz'
    assert nodes['rviz2'].get('args') == '-d $(var rviz_config)' and nodes['rviz2'].get('if') == '$(var rviz)'
