"""Decode and encode sensor_msgs/PointCloud2 as numpy structured arrays, without rclpy.

A PointCloud2 is a table whose columns (PointFields) sit at byte offsets inside fixed-size points,
which sit inside fixed-size rows. Drivers pad both (PCL aligns points to 16 or 32 bytes; organized
clouds may pad rows), and any field may be a small array, so the layout must be read from the
message rather than assumed. Messages may come from rosbags or rclpy; only attribute names are
relied on.

Building a message from ``encode_pointcloud``::

    enc = encode_pointcloud(points)
    fields = pointfield_list(enc['fields'], ts.types['sensor_msgs/msg/PointField'])
    msg = ts.types['sensor_msgs/msg/PointCloud2'](header=header, **(enc | {'fields': fields}))
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

import numpy as np

from ros_robodata.bag.image import uint8_view
from ros_robodata.errors import BagError

# sensor_msgs/PointField datatype constants and their element types.
DATATYPES: dict[int, np.dtype] = {
    1: np.dtype('i1'),  # INT8
    2: np.dtype('u1'),  # UINT8
    3: np.dtype('i2'),  # INT16
    4: np.dtype('u2'),  # UINT16
    5: np.dtype('i4'),  # INT32
    6: np.dtype('u4'),  # UINT32
    7: np.dtype('f4'),  # FLOAT32
    8: np.dtype('f8'),  # FLOAT64
}
DATATYPE_OF: dict[np.dtype, int] = {dtype: code for code, dtype in DATATYPES.items()}
XYZ = ('x', 'y', 'z')


def cloud_dtype(fields: Iterable[Any], point_step: int, bigendian: bool) -> np.dtype:
    """The structured dtype of one stored point, padding included, in the message's byte order."""
    order: Literal['>', '<'] = '>' if bigendian else '<'
    names: list[str] = []
    formats: list[Any] = []
    offsets: list[int] = []
    for field in fields:
        name, offset = str(field.name), int(field.offset)
        datatype, count = int(field.datatype), int(field.count)
        if not name:
            raise BagError('pointcloud: a field has an empty name')
        if name in names:
            raise BagError(f'pointcloud: field {name!r} appears more than once')
        if datatype not in DATATYPES:
            raise BagError(f'pointcloud: field {name!r} has unknown datatype {datatype}; expected 1..8')
        if count < 1:
            raise BagError(f'pointcloud: field {name!r} has count {count}; expected at least 1')
        element = DATATYPES[datatype].newbyteorder(order)
        end = offset + element.itemsize * count
        if offset < 0 or end > point_step:
            raise BagError(
                f'pointcloud: field {name!r} spans bytes {offset}..{end} past point_step {point_step}'
            )
        names.append(name)
        formats.append(element if count == 1 else (element, (count,)))
        offsets.append(offset)
    return np.dtype({'names': names, 'formats': formats, 'offsets': offsets, 'itemsize': point_step})


def pointcloud_to_numpy(msg: Any) -> np.ndarray:
    """Every point of a PointCloud2 (height*width, row-major) as a packed native-endian structured array.

    One field per PointField in message order; a field with count > 1 becomes a subarray field.
    Padding between fields, points and rows is dropped; the result never aliases the message.
    """
    height, width = int(msg.height), int(msg.width)
    point_step, row_step = int(msg.point_step), int(msg.row_step)
    stored = cloud_dtype(msg.fields, point_step, bool(msg.is_bigendian))
    assert stored.names is not None and stored.fields is not None  # cloud_dtype's dtype is structured
    packed = np.dtype([(name, _native(stored.fields[name][0])) for name in stored.names])
    if height < 0 or width < 0:
        raise BagError(f'pointcloud: negative size {height}x{width}')
    if height * width == 0:
        return np.zeros(0, packed)
    if not packed.names:
        raise BagError(f'pointcloud: {height}x{width} points but no fields')
    if row_step < width * point_step:
        raise BagError(
            f'pointcloud: row_step {row_step} is smaller than width*point_step {width * point_step} '
            f'({width}x{point_step})'
        )
    buffer = uint8_view(msg.data, 'pointcloud')
    if buffer.size < height * row_step:
        raise BagError(
            f'pointcloud: data has {buffer.size} bytes, fewer than height*row_step {height * row_step} '
            f'({height}x{row_step})'
        )
    rows = buffer[: height * row_step].reshape(height, row_step)[:, : width * point_step]
    points = np.ascontiguousarray(rows).view(stored).reshape(height * width)
    out = np.empty(points.shape, packed)
    for name in packed.names:
        out[name] = points[name]
    return out


def _native(dtype: np.dtype) -> np.dtype:
    """The same element or subarray type in native byte order."""
    if dtype.subdtype is not None:
        base, shape = dtype.subdtype
        return np.dtype((base.newbyteorder('='), shape))
    return dtype.newbyteorder('=')


def pointcloud_xyz(msg: Any, drop_invalid: bool = True) -> np.ndarray:
    """The x, y, z of every point as (N, 3) float64; rows with NaN or Inf dropped if ``drop_invalid``."""
    points = pointcloud_to_numpy(msg)
    names, layout = points.dtype.names, points.dtype.fields
    assert names is not None and layout is not None  # pointcloud_to_numpy's points are structured
    missing = [name for name in XYZ if name not in names]
    if missing:
        present = ', '.join(names)
        raise BagError(f'pointcloud: no {"/".join(missing)} field; the fields are {present}')
    for name in XYZ:
        if layout[name][0].shape:
            raise BagError(f'pointcloud: field {name!r} has count > 1, expected a scalar coordinate')
    xyz = np.stack([points[name].astype(np.float64) for name in XYZ], axis=1)
    if drop_invalid:
        xyz = xyz[np.isfinite(xyz).all(axis=1)]
    return xyz


def encode_pointcloud(points: np.ndarray) -> dict[str, Any]:
    """Fields of a sensor_msgs/PointCloud2 (all but header) holding ``points``, little-endian.

    ``points``: a structured array, (N,) for an unorganized cloud (height 1) or (H, W) for an
    organized one, whose layout (offsets, padding, itemsize) is kept; or an (N, 3) float32/float64
    array of x, y, z. ``fields`` is a list of dicts name/offset/datatype/count (see
    ``pointfield_list``); ``data`` is a fresh 1-D uint8 array; ``is_dense`` is True iff every x/y/z
    present is finite.
    """
    array_ = np.asarray(points)
    if array_.dtype.names is None:
        array_ = _xyz_records(array_)
    if array_.ndim not in (1, 2):
        raise BagError(f'pointcloud: structured points must be (N,) or (H, W), got shape {array_.shape}')
    height, width = (1, array_.shape[0]) if array_.ndim == 1 else array_.shape
    fields, little = _fields_of(array_.dtype)
    names = array_.dtype.names
    assert names is not None  # structured, or made so by _xyz_records
    stored = np.zeros(array_.shape, little)
    for name in names:
        stored[name] = array_[name]
    finite = [np.isfinite(array_[name]).all() for name in XYZ if name in names]
    return {
        'height': height,
        'width': width,
        'fields': fields,
        'is_bigendian': False,
        'point_step': little.itemsize,
        'row_step': little.itemsize * width,
        'data': stored.reshape(-1).view(np.uint8).copy(),
        'is_dense': bool(all(finite)),
    }


def _xyz_records(xyz: np.ndarray) -> np.ndarray:
    """An (N, 3) float array as a structured array with fields x, y, z of the same float type."""
    if xyz.ndim != 2 or xyz.shape[1] != 3 or xyz.dtype not in (np.float32, np.float64):
        raise BagError(
            f'pointcloud: points must be a structured array or (N, 3) float32/float64, '
            f'got {xyz.dtype} {xyz.shape}'
        )
    records = np.empty(xyz.shape[0], [(name, xyz.dtype) for name in XYZ])
    for column, name in enumerate(XYZ):
        records[name] = xyz[:, column]
    return records


def _fields_of(dtype: np.dtype) -> tuple[list[dict[str, Any]], np.dtype]:
    """PointField dicts for a structured dtype, and that dtype's little-endian twin (same layout)."""
    fields: list[dict[str, Any]] = []
    formats: list[Any] = []
    offsets: list[int] = []
    names, layout = dtype.names, dtype.fields
    assert names is not None and layout is not None  # encode_pointcloud passes a structured dtype
    for name in names:
        field_type, offset = layout[name][:2]
        base, shape = field_type.subdtype if field_type.subdtype is not None else (field_type, ())
        element = base.newbyteorder('=')
        if element not in DATATYPE_OF or len(shape) > 1:
            raise BagError(
                f'pointcloud: field {name!r} of type {field_type} has no PointField datatype; '
                'use (u)int8/16/32, float32/64 or a 1-D subarray of them'
            )
        count = shape[0] if shape else 1
        if count < 1:
            raise BagError(f'pointcloud: field {name!r} is an empty subarray')
        fields.append({'name': name, 'offset': offset, 'datatype': DATATYPE_OF[element], 'count': count})
        little = element.newbyteorder('<')
        formats.append(little if not shape else (little, shape))
        offsets.append(offset)
    twin = np.dtype({'names': list(names), 'formats': formats, 'offsets': offsets, 'itemsize': dtype.itemsize})
    return fields, twin


def pointfield_list(fields: Iterable[Mapping[str, Any]], pointfield_type: Callable[..., Any]) -> list[Any]:
    """PointField messages from ``encode_pointcloud``'s field dicts.

    ``pointfield_type`` is the message class: ``ts.types['sensor_msgs/msg/PointField']`` for rosbags or
    ``sensor_msgs.msg.PointField`` under rclpy; both take name, offset, datatype, count keywords.
    """
    return [
        pointfield_type(
            name=field['name'], offset=field['offset'], datatype=field['datatype'], count=field['count']
        )
        for field in fields
    ]
