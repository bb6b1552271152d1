"""Image decode/encode against real photos, through real CDR, in every supported encoding.

The photos are real camera images (texture, noise, saturated sky), so colour-order, demosaicing and
padding mistakes show up as large errors rather than passing by luck on synthetic gradients.
"""

from __future__ import annotations

import array
import struct
from types import SimpleNamespace
from typing import Any

import cv2
import numpy as np
import pytest

from ros_robodata.bag.image import decode_image, encode_compressed, encode_image
from ros_robodata.bag.types import typestore
from ros_robodata.errors import BagError
from test.real_data import read_photos

PNG_MAGIC = b'\x89PNG\r\n\x1a\n'
TS = typestore()
Image = TS.types['sensor_msgs/msg/Image']
CompressedImage = TS.types['sensor_msgs/msg/CompressedImage']
Header = TS.types['std_msgs/msg/Header']
Time = TS.types['builtin_interfaces/msg/Time']


@pytest.fixture(scope='module')
def photos() -> list[np.ndarray]:
    """All real photos as HxWx3 uint8 RGB."""
    return read_photos()


@pytest.fixture(scope='module')
def photo(photos: list[np.ndarray]) -> np.ndarray:
    assert photos[0].shape == (426, 640, 3)
    return photos[0]


def header() -> Any:
    return Header(stamp=Time(sec=1, nanosec=2), frame_id='camera')


def cdr(msg: Any) -> Any:
    """The message after a real serialize/deserialize cycle, as a bag reader would see it."""
    return TS.deserialize_cdr(TS.serialize_cdr(msg, msg.__msgtype__), msg.__msgtype__)


def raw(**fields: Any) -> Any:
    return cdr(Image(header=header(), **fields))


def compressed(fields: dict[str, Any]) -> Any:
    return cdr(CompressedImage(header=header(), **fields))


def gray(rgb: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)


def variants(rgb: np.ndarray) -> dict[str, np.ndarray]:
    """The photo in every lossless encoding, with values that use each type's range."""
    mono = gray(rgb)
    alpha = mono[:, :, None]
    depth = mono.astype(np.float32) / 255.0 * 4.0
    depth[::7, ::5] = np.nan
    return {
        'rgb8': rgb,
        'bgr8': rgb[:, :, ::-1].copy(),
        'rgba8': np.concatenate([rgb, alpha], axis=2),
        'bgra8': np.concatenate([rgb[:, :, ::-1], alpha], axis=2),
        'mono8': mono,
        '8UC1': mono,
        '8UC3': rgb,
        '8UC4': np.concatenate([rgb, alpha], axis=2),
        'mono16': mono.astype(np.uint16) * 257,
        '16UC1': mono.astype(np.uint16) * 40 + 7,
        '16SC1': mono.astype(np.int16) * 100 - 12000,
        '32FC1': depth,
        '64FC1': depth.astype(np.float64) * 1e-3,
        'rgb16': rgb.astype(np.uint16) * 257,
    }


@pytest.mark.parametrize('encoding', list(variants(np.zeros((2, 2, 3), np.uint8))))
def test_lossless_round_trip_through_cdr(photo: np.ndarray, encoding: str) -> None:
    source = variants(photo)[encoding]
    msg = raw(**encode_image(source, encoding))
    assert msg.step == photo.shape[1] * (1 if source.ndim == 2 else source.shape[2]) * source.dtype.itemsize
    native = decode_image(msg, color='native')
    assert native.dtype == source.dtype and native.shape == source.shape
    assert np.array_equal(native, source, equal_nan=True)
    shown = decode_image(msg)
    assert shown.shape == (426, 640, 3) and shown.dtype == np.uint8


def test_rgb8_and_bgr8_channel_order(photo: np.ndarray) -> None:
    red = np.zeros((4, 6, 3), np.uint8)
    red[1, 2] = (255, 0, 0)
    as_rgb = raw(**encode_image(red, 'rgb8'))
    assert decode_image(as_rgb, 'rgb')[1, 2].tolist() == [255, 0, 0]
    assert decode_image(as_rgb, 'bgr')[1, 2].tolist() == [0, 0, 255]
    as_bgr = raw(**encode_image(red[:, :, ::-1].copy(), 'bgr8'))
    assert decode_image(as_bgr, 'rgb')[1, 2].tolist() == [255, 0, 0]
    assert decode_image(as_bgr, 'native')[1, 2].tolist() == [0, 0, 255]
    # Whole real photo: both encodings show the same picture.
    assert np.array_equal(decode_image(raw(**encode_image(photo, 'rgb8'))), photo)
    assert np.array_equal(decode_image(raw(**encode_image(photo[:, :, ::-1].copy(), 'bgr8'))), photo)
    assert np.array_equal(decode_image(raw(**encode_image(photo, 'rgb8')), 'bgr'), photo[:, :, ::-1])


def test_alpha_is_dropped_and_mono_is_grey(photo: np.ndarray) -> None:
    four = variants(photo)
    assert np.array_equal(decode_image(raw(**encode_image(four['rgba8'], 'rgba8'))), photo)
    assert np.array_equal(decode_image(raw(**encode_image(four['bgra8'], 'bgra8')), 'bgr'), photo[:, :, ::-1])
    shown = decode_image(raw(**encode_image(four['mono8'], 'mono8')))
    assert all(np.array_equal(shown[:, :, c], four['mono8']) for c in range(3))
    sixteen = decode_image(raw(**encode_image(four['rgb16'], 'rgb16')))
    assert np.array_equal(sixteen, photo)


def test_padded_step_is_removed(photo: np.ndarray) -> None:
    fields = encode_image(photo, 'rgb8')
    pad = 64
    rows = fields['data'].reshape(426, 1920)
    padded = np.concatenate([rows, np.full((426, pad), 0xAB, np.uint8)], axis=1).reshape(-1)
    msg = raw(**(fields | {'step': 1920 + pad, 'data': padded}))
    assert np.array_equal(decode_image(msg, 'native'), photo)
    assert np.array_equal(decode_image(msg, 'rgb'), photo)


def test_padded_step_not_a_multiple_of_the_element_size(photo: np.ndarray) -> None:
    depth = variants(photo)['16UC1']
    fields = encode_image(depth, '16UC1')
    rows = fields['data'].reshape(426, 1280)
    padded = np.concatenate([rows, np.zeros((426, 3), np.uint8)], axis=1).reshape(-1)
    msg = raw(**(fields | {'step': 1283, 'data': padded}))
    assert np.array_equal(decode_image(msg, 'native'), depth)


def test_big_endian_mono16(photo: np.ndarray) -> None:
    values = gray(photo).astype(np.uint16) * 251 + 3
    big = np.ascontiguousarray(values, dtype='>u2').view(np.uint8).reshape(-1)
    msg = raw(height=426, width=640, encoding='mono16', is_bigendian=1, step=1280, data=big)
    native = decode_image(msg, 'native')
    assert native.dtype == np.uint16 and native.dtype.isnative
    assert np.array_equal(native, values)
    # The same bytes read as little-endian are different values: the flag is honoured.
    misread = raw(height=426, width=640, encoding='mono16', is_bigendian=0, step=1280, data=big)
    assert not np.array_equal(decode_image(misread, 'native'), values)


def test_big_endian_float_depth() -> None:
    depth = np.array([[0.5, np.nan], [2.25, -1.0]], np.float32)
    big = np.ascontiguousarray(depth, dtype='>f4').view(np.uint8).reshape(-1)
    msg = raw(height=2, width=2, encoding='32FC1', is_bigendian=1, step=8, data=big)
    assert np.array_equal(decode_image(msg, 'native'), depth, equal_nan=True)


def test_depth_display_is_normalised(photo: np.ndarray) -> None:
    depth = gray(photo).astype(np.uint16) * 10 + 1000
    shown = decode_image(raw(**encode_image(depth, '16UC1')))
    low, high = np.unravel_index(depth.argmin(), depth.shape), np.unravel_index(depth.argmax(), depth.shape)
    assert shown[low].tolist() == [0, 0, 0] and shown[high].tolist() == [255, 255, 255]
    fixed = decode_image(raw(**encode_image(depth, '16UC1')), value_range=(0, 10000))
    assert fixed.max() <= 255 * 3550 // 10000 + 1
    floats = np.array([[np.nan, 1.0], [3.0, np.inf]], np.float32)
    shown = decode_image(raw(**encode_image(floats, '32FC1')), 'rgb')[:, :, 0]
    assert shown.tolist() == [[0, 0], [255, 0]]
    all_nan = np.full((3, 3), np.nan, np.float32)
    assert not decode_image(raw(**encode_image(all_nan, '32FC1'))).any()
    constant = np.full((3, 3), 700, np.uint16)
    assert not decode_image(raw(**encode_image(constant, 'mono16'))).any()


def bayer_mosaic(rgb: np.ndarray, pattern: str) -> np.ndarray:
    """What a Bayer sensor with the given 2x2 pattern (e.g. 'rggb', row-major) records of a scene."""
    channel = {'r': 0, 'g': 1, 'b': 2}
    mosaic = np.empty(rgb.shape[:2], np.uint8)
    for index, letter in enumerate(pattern):
        row, column = divmod(index, 2)
        mosaic[row::2, column::2] = rgb[row::2, column::2, channel[letter]]
    return mosaic


@pytest.mark.parametrize('pattern', ['rggb', 'bggr', 'gbrg', 'grbg'])
def test_bayer_demosaic_restores_a_real_photo(photo: np.ndarray, pattern: str) -> None:
    mosaic = bayer_mosaic(photo, pattern)
    msg = raw(**encode_image(mosaic, f'bayer_{pattern}8'))
    assert np.array_equal(decode_image(msg, 'native'), mosaic)
    error = np.abs(decode_image(msg, 'rgb').astype(int) - photo).mean()
    assert error < 6, f'{pattern}: mean error {error:.1f}'
    assert np.abs(decode_image(msg, 'bgr').astype(int) - photo[:, :, ::-1]).mean() == pytest.approx(error)
    # Any other pattern label gives clearly wrong colours, so the mapping to OpenCV is the right one.
    for other in {'rggb', 'bggr', 'gbrg', 'grbg'} - {pattern}:
        wrong = decode_image(raw(**encode_image(mosaic, f'bayer_{other}8')), 'rgb')
        assert np.abs(wrong.astype(int) - photo).mean() > 2 * error


def yuv422(rgb: np.ndarray, order: str) -> np.ndarray:
    """HxWx2 bytes of a 4:2:2 camera (BT.601, studio range), 'uyvy' or 'yuyv' byte order."""
    r, g, b = (rgb[:, :, c].astype(np.float64) for c in range(3))
    y = 16 + 0.257 * r + 0.504 * g + 0.098 * b
    u = 128 - 0.148 * r - 0.291 * g + 0.439 * b
    v = 128 + 0.439 * r - 0.368 * g - 0.071 * b
    u_pair = (u[:, 0::2] + u[:, 1::2]) / 2
    v_pair = (v[:, 0::2] + v[:, 1::2]) / 2
    chroma = np.empty_like(y)
    chroma[:, 0::2], chroma[:, 1::2] = u_pair, v_pair
    planes = (chroma, y) if order == 'uyvy' else (y, chroma)
    return np.rint(np.clip(np.stack(planes, axis=2), 0, 255)).astype(np.uint8)


@pytest.mark.parametrize(('encoding', 'order'), [('yuv422', 'uyvy'), ('yuv422_yuy2', 'yuyv')])
def test_yuv422_decodes_a_real_photo(photo: np.ndarray, encoding: str, order: str) -> None:
    packed = yuv422(photo, order)
    msg = raw(**encode_image(packed, encoding))
    assert msg.step == 1280
    assert np.array_equal(decode_image(msg, 'native'), packed)
    error = np.abs(decode_image(msg, 'rgb').astype(int) - photo).mean()
    assert error < 2, f'{encoding}: mean error {error:.1f}'
    other = 'yuv422_yuy2' if encoding == 'yuv422' else 'yuv422'
    wrong = decode_image(raw(**encode_image(packed, other)), 'rgb')
    assert np.abs(wrong.astype(int) - photo).mean() > 5 * error
    red = np.zeros((2, 4, 3), np.uint8)
    red[:, :, 0] = 255
    shown = decode_image(raw(**encode_image(yuv422(red, order), encoding)), 'bgr')
    assert np.abs(shown.astype(int) - [0, 0, 255]).max() <= 3


def test_jpeg_round_trip_within_tolerance(photo: np.ndarray) -> None:
    fields = encode_compressed(photo, 'jpeg', quality=95)
    assert fields['format'] == 'rgb8; jpeg compressed bgr8'
    assert fields['data'].dtype == np.uint8 and fields['data'].ndim == 1
    msg = compressed(fields)
    shown = decode_image(msg, 'rgb')
    assert shown.shape == photo.shape
    assert np.abs(shown.astype(int) - photo).mean() < 2
    assert np.array_equal(decode_image(msg, 'native'), shown)  # original rgb8: native is RGB too
    assert np.array_equal(decode_image(msg, 'bgr'), shown[:, :, ::-1])
    block = np.zeros((32, 32, 3), np.uint8)
    block[:, :, 0] = 255
    centre = decode_image(compressed(encode_compressed(block, 'jpeg')), 'rgb')[16, 16]
    assert centre[0] > 240 and centre[1] < 15 and centre[2] < 15


def test_png_round_trips_are_exact(photo: np.ndarray) -> None:
    colour = compressed(encode_compressed(photo, 'png'))
    assert colour.format == 'rgb8; png compressed bgr8'
    assert np.array_equal(decode_image(colour, 'native'), photo)
    mono = gray(photo)
    mono_msg = compressed(encode_compressed(mono, 'png'))
    assert mono_msg.format == 'mono8; png compressed mono8'
    assert np.array_equal(decode_image(mono_msg, 'native'), mono)
    deep = mono.astype(np.uint16) * 200
    deep_msg = compressed(encode_compressed(deep, 'png'))
    assert deep_msg.format == 'mono16; png compressed mono16'
    native = decode_image(deep_msg, 'native')
    assert native.dtype == np.uint16 and np.array_equal(native, deep)
    mono_jpeg = compressed(encode_compressed(mono, 'jpeg'))
    assert mono_jpeg.format == 'mono8; jpeg compressed mono8'
    assert decode_image(mono_jpeg, 'native').shape == mono.shape


@pytest.mark.parametrize('fmt', ['jpeg', 'png'])
def test_bare_format_strings_decode_as_opencv_bgr(photo: np.ndarray, fmt: str) -> None:
    ok, data = cv2.imencode(f'.{fmt}', photo[:, :, ::-1].copy())
    assert ok
    msg = compressed({'format': fmt, 'data': data.reshape(-1)})
    tolerance = 3 if fmt == 'jpeg' else 0
    assert np.abs(decode_image(msg, 'rgb').astype(int) - photo).mean() <= tolerance
    assert np.abs(decode_image(msg, 'native').astype(int) - photo[:, :, ::-1]).mean() <= tolerance


def test_compressed_depth_16uc1(photo: np.ndarray) -> None:
    depth = gray(photo).astype(np.uint16) * 16 + 500
    depth[:20, :30] = 0
    fields = encode_compressed(depth, 'compressedDepth')
    assert fields['format'] == '16UC1; compressedDepth png'
    assert fields['data'][12:20].tobytes() == PNG_MAGIC
    msg = compressed(fields)
    native = decode_image(msg, 'native')
    assert native.dtype == np.uint16 and np.array_equal(native, depth)
    assert decode_image(msg).shape == (426, 640, 3)
    # Older writers used the bare 'compressedDepth' suffix; some omit the header for 16UC1.
    bare = compressed({'format': '16UC1; compressedDepth', 'data': fields['data'][12:]})
    assert np.array_equal(decode_image(bare, 'native'), depth)


def test_compressed_depth_32fc1_restores_metres(photo: np.ndarray) -> None:
    depth = 0.5 + gray(photo).astype(np.float32) / 255.0 * 4.0
    depth[:10, :10] = np.nan
    # compressed_depth_image_transport's inverse-depth quantization, written out here independently.
    quantization, depth_max = 100.0, 10.0
    quant_a = np.float32(quantization * (quantization + 1.0))
    quant_b = np.float32(1.0 - quant_a / depth_max)
    inverse = np.where(np.isfinite(depth), quant_a / depth + quant_b, 0)
    stored = np.rint(inverse).astype(np.uint16)
    ok, png = cv2.imencode('.png', stored)
    assert ok
    header_bytes = np.frombuffer(struct.pack('<iff', 0, quant_a, quant_b), np.uint8)
    data = np.concatenate([header_bytes, png.reshape(-1)])
    msg = compressed({'format': '32FC1; compressedDepth png', 'data': data})
    restored = decode_image(msg, 'native')
    assert restored.dtype == np.float32
    assert np.array_equal(np.isnan(restored), np.isnan(depth))
    finite = np.isfinite(depth)
    # Rounding the inverse depth by at most 0.5 moves the depth by about 0.5 * depth**2 / quant_a.
    bound = 0.5 * depth[finite] ** 2 / quant_a + 1e-5
    assert (np.abs(restored[finite] - depth[finite]) <= bound).all()


def test_rclpy_style_messages(photo: np.ndarray) -> None:
    fields = encode_image(photo[:8, :8], 'rgb8')
    as_bytes = fields['data'].tobytes()
    for data in (as_bytes, array.array('B', as_bytes), list(as_bytes)):
        msg = SimpleNamespace(**(fields | {'data': data}))
        assert np.array_equal(decode_image(msg, 'native'), photo[:8, :8])
    jpeg = encode_compressed(photo, 'png')
    msg = SimpleNamespace(format=jpeg['format'], data=array.array('B', jpeg['data'].tobytes()))
    assert np.array_equal(decode_image(msg, 'native'), photo)


def test_native_result_does_not_alias_the_message(photo: np.ndarray) -> None:
    msg = raw(**encode_image(photo, 'rgb8'))
    native = decode_image(msg, 'native')
    native[:] = 0
    assert np.array_equal(decode_image(msg, 'native'), photo)


def image_fields(**overrides: Any) -> SimpleNamespace:
    base = encode_image(np.zeros((426, 640, 3), np.uint8), 'rgb8')
    return SimpleNamespace(**(base | overrides))


@pytest.mark.parametrize(
    ('msg', 'color', 'message'),
    [
        (
            image_fields(step=1900),
            'rgb',
            'image: step 1900 is smaller than width*channels 1920 for encoding rgb8',
        ),
        (image_fields(encoding='16UC1', step=1000), 'native', 'smaller than width*channels*2 1280'),
        (image_fields(data=np.zeros(1920 * 425, np.uint8)), 'rgb', 'fewer than height*step 817920'),
        (image_fields(encoding='rgb9'), 'rgb', "unsupported encoding 'rgb9'; supported: rgb8, bgr8"),
        (image_fields(encoding='32UC1'), 'rgb', "unsupported encoding '32UC1'"),
        (image_fields(height=0), 'rgb', 'empty image (0x640)'),
        (image_fields(), 'grey', "color must be one of rgb, bgr, native, got 'grey'"),
        (image_fields(data=array.array('H', [0] * 10)), 'rgb', '2-byte items'),
        (image_fields(data=[0, 300, 2]), 'rgb', 'not bytes (0..255)'),
        (image_fields(data=np.zeros(10, np.float32)), 'rgb', 'dtype float32, expected uint8'),
        (image_fields(data='abc'), 'rgb', 'type str is not a byte buffer'),
        (image_fields(encoding='8UC2', step=1280), 'rgb', 'cannot show 2-channel data'),
        (image_fields(encoding='yuv422', width=3, step=6), 'rgb', 'needs an even width, got 3'),
        (image_fields(encoding='32FC1', step=2560), 'rgb', 'fewer than height*step'),
        (SimpleNamespace(format='jpeg', data=np.arange(50, dtype=np.uint8)), 'rgb', 'cannot decode 50 bytes'),
        (SimpleNamespace(format='png', data=np.zeros(0, np.uint8)), 'rgb', "no data for format 'png'"),
        (SimpleNamespace(format='theora', data=np.zeros(9, np.uint8)), 'rgb', "unsupported format 'theora'"),
        (SimpleNamespace(format='rgb8; jpeg compressed bgr8', data=np.ones(30, np.uint8)), 'rgb', 'corrupt'),
        (
            SimpleNamespace(format='16UC1; compressedDepth rvl', data=np.zeros(30, np.uint8)),
            'native',
            'unsupported compressedDepth variant',
        ),
        (
            SimpleNamespace(format='16UC1; compressedDepth png', data=np.zeros(30, np.uint8)),
            'native',
            'not a PNG after the 12-byte compressedDepth header',
        ),
        (
            SimpleNamespace(format='rgb8; compressedDepth png', data=np.zeros(30, np.uint8)),
            'native',
            "compressedDepth of 'rgb8' is unsupported",
        ),
    ],
)
def test_bad_input_raises_bag_error(msg: Any, color: str, message: str) -> None:
    with pytest.raises(BagError) as caught:
        decode_image(msg, color)
    assert message in str(caught.value)
    assert '\n' not in str(caught.value)


def test_compressed_depth_errors(photo: np.ndarray) -> None:
    png = encode_compressed(gray(photo), 'png')['data']
    header = np.frombuffer(struct.pack('<iff', 0, 1.0, 0.0), np.uint8)
    eight_bit = SimpleNamespace(format='16UC1; compressedDepth png', data=np.concatenate([header, png]))
    with pytest.raises(BagError, match='expected single-channel 16-bit'):
        decode_image(eight_bit, 'native')
    depth_png = encode_compressed(gray(photo).astype(np.uint16), 'png')['data']
    headerless = SimpleNamespace(format='32FC1; compressedDepth png', data=depth_png)
    with pytest.raises(BagError, match='lacks the 12-byte header'):
        decode_image(headerless, 'native')


def test_display_range_must_be_ordered() -> None:
    msg = raw(**encode_image(np.zeros((2, 2), np.uint16), '16UC1'))
    with pytest.raises(BagError, match=r'value_range \(5, 5\) must have low < high'):
        decode_image(msg, value_range=(5, 5))


@pytest.mark.parametrize(
    ('pixels', 'encoding', 'message'),
    [
        (np.zeros((4, 4), np.uint8), 'rgb8', 'encoding rgb8 needs a HxWx3 array, got shape (4, 4)'),
        (np.zeros((4, 4, 3), np.uint16), 'rgb8', 'encoding rgb8 needs dtype uint8, got uint16'),
        (np.zeros((4, 4, 2), np.uint8), 'mono8', 'encoding mono8 needs a HxW array'),
        (np.zeros((4, 4), np.uint8), 'jpeg', "unsupported encoding 'jpeg'"),
    ],
)
def test_encode_image_rejects_mismatches(pixels: np.ndarray, encoding: str, message: str) -> None:
    with pytest.raises(BagError, match=message.replace('(', r'\(').replace(')', r'\)')):
        encode_image(pixels, encoding)


def test_encode_image_accepts_hxwx1_for_single_channel() -> None:
    fields = encode_image(np.arange(6, dtype=np.uint16).reshape(2, 3, 1), 'mono16')
    assert (fields['step'], fields['data'].tolist()[:4]) == (6, [0, 0, 1, 0])


@pytest.mark.parametrize(
    ('pixels', 'kwargs', 'message'),
    [
        (np.zeros((4, 4, 3), np.uint16), {'fmt': 'jpeg'}, 'jpeg needs HxWx3 RGB or HxW mono of uint8'),
        (np.zeros((4, 4, 4), np.uint8), {'fmt': 'png'}, 'png needs HxWx3 RGB or HxW mono of uint8/uint16'),
        (np.zeros((4, 4), np.uint8), {'fmt': 'webp'}, "fmt must be jpeg, png or compressedDepth, got 'webp'"),
        (np.zeros((4, 4), np.uint8), {'fmt': 'jpeg', 'quality': 0}, 'jpeg quality must be 1..100, got 0'),
        (np.zeros((4, 4), np.uint8), {'fmt': 'compressedDepth'}, 'compressedDepth needs an HxW uint16 array'),
    ],
)
def test_encode_compressed_rejects_bad_input(
    pixels: np.ndarray, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(BagError, match=message):
        encode_compressed(pixels, **kwargs)
