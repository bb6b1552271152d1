"""A camera's frames into LeRobot's video files with PyAV: several episodes one after another in one MP4, each frame
at pts = its index in the file over a 1/fps time base, so frame k of an episode that starts at from_timestamp
decodes at exactly from_timestamp + k / fps (LeRobot seeks by that and checks it to 1e-4 s). A file is closed and
the next begun once it is past the size limit, between episodes only."""

from __future__ import annotations

import contextlib
from fractions import Fraction
from pathlib import Path
from typing import cast

import av
import numpy as np
from av.video.stream import VideoStream

from ros_robodata.errors import ExportError
from ros_robodata.files import write_cause

CODECS = {'h264': 'libx264', 'av1': 'libsvtav1'}


class VideoFile:
    """One open MP4 of one camera; `frames` counts what it holds so far."""

    def __init__(self, path: Path, fps: int, width: int, height: int, codec: str, crf: int, gop: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.frames = 0
        self.bytes = 0  # of the packets muxed so far: the file on disk lags behind the muxer's buffer
        # Through a Python file: a write that fails (a full disk, a read-only mount) is an OSError here, where
        # FFmpeg's own file layer crashed the process on a full disk while closing the file.
        try:
            self._file = path.open('wb')
        except OSError as err:
            raise ExportError(f'{path}: cannot write: {write_cause(err)}') from None
        try:
            self._container = av.open(self._file, 'w', format='mp4')
            # CODECS are video codecs; PyAV's types know that only of a literal codec name
            self._stream = cast(VideoStream, self._container.add_stream(CODECS[codec], rate=fps))
        except (av.FFmpegError, KeyError) as err:
            self._file.close()
            raise ExportError(f'{path}: cannot start a {codec} video: {err}') from None
        self._stream.width, self._stream.height = width, height
        self._stream.pix_fmt = 'yuv420p'
        self._stream.codec_context.time_base = Fraction(1, fps)
        self._stream.options = {'crf': str(crf), 'g': str(gop)}

    def add(self, rgb: np.ndarray) -> None:
        frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format='rgb24')
        frame.pts = self.frames
        try:
            for packet in self._stream.encode(frame):
                self.bytes += packet.size
                self._container.mux(packet)
        except (OSError, av.FFmpegError) as err:
            self._abandon()
            raise ExportError(f'{self.path}: cannot write: {write_cause(err)}') from None
        self.frames += 1

    def close(self) -> None:
        if self._file.closed:
            return
        try:
            for packet in self._stream.encode():
                self._container.mux(packet)
            self._container.close()
            self._file.close()
        except (OSError, av.FFmpegError) as err:
            self._abandon()
            raise ExportError(f'{self.path}: cannot write: {write_cause(err)}') from None

    def _abandon(self) -> None:
        """A write failed: the file is let go of without FFmpeg finishing it (the export's staging goes)."""
        with contextlib.suppress(OSError, ValueError):
            self._file.close()

    @property
    def size_mb(self) -> float:
        return self.bytes / 2**20


def even_size(width: int, height: int) -> tuple[int, int]:
    """yuv420p needs even sides: an odd last row or column is cut."""
    return width - width % 2, height - height % 2
