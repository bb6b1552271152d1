"""The meta/ files of a LeRobot export: info.json (features, splits, where the action comes from), stats.json (the
episodes' statistics pooled), tasks.parquet and the episodes table with each episode's statistics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ros_robodata.dataset import lerobot_layout as layout
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.export.face_blur import DETECTOR
from ros_robodata.export.lerobot import stats
from ros_robodata.export.lerobot.lerobot_files import ExportFiles
from ros_robodata.export.lerobot.lerobot_options import LeRobotOptions
from ros_robodata.export.lerobot.policy import Selection
from ros_robodata.export.lerobot.sampling import NEXT_STATE
from ros_robodata.profile import JOINT_STATE, Profile
from ros_robodata.version import __version__


def _vector_feature(names: list[str]) -> dict[str, Any]:
    return {'dtype': 'float32', 'shape': [len(names)], 'names': list(names)}


def write_meta(root: Path, dataset: Dataset, profile: Profile, options: LeRobotOptions, fps: int,
                cameras: list[str], writer: ExportFiles, tasks: dict[str, int], names: tuple[list[str], list[str]],
                selection: Selection, action_topic: str | None) -> None:
    meta = root / 'meta'
    meta.mkdir(exist_ok=True)
    layout.write_tasks(root / layout.TASKS, list(tasks))
    rows = writer.episode_rows
    stat_columns: dict[str, list[Any]] = {}
    for feature_stats in writer.episode_stats:
        for feature, values in feature_stats.items():
            for key, value in values.items():
                stat_columns.setdefault(f'stats/{feature}/{key}', []).append(np.asarray(value).tolist())
    table = pa.Table.from_pylist(rows)
    for column, column_values in stat_columns.items():
        table = table.append_column(column, pa.array(column_values))
    path = root / layout.EPISODES_PATH.format(chunk_index=0, file_index=0)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    features: dict[str, Any] = {layout.STATE: _vector_feature(names[0]), layout.ACTION: _vector_feature(names[1])}
    for name in cameras:
        width, height = writer.video_sizes[name]
        features[layout.IMAGES_PREFIX + name] = {
            'dtype': 'video', 'shape': [height, width, 3], 'names': ['height', 'width', 'channels'],
            'info': {'video.height': height, 'video.width': width, 'video.codec': options.codec,
                     'video.pix_fmt': 'yuv420p', 'video.is_depth_map': False, 'video.fps': fps,
                     'video.channels': 3, 'has_audio': False}}
    for column, dtype in (('timestamp', 'float32'), ('frame_index', 'int64'), ('episode_index', 'int64'),
                          ('index', 'int64'), ('task_index', 'int64'), ('subtask', 'string'), ('event', 'string'),
                          ('quality.flags', 'string'), ('quality.flagged', 'bool')):
        features[column] = {'dtype': dtype, 'shape': [1], 'names': None}
    splits: dict[str, list[int]] = {}
    for row in rows:
        splits.setdefault(row['split'], []).append(row['episode_index'])
    source = action_topic or NEXT_STATE
    action_type = next((spec.type for _, spec in profile.all_topics() if spec.topic == action_topic), None)
    info = {
        'codebase_version': layout.CODEBASE_VERSION, 'robot_type': profile.robot.name,
        'total_episodes': len(rows), 'total_frames': writer.index, 'total_tasks': len(tasks),
        'chunks_size': layout.CHUNKS_SIZE, 'data_files_size_in_mb': options.data_file_mb,
        'video_files_size_in_mb': options.video_file_mb, 'fps': fps,
        'splits': {name: f'{min(ids)}:{max(ids) + 1}' for name, ids in splits.items()},
        'data_path': layout.DATA_PATH, 'video_path': layout.VIDEO_PATH if cameras else None, 'features': features,
        'ros_robodata': {
            'version': __version__, 'source_dataset': dataset.name, 'profile_sha256': profile.sha256,
            'action_source': 'next_state' if action_topic is None else
            ('leader_arm' if action_type == JOINT_STATE else 'actions_topic'),
            'action_topic': source if action_topic else None, 'action_type': action_type,
            'timestamps': 'the fps grid from the first moment every stream has data; each value is the sample '
                          'whose header stamp is nearest to its tick',
            'policy': options.policy.to_json(),
            'blur_faces': DETECTOR if options.blur_faces else None,
            # the release exported (robodata release verify checks it): what a model trained on this names
            'release': {'name': options.release[0], 'manifest_sha256': options.release[1]} if options.release
            else None},
    }
    (meta / 'info.json').write_text(json.dumps(info, indent=2) + '\n', encoding='utf-8')
    pooled = {}
    for feature in writer.episode_stats[0]:
        pooled[feature] = stats.to_json(stats.aggregate([s[feature] for s in writer.episode_stats]))
    (meta / 'stats.json').write_text(json.dumps(pooled, indent=2) + '\n', encoding='utf-8')
