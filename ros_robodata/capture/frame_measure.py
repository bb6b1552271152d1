"""A camera's frames measured live for a take: the participant's distance and face orientation, on a thread of
its own, at most `rate_hz` frames a second and always the latest frame (frames are skipped, never queued), so a
1080p camera at 30 Hz costs a few measurements a second (bench/capture_conditions.py has the per-frame figure).

The node hands over each frame (a sensor_msgs/Image or CompressedImage, undecoded) and the camera's CameraInfo;
the readings come back through `results()` (or `drain_into` a TakeCheck), which the node calls on its own thread;
when a take stops, `settle` first lets the frame in hand be measured, so the take keeps its readings. With the
camera's lux calibration (the profile's `lux_calibration`) each frame measured also gives an estimated ILLUMINANCE
(with the camera's exposure and gain when the calibration needs them: `set_exposure_gain`), and each frame a CAMERA
reading (its resolution and the rate frames arrive at) for the protocol's camera requirement.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ros_robodata.bag.image import decode_image
from ros_robodata.capture.take_check import CAMERA, DISTANCE, ILLUMINANCE, ORIENTATION, TakeCheck, camera_value
from ros_robodata.capture.take_conditions import FaceDetector, Intrinsics, LuxCalibration, measure_frame
from ros_robodata.errors import RobodataError

__all__ = ['RATE_WINDOW', 'SETTLE_S', 'FrameMeasurer', 'FrameReading']

RATE_WINDOW = 30  # frames whose arrival times give the camera's rate
SETTLE_S = 2.0  # the longest a take's stop waits for its last frame to be measured (`settle`): one measurement
# takes 0.1 to 0.3 s on a loaded 2-core rig computer (640x480); the bound keeps a stuck detector from holding it


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
        calibration: the camera's lux calibration; None: no light from the camera ("not measured" without a meter).
    """

    def __init__(self, source: str, rate_hz: float = 2.0, detector: FaceDetector | None = None,
                 clock: Callable[[], float] = time.monotonic, calibration: LuxCalibration | None = None) -> None:
        if not rate_hz > 0:
            raise RobodataError(f'camera measurement rate must be above 0 per second, got {rate_hz}')
        self.source = source
        self.period_s = 1.0 / rate_hz
        self.clock = clock
        self._detector = detector
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)  # notified when the thread is done with a frame
        self._wake = threading.Event()
        self._hurry = threading.Event()  # set by `settle`: the next frame now, not after the rate's pause
        self._busy = False  # the thread holds a frame (decoding or measuring it)
        self._frame: Any = None
        self._intrinsics: Intrinsics | None = None
        self._info_note = 'no CameraInfo received yet'
        self._results: list[FrameReading] = []
        self._closed = False
        self._thread: threading.Thread | None = None
        self.measured = 0  # frames measured
        self.offered = 0  # frames offered
        self.calibration = calibration
        self._exposure_gain: tuple[float, float] | None = None
        self._arrivals: list[float] = []  # when the last frames were offered, for the camera's rate

    def set_exposure_gain(self, exposure: float, gain: float) -> None:
        """The camera's exposure and linear gain now (in the calibration's units), for an exposure_gain model."""
        with self._lock:
            self._exposure_gain = (exposure, gain)

    def rate_hz(self) -> float | None:
        """The rate frames arrived at over the last ones offered (None before two)."""
        with self._lock:
            times = list(self._arrivals)
        if len(times) < 2 or times[-1] <= times[0]:
            return None
        return (len(times) - 1) / (times[-1] - times[0])

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
            self._arrivals = [*self._arrivals[-(RATE_WINDOW - 1):], self.clock()]
        self._wake.set()

    def results(self) -> list[FrameReading]:
        """The readings since the last call, oldest first."""
        with self._lock:
            out, self._results = self._results, []
        return out

    def drain_into(self, check: TakeCheck) -> int:
        """Hand the readings since the last call to `check` (a value as a reading, a note as why there is none:
        a frame's note for both distance and orientation); how many there were."""
        readings = self.results()
        for reading in readings:
            if reading.value is not None:
                check.add(reading.kind, reading.value, self.source, reading.at)
            elif reading.kind:
                check.note(reading.kind, reading.note)
            else:
                for kind in (DISTANCE, ORIENTATION):
                    check.note(kind, reading.note)
        return len(readings)

    def settle(self, timeout_s: float = SETTLE_S) -> bool:
        """Wait until the frames offered so far are measured (the latest one now, without the rate's pause), at
        most `timeout_s`: a take stopped while its frame is queued or being measured keeps that frame's readings,
        which on a loaded computer may be the take's only ones. Call it from the thread that offers frames (none
        arrive meanwhile); True when nothing is left in hand, False on the timeout or without a thread."""
        if self._thread is None or not self._thread.is_alive():
            return self._frame is None
        self._hurry.set()
        self._wake.set()
        try:
            with self._idle:
                return self._idle.wait_for(lambda: self._closed or (self._frame is None and not self._busy),
                                           timeout_s)
        finally:
            self._hurry.clear()

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
            exposure, gain = self._exposure_gain or (None, None)
            if self.calibration is not None and self.calibration.model == 'brightness':
                exposure, gain = 1.0, 1.0
            try:
                found = measure_frame(bgr, intrinsics, calibration=self.calibration, exposure=exposure, gain=gain,
                                      detector=self._detector)
            except RobodataError as err:
                out = [FrameReading('', None, now, f'{self.source}: {err}')]
            else:
                note = '; '.join(n for n in found.notes if not n.startswith('lux'))
                out = [FrameReading(DISTANCE, found.distance_m, now, '' if found.distance_m is not None else note),
                       FrameReading(ORIENTATION, found.orientation, now,
                                    '' if found.orientation is not None else note)]
                if self.calibration is not None:
                    lux_note = '; '.join(n for n in found.notes if n.startswith('lux'))
                    out.append(FrameReading(ILLUMINANCE, found.lux, now, lux_note))
            out.append(FrameReading(CAMERA, camera_value(bgr.shape[1], bgr.shape[0], self.rate_hz()), now))
        with self._lock:
            self._results.extend(out)
            self.measured += 1
        return out

    def start(self, on_thread: Callable[[], None] | None = None) -> None:
        """Measure on a daemon thread until `close`; `on_thread` runs first on it (the node lowers its priority:
        face detection yields the CPU to a recorder's intake beside it, as the monitor's frame worker does)."""
        self._thread = threading.Thread(target=self._run, args=(on_thread,), name='frame-measure', daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._closed = True
        self._wake.set()
        self._hurry.set()
        with self._idle:
            self._idle.notify_all()
        if self._thread is not None:
            self._thread.join(5.0)

    def _run(self, on_thread: Callable[[], None] | None) -> None:
        if on_thread is not None:
            on_thread()
        while not self._closed:
            self._wake.wait()
            self._wake.clear()
            with self._lock:
                frame, self._frame = self._frame, None
                self._busy = frame is not None and not self._closed
            if not self._busy:
                continue
            began = self.clock()
            try:
                self._decode_and_measure(frame, began)
            finally:
                with self._idle:
                    self._busy = False
                    self._idle.notify_all()
            rest = self.period_s - (self.clock() - began)
            if rest > 0:  # frames offered meanwhile replace each other: only the latest is measured
                self._hurry.wait(rest)

    def _decode_and_measure(self, frame: Any, began: float) -> None:
        try:
            bgr = decode_image(frame, 'bgr')
        except RobodataError as err:  # BagError: an encoding that is not an image
            with self._lock:
                self._results.append(FrameReading('', None, began, f'{self.source}: {err}'))
            return
        self.measure(bgr)
