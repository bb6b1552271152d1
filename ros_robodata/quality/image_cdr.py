"""A raw camera frame's gray picture straight from its CDR bytes, for the offline camera checks.

Decoding a frame the generic way (rosbags builds the message and copies its pixels, decode_image copies them
again into an RGB array) cost more than the image checks. For the common 8-bit colour encodings the pixels are
read as a numpy view on the message's bytes and turned to gray in one OpenCV call: the same gray image the checks
make from decode_image's RGB (OpenCV weighs R, G, B alike whichever order they are stored in). Anything else
(mono images are contrast-stretched by decode_image, 16-bit, Bayer, compressed) returns None and takes the
generic path.
"""

from __future__ import annotations

import struct

import cv2
import numpy as np

_U32 = struct.Struct('<I')
_TO_GRAY = {b'rgb8': (3, cv2.COLOR_RGB2GRAY), b'bgr8': (3, cv2.COLOR_BGR2GRAY),
            b'rgba8': (4, cv2.COLOR_RGBA2GRAY), b'bgra8': (4, cv2.COLOR_BGRA2GRAY)}


def _align(offset: int, size: int) -> int:
    return offset + (-(offset - 4) % size)


def gray_from_image_cdr(data: bytes | memoryview) -> np.ndarray | None:
    """The full-size 8-bit gray frame of a little-endian sensor_msgs/Image in rgb8, bgr8, rgba8 or bgra8; None
    for anything else or anything malformed (the generic decoder then says what is wrong)."""
    view = memoryview(data)
    if len(view) < 24 or view[1] != 1:
        return None
    try:
        (length,) = _U32.unpack_from(view, 12)
        offset = _align(16 + length, 4)
        height, width, enc_len = struct.unpack_from('<III', view, offset)
        offset += 12
        encoding = bytes(view[offset:offset + enc_len]).rstrip(b'\x00')
        offset += enc_len
        bigendian = view[offset]
        offset = _align(offset + 1, 4)
        step, size = struct.unpack_from('<II', view, offset)
        offset += 8
    except (struct.error, IndexError):
        return None
    layout = _TO_GRAY.get(encoding)
    if layout is None or bigendian not in (0, 1) or height == 0 or width == 0:
        return None
    channels, code = layout
    row = width * channels
    if step < row or size < height * step or offset + height * step > len(view):
        return None
    pixels = np.frombuffer(view, dtype=np.uint8, count=height * step, offset=offset).reshape(height, step)
    return cv2.cvtColor(pixels[:, :row].reshape(height, width, channels), code)
