"""A take's conditions measured from what the rig records, never guessed (issue 36, step 3): how far the
participant is from the camera, which way their face is turned, and how much light there is.

HRI sessions record participants at set distances (3 to 20 ft, 0.9 to 6.1 m), lighting from 10 to 4000 lux and
five face orientations (front, up, down, left, right). A take's label says what was meant; this module says what a
frame shows, so a take whose measured conditions differ from its label can be caught.

- Faces are found by YuNet (the model vendored in ros_robodata/models/, with its license), run by OpenCV's
  `cv2.FaceDetectorYN`; a small frame is searched again at twice its size for faces far away, and every face found
  is searched again in a crop enlarged around it, so its five landmarks are placed on more pixels.
- Distance comes from the face's angular size in the camera (the intrinsics of sensor_msgs/CameraInfo K): the
  angle between the rays through the two eyes against the adult inter-ocular mean, corrected for the head's turn,
  checked against the same from the face box's width. See `distance_m` for the constants and the error.
- Orientation comes from the landmarks: the nose's offset between the eyes (yaw) and its place between eyes and
  mouth (pitch). See `orientation`.
- Light comes from a lux meter (sensor_msgs/Illuminance) when the rig has one, else from a per-camera calibration
  fitted on takes that had a meter; with neither it is "not measured" (`None`): image brightness alone depends on
  exposure, gain and the scene's colours and is never taken for lux.

Numpy and OpenCV only: no ROS, nothing from ros_robodata above the errors.

Why one module: distance, orientation and the face-size limits all read the same refined landmarks with the same
geometry (the rays through the eyes, the nose between eyes and mouth, the head's turn), and their constants are
chosen together; apart, each would repeat the ray geometry and could drift from the others.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import cv2
import numpy as np

from ros_robodata.errors import RobodataError
from ros_robodata.face_model import MODEL_PATH, load_yunet

__all__ = [
    'BOX_WIDTH_M', 'DETECTOR_MIN_FACE_PX', 'INTEROCULAR_M', 'MEASURE_MIN_FACE_PX', 'MODEL_PATH', 'ORIENTATIONS',
    'Face', 'FaceDetector', 'FaceSize', 'Intrinsics', 'LuxCalibration', 'LuxSample', 'Measured', 'detect_faces',
    'distance_m', 'face_width_px', 'fit_lux_calibration', 'illuminance', 'measure_frame', 'min_face_px_needed',
    'orientation', 'resolution_needed', 'yaw_pitch',
]


# Anthropometric constants (adult means; one person differs from them, which is the error floor of `distance_m`)
INTEROCULAR_M = 0.063  # pupil to pupil. Dodgson, "Variation and extrema of human interpupillary distance" (SPIE
# 5291, 2004): adult mean 63 mm, SD about 3.6 mm (women about 62, men about 64.5), so one person is within +-6%
# (1 SD) and +-12% (2 SD) of it. YuNet's eye landmarks are the eye centres, the pupils for a gaze at the camera.
BOX_WIDTH_M = 0.126  # the width of YuNet's face box: NOT the head's breadth (bizygomatic breadth, about 140 mm for
# adults, Farkas 1994), because YuNet's box is cut at the cheeks, about 2.0 inter-ocular distances wide (1.91 and
# 2.11 on the two portraits in test/data/faces/): 2.0 x 63 mm. Less precise than the eyes (the box's edges are
# where the detector puts them, and hair, glasses and a turned head move them), so it is a check, not the measure.
NOSE_DEPTH_IOD = 0.5  # how far the nose tip stands in front of the line between the pupils, in inter-ocular
# distances (about 32 mm): an estimate from average 3D head models, not a tabled anthropometric mean. It only
# turns the landmark offset into an angle for the yaw correction and the degrees reported; the bins use the offset.

ORIENTATIONS = ('front', 'left', 'right', 'up', 'down')
# Orientation bins from the landmark geometry (see `yaw_pitch`):
YAW_BIN = 0.15  # |nose offset| / eye distance beyond this is a turned head: about 17 degrees by NOSE_DEPTH_IOD
PITCH_FRONT = 0.50  # the nose's place between the eye line (0) and the mouth line (1) for a level head: the
# 5-point template faces are aligned to (ArcFace's, 112x112: eyes at y 51.6, nose 71.7, mouth 92.3) gives 0.49
PITCH_BIN = 0.13  # a place more than this from PITCH_FRONT is a raised (smaller) or lowered (larger) head

SCORE_THRESHOLD = 0.7  # YuNet's demo keeps 0.9; a face under 20 px scores 0.7 to 0.9, a patch of wall rarely 0.7
ENLARGE_UP_TO = 800  # a frame this long (px, the longer side) or shorter is also searched at twice its size
# (640x480: faces of 6 to 10 px; a 720p frame doubled would cost 4 times its own search)
MAX_SIDE = 2560  # a larger frame is searched shrunk to this (YuNet's cost grows with the pixels)
REFINE_FACE_PX = 120  # every face found is searched again in a crop scaled so the face is about this wide
DETECTOR_MIN_FACE_PX = 6  # the smallest face box (px wide) found in the tests, with the doubled search
MEASURE_MIN_FACE_PX = 12  # the smallest face box (px) whose distance is measured: the eyes are then 5 to 6 px
# apart; at 11 to 15 px the tests' faces measured within 7% (one at 12%), under 10 px they were off by up to 24%
# (the photos rendered small are sharp and noiseless: a real camera's blur and noise need the margin)
AGREEMENT = 0.25  # eyes and box must give distances within this fraction of each other, else "not measured"
MAX_YAW_DEG = 40.0  # beyond this the eyes are too foreshortened to measure the distance from
DARK = 3.0  # mean 8-bit brightness at or below which (or SATURATED at or above) a frame says nothing of the light
SATURATED = 250.0


@dataclass(frozen=True)
class Intrinsics:
    """A pinhole camera, as sensor_msgs/CameraInfo K = [fx 0 cx; 0 fy cy; 0 0 1] (pixels).

    Args:
        fx: focal length along x, px.
        fy: focal length along y, px.
        cx: principal point x, px.
        cy: principal point y, px.
        width: image width, px.
        height: image height, px.

    Raises:
        RobodataError: a focal length or size that is not positive.
    """

    fx: float
    fy: float
    cx: float
    cy: float
    width: int
    height: int

    def __post_init__(self) -> None:
        values = (self.fx, self.fy, self.cx, self.cy)
        if not all(math.isfinite(v) for v in values) or self.fx <= 0 or self.fy <= 0 \
                or self.width <= 0 or self.height <= 0:
            raise RobodataError(f'camera intrinsics: focal lengths and image size must be positive, got fx={self.fx} '
                           f'fy={self.fy} {self.width}x{self.height}')

    @classmethod
    def from_camera_info(cls, k: Sequence[float] | np.ndarray, width: int, height: int) -> Intrinsics:
        """From CameraInfo's K (9 numbers, row-major) and its width and height.

        Args:
            k: K as in sensor_msgs/msg/CameraInfo (a sequence or a 3x3 array).
            width: CameraInfo.width.
            height: CameraInfo.height.

        Raises:
            RobodataError: K is not 9 numbers, or it is all zeros (an uncalibrated camera publishes that).
        """
        values = np.asarray(k, dtype=float).reshape(-1)
        if values.size != 9:
            raise RobodataError(f'camera intrinsics: K must hold 9 numbers, got {values.size}')
        if not values.any():
            raise RobodataError('camera intrinsics: K is all zeros: the camera is not calibrated')
        return cls(float(values[0]), float(values[4]), float(values[2]), float(values[5]), int(width), int(height))

    @classmethod
    def from_hfov(cls, width: int, height: int, hfov_deg: float) -> Intrinsics:
        """A camera with square pixels, its principal point at the centre and this horizontal field of view.

        Args:
            width: image width, px.
            height: image height, px.
            hfov_deg: horizontal field of view, degrees (0 to 180).

        Raises:
            RobodataError: a field of view outside (0, 180).
        """
        if not 0 < hfov_deg < 180:
            raise RobodataError(f'camera field of view must be between 0 and 180 degrees, got {hfov_deg}')
        f = width / 2 / math.tan(math.radians(hfov_deg) / 2)
        return cls(f, f, width / 2, height / 2, width, height)

    def ray(self, u: float, v: float) -> np.ndarray:
        """The unit ray through pixel (u, v)."""
        r = np.array([(u - self.cx) / self.fx, (v - self.cy) / self.fy, 1.0])
        return r / float(np.linalg.norm(r))

    def angle(self, a: tuple[float, float], b: tuple[float, float]) -> float:
        """The angle (radians) between the rays through two pixels."""
        cos = float(np.clip(np.dot(self.ray(*a), self.ray(*b)), -1.0, 1.0))
        return math.acos(cos)


Point = tuple[float, float]


@dataclass(frozen=True)
class Face:
    """A face found in a frame, in its pixels.

    `landmarks` are YuNet's five points, named for the participant: their right eye, left eye, nose tip, right
    and left mouth corners (in a camera image of someone facing it, the participant's right eye is on the image's
    left; in a mirrored image the other way round, and the names follow the image: YuNet names by position).
    """

    box: tuple[float, float, float, float]  # x, y, width, height
    score: float
    landmarks: tuple[Point, Point, Point, Point, Point]

    @property
    def right_eye(self) -> Point:
        return self.landmarks[0]

    @property
    def left_eye(self) -> Point:
        return self.landmarks[1]

    @property
    def nose(self) -> Point:
        return self.landmarks[2]

    @property
    def mouth(self) -> Point:
        """The middle of the mouth (between its corners)."""
        (x1, y1), (x2, y2) = self.landmarks[3], self.landmarks[4]
        return ((x1 + x2) / 2, (y1 + y2) / 2)

    @property
    def width_px(self) -> float:
        return self.box[2]

    @property
    def eye_distance_px(self) -> float:
        return math.dist(self.right_eye, self.left_eye)


def _face(row: np.ndarray, scale: float, dx: float = 0.0, dy: float = 0.0) -> Face:
    """A YuNet output row (x, y, w, h, 5 landmarks, score) found in an image scaled by `scale` and offset."""
    v = [float(x) for x in row]
    points = [((v[4 + 2 * i] / scale) + dx, (v[5 + 2 * i] / scale) + dy) for i in range(5)]
    box = (v[0] / scale + dx, v[1] / scale + dy, v[2] / scale, v[3] / scale)
    return Face(box, v[14], (points[0], points[1], points[2], points[3], points[4]))


def _iou(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> float:
    x0, y0 = max(a[0], b[0]), max(a[1], b[1])
    x1, y1 = min(a[0] + a[2], b[0] + b[2]), min(a[1] + a[3], b[1] + b[3])
    inter = max(0.0, x1 - x0) * max(0.0, y1 - y0)
    union = a[2] * a[3] + b[2] * b[3] - inter
    return inter / union if union > 0 else 0.0


class FaceDetector:
    """YuNet at the thresholds above: one per thread of work (OpenCV's detector is not shared, calls are
    serialised).

    Args:
        model: the YuNet ONNX file; the one shipped in ros_robodata/models/ unless given.
        score_threshold: the lowest detection score taken as a face.

    Raises:
        RobodataError: the model file is missing or OpenCV cannot load it.
    """

    def __init__(self, model: Path = MODEL_PATH, score_threshold: float = SCORE_THRESHOLD) -> None:
        self._detector = load_yunet(model, score_threshold, RobodataError)
        self._lock = threading.Lock()

    def _search(self, image: np.ndarray, scale: float, dx: float = 0.0, dy: float = 0.0) -> list[Face]:
        height, width = image.shape[:2]
        if min(width, height) < 10:
            return []
        self._detector.setInputSize((width, height))
        _, found = self._detector.detect(np.ascontiguousarray(image))
        return [_face(row, scale, dx, dy) for row in (found if found is not None else ())]

    @staticmethod
    def _scaled(bgr: np.ndarray, scale: float) -> np.ndarray:
        if scale == 1:
            return bgr
        height, width = bgr.shape[:2]
        size = (max(1, round(width * scale)), max(1, round(height * scale)))
        return cv2.resize(bgr, size, interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR)

    def _refine(self, bgr: np.ndarray, face: Face) -> Face:
        """The face searched again in a crop around it, scaled so it is REFINE_FACE_PX wide: landmarks placed on
        more pixels. The face as found when the crop's search does not find it again."""
        x, y, w, h = face.box
        height, width = bgr.shape[:2]
        x0, y0 = max(0, math.floor(x - w)), max(0, math.floor(y - h))
        x1, y1 = min(width, math.ceil(x + 2 * w)), min(height, math.ceil(y + 2 * h))
        scale = REFINE_FACE_PX / max(w, 1.0)
        if x1 - x0 < 2 or y1 - y0 < 2 or not 0.5 < scale < 16:
            return face
        crop = self._scaled(bgr[y0:y1, x0:x1], scale)
        again = [f for f in self._search(crop, scale, x0, y0) if _iou(f.box, face.box) > 0.3]
        return max(again, key=lambda f: _iou(f.box, face.box)) if again else face

    def __call__(self, bgr: np.ndarray) -> list[Face]:
        """See `detect_faces`."""
        if bgr.dtype != np.uint8 or bgr.ndim not in (2, 3) or (bgr.ndim == 3 and bgr.shape[2] != 3):
            raise RobodataError(f'face detection: expected an 8-bit BGR or grey image, got {bgr.dtype} {bgr.shape}')
        if bgr.ndim == 2:
            bgr = cv2.cvtColor(bgr, cv2.COLOR_GRAY2BGR)
        longest = max(bgr.shape[:2])
        scales = [min(1.0, MAX_SIDE / longest)]
        if longest <= ENLARGE_UP_TO:
            scales.append(2.0)
        with self._lock:
            found: list[Face] = []
            for scale in scales:
                for face in self._search(self._scaled(bgr, scale), scale):
                    same = [i for i, f in enumerate(found) if _iou(f.box, face.box) > 0.3]
                    if not same:
                        found.append(face)
                    elif face.score > found[same[0]].score:
                        found[same[0]] = face
            faces = [self._refine(bgr, face) for face in found]
        return sorted(faces, key=lambda f: f.width_px, reverse=True)


_DEFAULT: FaceDetector | None = None
_DEFAULT_LOCK = threading.Lock()


def _default_detector() -> FaceDetector:
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = FaceDetector()
        return _DEFAULT


def detect_faces(bgr: np.ndarray, detector: FaceDetector | None = None) -> list[Face]:
    """The faces in a frame, largest first: YuNet at score >= SCORE_THRESHOLD, over the frame as it is (shrunk
    to MAX_SIDE when larger), again at twice its size when its longer side is at most ENLARGE_UP_TO (faces far
    away), and each face again in an enlarged crop around it (landmarks on more pixels).

    Args:
        bgr: the frame, HxWx3 uint8 in OpenCV's BGR order (HxW grey is taken too).
        detector: the detector to use; one shared by the module unless given.

    Raises:
        RobodataError: the frame is not an 8-bit image, or the model cannot be loaded.
    """
    return (detector or _default_detector())(bgr)


def yaw_pitch(face: Face) -> tuple[float, float]:
    """The landmark geometry the orientation is read from, both independent of the face's roll and size:

    - yaw: the nose tip's offset from the point between the eyes, along the line from the participant's right eye
      to their left eye, in eye distances. 0 for a face turned to the camera; positive when the nose points to the
      participant's left (their head turned to their left), negative to their right.
    - pitch: the nose tip's place between the eye line (0) and the mouth (1), measured square to the eye line.
      About PITCH_FRONT for a level head; smaller for a raised head (the nose tip, in front of eyes and mouth,
      rises in the image faster than they do), larger for a lowered one.

    Args:
        face: a face with its landmarks.

    Raises:
        RobodataError: the eyes are on one pixel, or the mouth on the eye line (not a face's landmarks).
    """
    re, le, nose, mouth = (np.asarray(p, dtype=float) for p in (face.right_eye, face.left_eye, face.nose,
                                                                 face.mouth))
    across = le - re
    eyes = float(np.linalg.norm(across))
    if eyes < 1e-6:
        raise RobodataError('face landmarks: both eyes on one point')
    across /= eyes
    down = np.array([-across[1], across[0]])  # square to the eye line, towards the mouth in an upright face
    middle = (re + le) / 2
    mouth_depth = float(np.dot(mouth - middle, down))
    if abs(mouth_depth) < 1e-6:
        raise RobodataError('face landmarks: the mouth is on the eye line')
    yaw = float(np.dot(nose - middle, across)) / eyes
    pitch = float(np.dot(nose - middle, down)) / mouth_depth
    return yaw, pitch


def yaw_degrees(face: Face) -> float:
    """The head's turn from the camera, degrees (positive to the participant's left), from `yaw_pitch`'s yaw with
    the nose tip NOSE_DEPTH_IOD in front of the eyes: the offset is depth x sin(yaw) over IOD x cos(yaw).

    Args:
        face: a face with its landmarks.

    Raises:
        RobodataError: as `yaw_pitch`.
    """
    yaw, _ = yaw_pitch(face)
    return math.degrees(math.atan(yaw / NOSE_DEPTH_IOD))


def orientation(face: Face) -> str:
    """Which of the five orientations a face shows: 'front', 'left', 'right', 'up' or 'down'.

    'left' and 'right' are the participant's own, as a protocol tells them ("turn your head to your left"): a
    participant facing the camera who turns to their left shows the camera their right cheek and their nose moves
    to the image's right (in an image that is not mirrored). A mirrored image (a selfie preview) swaps them, as it
    swaps their eyes.

    Bins, from `yaw_pitch` (yaw taken first: a head turned and raised at once is 'left' or 'right'):
    |yaw| > YAW_BIN (0.15 eye distances, about 17 degrees) is 'left' (positive) or 'right'; else
    pitch < PITCH_FRONT - PITCH_BIN (0.37) is 'up', pitch > PITCH_FRONT + PITCH_BIN (0.63) is 'down'; else 'front'.
    Landmarks jitter by about 0.05 eye distances on a frontal face (the two vendored portraits read -0.07 and
    -0.02 as they are and mirrored), so a head turned less than about 10 degrees reads 'front'.

    Args:
        face: a face with its landmarks.

    Raises:
        RobodataError: as `yaw_pitch`.
    """
    yaw, pitch = yaw_pitch(face)
    if yaw > YAW_BIN:
        return 'left'
    if yaw < -YAW_BIN:
        return 'right'
    if pitch < PITCH_FRONT - PITCH_BIN:
        return 'up'
    if pitch > PITCH_FRONT + PITCH_BIN:
        return 'down'
    return 'front'


@dataclass(frozen=True)
class DistanceEstimate:
    """`distance_m`'s figures: the distance from the eyes (yaw-corrected), from the box, and the one taken."""

    eyes_m: float | None
    box_m: float
    yaw_deg: float
    distance_m: float | None
    note: str = ''


def _range(angle: float, size_m: float) -> float:
    """The distance at which a segment of `size_m`, square to the line of sight, spans `angle` radians."""
    return size_m / (2 * math.tan(angle / 2)) if angle > 0 else math.inf


def estimate_distance(face: Face, intrinsics: Intrinsics) -> DistanceEstimate:
    """`distance_m` with its parts and the reason when there is no distance.

    Args:
        face: a face found in a frame of this camera.
        intrinsics: the camera's.

    Raises:
        RobodataError: as `yaw_pitch`.
    """
    x, y, w, h = face.box
    middle = y + h / 2
    box_m = _range(intrinsics.angle((x, middle), (x + w, middle)), BOX_WIDTH_M)
    yaw = yaw_degrees(face)
    if w < MEASURE_MIN_FACE_PX:
        return DistanceEstimate(None, box_m, yaw, None, f'distance not measured: face {w:.0f} px wide, under '
                                                        f'{MEASURE_MIN_FACE_PX} px')
    if abs(yaw) > MAX_YAW_DEG:
        return DistanceEstimate(None, box_m, yaw, None, f'distance not measured: head turned {abs(yaw):.0f} '
                                                        f'degrees, over {MAX_YAW_DEG:.0f}')
    eyes_m = _range(intrinsics.angle(face.right_eye, face.left_eye), INTEROCULAR_M * math.cos(math.radians(yaw)))
    if not math.isfinite(eyes_m) or abs(eyes_m - box_m) > AGREEMENT * min(eyes_m, box_m):
        return DistanceEstimate(eyes_m, box_m, yaw, None, f'distance not measured: eyes say {eyes_m:.2f} m and the '
                                                          f'face box {box_m:.2f} m')
    return DistanceEstimate(eyes_m, box_m, yaw, eyes_m)


def distance_m(face: Face, intrinsics: Intrinsics) -> float | None:
    """How far the face is from the camera, metres (along the ray to it), or None when it cannot be measured.

    The measure is the angle between the rays through the two eye landmarks (so a face off the image's centre and
    a tilted head are measured as well as one in the middle), against the adult inter-ocular mean INTEROCULAR_M
    (63 mm, Dodgson 2004), foreshortened by the head's turn (cos of `yaw_degrees`). The face box's width against
    BOX_WIDTH_M (126 mm, YuNet's box is about two inter-ocular distances wide) is a check: when the two disagree
    by more than AGREEMENT (25%) the landmarks are not trusted (a dark or blurred face, a partly hidden one) and
    there is no distance, rather than a wrong one. No distance either for a face under MEASURE_MIN_FACE_PX wide
    or turned more than MAX_YAW_DEG.

    Expected error: one participant's inter-ocular distance is within +-6% of the mean for two in three adults,
    +-12% for 95% (children far more: this is for adults); the landmarks add about 2 to 7% at 12 to 40 px faces
    and about 2% above (the tests measure it); the yaw correction under-corrects or over-corrects by a few percent
    at 20 to 40 degrees. So about +-10% for most adults, +-15% for nearly all, at a calibrated camera; an
    uncalibrated one (nominal K) adds its focal length's error one for one.

    Args:
        face: a face found in a frame of this camera (`detect_faces`).
        intrinsics: the camera's (`Intrinsics.from_camera_info`).

    Raises:
        RobodataError: as `yaw_pitch`.
    """
    return estimate_distance(face, intrinsics).distance_m


class IlluminanceReading(Protocol):
    """What sensor_msgs/msg/Illuminance carries that is used here: lux."""

    illuminance: float


@dataclass(frozen=True)
class LuxSample:
    """One frame taken with a lux meter beside the camera, for `fit_lux_calibration`.

    Args:
        lux: the meter's reading.
        brightness: the frame's mean 8-bit brightness (`frame_brightness`).
        exposure: the camera's exposure time for it (any unit, the same for every sample and later frame).
        gain: the camera's linear gain (not dB) for it.
    """

    lux: float
    brightness: float
    exposure: float
    gain: float


@dataclass(frozen=True)
class LuxCalibration:
    """A camera's fitted response: lux = a * (brightness / (exposure * gain)) ** b.

    Valid for the camera, lens and settings (white balance, gamma) it was fitted with, and over the range of
    brightness / (exposure * gain) its samples covered (`low` to `high`): `illuminance` says None outside it
    rather than extrapolate.
    """

    a: float
    b: float
    low: float
    high: float
    samples: int
    rms_log10: float  # the fit's residual, log10(lux): 0.05 is +-12%
    model: str = 'exposure_gain'  # or 'brightness': x is the brightness alone, fitted (and valid) at one fixed
    # exposure and gain; `lux` is then called with exposure = gain = 1

    @property
    def error_pct(self) -> float:
        """The fit's one-sigma error as a percentage of the lux estimated (10 ** rms_log10 - 1)."""
        return (10 ** self.rms_log10 - 1) * 100

    def lux(self, brightness: float, exposure: float, gain: float) -> float | None:
        """Lux from a frame's brightness and the camera's exposure and gain, None when they fall outside what the
        calibration covered (within a factor of 1.5 either side) or the frame is black or saturated.

        Args:
            brightness: mean 8-bit brightness.
            exposure: exposure, in the samples' unit.
            gain: linear gain.
        """
        if not DARK < brightness < SATURATED or exposure <= 0 or gain <= 0:
            return None
        x = brightness / (exposure * gain)
        if not self.low / 1.5 <= x <= self.high * 1.5:
            return None
        return self.a * x ** self.b


def fit_lux_calibration(samples: Sequence[LuxSample]) -> LuxCalibration:
    """The least-squares fit of log(lux) = log(a) + b log(brightness / (exposure * gain)) over frames taken with a
    meter (black and saturated frames left out: they say nothing of the light).

    Args:
        samples: at least three usable samples covering at least a factor of 2 of brightness / (exposure * gain).

    Raises:
        RobodataError: too few usable samples, too narrow a range, or a sample that is not positive.
    """
    xs, ys = [], []
    for s in samples:
        if not (s.lux > 0 and s.exposure > 0 and s.gain > 0 and math.isfinite(s.brightness)):
            raise RobodataError(f'lux calibration: a sample must have positive lux, exposure and gain, got {s}')
        if DARK < s.brightness < SATURATED:
            xs.append(s.brightness / (s.exposure * s.gain))
            ys.append(s.lux)
    if len(xs) < 3:
        raise RobodataError(f'lux calibration: {len(xs)} usable samples (neither black nor saturated), need 3')
    if max(xs) < 2 * min(xs):
        raise RobodataError('lux calibration: the samples cover less than a factor of 2 of light: take some in other '
                       'lighting')
    lx, ly = np.log10(xs), np.log10(ys)
    design = np.stack([np.ones_like(lx), lx], axis=1)
    (c, b), *_ = np.linalg.lstsq(design, ly, rcond=None)
    rms = float(np.sqrt(np.mean((design @ np.array([c, b]) - ly) ** 2)))
    return LuxCalibration(float(10 ** c), float(b), float(min(xs)), float(max(xs)), len(xs), rms)


def frame_brightness(bgr: np.ndarray) -> float:
    """A frame's mean 8-bit luma (BT.601 weights, as OpenCV's BGR to grey).

    Args:
        bgr: HxWx3 BGR or HxW grey, uint8.
    """
    grey = bgr if bgr.ndim == 2 else cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY)
    return float(np.mean(grey))


def illuminance(reading: IlluminanceReading | float | None = None, calibration: LuxCalibration | None = None,
                brightness: float | None = None, exposure: float | None = None,
                gain: float | None = None) -> float | None:
    """Lux at the take: the meter's reading when there is one; else the camera's calibration from the frame's
    brightness, exposure and gain; else None, "not measured". Brightness alone is never turned into lux.

    Args:
        reading: a sensor_msgs/msg/Illuminance (its `illuminance`, lux) or the lux as a number.
        calibration: the camera's (`fit_lux_calibration`).
        brightness: the frame's mean 8-bit brightness (`frame_brightness`).
        exposure: the camera's exposure for the frame, in the calibration's unit.
        gain: the camera's linear gain for the frame.

    Raises:
        RobodataError: a meter reading that is negative or not a number.
    """
    if reading is not None:
        lux = float(reading if isinstance(reading, (int, float)) else reading.illuminance)
        if not math.isfinite(lux) or lux < 0:
            raise RobodataError(f'lux meter: reading {lux} is not a light level')
        return lux
    if calibration is None or brightness is None or exposure is None or gain is None:
        return None
    return calibration.lux(brightness, exposure, gain)


@dataclass(frozen=True)
class Measured:
    """What a frame shows of a take's conditions. A None is "not measured", and `notes` says why."""

    faces: int
    distance_m: float | None
    orientation: str | None
    lux: float | None
    face: Face | None = None
    notes: tuple[str, ...] = field(default=())


def measure_frame(bgr: np.ndarray, intrinsics: Intrinsics, lux_reading: IlluminanceReading | float | None = None,
                  calibration: LuxCalibration | None = None, exposure: float | None = None,
                  gain: float | None = None, detector: FaceDetector | None = None) -> Measured:
    """A frame's measured conditions: the largest face's distance and orientation (the participant, nearest the
    camera), and the light.

    Args:
        bgr: the frame, HxWx3 uint8 BGR (or HxW grey).
        intrinsics: the camera's.
        lux_reading: the lux meter's reading at the frame (sensor_msgs/msg/Illuminance or lux), if the rig has one.
        calibration: the camera's lux calibration, used when there is no reading.
        exposure: the camera's exposure for the frame (for the calibration).
        gain: the camera's linear gain for the frame (for the calibration).
        detector: the face detector; one shared by the module unless given.

    Raises:
        RobodataError: the frame is not an 8-bit image, its size is not the camera's, or a meter reading is not a
            light level.
    """
    if bgr.shape[1] != intrinsics.width or bgr.shape[0] != intrinsics.height:
        raise RobodataError(f'frame is {bgr.shape[1]}x{bgr.shape[0]} but the camera info says '
                       f'{intrinsics.width}x{intrinsics.height}: scale the intrinsics with the image')
    notes: list[str] = []
    faces = detect_faces(bgr, detector)
    face = faces[0] if faces else None
    distance: float | None = None
    facing: str | None = None
    if face is None:
        notes.append('no face found')
    else:
        estimate = estimate_distance(face, intrinsics)
        distance = estimate.distance_m
        if estimate.note:
            notes.append(estimate.note)
        if face.width_px >= MEASURE_MIN_FACE_PX:
            facing = orientation(face)
        else:
            notes.append(f'orientation not measured: face {face.width_px:.0f} px wide')
    lux = illuminance(lux_reading, calibration, frame_brightness(bgr) if calibration is not None else None,
                      exposure, gain)
    if lux is None:
        if calibration is None:
            notes.append('lux not measured: no meter and no calibration')
        elif exposure is None or gain is None:
            notes.append('lux not measured: no exposure and gain for the calibration')
        else:
            notes.append('lux not measured: frame black, saturated or outside the calibration')
    return Measured(len(faces), distance, facing, lux, face, tuple(notes))


@dataclass(frozen=True)
class FaceSize:
    """`min_face_px_needed`'s answer: how wide a face will be, how wide it must be, and whether it is."""

    expected_px: float
    needed_px: float
    enough: bool


def face_width_px(distance: float, intrinsics: Intrinsics, face_m: float = BOX_WIDTH_M) -> float:
    """How wide (px) a face box of `face_m` is at `distance` metres, on the optical axis.

    Args:
        distance: metres.
        intrinsics: the camera's.
        face_m: the face's width, metres (YuNet's box by default).

    Raises:
        RobodataError: a distance that is not positive.
    """
    if not distance > 0:
        raise RobodataError(f'distance must be positive, got {distance}')
    return intrinsics.fx * face_m / distance


def min_face_px_needed(distance: float, intrinsics: Intrinsics,
                       needed_px: float = MEASURE_MIN_FACE_PX) -> FaceSize:
    """Whether this camera sees a face at `distance` wide enough to measure: its expected box width against the
    width `distance_m` needs (MEASURE_MIN_FACE_PX; the detector alone finds faces from DETECTOR_MIN_FACE_PX).

    Args:
        distance: metres.
        intrinsics: the camera's.
        needed_px: the width needed, px.

    Raises:
        RobodataError: a distance that is not positive.
    """
    expected = face_width_px(distance, intrinsics)
    return FaceSize(expected, needed_px, expected >= needed_px)


def resolution_needed(distance: float, hfov_deg: float, min_px: float = MEASURE_MIN_FACE_PX,
                      face_m: float = BOX_WIDTH_M) -> int:
    """The horizontal resolution (px) a camera with this horizontal field of view needs so that a face at
    `distance` metres, on its axis, is at least `min_px` wide. For example a 60-degree camera at 640 px sees a
    150 mm face at 20 ft (6.1 m) as about 14 px; 12 px of YuNet's 126 mm box at 6.1 m needs 671 px.

    Args:
        distance: metres.
        hfov_deg: horizontal field of view, degrees.
        min_px: the face's width needed, px.
        face_m: the face's width, metres.

    Raises:
        RobodataError: a distance or field of view out of range.
    """
    if not distance > 0 or not 0 < hfov_deg < 180:
        raise RobodataError(f'resolution needed: distance {distance} m and field of view {hfov_deg} degrees: out '
                            'of range')
    focal = min_px * distance / face_m
    return math.ceil(2 * focal * math.tan(math.radians(hfov_deg) / 2))
