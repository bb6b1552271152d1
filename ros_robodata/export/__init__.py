"""Exporting episodes for other tools: frame sequences (camera images, LiDAR scans, robot state) for labeling,
their manifest, and task files for Label Studio, CVAT and COCO."""

from ros_robodata.export.export_plan import ExportOptions, ExportPlan, plan_export
from ros_robodata.export.frames import EpisodeExport, export_episode
from ros_robodata.export.frames_run import ExportResult, export_frames, export_items
from ros_robodata.export.label_tasks import write_task_files
from ros_robodata.export.manifest import FRAMES_FILE, MANIFEST_FILE, refresh_manifest, validate_manifest
from ros_robodata.export.schedule import ScheduleSpec, select_frames
from ros_robodata.labeling.taxonomy import Taxonomy, load_taxonomy

__all__ = ['FRAMES_FILE', 'MANIFEST_FILE', 'EpisodeExport', 'ExportOptions', 'ExportPlan', 'ExportResult',
           'ScheduleSpec', 'Taxonomy', 'export_episode', 'export_frames', 'export_items', 'load_taxonomy',
           'plan_export', 'refresh_manifest', 'select_frames', 'validate_manifest', 'write_task_files']
