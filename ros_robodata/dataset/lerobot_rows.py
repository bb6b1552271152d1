"""A LeRobot data file's rows as numpy columns: episode, frame, time, state, action, task, read with pyarrow in
one go rather than a Python dict a row, so reading 100 episodes costs milliseconds (`robodata import` and the
in-place analyses of a LeRobot folder read the same way, so they see the same numbers).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from ros_robodata.errors import RobodataError


@dataclass
class Rows:
    """Some rows of a LeRobot dataset, in file order (`frame` and `task` None when the file has no such column,
    `action` None without one)."""

    episode: np.ndarray
    frame: np.ndarray | None
    timestamp: np.ndarray
    state: np.ndarray
    action: np.ndarray | None
    task: np.ndarray | None

    def take(self, picked: np.ndarray) -> Rows:
        """The rows at `picked` (indices), in that order."""
        return Rows(self.episode[picked], None if self.frame is None else self.frame[picked], self.timestamp[picked],
                    self.state[picked], None if self.action is None else self.action[picked],
                    None if self.task is None else self.task[picked])

    def recorded_order(self) -> np.ndarray:
        """Indices in the order the frames were recorded (frame_index, then timestamp), stable: a clock that stepped
        back stays a stamp going backwards for the timing checks to say, not a silent reshuffle."""
        if self.frame is None:
            return np.argsort(self.timestamp, kind='stable')
        return np.lexsort((self.timestamp, self.frame))


def _ints(table: pa.Table, name: str) -> np.ndarray | None:
    if name not in table.column_names:
        return None
    column = table.column(name)
    if column.null_count:
        raise ValueError(f'column {name} has {column.null_count} empty value(s)')
    return np.asarray(_numpy(column), dtype=np.int64)


# Arrow's plain number types and their numpy twins: values read from their buffer as they lie.
_PLAIN = {pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64,
          pa.uint8(): np.uint8, pa.uint16(): np.uint16, pa.uint32(): np.uint32, pa.uint64(): np.uint64,
          pa.float32(): np.float32, pa.float64(): np.float64}


def _numpy(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The values of a column (or array) as numpy, copied: read from the buffer where they are plain numbers with
    no empty ones (pyarrow's own to_numpy loads pandas, 0.2 s a command), by to_numpy otherwise."""
    array = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    plain = _PLAIN.get(array.type)
    if plain is None or array.null_count:
        return np.array(array.to_numpy(zero_copy_only=False))
    dtype = np.dtype(plain)
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array),
                         offset=array.offset * dtype.itemsize).copy()


def _vectors(table: pa.Table, name: str) -> np.ndarray | None:
    """A list column (one vector a row) as an (n, width) float64 array; None when the first row is empty (as the
    row-by-row reader had it: no such feature in this file)."""
    column = table.column(name).combine_chunks()
    if len(column) == 0:
        return np.zeros((0, 0))
    if not column[0].is_valid:
        return None
    if column.null_count:
        raise ValueError(f'column {name} has {column.null_count} empty row(s)')
    # The rows' values are cut from the child array by hand: list_flatten / value_lengths load pyarrow.compute
    # (~55 ms of every command's start).
    if pa.types.is_fixed_size_list(column.type):
        width = column.type.list_size
        first, last = column.offset * width, (column.offset + len(column)) * width
    elif pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
        kind = np.int64 if pa.types.is_large_list(column.type) else np.int32
        offsets = np.frombuffer(column.buffers()[1], dtype=kind, count=len(column) + 1,
                                offset=column.offset * np.dtype(kind).itemsize)
        lengths = np.diff(offsets)
        width = int(lengths[0])
        if (lengths != width).any():
            raise ValueError(f'column {name}: rows of unequal length ({width} and {int(lengths[lengths != width][0])})')
        first, last = int(offsets[0]), int(offsets[-1])
    else:  # a scalar feature (shape [1] stored plain): one value a row
        return np.asarray(_numpy(column), dtype=np.float64).reshape(-1, 1)
    values = _numpy(column.values.slice(first, last - first))
    return np.asarray(values, dtype=np.float64).reshape(len(column), width)


def read_rows(table: pa.Table, path: Path, state: str, action: str) -> Rows:
    """The columns of one data file that the import and the checks read.

    Args:
        table: the file, read.
        path: where it is, for messages.
        state: the joint-state feature's column.
        action: the command feature's column (absent: no action).

    Raises:
        RobodataError: a column the rows cannot do without is missing.
        ValueError: a column holds empty values or rows of unequal length (a malformed dataset).
    """
    if missing := [c for c in ('episode_index', 'timestamp', state) if c not in table.column_names]:
        raise RobodataError(f'{path}: no column {", ".join(missing)}')
    episode = _ints(table, 'episode_index')
    assert episode is not None
    timestamp = np.asarray(_numpy(table.column('timestamp')), dtype=np.float64)
    state_values = _vectors(table, state)
    if state_values is None:
        raise ValueError(f'{path}: column {state} is empty in its first row')
    return Rows(episode, _ints(table, 'frame_index'), timestamp, state_values,
                _vectors(table, action) if action in table.column_names else None, _ints(table, 'task_index'))


def joined(parts: list[Rows]) -> Rows:
    """Rows of several files as one, in file order.

    Raises:
        ValueError: the files disagree on a vector's width.
    """
    if len(parts) == 1:
        return parts[0]

    def cat(arrays: list[np.ndarray | None]) -> np.ndarray | None:
        return None if any(a is None for a in arrays) else np.concatenate(arrays)  # type: ignore[arg-type]

    return Rows(np.concatenate([p.episode for p in parts]), cat([p.frame for p in parts]),
                np.concatenate([p.timestamp for p in parts]), np.concatenate([p.state for p in parts]),
                cat([p.action for p in parts]), cat([p.task for p in parts]))
