"""Drawing a moment of an episode onto a camera image: the reviewers' boxes and polygons in their taxonomy
class's colour with its name, a banner with the event and subtask, and the quality flags active then.

Box and polygon outlines are drawn without anti-aliasing and inside the labelled area (a box [x, y, w, h] covers
pixel columns x .. x+w-1), so a drawn box's edge pixels are exactly the class colour at the coordinates
annotations.json gives; text is anti-aliased for reading.
"""

from __future__ import annotations

from collections.abc import Iterable

import cv2
import numpy as np

from ros_robodata.labeling.taxonomy import Taxonomy, default_color
from ros_robodata.quality.findings import ERROR, INFO, WARN
from ros_robodata.replay.episode_view import Moment, Shape

BGR = tuple[int, int, int]
_FONT = cv2.FONT_HERSHEY_SIMPLEX
_SEVERITY_BGR: dict[str, BGR] = {ERROR: (40, 40, 230), WARN: (0, 165, 255), INFO: (200, 200, 200)}
_BANNER_BGR: BGR = (255, 255, 255)
_MAX_FLAGS = 3  # more would hide the picture; the markers list them all


def hex_to_bgr(color: str) -> BGR:
    """'#911eb4' -> (180, 30, 145): OpenCV's channel order."""
    value = color.lstrip('#')
    r, g, b = (int(value[i:i + 2], 16) for i in (0, 2, 4))
    return b, g, r


def class_style(taxonomy: Taxonomy | None, path: str) -> tuple[str, BGR]:
    """(name shown, colour) of a class: the taxonomy's, else its last path segment in the colour the taxonomy
    would derive for it (a class the taxonomy lacks still gets a stable colour)."""
    if taxonomy is not None and path in taxonomy:
        cls = taxonomy.get(path)
        return cls.name, hex_to_bgr(cls.color)
    return path.rsplit('/', 1)[-1], hex_to_bgr(default_color(path))


def annotate(image_bgr: np.ndarray, shapes: Iterable[Shape], moment: Moment | None,
             taxonomy: Taxonomy | None) -> np.ndarray:
    """A copy of the image (HxWx3 uint8, BGR) with the shapes, the banner and the flags of `moment` drawn."""
    out = np.ascontiguousarray(image_bgr, dtype=np.uint8).copy()
    if out.ndim != 3 or out.shape[2] != 3:
        raise ValueError(f'annotate: expected an HxWx3 BGR image, got shape {out.shape}')
    scale = _scale(out)
    if moment is not None:
        draw_banner(out, moment, scale)
        draw_flags(out, moment, scale)
    for shape in shapes:  # last: a box is never hidden under the bands
        draw_shape(out, shape, taxonomy, scale)
    return out


def draw_shape(image: np.ndarray, shape: Shape, taxonomy: Taxonomy | None, scale: float) -> None:
    name, colour = class_style(taxonomy, shape.value)
    thickness = max(1, round(2 * scale))
    if shape.kind == 'box' and shape.box is not None:
        x, y, w, h = shape.box
        x0, y0 = round(x), round(y)
        x1, y1 = round(x + w) - 1, round(y + h) - 1
        for k in range(thickness):  # inward, so the outer edge is the labelled edge
            if x0 + k <= x1 - k and y0 + k <= y1 - k:
                cv2.rectangle(image, (x0 + k, y0 + k), (x1 - k, y1 - k), colour, 1, cv2.LINE_8)
        anchor = (x0, y0)
    elif shape.points:
        points = np.round(np.asarray(shape.points, dtype=np.float64)).astype(np.int32).reshape(-1, 1, 2)
        cv2.polylines(image, [points], True, colour, thickness, cv2.LINE_8)
        anchor = (int(points[:, 0, 0].min()), int(points[:, 0, 1].min()))
    else:
        return
    _tag(image, name, anchor, colour, scale)


def _tag(image: np.ndarray, text: str, anchor: tuple[int, int], colour: BGR, scale: float) -> None:
    """The class name on a filled patch of its colour just above the shape (inside it at the image's top)."""
    size = 0.4 * scale
    (w, h), base = cv2.getTextSize(text, _FONT, size, 1)
    x, y = anchor
    top = y - h - base - 2 if y - h - base - 2 >= 0 else y + 1
    cv2.rectangle(image, (x, top), (x + w + 2, top + h + base + 1), colour, -1)
    cv2.putText(image, text, (x + 1, top + h + 1), _FONT, size, _text_on(colour), 1, cv2.LINE_AA)


def draw_banner(image: np.ndarray, moment: Moment, scale: float) -> None:
    """The event and subtask (or the episode's status before any event) on a dark band across the top."""
    text = moment.headline() or moment.status_line()
    if moment.elapsed_s is not None:
        text = f'{moment.elapsed_s:6.2f} s  {text}'
    if text:
        _band(image, [(text, _BANNER_BGR)], scale, top=True)


def draw_flags(image: np.ndarray, moment: Moment, scale: float) -> None:
    """The active quality findings, worst first, in their severity's colour on a dark band at the bottom."""
    lines = [(f'{f.severity}: {f.check} {f.topic}'.strip(), _SEVERITY_BGR.get(f.severity, _BANNER_BGR))
             for f in moment.flags[:_MAX_FLAGS]]
    if len(moment.flags) > _MAX_FLAGS:
        lines.append((f'... and {len(moment.flags) - _MAX_FLAGS} more', _BANNER_BGR))
    if lines:
        _band(image, lines, scale, top=False)


def _band(image: np.ndarray, lines: list[tuple[str, BGR]], scale: float, *, top: bool) -> None:
    size = 0.4 * scale
    line_h = cv2.getTextSize('Ag', _FONT, size, 1)[0][1] + max(3, round(4 * scale))
    height = min(image.shape[0], line_h * len(lines) + 4)
    rows = slice(0, height) if top else slice(image.shape[0] - height, image.shape[0])
    image[rows] = (image[rows] * 0.35).astype(np.uint8)  # darkened, the scene still visible under the text
    y = rows.start + line_h
    for text, colour in lines:
        cv2.putText(image, text, (3, y - 2), _FONT, size, colour, 1, cv2.LINE_AA)
        y += line_h


def _scale(image: np.ndarray) -> float:
    """Text and line size for the image: 1.0 at 640 px wide, never below a readable 0.6."""
    return max(0.6, image.shape[1] / 640)


def _text_on(colour: BGR) -> BGR:
    b, g, r = colour
    return (0, 0, 0) if 0.114 * b + 0.587 * g + 0.299 * r > 140 else (255, 255, 255)
