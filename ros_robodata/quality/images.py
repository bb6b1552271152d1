"""Streaming image-quality checks of one camera: blur, bad exposure, a frozen feed, a covered lens.

A demonstration recorded through a smudged, dark, stuck or covered camera teaches a policy nothing, and it is
cheap to notice while recording but expensive to notice after training. Every check runs on a small grayscale
copy of the frame (``analysis_width`` wide), so a live monitor can afford it on every frame of every camera.

Blur and occlusion are judged against the camera's own history rather than fixed numbers, because what is
"sharp" or "textured" depends on the view: a wrist camera looking at a plain table has a fraction of the
texture of a scene camera looking at a cluttered shelf. Frames that fired a check do not enter that history,
so a long blurred stretch does not lower the bar it is measured against.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, insort
from collections import deque
from dataclasses import dataclass
from statistics import median

import cv2
import numpy as np

from ros_robodata.bag.image import to_uint8
from ros_robodata.quality.findings import ERROR, WARN, Finding, Ranges

BLUR, DARK, OVEREXPOSED = 'image.blur', 'image.dark', 'image.overexposed'
FROZEN, OCCLUDED = 'image.frozen', 'image.occluded'
CHECKS = (BLUR, DARK, OVEREXPOSED, FROZEN, OCCLUDED)

HISTORY = 150  # frames in the running medians (5 s at 30 Hz)
WARMUP = 10  # good frames before the relative checks (derived blur, occlusion) judge anything
# A frame whose sharpness fell but whose acutance (Laplacian over gradient energy) kept half its usual value
# shows fewer edges, not blurred ones (a 21 px blur takes acutance to ~3%; fingers closing over the view to ~70%).
ACUTANCE_RATIO = 0.5
SATURATED = 250  # a gray level at or above this is saturated
SATURATED_SHARE = 0.5  # this share of saturated pixels is overexposed whatever the mean
GRID = 8  # the frame is cut into GRID x GRID blocks for the occlusion check
# A block is flat (no texture) when its gray-level standard deviation is below this floor and below this
# fraction of the camera's typical block. Gray std, not the Laplacian, because blur removes fine detail
# but keeps the light and dark areas inside a block, while a hand or a cap over the lens leaves neither.
FLAT_STD = 3.0
FLAT_FRACTION = 0.1
JOIN_NS = 500_000_000


@dataclass(frozen=True)
class ImageLimits:
    """Limits of the image checks; the defaults suit 8-bit cameras at 10..60 Hz."""

    blur_threshold: float | None = None  # absolute sharpness below which a frame is blurred; None: relative
    blur_ratio: float = 0.35  # derived mode: blurred below blur_ratio x the camera's running median sharpness
    dark_mean: float = 25.0  # mean gray level (0..255) below this: too dark
    bright_mean: float = 230.0  # above this: overexposed (also: >= 50% of pixels saturated at >= 250)
    frozen_frames: int = 3  # this many identical consecutive frames (after the first) = frozen camera
    occluded_share: float = 0.8  # share of the frame with (almost) no texture = lens covered / occluded
    analysis_width: int = 160  # frames are downscaled to this width (keeping aspect) before any check

    def __post_init__(self) -> None:
        if self.blur_threshold is not None and not self.blur_threshold > 0:
            raise ValueError(f'blur_threshold must be positive or None, got {self.blur_threshold}')
        if not 0 < self.blur_ratio < 1:
            raise ValueError(f'blur_ratio must be between 0 and 1, got {self.blur_ratio}')
        if not 0 <= self.dark_mean < self.bright_mean <= 255:
            raise ValueError(f'need 0 <= dark_mean < bright_mean <= 255, got {self.dark_mean}, {self.bright_mean}')
        if self.frozen_frames < 1:
            raise ValueError(f'frozen_frames must be at least 1, got {self.frozen_frames}')
        if not 0 < self.occluded_share <= 1:
            raise ValueError(f'occluded_share must be in (0, 1], got {self.occluded_share}')
        if self.analysis_width < GRID:
            raise ValueError(f'analysis_width must be at least {GRID}, got {self.analysis_width}')


def full_gray(image: np.ndarray) -> np.ndarray:
    """The frame as a full-size gray image in its own dtype, in a new array the caller cannot change.

    Accepts HxW, HxWx1, HxWx3 (RGB) and HxWx4 (RGBA) in uint8 or uint16.
    """
    frame = np.asarray(image)
    if frame.dtype not in (np.uint8, np.uint16):
        raise ValueError(f'image: dtype {frame.dtype} is not supported, expected uint8 or uint16')
    if frame.ndim == 3 and frame.shape[2] == 1:
        frame = frame[:, :, 0]
    if frame.ndim == 3 and frame.shape[2] in (3, 4):
        gray = cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY if frame.shape[2] == 3 else cv2.COLOR_RGBA2GRAY)
    elif frame.ndim == 2:
        gray = np.array(frame, copy=True, order='C')
    else:
        raise ValueError(f'image: shape {frame.shape} is not HxW, HxWx1, HxWx3 or HxWx4')
    if gray.size == 0:
        raise ValueError(f'image: empty frame {frame.shape}')
    return gray


def shrink(gray: np.ndarray, width: int) -> np.ndarray:
    """A gray frame at most `width` wide (aspect kept, area-averaged) in 8 bit; uint16 is scaled by its full
    range. This small copy is what the sharpness, exposure and texture checks look at."""
    height, full_width = gray.shape
    if full_width > width:
        gray = cv2.resize(gray, (width, max(1, round(height * width / full_width))), interpolation=cv2.INTER_AREA)
    return to_uint8(gray, full_range=True) if gray.dtype == np.uint16 else gray


def analysis_gray(image: np.ndarray, width: int) -> np.ndarray:
    """The small 8-bit gray copy of a frame that the checks look at."""
    return shrink(full_gray(image), width)


def block_std(gray: np.ndarray, grid: int = GRID) -> np.ndarray:
    """Gray-level standard deviation of each block of a grid x grid split (edge rows/columns that do not fill
    a block are left out), as a flat array."""
    n = max(1, min(grid, gray.shape[0], gray.shape[1]))
    bh, bw = gray.shape[0] // n, gray.shape[1] // n
    values = gray[: bh * n, : bw * n].astype(np.float64)
    mean = cv2.resize(values, (n, n), interpolation=cv2.INTER_AREA)
    square = cv2.resize(values * values, (n, n), interpolation=cv2.INTER_AREA)
    return np.sqrt(np.maximum(square - mean * mean, 0.0)).ravel()


class _History:
    """The last HISTORY values and their median, kept sorted as they come and go: statistics.median's answer
    without sorting 150 values for every frame (pure Python, it held the GIL the read needs beside it)."""

    def __init__(self) -> None:
        self._values: deque[float] = deque(maxlen=HISTORY)
        self._sorted: list[float] = []
        self._nan = 0

    def append(self, value: float) -> None:
        if len(self._values) == HISTORY:
            old = self._values[0]
            if old != old:
                self._nan -= 1
            else:
                del self._sorted[bisect_left(self._sorted, old)]
        self._values.append(value)
        if value != value:
            self._nan += 1
        else:
            insort(self._sorted, value)

    def __len__(self) -> int:
        return len(self._values)

    def median(self) -> float:
        if self._nan:  # NaN has no place in a sorted list: as statistics.median sees the values
            return float(median(self._values))
        ordered, n = self._sorted, len(self._sorted)
        middle = n // 2
        return float(ordered[middle] if n % 2 else (ordered[middle - 1] + ordered[middle]) / 2)


class CameraWatch:
    """Streaming checks of one camera. Feed frames in stamp order; ask for findings at the end (or any time)."""

    def __init__(self, topic: str, name: str, limits: ImageLimits = ImageLimits()) -> None:
        self.topic, self.name, self.limits = topic, name, limits
        self._ranges = {check: Ranges(join_ns=JOIN_NS) for check in CHECKS}
        self._sharp_history = _History()  # of good frames only
        self._acutance_history = _History()  # Laplacian / gradient energy, good frames
        self._texture_history = _History()  # median block std of good frames
        self._sharpness = array('f')  # every frame, for stats()
        self._brightness = array('f')
        self._previous: np.ndarray | None = None
        self._run = 0  # frames in a row identical to the one before
        self._pending: list[int] = []  # stamps of a run too short (yet) to call frozen
        self._blur_limit_at_worst = float('nan')
        self._blur_median_at_worst = float('nan')
        self._worst_saturated = 0.0

    @property
    def frames(self) -> int:
        """Frames seen."""
        return len(self._sharpness)

    def blur_limit(self) -> float | None:
        """The sharpness below which the next frame counts as blurred; None while the camera's own typical
        sharpness is not yet known (derived mode, fewer than WARMUP good frames)."""
        if self.limits.blur_threshold is not None:
            return self.limits.blur_threshold
        if len(self._sharp_history) < WARMUP:
            return None
        return self.limits.blur_ratio * self._sharp_history.median()

    def _flat_limit(self) -> float | None:
        """Block gray std below which a block counts as flat; None until the camera's texture is known."""
        if len(self._texture_history) < WARMUP:
            return None
        return min(FLAT_STD, FLAT_FRACTION * self._texture_history.median())

    def add(self, stamp_ns: int, image: np.ndarray, *, handed_over: bool = False) -> list[str]:
        """One frame (HxW or HxWx3 RGB, uint8 or uint16); the checks that fired on it, for a live monitor.
        `handed_over`: the frame is a full-size 2-D gray array the caller will not touch again (the offline
        reader's own), kept as it is rather than copied.

        Exposure is judged first: a dark or overexposed frame has lost its texture to exposure, so it is not
        also reported as blurred or occluded. An occluded frame is not also reported as blurred.
        """
        lim = self.limits
        full = image if handed_over and image.ndim == 2 and image.dtype == np.uint8 and image.size else full_gray(image)
        gray = shrink(full, lim.analysis_width)
        fired: list[str] = []

        brightness = float(cv2.mean(gray)[0])
        saturated = np.count_nonzero(gray >= SATURATED) / gray.size
        sharpness = float(cv2.meanStdDev(cv2.Laplacian(gray, cv2.CV_64F))[1][0, 0] ** 2)
        # Sharpness also falls when the view holds fewer edges (fingers closing over the wrist camera's view);
        # blur takes the second derivative down much more than the first, so their ratio tells the two apart.
        gradient = float(np.mean(cv2.Sobel(gray, cv2.CV_32F, 1, 0) ** 2 + cv2.Sobel(gray, cv2.CV_32F, 0, 1) ** 2))
        acutance = sharpness / gradient if gradient > 0 else 0.0
        self._sharpness.append(sharpness)
        self._brightness.append(brightness)

        # Exact equality of the full-size frame: a real sensor's noise makes every new frame differ somewhere,
        # and a subpixel motion that the small copy averages away is still a new frame.
        previous, self._previous = self._previous, full
        repeat = previous is not None and previous.shape == full.shape and np.array_equal(previous, full)
        if repeat:
            self._run += 1
            if self._run < lim.frozen_frames:
                self._pending.append(stamp_ns)
            else:
                # The run is known frozen only now; it began at its first repeated frame.
                for stamp in self._pending:
                    self._ranges[FROZEN].add(stamp, self._run)
                self._pending.clear()
                self._ranges[FROZEN].add(stamp_ns, self._run)
                fired.append(FROZEN)
        else:
            self._run = 0
            self._pending.clear()

        exposure_ok = True
        if brightness < lim.dark_mean:
            self._ranges[DARK].add(stamp_ns, brightness, worse='min')
            fired.append(DARK)
            exposure_ok = False
        if brightness > lim.bright_mean or saturated >= SATURATED_SHARE:
            self._ranges[OVEREXPOSED].add(stamp_ns, brightness)
            self._worst_saturated = max(self._worst_saturated, saturated)
            fired.append(OVEREXPOSED)
            exposure_ok = False

        blocks = block_std(gray)
        texture = float(np.median(blocks))
        occluded = False
        flat_limit = self._flat_limit() if exposure_ok else None
        if flat_limit is not None:
            share = np.count_nonzero(blocks < flat_limit) / blocks.size
            if share >= lim.occluded_share:
                self._ranges[OCCLUDED].add(stamp_ns, share)
                fired.append(OCCLUDED)
                occluded = True

        blur_limit = self.blur_limit() if exposure_ok and not occluded else None
        content_change = (lim.blur_threshold is None and len(self._acutance_history) >= WARMUP
                          and acutance >= ACUTANCE_RATIO * self._acutance_history.median())
        if blur_limit is not None and sharpness < blur_limit and not content_change:
            blur = self._ranges[BLUR]
            if not blur or sharpness < blur.worst:
                self._blur_limit_at_worst = blur_limit
                self._blur_median_at_worst = blur_limit / lim.blur_ratio
            blur.add(stamp_ns, sharpness, worse='min')
            fired.append(BLUR)

        # Only good, new frames teach the camera what it normally looks like.
        if not fired and not repeat:
            self._sharp_history.append(sharpness)
            self._acutance_history.append(acutance)
            self._texture_history.append(texture)
        return fired

    def findings(self) -> list[Finding]:
        """One Finding per check that fired at least once, in the order of CHECKS."""
        lim, r = self.limits, self._ranges
        who = f'{self.name} camera'
        out: list[Finding] = []
        if r[BLUR]:
            against = f'{self._blur_limit_at_worst:.1f}'
            if lim.blur_threshold is None:
                against += f' ({lim.blur_ratio:g} x its median {self._blur_median_at_worst:.1f})'
            out.append(r[BLUR].finding(BLUR, WARN, self.topic, f'{who} blurred in {r[BLUR].count} frame(s): '
                                       f'sharpness {r[BLUR].worst:.1f} against {against}', self._blur_limit_at_worst))
        if r[DARK]:
            out.append(r[DARK].finding(DARK, WARN, self.topic, f'{who} too dark in {r[DARK].count} frame(s): mean '
                                       f'gray {r[DARK].worst:.1f} against {lim.dark_mean:g}', lim.dark_mean))
        if r[OVEREXPOSED]:
            out.append(r[OVEREXPOSED].finding(
                OVEREXPOSED, WARN, self.topic, f'{who} overexposed in {r[OVEREXPOSED].count} frame(s): mean gray '
                f'{r[OVEREXPOSED].worst:.1f} against {lim.bright_mean:g}, up to {self._worst_saturated:.0%} of '
                f'pixels saturated', lim.bright_mean))
        if r[FROZEN]:
            out.append(r[FROZEN].finding(FROZEN, ERROR, self.topic, f'{who} frozen: {r[FROZEN].count} frame(s) '
                                         f'repeat the one before, up to {r[FROZEN].worst:.0f} in a row (limit '
                                         f'{lim.frozen_frames})', lim.frozen_frames))
        if r[OCCLUDED]:
            out.append(r[OCCLUDED].finding(OCCLUDED, WARN, self.topic, f'{who} occluded in {r[OCCLUDED].count} '
                                           f'frame(s): up to {r[OCCLUDED].worst:.0%} of the view without texture '
                                           f'(limit {lim.occluded_share:.0%})', lim.occluded_share))
        return out

    def stats(self) -> dict[str, float]:
        """Typical values of this camera, for reports: sharpness and brightness over all frames, and the
        limits the relative checks currently use (NaN while not known)."""
        nan = float('nan')
        sharp = np.frombuffer(self._sharpness, np.float32)
        bright = np.frombuffer(self._brightness, np.float32)
        blur_limit = self.blur_limit()
        flat_limit = self._flat_limit()
        return {
            'frames': float(self.frames),
            'sharpness_median': float(np.median(sharp)) if sharp.size else nan,
            'sharpness_min': float(sharp.min()) if sharp.size else nan,
            'sharpness_max': float(sharp.max()) if sharp.size else nan,
            'brightness_median': float(np.median(bright)) if bright.size else nan,
            'brightness_min': float(bright.min()) if bright.size else nan,
            'brightness_max': float(bright.max()) if bright.size else nan,
            'blur_limit': nan if blur_limit is None else float(blur_limit),
            'texture_median': self._texture_history.median() if self._texture_history else nan,
            'flat_limit': nan if flat_limit is None else float(flat_limit),
        }
