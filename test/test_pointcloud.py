"""PointCloud2 decode/encode against a real Velodyne scan, through real CDR.

The scan's float bits (including any odd values a real sensor produces) must survive unchanged,
so comparisons are on raw bits, not on values within a tolerance.
"""

from __future__ import annotations

import array
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from ros_robodata.bag.pointcloud import (
    encode_pointcloud,
    pointcloud_to_numpy,
    pointcloud_xyz,
    pointfield_list,
)
from ros_robodata.bag.types import typestore
from ros_robodata.errors import BagError
from test.real_data import real_data

SCAN_POINTS = 69_088
TS = typestore()
PointCloud2 = TS.types['sensor_msgs/msg/PointCloud2']
PointField = TS.types['sensor_msgs/msg/PointField']
Header = TS.types['std_msgs/msg/Header']
Time = TS.types['builtin_interfaces/msg/Time']
PCD_TYPES = {'F': 'f', 'U': 'u', 'I': 'i'}


def read_binary_pcd(path: Path) -> tuple[np.ndarray, bytes]:
    """The points of a binary PCD file as a little-endian structured array, and its raw payload."""
    blob = path.read_bytes()
    header: dict[str, list[str]] = {}
    position = 0
    while True:
        end = blob.index(b'\n', position)
        line = blob[position:end].decode('ascii').strip()
        position = end + 1
        if not line or line.startswith('#'):
            continue
        key, *values = line.split()
        header[key] = values
        if key == 'DATA':
            break
    if header['DATA'] != ['binary']:
        pytest.fail(f'{path}: expected DATA binary, got {header["DATA"]}')
    formats = []
    columns = zip(header['FIELDS'], header['SIZE'], header['TYPE'], header['COUNT'], strict=True)
    for name, size, kind, count in columns:
        element = f'<{PCD_TYPES[kind]}{size}'
        formats.append((name, element) if count == '1' else (name, element, (int(count),)))
    dtype = np.dtype(formats)
    count = int(header['POINTS'][0])
    payload = blob[position : position + count * dtype.itemsize]
    return np.frombuffer(payload, dtype, count=count), payload


@pytest.fixture(scope='module')
def scan_and_payload() -> tuple[np.ndarray, bytes]:
    return read_binary_pcd(real_data('velodyne_scan.pcd'))


@pytest.fixture(scope='module')
def scan(scan_and_payload: tuple[np.ndarray, bytes]) -> np.ndarray:
    points = scan_and_payload[0]
    assert points.dtype.names == ('x', 'y', 'z', 'intensity') and len(points) == SCAN_POINTS
    return points


def cdr(msg: Any) -> Any:
    """The message after a real serialize/deserialize cycle, as a bag reader would see it."""
    return TS.deserialize_cdr(TS.serialize_cdr(msg, msg.__msgtype__), msg.__msgtype__)


def cloud(fields: dict[str, Any]) -> Any:
    """A rosbags PointCloud2 from encode_pointcloud's dict (or a hand-made one), through CDR."""
    header = Header(stamp=Time(sec=3, nanosec=4), frame_id='velodyne')
    built = fields | {'fields': pointfield_list(fields['fields'], PointField)}
    return cdr(PointCloud2(header=header, **built))


def same_bits(left: np.ndarray, right: np.ndarray) -> bool:
    """Equal bit for bit (NaN payloads and -0.0 included)."""
    if left.shape != right.shape or left.dtype.itemsize != right.dtype.itemsize:
        return False
    return np.ascontiguousarray(left).tobytes() == np.ascontiguousarray(right).tobytes()


def field(name: str, offset: int, datatype: int, count: int = 1) -> dict[str, Any]:
    return {'name': name, 'offset': offset, 'datatype': datatype, 'count': count}


def test_velodyne_scan_round_trips_bit_exactly(
    scan_and_payload: tuple[np.ndarray, bytes], scan: np.ndarray
) -> None:
    fields = encode_pointcloud(scan)
    layout = (fields['height'], fields['width'], fields['point_step'], fields['row_step'])
    assert layout == (1, SCAN_POINTS, 16, 16 * SCAN_POINTS)
    xyzi = [field('x', 0, 7), field('y', 4, 7), field('z', 8, 7), field('intensity', 12, 7)]
    assert fields['fields'] == xyzi
    # Same layout as the PCD file, so the message bytes are the file's payload.
    assert fields['data'].tobytes() == scan_and_payload[1]
    msg = cloud(fields)
    points = pointcloud_to_numpy(msg)
    assert len(points) == SCAN_POINTS
    assert points.dtype.names == ('x', 'y', 'z', 'intensity')
    for name in points.dtype.names:
        assert same_bits(points[name], scan[name]), name
    assert np.unique(points['intensity']).size > 10  # real intensities, not a constant
    finite = np.isfinite(np.stack([scan[n] for n in 'xyz'], axis=1)).all(axis=1)
    assert msg.is_dense == bool(finite.all())
    xyz = pointcloud_xyz(msg)
    assert xyz.dtype == np.float64 and xyz.shape == (int(finite.sum()), 3)
    assert np.array_equal(xyz[:, 2], scan['z'][finite].astype(np.float64))


def test_padded_points_keep_their_layout(scan: np.ndarray) -> None:
    # PCL's PointXYZI: x y z, 4 bytes of padding, intensity, 12 more bytes to a 32-byte point.
    padded = np.dtype(
        {
            'names': ['x', 'y', 'z', 'intensity'],
            'formats': ['<f4'] * 4,
            'offsets': [0, 4, 8, 16],
            'itemsize': 32,
        }
    )
    points = np.zeros(len(scan), padded)
    for name in scan.dtype.names:
        points[name] = scan[name]
    fields = encode_pointcloud(points)
    assert fields['point_step'] == 32 and fields['fields'][3] == field('intensity', 16, 7)
    raw_points = fields['data'].reshape(-1, 32)
    assert not raw_points[:, 12:16].any() and not raw_points[:, 20:].any()
    decoded = pointcloud_to_numpy(cloud(fields))
    assert decoded.dtype.itemsize == 16  # padding dropped from the result
    for name in scan.dtype.names:
        assert same_bits(decoded[name], scan[name]), name


def test_organized_cloud_with_row_padding(scan: np.ndarray) -> None:
    height, width = 32, 2000
    grid = scan[: height * width].reshape(height, width)
    fields = encode_pointcloud(grid)
    assert (fields['height'], fields['width'], fields['row_step']) == (height, width, width * 16)
    assert same_bits(pointcloud_to_numpy(cloud(fields)), grid.reshape(-1))
    pad = 24
    rows = fields['data'].reshape(height, width * 16)
    junk = np.full((height, pad), 0xEE, np.uint8)
    padded = fields | {'row_step': width * 16 + pad, 'data': np.concatenate([rows, junk], axis=1).reshape(-1)}
    decoded = pointcloud_to_numpy(cloud(padded))
    assert len(decoded) == height * width
    for name in scan.dtype.names:
        assert same_bits(decoded[name], grid[name].reshape(-1)), name
    xyz = pointcloud_xyz(cloud(padded), drop_invalid=False)
    assert same_bits(xyz[:, 0], grid['x'].reshape(-1).astype(np.float64))


def test_big_endian_cloud(scan: np.ndarray) -> None:
    points = scan[:1000]
    big = points.astype(np.dtype([(name, '>f4') for name in points.dtype.names]))
    fields = encode_pointcloud(points) | {'is_bigendian': True, 'data': big.view(np.uint8).reshape(-1).copy()}
    decoded = pointcloud_to_numpy(cloud(fields))
    assert all(decoded.dtype[name].isnative for name in decoded.dtype.names)
    for name in points.dtype.names:
        assert same_bits(decoded[name], points[name]), name


def test_every_datatype_and_subarray_fields(scan: np.ndarray) -> None:
    n = 500
    rng = np.random.default_rng(7)
    kinds = [('i8', 'i1'), ('u8', 'u1'), ('i16', 'i2'), ('u16', 'u2'), ('i32', 'i4'), ('u32', 'u4')]
    dtype = np.dtype(
        [
            ('x', '<f4'),
            ('y', '<f4'),
            ('z', '<f4'),
            ('normal', '<f4', (3,)),
            ('time', '<f8'),
            *kinds,
            ('rgb', 'u1', (4,)),
        ]
    )
    points = np.zeros(n, dtype)
    for name in 'xyz':
        points[name] = scan[name][:n]
    points['normal'] = rng.normal(size=(n, 3))
    points['time'] = rng.uniform(0, 0.1, n)
    for name, code in kinds:
        info = np.iinfo(code)
        points[name] = rng.integers(info.min, info.max, n, dtype=code, endpoint=True)
    points['rgb'] = rng.integers(0, 255, (n, 4), dtype=np.uint8, endpoint=True)
    fields = encode_pointcloud(points)
    by_name = {f['name']: f for f in fields['fields']}
    assert by_name['normal'] == field('normal', 12, 7, 3) and by_name['time']['datatype'] == 8
    assert [by_name[name]['datatype'] for name, _ in kinds] == [1, 2, 3, 4, 5, 6]
    assert by_name['rgb']['count'] == 4
    decoded = pointcloud_to_numpy(cloud(fields))
    assert decoded.dtype['normal'].shape == (3,)
    assert same_bits(decoded, points)


def test_xyz_arrays_and_invalid_points(scan: np.ndarray) -> None:
    for dtype in (np.float32, np.float64):
        xyz = np.stack([scan[n][:100] for n in 'xyz'], axis=1).astype(dtype)
        fields = encode_pointcloud(xyz)
        assert fields['point_step'] == 3 * np.dtype(dtype).itemsize and fields['is_dense']
        assert np.array_equal(pointcloud_xyz(cloud(fields)), xyz.astype(np.float64))
    holes = np.stack([scan[n][:10] for n in 'xyz'], axis=1).astype(np.float32)
    holes[2, 1] = np.nan
    holes[5, 0] = np.inf
    fields = encode_pointcloud(holes)
    assert not fields['is_dense']
    assert pointcloud_xyz(cloud(fields)).shape == (8, 3)
    kept = pointcloud_xyz(cloud(fields), drop_invalid=False)
    assert kept.shape == (10, 3) and np.isnan(kept[2, 1])


def test_rclpy_style_message(scan: np.ndarray) -> None:
    fields = encode_pointcloud(scan[:50])
    as_objects = [SimpleNamespace(**f) for f in fields['fields']]
    for data in (fields['data'].tobytes(), array.array('B', fields['data'].tobytes())):
        msg = SimpleNamespace(**(fields | {'fields': as_objects, 'data': data}))
        assert same_bits(pointcloud_to_numpy(msg), scan[:50])


def test_result_does_not_alias_the_message(scan: np.ndarray) -> None:
    msg = cloud(encode_pointcloud(scan[:10]))
    points = pointcloud_to_numpy(msg)
    points['x'] = 0
    assert same_bits(pointcloud_to_numpy(msg)['x'], scan['x'][:10])


def test_empty_cloud() -> None:
    msg = cloud(
        {
            'height': 1,
            'width': 0,
            'fields': [field('x', 0, 7)],
            'is_bigendian': False,
            'point_step': 4,
            'row_step': 0,
            'data': np.zeros(0, np.uint8),
            'is_dense': True,
        }
    )
    assert pointcloud_to_numpy(msg).shape == (0,)
    assert pointcloud_xyz(cloud(encode_pointcloud(np.zeros((0, 3), np.float32)))).shape == (0, 3)


def bad_cloud(**overrides: Any) -> SimpleNamespace:
    base = {
        'height': 1,
        'width': 4,
        'is_bigendian': False,
        'point_step': 16,
        'row_step': 64,
        'fields': [field('x', 0, 7), field('y', 4, 7), field('z', 8, 7), field('intensity', 12, 7)],
        'data': np.zeros(64, np.uint8),
        'is_dense': True,
    }
    merged = base | overrides
    return SimpleNamespace(**(merged | {'fields': [SimpleNamespace(**f) for f in merged['fields']]}))


@pytest.mark.parametrize(
    ('msg', 'message'),
    [
        (bad_cloud(fields=[field('x', 14, 7)]), "field 'x' spans bytes 14..18 past point_step 16"),
        (bad_cloud(fields=[field('v', 0, 7, 5)]), "field 'v' spans bytes 0..20 past point_step 16"),
        (bad_cloud(fields=[field('x', -4, 7)]), "field 'x' spans bytes -4..0"),
        (bad_cloud(data=np.zeros(60, np.uint8)), 'data has 60 bytes, fewer than height*row_step 64'),
        (bad_cloud(height=2), 'fewer than height*row_step 128'),
        (bad_cloud(fields=[field('x', 0, 9)]), "field 'x' has unknown datatype 9; expected 1..8"),
        (bad_cloud(fields=[field('x', 0, 0)]), "field 'x' has unknown datatype 0"),
        (bad_cloud(fields=[field('x', 0, 7), field('x', 4, 7)]), "field 'x' appears more than once"),
        (bad_cloud(fields=[field('', 0, 7)]), 'a field has an empty name'),
        (bad_cloud(fields=[field('x', 0, 7, 0)]), "field 'x' has count 0"),
        (bad_cloud(row_step=60), 'row_step 60 is smaller than width*point_step 64'),
        (bad_cloud(fields=[]), '1x4 points but no fields'),
        (bad_cloud(point_step=0, row_step=0), 'past point_step 0'),
        (bad_cloud(data=[1, 2, 256]), 'not bytes (0..255)'),
    ],
)
def test_bad_layout_raises_bag_error(msg: Any, message: str) -> None:
    with pytest.raises(BagError) as caught:
        pointcloud_to_numpy(msg)
    assert message in str(caught.value)
    assert '\n' not in str(caught.value)


def test_xyz_needs_scalar_coordinates() -> None:
    with pytest.raises(BagError, match='no y/z field; the fields are x, intensity'):
        pointcloud_xyz(bad_cloud(fields=[field('x', 0, 7), field('intensity', 12, 7)]))
    with pytest.raises(BagError, match="field 'x' has count > 1"):
        pointcloud_xyz(bad_cloud(fields=[field('x', 0, 7, 2), field('y', 8, 7), field('z', 12, 7)]))


@pytest.mark.parametrize(
    ('points', 'message'),
    [
        (np.zeros((5, 3), np.int32), r'points must be a structured array or \(N, 3\) float32/float64'),
        (np.zeros((5, 4), np.float32), r'got float32 \(5, 4\)'),
        (np.zeros(5, [('x', 'f4'), ('ok', '?')]), "field 'ok' of type bool has no PointField datatype"),
        (np.zeros(5, [('x', 'f4'), ('m', 'f4', (2, 2))]), "field 'm' of type"),
        (np.zeros(5, [('x', 'f4'), ('c', 'c8')]), "field 'c' of type complex64"),
        (np.zeros((2, 2, 2), [('x', 'f4')]), r'must be \(N,\) or \(H, W\), got shape \(2, 2, 2\)'),
    ],
)
def test_encode_rejects_unrepresentable_points(points: np.ndarray, message: str) -> None:
    with pytest.raises(BagError, match=message):
        encode_pointcloud(points)
