"""A second face detector for the tests, independent of the YuNet model ros_robodata ships: the Viola-Jones Haar
cascade OpenCV has used for twenty years (`haarcascade_frontalface_default.xml`, vendored under test/data/faces/
with its Intel licence), evaluated here in numpy, since OpenCV 5 no longer has `cv2.CascadeClassifier`.

It follows OpenCV 4's `CascadeClassifier.detectMultiScale` (HaarEvaluator): the image shrunk by `scale_factor`
per level, a 24x24 window slid over it (every second pixel while the level is less than twice shrunk, then every
pixel), each window's features normalised by its standard deviation over the inner 22x22 (a window whose standard
deviation is 10 or less is skipped, as OpenCV does), every stage's stumps summed against the stage threshold, and
the windows left grouped as `groupRectangles` does (a group of more than `min_neighbors` windows is a face)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np


@dataclass(frozen=True)
class _Stage:
    threshold: float
    features: np.ndarray  # index into the cascade's features, one per stump
    thresholds: np.ndarray
    left: np.ndarray  # the stump's value when the feature is below its threshold
    right: np.ndarray


class HaarCascade:
    """An OpenCV cascade file of HAAR stumps (upright features only)."""

    def __init__(self, path: Path) -> None:
        cascade = ET.parse(path).getroot().find('cascade')
        assert cascade is not None and cascade.findtext('featureType') == 'HAAR', f'{path}: not a Haar cascade'
        self.width = int(cascade.findtext('width') or 0)
        self.height = int(cascade.findtext('height') or 0)
        self.stages: list[_Stage] = []
        for stage in cascade.iterfind('stages/_'):
            nodes, leaves = [], []
            for weak in stage.iterfind('weakClassifiers/_'):
                node = (weak.findtext('internalNodes') or '').split()
                leaf = (weak.findtext('leafValues') or '').split()
                assert len(node) == 4 and len(leaf) == 2, f'{path}: only stumps are read'
                nodes.append((int(node[2]), float(node[3])))
                leaves.append((float(leaf[0]), float(leaf[1])))
            self.stages.append(_Stage(float(stage.findtext('stageThreshold') or 0),
                                      np.array([n[0] for n in nodes]), np.array([n[1] for n in nodes]),
                                      np.array([v[0] for v in leaves]), np.array([v[1] for v in leaves])))
        self.rects: list[list[tuple[int, int, int, int, float]]] = []
        for feature in cascade.iterfind('features/_'):
            assert feature.findtext('tilted', '0').strip() == '0', f'{path}: tilted features are not read'
            rects = []
            for rect in feature.iterfind('rects/_'):
                x, y, w, h, weight = (rect.text or '').split()
                rects.append((int(x), int(y), int(w), int(h), float(weight)))
            self.rects.append(rects)

    def _windows(self, gray: np.ndarray, step: int) -> np.ndarray:
        """Top-left corners (x, y) of the windows of one level that pass every stage."""
        height, width = gray.shape
        integral, squares = cv2.integral2(gray, sdepth=cv2.CV_64F, sqdepth=cv2.CV_64F)
        ys, xs = np.mgrid[0:height - self.height + 1:step, 0:width - self.width + 1:step]
        xs, ys = xs.ravel(), ys.ravel()

        def rect_sum(table: np.ndarray, x: int, y: int, w: int, h: int) -> np.ndarray:
            return (table[ys + y + h, xs + x + w] - table[ys + y, xs + x + w] - table[ys + y + h, xs + x]
                    + table[ys + y, xs + x])

        inner = (1, 1, self.width - 2, self.height - 2)
        area = inner[2] * inner[3]
        total, square = rect_sum(integral, *inner), rect_sum(squares, *inner)
        spread = area * square - total * total
        keep = spread > 0
        norm = np.zeros_like(spread)
        norm[keep] = 1.0 / np.sqrt(spread[keep])
        keep &= area * norm < 0.1  # OpenCV leaves out windows of standard deviation 10 or less
        xs, ys, norm = xs[keep], ys[keep], norm[keep]
        for stage in self.stages:
            if xs.size == 0:
                break
            score = np.zeros(xs.size)
            for feature, threshold, left, right in zip(stage.features, stage.thresholds, stage.left, stage.right,
                                                       strict=True):
                value = np.zeros(xs.size)
                for x, y, w, h, weight in self.rects[feature]:
                    value += weight * rect_sum(integral, x, y, w, h)
                score += np.where(value * norm < threshold, left, right)
            passed = score >= stage.threshold
            xs, ys, norm = xs[passed], ys[passed], norm[passed]
        return np.stack([xs, ys], axis=1)

    def detect(self, image: np.ndarray, scale_factor: float = 1.1, min_neighbors: int = 3,
               min_size: int = 24) -> list[tuple[int, int, int, int]]:
        """Faces in an 8-bit image (BGR or grey) as (x, y, width, height), as OpenCV's detectMultiScale finds them.

        Args:
            image: the image.
            scale_factor: how much each level of the pyramid is smaller than the one before.
            min_neighbors: a face needs more than this many overlapping windows.
            min_size: the smallest face, in pixels.
        """
        gray = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY) if image.ndim == 3 else image
        height, width = gray.shape
        found: list[tuple[int, int, int, int]] = []
        factor = 1.0
        while True:
            size = (round(width / factor), round(height / factor))
            window = (round(self.width * factor), round(self.height * factor))
            if size[0] < self.width or size[1] < self.height:
                break
            if window[0] >= min_size:
                level = gray if factor == 1.0 else cv2.resize(gray, size, interpolation=cv2.INTER_LINEAR)
                for x, y in self._windows(level, 1 if factor > 2 else 2):
                    found.append((round(x * factor), round(y * factor), window[0], window[1]))
            factor *= scale_factor
        return _group(found, min_neighbors)


def _group(rects: list[tuple[int, int, int, int]], min_neighbors: int,
           eps: float = 0.2) -> list[tuple[int, int, int, int]]:
    """OpenCV's groupRectangles: windows within eps of each other are one group; a group of more than
    `min_neighbors` becomes its average box, and a box inside a stronger one is dropped."""
    parent = list(range(len(rects)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, a in enumerate(rects):
        for j in range(i):
            b = rects[j]
            delta = eps * (min(a[2], b[2]) + min(a[3], b[3])) * 0.5
            if (abs(a[0] - b[0]) <= delta and abs(a[1] - b[1]) <= delta
                    and abs(a[0] + a[2] - b[0] - b[2]) <= delta and abs(a[1] + a[3] - b[1] - b[3]) <= delta):
                parent[root(i)] = root(j)
    groups: dict[int, list[tuple[int, int, int, int]]] = {}
    for i, rect in enumerate(rects):
        groups.setdefault(root(i), []).append(rect)
    boxes = [(tuple(round(v) for v in np.mean(members, axis=0)), len(members)) for members in groups.values()
             if len(members) > min_neighbors]
    kept = []
    for i, (box, count) in enumerate(boxes):
        inside = False
        for j, (other, other_count) in enumerate(boxes):
            if i == j or other_count <= 2 or count >= other_count:
                continue
            dx, dy = round(other[2] * eps), round(other[3] * eps)
            if (other[0] - dx <= box[0] and other[1] - dy <= box[1] and box[0] + box[2] <= other[0] + other[2] + dx
                    and box[1] + box[3] <= other[1] + other[3] + dy):
                inside = True
                break
        if not inside:
            kept.append(box)
    return [(int(b[0]), int(b[1]), int(b[2]), int(b[3])) for b in kept]
