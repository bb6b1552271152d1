"""The real sensor data beside the repository (shared/data): photos and a Velodyne scan. A missing folder is a
broken checkout, so tests fail on it rather than skip."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / 'shared' / 'data'


def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f'real test data missing: expected {SHARED_DATA} (shared/data beside the repository)')
    return SHARED_DATA


def read_photos(width: int | None = None) -> list[np.ndarray]:
    """All real photos as HxWx3 uint8 RGB; with `width`, resized to it (aspect kept)."""
    paths = sorted((shared_data() / 'photos').glob('*.png'))
    if not paths:
        pytest.fail(f'no photos in {shared_data() / "photos"}')
    images = []
    for path in paths:
        bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if bgr is None:
            pytest.fail(f'cannot read photo {path}')
        if width is not None and bgr.shape[1] != width:
            bgr = cv2.resize(bgr, (width, round(bgr.shape[0] * width / bgr.shape[1])), interpolation=cv2.INTER_AREA)
        images.append(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))
    return images
