"""The real sensor data vendored in test/data (photos and a Velodyne scan; sources and licenses in
test/data/README.md). A missing file is a broken checkout, so tests fail on it rather than skip."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

REAL_DATA = Path(__file__).resolve().parent / 'data'


def real_data(name: str) -> Path:
    """test/data/<name>, failing the test when the checkout lacks it."""
    path = REAL_DATA / name
    if not path.exists():
        pytest.fail(f'real test data missing: expected {path} (see test/data/README.md)')
    return path


def read_photos(width: int | None = None) -> list[np.ndarray]:
    """All real photos as HxWx3 uint8 RGB; with `width`, resized to it (aspect kept)."""
    paths = sorted(real_data('photos').glob('*.png'))
    if not paths:
        pytest.fail(f'no photos in {real_data("photos")}')
    images = []
    for path in paths:
        bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if bgr is None:
            pytest.fail(f'cannot read photo {path}')
        if width is not None and bgr.shape[1] != width:
            bgr = cv2.resize(bgr, (width, round(bgr.shape[0] * width / bgr.shape[1])), interpolation=cv2.INTER_AREA)
        images.append(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))
    return images
