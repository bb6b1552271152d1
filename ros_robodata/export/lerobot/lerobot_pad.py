"""`robodata export lerobot --pool --unify pad`: the per-embodiment exports joined into one LeRobot v3.0 dataset whose
state and action are padded to the widest embodiment, as pooled-data policies expect.

Per frame, for an embodiment with n state (m action) dimensions of the widest N (M):
- `observation.state` is its n values then N - n zeros; `action` its m values then M - m zeros;
- `observation.state_mask` (N) and `action_mask` (M) are 1.0 where the dimension is real, 0.0 where it is padding;
- `embodiment` is its index in meta/info.json's `ros_robodata.embodiments` (and mixture.json's sources), whose
  `state_names` and `action_names` say which joint each real dimension is (the card has the same table).
Episodes, frames and tasks are renumbered in source order; every other column is the part's own. Cameras are left
out (the robots do not share them). The statistics are recomputed over the padded values (LeRobot's way, stats.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ros_robodata.dataset import lerobot_layout as layout
from ros_robodata.errors import ExportError
from ros_robodata.export.lerobot import stats

__all__ = ['ACTION_MASK', 'EMBODIMENT', 'STATE_MASK', 'pad_sources']

STATE_MASK = f'{layout.STATE}_mask'
ACTION_MASK = f'{layout.ACTION}_mask'
EMBODIMENT = 'embodiment'
_NUMERIC = (layout.STATE, layout.ACTION, STATE_MASK, ACTION_MASK, 'timestamp', 'frame_index', 'episode_index', 'index',
            'task_index', EMBODIMENT)


def _matrix(table: pa.Table, column: str) -> np.ndarray:
    values = table.column(column).combine_chunks()
    width = values.type.list_size
    return values.flatten().to_numpy(zero_copy_only=False).astype(np.float32).reshape(len(table), width)


def _fixed(values: np.ndarray) -> pa.Array:
    return pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1), pa.float32()), values.shape[1])


def pad_sources(out: Path, parts: list[tuple[str, Path]], dataset_name: str) -> dict[str, Any]:
    """Write the padded dataset at `out` from the per-embodiment LeRobot exports `parts` ((name, folder), in order).

    Args:
        out: the folder to write (absent).
        parts: each embodiment's name and the LeRobot dataset written for it (state and action only).
        dataset_name: the source dataset's name, for the card.

    Returns: meta/info.json as written.

    Raises:
        ExportError: the parts have different frame rates (give --fps).
    """
    infos = [layout.read_info(root) for _, root in parts]
    rates = {info['fps'] for info in infos}
    if len(rates) > 1:
        raise ExportError(f'--unify pad: the robots\' exports have different frame rates ({", ".join(map(str, rates))} '
                          'fps): give --fps for one')
    fps = rates.pop()
    names = [(info['features'][layout.STATE]['names'], info['features'][layout.ACTION]['names']) for info in infos]
    width_s, width_a = max(len(s) for s, _ in names), max(len(a) for _, a in names)
    tables, rows, episode_stats = [], [], []
    tasks: dict[str, int] = {}
    episodes = frames = 0
    for k, ((name, root), (state_names, action_names)) in enumerate(zip(parts, names, strict=True)):
        local_tasks = layout.read_tasks(root)
        table = pa.concat_tables([pq.read_table(p).replace_schema_metadata(None)
                                  for p in sorted((root / 'data').rglob('*.parquet'))])
        n = len(table)
        state, action = np.zeros((n, width_s), np.float32), np.zeros((n, width_a), np.float32)
        state[:, :len(state_names)] = _matrix(table, layout.STATE)
        action[:, :len(action_names)] = _matrix(table, layout.ACTION)
        state_mask, action_mask = np.zeros_like(state), np.zeros_like(action)
        state_mask[:, :len(state_names)] = 1.0
        action_mask[:, :len(action_names)] = 1.0
        task_of = {i: tasks.setdefault(text, len(tasks)) for i, text in local_tasks.items()}
        columns = {c: table.column(c) for c in table.column_names}
        columns.update({
            layout.STATE: _fixed(state), layout.ACTION: _fixed(action),
            'episode_index': pa.array(table.column('episode_index').to_numpy() + episodes),
            'index': pa.array(table.column('index').to_numpy() + frames),
            'task_index': pa.array(np.array([task_of[i] for i in table.column('task_index').to_pylist()],
                                            dtype=np.int64)),
            STATE_MASK: _fixed(state_mask), ACTION_MASK: _fixed(action_mask),
            EMBODIMENT: pa.array(np.full(n, k, dtype=np.int64))})
        padded = pa.table(columns)
        tables.append(padded)
        for row in pq.read_table(root / layout.EPISODES_PATH.format(chunk_index=0, file_index=0)).to_pylist():
            first, last = row['dataset_from_index'], row['dataset_to_index']
            row = {key: value for key, value in row.items() if not key.startswith('stats/')}
            row.update({'episode_index': row['episode_index'] + episodes, 'dataset_from_index': first + frames,
                        'dataset_to_index': last + frames, 'data/chunk_index': 0, 'data/file_index': 0,
                        'embodiment': name})
            rows.append(row)
            episode_stats.append({c: stats.vector_stats(_values(padded, c)[first:last]) for c in _NUMERIC})
        episodes += infos[k]['total_episodes']
        frames += n
    data_path = out / layout.DATA_PATH.format(chunk_index=0, file_index=0)
    data_path.parent.mkdir(parents=True)
    pq.write_table(pa.concat_tables(tables), data_path)
    episodes_table = pa.Table.from_pylist(rows)
    stat_columns: dict[str, list[Any]] = {}
    for feature_stats in episode_stats:
        for feature, values in feature_stats.items():
            for key, value in values.items():
                stat_columns.setdefault(f'stats/{feature}/{key}', []).append(np.asarray(value).tolist())
    for column, column_values in stat_columns.items():
        episodes_table = episodes_table.append_column(column, pa.array(column_values))
    episodes_path = out / layout.EPISODES_PATH.format(chunk_index=0, file_index=0)
    episodes_path.parent.mkdir(parents=True)
    pq.write_table(episodes_table, episodes_path)
    layout.write_tasks(out / layout.TASKS, list(tasks))
    info = _info(infos[0], fps, episodes, frames, len(tasks), rows, width_s, width_a,
                 [(name, s, a) for (name, _), (s, a) in zip(parts, names, strict=True)])
    (out / layout.INFO).write_text(json.dumps(info, indent=2) + '\n', encoding='utf-8')
    pooled = {c: stats.to_json(stats.aggregate([s[c] for s in episode_stats])) for c in _NUMERIC}
    (out / layout.STATS).write_text(json.dumps(pooled, indent=2) + '\n', encoding='utf-8')
    _card(out / 'README.md', dataset_name, info['ros_robodata']['embodiments'], width_s, width_a, episodes, frames)
    return info


def _values(table: pa.Table, column: str) -> np.ndarray:
    values = table.column(column)
    return _matrix(table, column) if pa.types.is_fixed_size_list(values.type) else values.to_numpy()


def _info(first: dict[str, Any], fps: int, episodes: int, frames: int, tasks: int, rows: list[dict[str, Any]],
          width_s: int, width_a: int, names: list[tuple[str, list[str], list[str]]]) -> dict[str, Any]:
    features = {key: value for key, value in first['features'].items() if value.get('dtype') != 'video'}
    features[layout.STATE] = {'dtype': 'float32', 'shape': [width_s], 'names': [f'state_{i}' for i in range(width_s)]}
    features[layout.ACTION] = {'dtype': 'float32', 'shape': [width_a],
                               'names': [f'action_{i}' for i in range(width_a)]}
    features[STATE_MASK] = {'dtype': 'float32', 'shape': [width_s], 'names': [f'state_{i}' for i in range(width_s)]}
    features[ACTION_MASK] = {'dtype': 'float32', 'shape': [width_a],
                             'names': [f'action_{i}' for i in range(width_a)]}
    features[EMBODIMENT] = {'dtype': 'int64', 'shape': [1], 'names': None}
    splits: dict[str, list[int]] = {}
    for row in rows:
        splits.setdefault(row['split'], []).append(row['episode_index'])
    return {**first, 'robot_type': '+'.join(name for name, _, _ in names), 'total_episodes': episodes,
            'total_frames': frames, 'total_tasks': tasks, 'fps': fps, 'video_path': None, 'features': features,
            'splits': {name: f'{min(ids)}:{max(ids) + 1}' for name, ids in splits.items()},
            'ros_robodata': {**first.get('ros_robodata', {}), 'unify': 'pad',
                             'embodiments': [{'index': k, 'name': name, 'state_names': s, 'action_names': a}
                                             for k, (name, s, a) in enumerate(names)]}}


def _card(path: Path, dataset_name: str, table: list[dict[str, Any]], width_s: int, width_a: int, episodes: int,
          frames: int) -> None:
    lines = ['---', 'tags: [LeRobot, ros_robodata, pooled]', 'task_categories: [robotics]', '---', '',
             f'# {dataset_name}: {len(table)} robots, padded', '',
             f'A LeRobot v3.0 dataset of {episodes} episodes ({frames} frames) from {len(table)} robots, exported by '
             '`robodata export lerobot --pool --unify pad`; mixture.json beside this card holds each robot\'s '
             'sampling weight and normalisation statistics.', '', '## Padding', '',
             f'- `observation.state` has {width_s} dimensions and `action` {width_a}: a robot\'s own values first, '
             'then zeros.',
             f'- `{STATE_MASK}` and `{ACTION_MASK}` are 1.0 where the dimension is the robot\'s, 0.0 where it is '
             'padding.',
             '- `embodiment` is the robot\'s index below (meta/info.json `ros_robodata.embodiments`).', '',
             '## Which joints map where', '', '| embodiment | robot | state dims | action dims |', '|---|---|---|---|']
    for entry in table:
        state = ', '.join(f'{i}: {n}' for i, n in enumerate(entry['state_names']))
        action = ', '.join(f'{i}: {n}' for i, n in enumerate(entry['action_names']))
        lines.append(f'| {entry["index"]} | {entry["name"]} | {state} | {action} |')
    path.write_text('\n'.join(lines) + '\n', encoding='utf-8')
