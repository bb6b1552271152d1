"""The face detector that ships with ros_robodata: YuNet (models/, MIT, see models/NOTICE), loaded once per user.

Face blurring (export) and a take's measured conditions (capture) both run it, at their own score thresholds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cv2

from ros_robodata.errors import RobodataError

__all__ = ['MODEL_PATH', 'NMS_THRESHOLD', 'TOP_K', 'load_yunet']

MODEL_PATH = Path(__file__).resolve().parent / 'models' / 'face_detection_yunet_2023mar.onnx'
NMS_THRESHOLD = 0.3
TOP_K = 5000


def load_yunet(model: Path, score_threshold: float, error: type[RobodataError] = RobodataError) -> Any:
    """An OpenCV FaceDetectorYN on `model` (not shared between threads: OpenCV's detector keeps state per call).

    Args:
        model: the YuNet ONNX file.
        score_threshold: the lowest detection score taken as a face.
        error: the error class to raise (the caller's layer's).

    Raises:
        RobodataError: (as `error`) the model file is missing or OpenCV cannot load it.
    """
    if not model.is_file():
        raise error(f'{model}: the face detector model is missing: reinstall ros_robodata')
    level = cv2.utils.logging.getLogLevel()
    cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_ERROR)  # the DNN engine's notes on targets
    try:
        return cv2.FaceDetectorYN.create(str(model), '', (320, 320), score_threshold, NMS_THRESHOLD, TOP_K)
    except cv2.error as err:
        raise error(f'{model}: OpenCV cannot load the face detector: {" ".join(str(err).split())}') from None
    finally:
        cv2.utils.logging.setLogLevel(level)
