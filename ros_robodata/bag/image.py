"""Decode and encode sensor_msgs/Image and sensor_msgs/CompressedImage without cv_bridge.

The core must not depend on rclpy or cv_bridge, yet it has to read every camera a robot may carry:
raw images in any common encoding (with row padding and either byte order), Bayer and YUV sensors,
and image_transport's compressed and compressedDepth payloads. Messages may come from rosbags
(``data`` is a numpy array) or from rclpy (``array.array``, ``bytes`` or a list), so only attribute
names are relied on, never the message class.

Two views of a frame are offered: ``color='native'`` is the data as encoded (for training data that
must keep depth in millimetres or 16-bit intensities), ``'rgb'``/``'bgr'`` is an HxWx3 uint8 picture
for display, video export and image checks.
"""

from __future__ import annotations

import array
import re
import struct
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from ros_robodata.errors import BagError

COLORS = ('rgb', 'bgr', 'native')


@dataclass(frozen=True)
class Layout:
    """How one encoding stores a pixel: element type, channels, and what the channels mean.

    ``kind`` is one of 'rgb', 'bgr', 'rgba', 'bgra', 'mono', 'bayer_rggb', 'bayer_bggr', 'bayer_gbrg',
    'bayer_grbg', 'uyvy', 'yuyv', or 'channels' for OpenCV-style types such as 32FC2 whose channels
    have no colour meaning.
    """

    dtype: np.dtype
    channels: int
    kind: str


def _layout(dtype: str, channels: int, kind: str) -> Layout:
    return Layout(np.dtype(dtype), channels, kind)


# Named encodings from sensor_msgs/image_encodings.hpp.
NAMED_ENCODINGS: dict[str, Layout] = {
    'rgb8': _layout('u1', 3, 'rgb'),
    'bgr8': _layout('u1', 3, 'bgr'),
    'rgba8': _layout('u1', 4, 'rgba'),
    'bgra8': _layout('u1', 4, 'bgra'),
    'rgb16': _layout('u2', 3, 'rgb'),
    'bgr16': _layout('u2', 3, 'bgr'),
    'rgba16': _layout('u2', 4, 'rgba'),
    'bgra16': _layout('u2', 4, 'bgra'),
    'mono8': _layout('u1', 1, 'mono'),
    'mono16': _layout('u2', 1, 'mono'),
    'bayer_rggb8': _layout('u1', 1, 'bayer_rggb'),
    'bayer_bggr8': _layout('u1', 1, 'bayer_bggr'),
    'bayer_gbrg8': _layout('u1', 1, 'bayer_gbrg'),
    'bayer_grbg8': _layout('u1', 1, 'bayer_grbg'),
    'yuv422': _layout('u1', 2, 'uyvy'),
    'yuv422_yuy2': _layout('u1', 2, 'yuyv'),
}

# OpenCV-style encodings such as 16UC1 or 32FC3: bits, signedness/float, channel count.
CV_TYPE = re.compile(r'^(8|16|32|64)([USF])C([1-4])$')
CV_DTYPES = {
    ('8', 'U'): 'u1',
    ('8', 'S'): 'i1',
    ('16', 'U'): 'u2',
    ('16', 'S'): 'i2',
    ('32', 'S'): 'i4',
    ('32', 'F'): 'f4',
    ('64', 'F'): 'f8',
}
# Channel meaning of OpenCV types follows OpenCV's own convention (8UC3 is BGR, as cv_bridge does).
CV_KINDS = {1: 'mono', 2: 'channels', 3: 'bgr', 4: 'bgra'}

SUPPORTED = ', '.join([*NAMED_ENCODINGS, '<8|16|32|64><U|S|F>C<1-4> (e.g. 16UC1, 32FC1)'])

# OpenCV names Bayer patterns after the second row's 2nd and 3rd pixels, so ROS's RGGB is its BG.
BAYER_TO_BGR = {
    'bayer_rggb': cv2.COLOR_BayerBG2BGR,
    'bayer_bggr': cv2.COLOR_BayerRG2BGR,
    'bayer_gbrg': cv2.COLOR_BayerGR2BGR,
    'bayer_grbg': cv2.COLOR_BayerGB2BGR,
}
YUV_TO_BGR = {'uyvy': cv2.COLOR_YUV2BGR_UYVY, 'yuyv': cv2.COLOR_YUV2BGR_YUY2}

# compressed_depth_image_transport prefixes its PNG with a ConfigHeader: int32 format, float[2] params.
DEPTH_HEADER = struct.Struct('<iff')
PNG_MAGIC = b'\x89PNG\r\n\x1a\n'


def encoding_layout(encoding: str) -> Layout:
    """The layout of a ROS image encoding; BagError naming the supported ones if it is unknown."""
    if encoding in NAMED_ENCODINGS:
        return NAMED_ENCODINGS[encoding]
    match = CV_TYPE.match(encoding)
    if match and (match[1], match[2]) in CV_DTYPES:
        channels = int(match[3])
        return _layout(CV_DTYPES[match[1], match[2]], channels, CV_KINDS[channels])
    raise BagError(f'image: unsupported encoding {encoding!r}; supported: {SUPPORTED}')


def uint8_view(data: Any, what: str) -> np.ndarray:
    """A message's uint8[] field as a 1-D uint8 array, whichever client library filled it.

    rosbags gives numpy arrays, rclpy gives ``array.array('B')``, ``bytes`` or lists. Buffers are
    viewed without copying; the result may therefore be read-only and alias the message.
    """
    if isinstance(data, np.ndarray):
        if data.dtype != np.uint8:
            raise BagError(f'{what}: data has dtype {data.dtype}, expected uint8')
        return data.reshape(-1)
    if isinstance(data, (bytes, bytearray, memoryview, array.array)):
        view = memoryview(data)
        if view.itemsize != 1:
            raise BagError(f'{what}: data has {view.itemsize}-byte items, expected bytes')
        return np.frombuffer(view, dtype=np.uint8)
    if isinstance(data, (list, tuple)):
        values = np.asarray(data)
        if values.size and (values.dtype.kind not in 'iu' or values.min() < 0 or values.max() > 255):
            raise BagError(f'{what}: data list holds values that are not bytes (0..255)')
        return values.astype(np.uint8).reshape(-1)
    raise BagError(f'{what}: data of type {type(data).__name__} is not a byte buffer')


def decode_image(msg: Any, color: str = 'rgb', value_range: tuple[float, float] | None = None) -> np.ndarray:
    """Pixels of a sensor_msgs/Image or CompressedImage (told apart by its ``format`` attribute).

    color='rgb' or 'bgr': HxWx3 uint8. Colour images keep their colours (16-bit ones scaled by
    their full range); single-channel and float images are stretched from ``value_range`` or, when
    it is None, from their finite min..max onto 0..255, with NaN and Inf shown as 0.
    color='native': the values as encoded, HxW or HxWxC, dtype per encoding, native byte order,
    without row padding; always a new array that does not alias the message.
    """
    if color not in COLORS:
        raise BagError(f'image: color must be one of {", ".join(COLORS)}, got {color!r}')
    if hasattr(msg, 'format'):
        pixels, kind = _decode_compressed(msg)
    else:
        pixels, kind = _decode_raw(msg)
    if color == 'native':
        return pixels
    return _to_display(pixels, kind, color, value_range)


def _decode_raw(msg: Any) -> tuple[np.ndarray, str]:
    """The native pixels of a raw Image and their layout kind."""
    encoding = str(msg.encoding)
    layout = encoding_layout(encoding)
    height, width, step = int(msg.height), int(msg.width), int(msg.step)
    if height <= 0 or width <= 0:
        raise BagError(f'image: empty image ({height}x{width}) with encoding {encoding}')
    item = layout.dtype.itemsize
    row_bytes = width * layout.channels * item
    if step < row_bytes:
        product = 'width*channels' if item == 1 else f'width*channels*{item}'
        raise BagError(f'image: step {step} is smaller than {product} {row_bytes} for encoding {encoding}')
    buffer = uint8_view(msg.data, 'image')
    if buffer.size < height * step:
        raise BagError(
            f'image: data has {buffer.size} bytes, fewer than height*step {height * step} '
            f'({height}x{step}) for encoding {encoding}'
        )
    rows = np.ascontiguousarray(buffer[: height * step].reshape(height, step)[:, :row_bytes])
    stored = layout.dtype.newbyteorder('>' if msg.is_bigendian else '<')
    pixels = rows.view(stored).astype(layout.dtype.newbyteorder('='), copy=True)
    shape = (height, width) if layout.channels == 1 else (height, width, layout.channels)
    return pixels.reshape(shape), layout.kind


def _decode_compressed(msg: Any) -> tuple[np.ndarray, str]:
    """The native pixels of a CompressedImage and their layout kind.

    Plain payloads come back in the original encoding's channel order when the format names one
    ('rgb8; jpeg compressed bgr8' gives RGB), else in OpenCV's BGR/BGRA/gray.
    """
    fmt = str(msg.format)
    payload = uint8_view(msg.data, 'compressed image')
    original, _, transport = (part.strip() for part in fmt.partition(';'))
    if 'compressedDepth' in transport:
        return _decode_compressed_depth(payload, original, fmt), 'mono'
    if not transport and original not in ('', 'jpeg', 'jpg', 'png'):
        raise BagError(
            f'compressed image: unsupported format {fmt!r}; expected jpeg, png or "<encoding>; <codec> ..."'
        )
    pixels = _imdecode(payload, fmt)
    if pixels.ndim == 2:
        return pixels, 'mono'
    kind = {3: 'bgr', 4: 'bgra'}.get(pixels.shape[2])
    if kind is None:
        raise BagError(f'compressed image: decoded {pixels.shape[2]} channels from format {fmt!r}')
    original_kind = NAMED_ENCODINGS[original].kind if original in NAMED_ENCODINGS else None
    if transport and original_kind in ('rgb', 'rgba'):
        order = cv2.COLOR_BGR2RGB if kind == 'bgr' else cv2.COLOR_BGRA2RGBA
        return cv2.cvtColor(pixels, order), 'rgb' if kind == 'bgr' else 'rgba'
    return pixels, kind


def _imdecode(payload: np.ndarray, fmt: str) -> np.ndarray:
    """cv2.imdecode keeping bit depth and channels; BagError instead of a silent None."""
    if payload.size == 0:
        raise BagError(f'compressed image: no data for format {fmt!r}')
    try:
        pixels = cv2.imdecode(payload, cv2.IMREAD_UNCHANGED)
    except cv2.error as exc:
        raise BagError(f'compressed image: cannot decode {payload.size} bytes as {fmt!r}: {exc}') from exc
    if pixels is None:
        raise BagError(
            f'compressed image: cannot decode {payload.size} bytes as {fmt!r} (corrupt or not an image)'
        )
    return pixels


def _decode_compressed_depth(payload: np.ndarray, original: str, fmt: str) -> np.ndarray:
    """A compressedDepth PNG: 16UC1 as stored, 32FC1 restored from its inverse-depth quantization."""
    if not fmt.rstrip().endswith(('compressedDepth', 'compressedDepth png')):
        raise BagError(f'compressed image: unsupported compressedDepth variant {fmt!r}; only png is read')
    if original not in ('16UC1', 'mono16', '32FC1'):
        raise BagError(
            f'compressed image: compressedDepth of {original!r} is unsupported; expected 16UC1 or 32FC1'
        )
    raw = payload.tobytes()
    if raw[DEPTH_HEADER.size : DEPTH_HEADER.size + len(PNG_MAGIC)] == PNG_MAGIC:
        _, quant_a, quant_b = DEPTH_HEADER.unpack_from(raw)
        png = payload[DEPTH_HEADER.size :]
    elif raw.startswith(PNG_MAGIC):
        if original == '32FC1':
            raise BagError(f'compressed image: {fmt!r} lacks the 12-byte header with its depth quantization')
        png = payload
    else:
        raise BagError(
            f'compressed image: {fmt!r} data is not a PNG after the 12-byte compressedDepth header'
        )
    stored = _imdecode(png, fmt)
    if stored.ndim != 2 or stored.dtype != np.uint16:
        raise BagError(
            f'compressed image: {fmt!r} holds a {stored.dtype} image of shape {stored.shape}, '
            'expected single-channel 16-bit'
        )
    if original != '32FC1':
        return stored
    inverse = stored.astype(np.float32)
    with np.errstate(divide='ignore'):
        depth = np.float32(quant_a) / (inverse - np.float32(quant_b))
    depth[stored == 0] = np.nan
    return depth.astype(np.float32)


def _to_display(
    pixels: np.ndarray, kind: str, color: str, value_range: tuple[float, float] | None
) -> np.ndarray:
    """Native pixels of a given layout kind as HxWx3 uint8 in RGB or BGR order."""
    rgb = color == 'rgb'
    if kind in BAYER_TO_BGR:
        bgr = cv2.cvtColor(pixels, BAYER_TO_BGR[kind])
        return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB) if rgb else bgr
    if kind in YUV_TO_BGR:
        if pixels.shape[1] % 2:
            raise BagError(f'image: {kind.upper()} needs an even width, got {pixels.shape[1]}')
        bgr = cv2.cvtColor(pixels, YUV_TO_BGR[kind])
        return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB) if rgb else bgr
    if kind == 'channels':
        raise BagError(f"image: cannot show {pixels.shape[2]}-channel data as colour; use color='native'")
    colour = kind != 'mono'
    eight = to_uint8(pixels, value_range, full_range=colour and pixels.dtype.kind in 'iu')
    conversions = {
        ('mono', True): cv2.COLOR_GRAY2RGB,
        ('mono', False): cv2.COLOR_GRAY2BGR,
        ('rgb', False): cv2.COLOR_RGB2BGR,
        ('bgr', True): cv2.COLOR_BGR2RGB,
        ('rgba', True): cv2.COLOR_RGBA2RGB,
        ('rgba', False): cv2.COLOR_RGBA2BGR,
        ('bgra', True): cv2.COLOR_BGRA2RGB,
        ('bgra', False): cv2.COLOR_BGRA2BGR,
    }
    code = conversions.get((kind, rgb))
    return eight if code is None else cv2.cvtColor(eight, code)


def to_uint8(
    values: np.ndarray, value_range: tuple[float, float] | None = None, full_range: bool = False
) -> np.ndarray:
    """Values stretched linearly onto 0..255 for display; non-finite values become 0.

    The range is ``value_range`` if given, else the dtype's full range when ``full_range`` (colour
    images), else the finite min..max; a constant image maps to 0.
    """
    if values.dtype == np.uint8 and value_range is None:
        return np.ascontiguousarray(values)
    floats = values.astype(np.float64)
    finite = np.isfinite(floats)
    if value_range is not None:
        low, high = float(value_range[0]), float(value_range[1])
        if not high > low:
            raise BagError(f'image: value_range {value_range} must have low < high')
    elif full_range:
        info = np.iinfo(values.dtype)
        low, high = float(info.min), float(info.max)
    elif finite.any():
        low, high = float(floats[finite].min()), float(floats[finite].max())
    else:
        return np.zeros(values.shape, np.uint8)
    scale = 255.0 / (high - low) if high > low else 0.0
    scaled = np.where(finite, (floats - low) * scale, 0.0)
    return np.rint(np.clip(scaled, 0.0, 255.0)).astype(np.uint8)


def encode_image(pixels: np.ndarray, encoding: str) -> dict[str, Any]:
    """Fields of a sensor_msgs/Image (all but header) holding ``pixels`` unpadded and little-endian.

    ``pixels`` must be HxW or HxWxC with the encoding's dtype and channel count (HxWx1 is accepted
    for single-channel encodings). ``data`` is a fresh 1-D uint8 array, as rosbags expects.
    """
    layout = encoding_layout(encoding)
    array_ = np.asarray(pixels)
    if array_.ndim == 3 and layout.channels == 1 and array_.shape[2] == 1:
        array_ = array_[:, :, 0]
    expected = 2 if layout.channels == 1 else 3
    if array_.ndim != expected or (expected == 3 and array_.shape[2] != layout.channels):
        want = 'HxW' if layout.channels == 1 else f'HxWx{layout.channels}'
        raise BagError(f'image: encoding {encoding} needs a {want} array, got shape {array_.shape}')
    if array_.dtype != layout.dtype:
        raise BagError(f'image: encoding {encoding} needs dtype {layout.dtype}, got {array_.dtype}')
    height, width = array_.shape[:2]
    data = np.ascontiguousarray(array_, dtype=layout.dtype.newbyteorder('<')).view(np.uint8).reshape(-1)
    return {
        'height': height,
        'width': width,
        'encoding': encoding,
        'is_bigendian': 0,
        'step': width * layout.channels * layout.dtype.itemsize,
        'data': data.copy(),
    }


def encode_compressed(pixels: np.ndarray, fmt: str = 'jpeg', quality: int = 90) -> dict[str, Any]:
    """Fields ``format`` and ``data`` of a sensor_msgs/CompressedImage, as image_transport writes them.

    ``pixels``: HxWx3 uint8 RGB, or HxW mono (uint8; uint16 too for png and compressedDepth).
    fmt 'jpeg' (``quality`` 1..100 applies) or 'png' give e.g. 'rgb8; jpeg compressed bgr8';
    'compressedDepth' takes a uint16 depth image and gives '16UC1; compressedDepth png' with its
    12-byte header.
    """
    array_ = np.asarray(pixels)
    if fmt not in ('jpeg', 'png', 'compressedDepth'):
        raise BagError(f'compressed image: fmt must be jpeg, png or compressedDepth, got {fmt!r}')
    if fmt == 'jpeg' and not 1 <= quality <= 100:
        raise BagError(f'compressed image: jpeg quality must be 1..100, got {quality}')
    if fmt == 'compressedDepth':
        if array_.ndim != 2 or array_.dtype != np.uint16:
            raise BagError(
                f'compressed image: compressedDepth needs an HxW uint16 array, got {array_.dtype} '
                f'{array_.shape}'
            )
        header = np.frombuffer(DEPTH_HEADER.pack(0, 0.0, 0.0), np.uint8)
        png = _imencode(array_, '.png', [])
        return {'format': '16UC1; compressedDepth png', 'data': np.concatenate([header, png])}
    colour = array_.ndim == 3 and array_.shape[2] == 3
    allowed = (np.uint8,) if fmt == 'jpeg' else (np.uint8, np.uint16)
    if not (colour or array_.ndim == 2) or array_.dtype not in allowed:
        dtypes = '/'.join(np.dtype(d).name for d in allowed)
        raise BagError(
            f'compressed image: {fmt} needs HxWx3 RGB or HxW mono of {dtypes}, '
            f'got {array_.dtype} {array_.shape}'
        )
    bits = 8 * array_.dtype.itemsize
    original, target = (f'rgb{bits}', f'bgr{bits}') if colour else (f'mono{bits}', f'mono{bits}')
    stored = cv2.cvtColor(array_, cv2.COLOR_RGB2BGR) if colour else array_
    params = [cv2.IMWRITE_JPEG_QUALITY, int(quality)] if fmt == 'jpeg' else []
    data = _imencode(stored, f'.{fmt}', params)
    return {'format': f'{original}; {fmt} compressed {target}', 'data': data}


def _imencode(pixels: np.ndarray, ext: str, params: list[int]) -> np.ndarray:
    ok, encoded = cv2.imencode(ext, np.ascontiguousarray(pixels), params)
    if not ok:
        raise BagError(f'compressed image: OpenCV cannot encode {pixels.dtype} {pixels.shape} as {ext}')
    return encoded.reshape(-1).astype(np.uint8)
