"""Faces blurred out of camera frames before they leave the dataset (`--blur-faces` of `export frames`,
`export lerobot` and `review push`).

The detector is YuNet (ros_robodata/models/, with its license and where it came from), run by OpenCV's own
`cv2.FaceDetectorYN`, so nothing is downloaded at run time. YuNet finds faces of about 10 to 300 pixels, so each
frame is searched at several scales: as it is, enlarged (a face far from the camera), and shrunk (a face close to
it). The score threshold is low on purpose: a patch of wall blurred by mistake costs nothing, a face left sharp
does. Every box found, grown by a margin on each side (hair, ears, a chin the box cut), is replaced by a heavy
blur of itself: shrunk to a few cells, smoothed back to size and blurred again, so no eye, nose or mouth is left
for a person or another detector to find; the margin fades into the frame, so the patch has no hard edge. The
blurred frame is searched again (the outline of a head around a blur can still look like a face) and blurred
again where it must be.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from ros_robodata.bag.image import to_uint8
from ros_robodata.bag.sensor_files import encode_frame_image
from ros_robodata.errors import ExportError
from ros_robodata.face_model import MODEL_PATH, load_yunet

__all__ = ['DETECTOR', 'MODEL_PATH', 'Box', 'FaceBlur', 'blurred_frame_image', 'merge_boxes']

SCORE_THRESHOLD = 0.5  # YuNet's own demo keeps 0.9; for privacy a false alarm is cheap and a missed face is not
MARGIN = 0.3  # of a face box's width and height, added on every side before blurring
ENLARGE_UP_TO = 800  # frames this long (px, the longer side) or shorter are also searched at twice their size
SHRINK_TO = 320  # and every frame longer than this also at this size, for faces close to the camera
MAX_SIDE = 2560  # a larger frame is searched at this size (YuNet's cost grows with the pixels)
CHECKS = 3  # a blurred frame is searched again, and blurred again, at most this many times
CELLS = 4  # a blurred face keeps at most this many cells of colour across
# how faces were blurred, in an export's settings: a change here redoes an export made before it
DETECTOR = f'yunet_2023mar score>={SCORE_THRESHOLD} margin={MARGIN} cells={CELLS} checks={CHECKS}'

Box = tuple[int, int, int, int]  # x, y, width, height in the frame's pixels


@dataclass
class _Pass:
    scale: float
    size: tuple[int, int]  # width, height searched


def _passes(width: int, height: int) -> list[_Pass]:
    """The scales a frame of this size is searched at."""
    longest = max(width, height)
    scales = [min(1.0, MAX_SIDE / longest)]
    if longest <= ENLARGE_UP_TO:
        scales.append(2.0)
    if longest > SHRINK_TO:
        scales.append(SHRINK_TO / longest)
    return [_Pass(s, (max(1, round(width * s)), max(1, round(height * s)))) for s in scales]


def _fade(start: int, end: int, size: int, margin: int) -> np.ndarray:
    """Weights along one side of a grown box, from its first pixel (`start`, relative to the face box: <= 0) to
    its last (`end` past the face box): 1 over the face box and the inner half of the margin, falling to 0 across
    its outer half."""
    at = np.arange(start, size + end, dtype=np.float32)
    outside = np.maximum(-at, at - (size - 1))  # pixels beyond the face box, 0 inside it
    half = max(1.0, margin / 2)
    return np.clip(1.0 - (outside - half) / half, 0.0, 1.0)


class FaceBlur:
    """Finds faces in frames and blurs them; one per exporter (OpenCV's detector is not shared between threads,
    so calls are serialised).

    Args:
        model: the YuNet ONNX file; the one shipped in ros_robodata/models/ unless given.
        score_threshold: the lowest detection score taken as a face.

    Raises:
        ExportError: the model file is missing or OpenCV cannot load it.
    """

    def __init__(self, model: Path = MODEL_PATH, score_threshold: float = SCORE_THRESHOLD) -> None:
        self._detector = load_yunet(model, score_threshold, ExportError)
        self._lock = threading.Lock()
        self.faces = 0  # faces blurred so far
        self.frames = 0  # frames with at least one face

    def detect(self, bgr: np.ndarray) -> list[Box]:
        """The faces in a frame, as boxes in its pixels.

        Args:
            bgr: the frame, HxWx3 uint8 in OpenCV's BGR order (HxW grey is taken too).

        Raises:
            ExportError: the frame is not an 8-bit image.
        """
        if bgr.dtype != np.uint8 or bgr.ndim not in (2, 3):
            raise ExportError(f'face detection: expected an 8-bit image, got {bgr.dtype} {bgr.shape}')
        if bgr.ndim == 2:
            bgr = cv2.cvtColor(bgr, cv2.COLOR_GRAY2BGR)
        height, width = bgr.shape[:2]
        boxes: list[Box] = []
        with self._lock:
            for search in _passes(width, height):
                if min(search.size) < 10:
                    continue
                interpolation = cv2.INTER_AREA if search.scale < 1 else cv2.INTER_LINEAR
                image = bgr if search.scale == 1 else cv2.resize(bgr, search.size, interpolation=interpolation)
                self._detector.setInputSize(search.size)
                _, found = self._detector.detect(np.ascontiguousarray(image))
                for row in found if found is not None else ():
                    x, y, w, h = (float(v) / search.scale for v in row[:4])
                    boxes.append((int(np.floor(x)), int(np.floor(y)), int(np.ceil(w)), int(np.ceil(h))))
        return boxes

    def blur(self, pixels: np.ndarray, boxes: list[Box]) -> np.ndarray:
        """`pixels` with every box, grown by the margin, blurred beyond recognition (a new array; any dtype and
        channel count OpenCV resizes: 8-bit colour, 16-bit depth, float).

        Args:
            pixels: the frame's pixels, HxW or HxWxC.
            boxes: the faces, in the same pixels.
        """
        out = np.array(pixels, copy=True)
        height, width = out.shape[:2]
        for x, y, w, h in boxes:
            dx, dy = round(w * MARGIN), round(h * MARGIN)
            x0, y0 = max(0, x - dx), max(0, y - dy)
            x1, y1 = min(width, x + w + dx), min(height, y + h + dy)
            if x1 - x0 < 2 or y1 - y0 < 2:
                continue
            region = out[y0:y1, x0:x1]
            cells = (max(1, min(CELLS, x1 - x0)), max(1, min(CELLS, y1 - y0)))
            coarse = cv2.resize(region, cells, interpolation=cv2.INTER_AREA)
            smooth = cv2.resize(coarse, (x1 - x0, y1 - y0), interpolation=cv2.INTER_LINEAR)
            sigma = max(1.0, min(x1 - x0, y1 - y0) / 6)
            blurred = cv2.GaussianBlur(smooth, (0, 0), sigma).reshape(region.shape)
            # the face box itself all blurred; the margin fades into the frame, so the patch has no hard edge
            # (an edge a detector could read as the side of a face)
            weight = _fade(x0 - x, x1 - x - w, w, dx)[None, :] * _fade(y0 - y, y1 - y - h, h, dy)[:, None]
            if region.ndim == 3:
                weight = weight[:, :, None]
            mixed = weight * blurred.astype(np.float32) + (1 - weight) * region.astype(np.float32)
            if np.issubdtype(out.dtype, np.integer):
                mixed = np.rint(mixed)
            out[y0:y1, x0:x1] = mixed.astype(out.dtype)
        return out

    def __call__(self, pixels: np.ndarray, bgr: np.ndarray | None = None) -> np.ndarray:
        """`pixels` with every face found in it blurred (`pixels` itself when there is none). The blurred frame is
        searched again, and what is still taken for a face (the outline of a head around the blur) is blurred too,
        up to CHECKS times.

        Args:
            pixels: the frame as it will be written (8-bit colour or grey, 16-bit or float mono).
            bgr: the same frame as 8-bit BGR for the detector, when `pixels` is not that already.

        Raises:
            ExportError: neither `pixels` nor `bgr` is an 8-bit image to search.
        """
        search = pixels if bgr is None else bgr
        boxes = merge_boxes(self.detect(search))
        if not boxes:
            return pixels
        with self._lock:
            self.faces += len(boxes)
            self.frames += 1
        for _ in range(CHECKS):
            pixels = self.blur(pixels, boxes)
            search = pixels if bgr is None else self.blur(search, boxes)
            boxes = merge_boxes(self.detect(search))
            if not boxes:
                break
        else:
            pixels = self.blur(pixels, boxes)
        return pixels


def merge_boxes(boxes: list[Box]) -> list[Box]:
    """Boxes that overlap (one face found at several scales) merged into the box around them.

    Args:
        boxes: (x, y, width, height) boxes.
    """
    merged = [list(b) for b in boxes]
    changed = True
    while changed:
        changed = False
        for i in range(len(merged)):
            for j in range(i + 1, len(merged)):
                a, b = merged[i], merged[j]
                if a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]:
                    x0, y0 = min(a[0], b[0]), min(a[1], b[1])
                    x1, y1 = max(a[0] + a[2], b[0] + b[2]), max(a[1] + a[3], b[1] + b[3])
                    merged[i] = [x0, y0, x1 - x0, y1 - y0]
                    del merged[j]
                    changed = True
                    break
            if changed:
                break
    return [(b[0], b[1], b[2], b[3]) for b in merged]


def blurred_frame_image(msg: Any, image_format: str, jpeg_quality: int, blur: FaceBlur
                        ) -> tuple[bytes, str, dict[str, Any]]:
    """`encode_frame_image` (bag/sensor_files.py) with every face blurred: the same file format and pixels (colour,
    grey, 16-bit PNG), searched for faces as 8-bit BGR.

    Args:
        msg: a decoded Image or CompressedImage.
        image_format: 'jpg' or 'png' (16-bit mono is always PNG).
        jpeg_quality: JPEG quality 1..100.
        blur: the face blur of this export.

    Raises:
        ExportError: the image cannot be encoded.
        BagError: the image cannot be decoded.
    """
    def faces_blurred(pixels: np.ndarray) -> np.ndarray:
        if pixels.dtype == np.uint16:  # written as 16-bit PNG, searched as 8-bit BGR
            return blur(pixels, cv2.cvtColor(to_uint8(pixels), cv2.COLOR_GRAY2BGR))
        return blur(pixels)

    return encode_frame_image(msg, image_format, jpeg_quality, transform=faces_blurred)
