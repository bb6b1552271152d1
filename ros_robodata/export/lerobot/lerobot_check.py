"""`robodata export lerobot --check`: is what was written trainable? Gates on each LeRobot dataset written (fps,
timestamps on the fps grid, no NaN in state or action, statistics for every feature), then LeRobot's own
`LeRobotDataset` loads it and draws a batch, in a Python that has lerobot (torch stays out of robodata's own
environment): $ROBODATA_LEROBOT_PYTHON, else the repository's .venv-lerobot (tools/lerobot_venv.py makes it).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from ros_robodata.dataset import lerobot_layout as layout
from ros_robodata.errors import RobodataError

__all__ = ['GATES', 'DatasetCheck', 'check_lerobot_dataset', 'lerobot_python']

GATES = ('fps', 'timestamps on the grid', 'no NaN', 'stats present', 'LeRobotDataset batch')
PYTHON_ENV = 'ROBODATA_LEROBOT_PYTHON'
VENV_PYTHON = Path(__file__).resolve().parents[3] / '.venv-lerobot' / 'bin' / 'python'  # in a source tree
BATCH = 8
# Run by the lerobot Python: load the dataset, draw one batch with torch's DataLoader, say what it holds.
_PROBE = """
import json, math, os, sys
os.environ.setdefault('HF_HUB_OFFLINE', '1')
import torch
from lerobot.datasets.lerobot_dataset import LeRobotDataset
ds = LeRobotDataset('local/robodata_check', root=sys.argv[1], tolerance_s=1e-4)
loader = torch.utils.data.DataLoader(ds, batch_size=min(int(sys.argv[2]), len(ds)), shuffle=True,
                                     generator=torch.Generator().manual_seed(0))
batch = next(iter(loader))
shapes = {k: list(v.shape) for k, v in batch.items() if hasattr(v, 'shape')}
nan = sorted(k for k, v in batch.items() if hasattr(v, 'dtype') and v.dtype.is_floating_point
             and bool(torch.isnan(v).any()))
print(json.dumps({'frames': ds.num_frames, 'episodes': ds.num_episodes, 'fps': ds.fps, 'shapes': shapes,
                  'nan': nan}))
"""


@dataclass
class DatasetCheck:
    """The gates of one LeRobot dataset: per gate '' (passed) or why not.

    Args:
        root: the dataset checked.
        problems: per gate of GATES, '' when it passed, else what failed (with the episode and frame).
        batch: what LeRobot's batch held (feature shapes), when it drew one.
    """

    root: Path
    problems: dict[str, str] = field(default_factory=dict)
    batch: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not any(self.problems.values())

    def to_json(self) -> dict[str, Any]:
        return {'dataset': str(self.root), 'ok': self.ok, 'gates': self.problems, 'batch': self.batch}


def lerobot_python() -> Path:
    """The Python that has lerobot: $ROBODATA_LEROBOT_PYTHON, else .venv-lerobot beside the source tree.

    Raises:
        RobodataError: neither is there (saying how to make one).
    """
    given = os.environ.get(PYTHON_ENV)
    candidates = [Path(given)] if given else []
    candidates.append(VENV_PYTHON)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise RobodataError(f'--check loads the export with LeRobot, and no Python with lerobot was found (set '
                        f'{PYTHON_ENV}, or run tools/lerobot_venv.py to make .venv-lerobot)')


def check_lerobot_dataset(root: Path, *, fps: int | None = None, python: Path | None = None,
                          timeout_s: float = 600) -> DatasetCheck:
    """Check a LeRobot v3.0 dataset as a trainer would need it: the gates of GATES, each said with where it failed.

    Args:
        root: the dataset folder.
        fps: the frame rate it must have; None: any.
        python: a Python with lerobot; None: lerobot_python().
        timeout_s: how long LeRobot may take to load it and draw a batch.

    Raises:
        RobodataError: no Python with lerobot, or the folder is not a LeRobot dataset.
    """
    info = layout.read_info(root)
    check = DatasetCheck(root, dict.fromkeys(GATES, ''))
    rate = info.get('fps')
    if not isinstance(rate, (int, float)) or rate <= 0 or (fps is not None and rate != fps):
        check.problems['fps'] = f'meta/info.json fps is {rate!r}' + (f', the export asked for {fps}' if fps else '')
    files = sorted((root / 'data').rglob('*.parquet'))
    vectors = [k for k, v in info['features'].items() if v.get('dtype') in ('float32', 'float64')
               and k not in ('timestamp',)]
    for file in files:
        table = pq.read_table(file, columns=['timestamp', 'frame_index', 'episode_index', *vectors])
        data = {c: table.column(c) for c in table.column_names}
        if not check.problems['timestamps on the grid'] and isinstance(rate, (int, float)) and rate > 0:
            stamps = data['timestamp'].to_numpy().astype(np.float64)
            ticks = data['frame_index'].to_numpy() / rate
            off = np.flatnonzero(np.abs(stamps - ticks) > layout.TIMESTAMP_TOLERANCE_S)
            if len(off):
                i = int(off[0])
                check.problems['timestamps on the grid'] = (
                    f'{len(off)} frame(s) off the 1/{rate:g} s grid by more than {layout.TIMESTAMP_TOLERANCE_S:g} s, '
                    f'first episode {data["episode_index"][i].as_py()} frame {data["frame_index"][i].as_py()} '
                    f'({stamps[i]:.6f} s)')
        for column in vectors:
            if check.problems['no NaN']:
                break
            values = data[column].combine_chunks()
            flat = values.flatten() if hasattr(values, 'flatten') else values
            array = flat.to_numpy(zero_copy_only=False).astype(np.float64)
            width = max(1, len(array) // max(1, len(table)))
            bad = np.flatnonzero(~np.isfinite(array.reshape(len(table), width)).all(axis=1))
            if len(bad):
                episode, frame = (data[c][int(bad[0])].as_py() for c in ('episode_index', 'frame_index'))
                check.problems['no NaN'] = (f'{column}: {len(bad)} frame(s) with NaN or infinity, first episode '
                                            f'{episode} frame {frame}')
    check.problems['stats present'] = _missing_stats(root, info)
    check.problems['LeRobotDataset batch'], check.batch = _lerobot_batch(root, python or lerobot_python(), timeout_s)
    return check


def _missing_stats(root: Path, info: dict[str, Any]) -> str:
    path = root / layout.STATS
    if not path.is_file():
        return f'no {layout.STATS}'
    try:
        stats = json.loads(path.read_text(encoding='utf-8'))
    except ValueError as err:
        return f'{layout.STATS}: not JSON ({err})'
    wanted = [k for k, v in info['features'].items() if v.get('dtype') in ('float32', 'float64', 'video', 'image')]
    missing = [k for k in wanted if not {'mean', 'std', 'min', 'max'} <= set(stats.get(k) or {})]
    bad = [k for k in wanted if k not in missing and any(
        not all(math.isfinite(x) for x in np.asarray(stats[k][s], dtype=np.float64).reshape(-1))
        for s in ('mean', 'std', 'min', 'max'))]
    return '; '.join(([f'no mean/std/min/max for {", ".join(missing)}'] if missing else [])
                     + ([f'NaN in the stats of {", ".join(bad)}'] if bad else []))


def _lerobot_batch(root: Path, python: Path, timeout_s: float) -> tuple[str, dict[str, Any]]:
    try:
        run = subprocess.run([str(python), '-c', _PROBE, str(root), str(BATCH)], capture_output=True, text=True,
                             timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return f'LeRobotDataset took over {timeout_s:g} s to load it and draw a batch', {}
    except OSError as err:
        raise RobodataError(f'{python}: cannot run it to load the export with LeRobot: {err}') from None
    if run.returncode != 0:
        last = next((line for line in reversed(run.stderr.strip().splitlines()) if line.strip()), 'no message')
        return f'LeRobotDataset could not load it or draw a batch: {last.strip()}', {}
    try:
        report: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return f'LeRobotDataset printed no report: {run.stdout[-200:]!r}', {}
    if report.get('nan'):
        return f'the batch LeRobot drew holds NaN in {", ".join(report["nan"])}', report
    return '', report
