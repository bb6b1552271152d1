"""LeRobot's dataset format v3.0: the curated export (`robodata export lerobot`) and the layout the importer reads."""

from ros_robodata.export.lerobot.exporter import LeRobotExport, export_lerobot
from ros_robodata.export.lerobot.lerobot_options import LeRobotOptions
from ros_robodata.export.lerobot.policy import Policy, parse_ratio, parse_split

__all__ = ['LeRobotExport', 'LeRobotOptions', 'Policy', 'export_lerobot', 'parse_ratio', 'parse_split']
