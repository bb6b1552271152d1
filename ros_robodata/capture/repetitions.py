"""A gesture take's repetitions (issue 36, part 4): how many times the participant repeated the gesture, and how
regular the intervals between repetitions were, from the motion in a region around them.

A gesture protocol asks for a gesture repeated `count` times, `interval_s` apart (config/protocols/hri_gestures.yaml).
The motion energy of a frame is the fraction of the region's pixels that changed since the frame before (OpenCV
frame differencing on blurred grey frames, a change over DIFF_LEVEL grey levels: camera noise stays under it).
The region is around the participant: their face as YuNet finds it, widened to where arms reach (REACH_WIDTHS
face widths either side, REACH_BELOW face heights below); the whole frame when no face is found (said in a note).
A repetition is a burst of motion: energy above ACTIVE of the take's highest (smoothed over SMOOTH_S), bursts closer
than MERGE_S joined (a wave's out and back is one repetition, not two). The intervals are between the bursts'
onsets; their coefficient of variation (standard deviation over mean) above IRREGULAR_CV flags the take as
irregular. A take's period is also read from the energy's autocorrelation (its highest peak after lag 0), a check
that does not depend on where bursts are cut.

Numpy and OpenCV only: frames in, figures out; capture/take_check.py puts them into the take's record.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np

from ros_robodata.capture.protocol import Repetition
from ros_robodata.capture.take_conditions import FaceDetector, detect_faces
from ros_robodata.capture.take_record import Measurement
from ros_robodata.errors import RobodataError

__all__ = ['ACTIVE', 'DIFF_LEVEL', 'IRREGULAR_CV', 'MERGE_S', 'REPETITIONS', 'Repetitions', 'count_repetitions',
           'gesture_region', 'motion_energy', 'repetitions_entry']

REPETITIONS = 'repetitions'  # its key in a take's measured conditions
DIFF_LEVEL = 25  # grey levels: a pixel changed by more is motion (sensor noise is a few levels)
ACTIVE = 0.3  # a frame whose smoothed energy is over this fraction of the take's highest is part of a burst
SMOOTH_S = 0.1  # the energy smoothed over this long (a frame or two of a dropped or repeated frame)
MERGE_S = 0.4  # bursts closer than this are one repetition (the stop at the turn of a wave)
IRREGULAR_CV = 0.25  # intervals whose coefficient of variation is over this are irregular: at 2 s intervals, one
# standard deviation of 0.5 s, a repetition visibly early or late (a metronome-paced participant stays under 0.1)
REACH_WIDTHS = 5.0  # the region reaches this many face widths left and right of the face: an arm stretched out
# sideways ends about 0.65 m (5 widths of a 0.13 m face) beyond the face's side
REACH_BELOW = 7.0  # and this many face heights below its top (one above): a hand hanging at the side is about
# 0.85 m below the top of the head, 6 heights of YuNet's 0.14 m box; one more for a lowered arm's swing


@dataclass(frozen=True)
class Repetitions:
    """What a gesture take's motion shows."""

    count: int
    onsets_s: tuple[float, ...]
    intervals_s: tuple[float, ...]
    cv: float | None  # coefficient of variation of the intervals; None under two intervals
    period_s: float | None  # from the energy's autocorrelation; None when it shows no repetition
    region: tuple[int, int, int, int]  # x, y, width, height
    notes: tuple[str, ...] = field(default=())

    @property
    def irregular(self) -> bool:
        return self.cv is not None and self.cv > IRREGULAR_CV


def gesture_region(bgr: np.ndarray, detector: FaceDetector | None = None) -> tuple[tuple[int, int, int, int], str]:
    """The region a gesture is looked for in: around the largest face, else the whole frame (with why).

    Args:
        bgr: a frame of the take, HxWx3 uint8 BGR.
        detector: the face detector; the module's unless given.
    """
    height, width = bgr.shape[:2]
    faces = detect_faces(bgr, detector)
    if not faces:
        return (0, 0, width, height), 'no face found: motion measured over the whole frame'
    x, y, w, h = faces[0].box
    x0, x1 = max(0, int(x - REACH_WIDTHS * w)), min(width, int(x + w + REACH_WIDTHS * w))
    y0, y1 = max(0, int(y - h)), min(height, int(y + REACH_BELOW * h))
    return (x0, y0, x1 - x0, y1 - y0), ''


def _grey(bgr: np.ndarray, region: tuple[int, int, int, int]) -> np.ndarray:
    x, y, w, h = region
    crop = bgr[y:y + h, x:x + w]
    grey = crop if crop.ndim == 2 else cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY)
    return cv2.GaussianBlur(grey, (5, 5), 0)


def motion_energy(frames: Iterable[np.ndarray], region: tuple[int, int, int, int]) -> np.ndarray:
    """Per frame, the fraction of the region's pixels that changed by over DIFF_LEVEL since the frame before (0 for
    the first).

    Args:
        frames: the take's frames in order, HxWx3 uint8 BGR (or grey), all one size.
        region: x, y, width, height.
    """
    energy: list[float] = []
    previous: np.ndarray | None = None
    for frame in frames:
        grey = _grey(frame, region)
        if previous is None or previous.shape != grey.shape:
            energy.append(0.0)
        else:
            energy.append(float(np.count_nonzero(cv2.absdiff(grey, previous) > DIFF_LEVEL)) / grey.size)
        previous = grey
    return np.asarray(energy, dtype=float)


def _period(energy: np.ndarray, fps: float) -> float | None:
    """The lag of the energy's highest autocorrelation peak past lag 0 (seconds), None when there is none."""
    x = energy - energy.mean()
    if not x.any():
        return None
    ac = np.correlate(x, x, mode='full')[len(x) - 1:]
    ac = ac / ac[0]
    start = max(1, round(MERGE_S * fps))
    peaks = [i for i in range(start, len(ac) - 1) if ac[i] >= ac[i - 1] and ac[i] > ac[i + 1] and ac[i] > 0.2]
    if not peaks:
        return None
    return max(peaks, key=lambda i: ac[i]) / fps


def count_repetitions(energy: np.ndarray, fps: float, region: tuple[int, int, int, int] = (0, 0, 0, 0),
                      notes: tuple[str, ...] = ()) -> Repetitions:
    """The repetitions in a take's motion energy.

    Args:
        energy: per frame, from `motion_energy`.
        fps: the frames' rate, per second.
        region: the region measured (recorded with the result).
        notes: what to say with it (the region's note).

    Raises:
        RobodataError: a rate that is not positive.
    """
    if not fps > 0:
        raise RobodataError(f'frame rate must be above 0, got {fps}')
    size = max(1, round(SMOOTH_S * fps))
    smooth = np.convolve(energy, np.ones(size) / size, mode='same') if len(energy) else energy
    if not len(smooth) or smooth.max() <= 0:
        return Repetitions(0, (), (), None, None, region, (*notes, 'no motion in the region'))
    active = smooth > ACTIVE * smooth.max()
    bursts: list[list[int]] = []  # [first, last] frame of each burst
    merge = MERGE_S * fps
    for i in np.flatnonzero(active):
        if bursts and i - bursts[-1][1] <= merge:
            bursts[-1][1] = int(i)
        else:
            bursts.append([int(i), int(i)])
    onsets = tuple(round(b[0] / fps, 3) for b in bursts)
    intervals = tuple(round(b - a, 3) for a, b in itertools.pairwise(onsets))
    cv = statistics.pstdev(intervals) / statistics.mean(intervals) if len(intervals) >= 2 else None
    return Repetitions(len(bursts), onsets, intervals, None if cv is None else round(cv, 3), _period(energy, fps),
                       region, notes)


def repetitions_entry(found: Repetitions, wanted: Repetition | None) -> tuple[Measurement, dict[str, Any]]:
    """A take's repetitions as capture.json keeps them (the count, a verdict) and as episode.yaml's
    `capture.measured.repetitions` shows them: the count, onsets, intervals, their coefficient of variation, the
    period, and 'outside' with why when irregular or fewer than the protocol asks.

    Args:
        found: from `count_repetitions`.
        wanted: the protocol's `repetition` (count and interval), None when it sets none.
    """
    problems = []
    if found.irregular:
        problems.append(f'irregular: intervals vary by {found.cv:.2f} of their mean, over {IRREGULAR_CV}')
    if wanted is not None and found.count < wanted.count:
        problems.append(f'{found.count} repetitions, the protocol asks {wanted.count}')
    verdict = 'outside' if problems else 'within'
    shown: dict[str, Any] = {'value': found.count, 'onsets_s': list(found.onsets_s),
                             'intervals_s': list(found.intervals_s), 'cv': found.cv, 'period_s': found.period_s,
                             'verdict': verdict}
    if wanted is not None:
        shown['required'] = f'{wanted.count} every {wanted.interval_s:g} s'
    if problems:
        shown['why'] = '; '.join(problems)
    if found.notes:
        shown['notes'] = list(found.notes)
    return {'value': found.count, 'verdict': verdict}, shown
