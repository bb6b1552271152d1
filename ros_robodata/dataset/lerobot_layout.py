"""The LeRobot dataset format v3.0 on disk: where each file goes, and the few conventions LeRobot's own reader relies
on (path templates, the tasks table's index, the per-episode video offsets).

Kept in one place because both directions use it: `robodata export lerobot` writes it, `robodata import` reads it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ros_robodata.errors import RobodataError

CODEBASE_VERSION = 'v3.0'
INFO = Path('meta/info.json')
STATS = Path('meta/stats.json')
TASKS = Path('meta/tasks.parquet')
EPISODES_DIR = Path('meta/episodes')
DATA_PATH = 'data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet'
VIDEO_PATH = 'videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4'
EPISODES_PATH = 'meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet'
CHUNKS_SIZE = 1000  # files per chunk folder, as LeRobot writes
DATA_FILE_MB = 100  # LeRobot's defaults: a data or video file is closed once past this size
VIDEO_FILE_MB = 500
STATE, ACTION = 'observation.state', 'action'
IMAGES_PREFIX = 'observation.images.'
TIMESTAMP_TOLERANCE_S = 1e-4  # LeRobotDataset's default tolerance_s


def read_info(root: Path) -> dict[str, Any]:
    """meta/info.json; RobodataError when the folder is not a LeRobot dataset."""
    path = root / INFO
    if not path.is_file():
        raise RobodataError(f'{root}: no {INFO}: not a LeRobot dataset')
    try:
        info = json.loads(path.read_text(encoding='utf-8'))
    except (OSError, ValueError) as err:
        raise RobodataError(f'{path}: not readable JSON: {err}') from None
    if not isinstance(info, dict) or not isinstance(info.get('features'), dict):
        raise RobodataError(f'{path}: no "features" mapping: not a LeRobot info.json')
    return info


def write_tasks(path: Path, tasks: list[str]) -> None:
    """meta/tasks.parquet as pandas writes it: the task text as the table's index, task_index its column.
    LeRobot reads it with pandas and looks tasks up by that index."""
    index = '__index_level_0__'
    pandas_meta = {
        'index_columns': [index],
        'column_indexes': [{'name': None, 'field_name': None, 'pandas_type': 'unicode', 'numpy_type': 'object',
                            'metadata': {'encoding': 'UTF-8'}}],
        'columns': [{'name': 'task_index', 'field_name': 'task_index', 'pandas_type': 'int64', 'numpy_type': 'int64',
                     'metadata': None},
                    {'name': None, 'field_name': index, 'pandas_type': 'unicode', 'numpy_type': 'object',
                     'metadata': None}],
        'attributes': {}, 'creator': {'library': 'pyarrow', 'version': pa.__version__}, 'pandas_version': '2.3.3'}
    schema = pa.schema([('task_index', pa.int64()), (index, pa.string())],
                       metadata={b'pandas': json.dumps(pandas_meta).encode()})
    table = pa.table({'task_index': list(range(len(tasks))), index: tasks}, schema=schema)
    pq.write_table(table, path)


def read_tasks(root: Path) -> dict[int, str]:
    """task_index -> task text, from meta/tasks.parquet (v3.0) or meta/tasks.jsonl (v2.x); {} when neither."""
    parquet, jsonl = root / TASKS, root / 'meta' / 'tasks.jsonl'
    if parquet.is_file():
        try:
            with pq.ParquetFile(parquet) as tasks:  # not read_table: that loads pyarrow.dataset and pandas
                table = tasks.read()
        except (OSError, pa.ArrowException) as err:
            raise RobodataError(f'{parquet}: not readable: {err}') from None
        names = table.column_names
        text = next((n for n in ('task', '__index_level_0__') if n in names), None)
        if text is None or 'task_index' not in names:
            raise RobodataError(f'{parquet}: expected columns task_index and task (it has: {", ".join(names)})')
        return dict(zip(table.column('task_index').to_pylist(), table.column(text).to_pylist(), strict=True))
    if jsonl.is_file():
        out = {}
        for n, line in enumerate(jsonl.read_text(encoding='utf-8', errors='replace').splitlines(), 1):
            if line.strip():
                try:
                    row = json.loads(line)
                    out[int(row['task_index'])] = str(row['task'])
                except (ValueError, KeyError, TypeError) as err:
                    raise RobodataError(f'{jsonl}:{n}: not a task line ({err})') from None
        return out
    return {}
