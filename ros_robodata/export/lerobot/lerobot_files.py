"""The files of one LeRobot export as they grow: data parquet files and one video file per camera, each closed and the
next begun past its size limit (between episodes only), and the rows and statistics of the episodes written."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ros_robodata.dataset import lerobot_layout as layout
from ros_robodata.errors import ExportError
from ros_robodata.export.lerobot.lerobot_options import LeRobotOptions
from ros_robodata.export.lerobot.lerobot_video import VideoFile


class ExportFiles:
    """The files of one export as they grow: data parquet files, one video file per camera, episode rows."""

    def __init__(self, root: Path, fps: int, options: LeRobotOptions) -> None:
        self.root, self.fps, self.options = root, fps, options
        self.data_file = 0
        self._data: pq.ParquetWriter | None = None
        self.videos: dict[str, VideoFile] = {}
        self.video_files: dict[str, int] = {}
        self.video_sizes: dict[str, tuple[int, int]] = {}
        self.episode_rows: list[dict[str, Any]] = []
        self.episode_stats: list[dict[str, dict[str, np.ndarray]]] = []
        self.index = 0
        self.encode_s = 0.0

    def data_path(self) -> Path:
        return self.root / layout.DATA_PATH.format(chunk_index=self.data_file // layout.CHUNKS_SIZE,
                                                   file_index=self.data_file)

    def write_rows(self, table: pa.Table) -> tuple[int, int]:
        if self._data is None:
            path = self.data_path()
            path.parent.mkdir(parents=True, exist_ok=True)
            self._data = pq.ParquetWriter(path, table.schema)
        self._data.write_table(table)
        where = (self.data_file // layout.CHUNKS_SIZE, self.data_file)
        return where

    def end_episode(self) -> None:
        """Roll the data and video files that are past their size limit (between episodes only)."""
        if self._data is not None and self.data_path().stat().st_size / 2**20 >= self.options.data_file_mb:
            self._data.close()
            self._data = None
            self.data_file += 1
        for camera, video in list(self.videos.items()):
            if video.size_mb >= self.options.video_file_mb:
                self._close_video(camera)
                self.video_files[camera] += 1

    def video(self, camera: str, width: int, height: int) -> VideoFile:
        if self.video_sizes.setdefault(camera, (width, height)) != (width, height):
            raise ExportError(f'camera {camera}: {width}x{height} frames here, {self.video_sizes[camera][0]}x'
                              f'{self.video_sizes[camera][1]} in earlier episodes: one video needs one size')
        if camera not in self.videos:
            index = self.video_files.setdefault(camera, 0)
            path = self.root / layout.VIDEO_PATH.format(video_key=layout.IMAGES_PREFIX + camera,
                                                        chunk_index=index // layout.CHUNKS_SIZE, file_index=index)
            self.videos[camera] = VideoFile(path, self.fps, width, height, self.options.codec, self.options.crf,
                                            self.options.gop)
        return self.videos[camera]

    def _close_video(self, camera: str) -> None:
        started = time.perf_counter()
        self.videos.pop(camera).close()
        self.encode_s += time.perf_counter() - started

    def close(self) -> None:
        if self._data is not None:
            self._data.close()
            self._data = None
        for camera in list(self.videos):
            self._close_video(camera)
