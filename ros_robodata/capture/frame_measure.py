"""A camera's frames measured live for a take: the participant's distance and face orientation, on a thread of
its own, at most `rate_hz` frames a second and always the latest frame (frames are skipped, never queued), so a
1080p camera at 30 Hz costs a few measurements a second (bench/capture_conditions.py has the per-frame figure).

The node hands over each frame (a sensor_msgs/Image or CompressedImage, undecoded) and the camera's CameraInfo;
the readings come back through `results()`, which the node drains on its own thread into a TakeCheck.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ros_robodata.bag.image import decode_image
from ros_robodata.capture.take_check import DISTANCE, ORIENTATION
from ros_robodata.capture.take_conditions import FaceDetector, Intrinsics, measure_frame
from ros_robodata.errors import RobodataError

__all__ = ['FrameMeasurer', 'FrameReading']


@dataclass(frozen=True)
class FrameReading:
    """One reading from a frame: DISTANCE (metres) or ORIENTATION (a face orientation), or a note (kind '' for
    the frame, or the kind not measured) saying why there is none."""

    kind: str
    value: float | str | None
    at: float
    note: str = ''


class FrameMeasurer:
    """Measures the latest frame offered, at most `rate_hz` a second, on a daemon thread (`start`).

    Args:
        source: the camera, as recorded with the take ('/camera/image_raw (faces)').
        rate_hz: the most frames measured a second.
        detector: the face detector; a new one unless given (YuNet, one per thread of work).
        clock: seconds on a steady clock, the one the node's TakeCheck uses.
    """

    def __init__(self, source: str, rate_hz: float = 2.0, detector: FaceDetector | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not rate_hz > 0:
            raise RobodataError(f'camera measurement rate must be above 0 per second, got {rate_hz}')
        self.source = source
        self.period_s = 1.0 / rate_hz
        self.clock = clock
        self._detector = detector
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._frame: Any = None
        self._intrinsics: Intrinsics | None = None
        self._info_note = 'no CameraInfo received yet'
        self._results: list[FrameReading] = []
        self._closed = False
        self._thread: threading.Thread | None = None
        self.measured = 0  # frames measured
        self.offered = 0  # frames offered

    def set_camera_info(self, k: Sequence[float], width: int, height: int) -> None:
        """The camera's intrinsics from sensor_msgs/CameraInfo (K, width, height); an uncalibrated one (K all zeros)
        leaves the distance and orientation not measured, with why."""
        try:
            intrinsics, note = Intrinsics.from_camera_info(k, width, height), ''
        except RobodataError as err:
            intrinsics, note = None, str(err)
        with self._lock:
            self._intrinsics, self._info_note = intrinsics, note

    def offer(self, frame: Any) -> None:
        """A new frame (kept until measured or replaced by a newer one)."""
        with self._lock:
            self._frame = frame
            self.offered += 1
        self._wake.set()

    def results(self) -> list[FrameReading]:
        """The readings since the last call, oldest first."""
        with self._lock:
            out, self._results = self._results, []
        return out

    def measure(self, bgr: np.ndarray) -> list[FrameReading]:
        """One frame's readings (what the thread does with each frame it takes), also kept for `results`.

        Args:
            bgr: the frame, HxWx3 uint8 BGR.
        """
        now = self.clock()
        with self._lock:
            intrinsics, info_note = self._intrinsics, self._info_note
        if intrinsics is None:
            out = [FrameReading('', None, now, f'{self.source}: {info_note}')]
        else:
            if self._detector is None:
                self._detector = FaceDetector()
            try:
                found = measure_frame(bgr, intrinsics, detector=self._detector)
            except RobodataError as err:
                out = [FrameReading('', None, now, f'{self.source}: {err}')]
            else:
                note = '; '.join(found.notes)
                out = [FrameReading(DISTANCE, found.distance_m, now, '' if found.distance_m is not None else note),
                       FrameReading(ORIENTATION, found.orientation, now,
                                    '' if found.orientation is not None else note)]
        with self._lock:
            self._results.extend(out)
            self.measured += 1
        return out

    def start(self) -> None:
        """Measure on a daemon thread until `close`."""
        self._thread = threading.Thread(target=self._run, name='frame-measure', daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._closed = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(5.0)

    def _run(self) -> None:
        while not self._closed:
            self._wake.wait()
            self._wake.clear()
            with self._lock:
                frame, self._frame = self._frame, None
            if frame is None or self._closed:
                continue
            began = self.clock()
            try:
                bgr = decode_image(frame, 'bgr')
            except RobodataError as err:  # BagError: an encoding that is not an image
                with self._lock:
                    self._results.append(FrameReading('', None, began, f'{self.source}: {err}'))
                continue
            self.measure(bgr)
            rest = self.period_s - (self.clock() - began)
            if rest > 0:
                time.sleep(rest)  # frames offered meanwhile replace each other: only the latest is measured
