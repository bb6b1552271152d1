"""Exporting episodes for other tools: frame sequences (camera images, LiDAR scans, robot state) for labeling."""

from ros_robodata.export.frames import ExportOptions, ExportResult, export_episode, export_frames, plan_export
from ros_robodata.export.manifest import validate_manifest
from ros_robodata.export.schedule import ScheduleSpec, select_frames

__all__ = ['ExportOptions', 'ExportResult', 'ScheduleSpec', 'export_episode', 'export_frames',
           'plan_export', 'select_frames', 'validate_manifest']
