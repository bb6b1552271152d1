"""Camera images and LiDAR scans as the files labeling tools open: JPEG or PNG, and binary PCD.

Colour stays colour, 16-bit depth stays 16-bit (PNG), every point field of a scan (intensity, ring) is kept as
its own PCD column. A frame that cannot be written raises ExportError naming what and why.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from ros_robodata.bag.image import decode_image
from ros_robodata.bag.pointcloud import pointcloud_to_numpy
from ros_robodata.errors import ExportError
from ros_robodata.files import replace_unless_same

LASER_SCAN = 'sensor_msgs/msg/LaserScan'


def encode_frame_image(msg: Any, image_format: str, jpeg_quality: int = 95,
                       transform: Callable[[np.ndarray], np.ndarray] | None = None
                       ) -> tuple[bytes, str, dict[str, Any]]:
    """(file bytes, extension, width/height/encoding) of an Image or CompressedImage.

    Colour is written as colour, mono8 as grey; 16-bit mono (depth, thermal) always as 16-bit PNG, since
    JPEG would throw away its values; float images (32FC1 depth) are stretched onto 8 bits. `transform` changes the
    pixels as they will be written (BGR, grey or 16-bit grey) just before they are encoded (faces blurred).
    """
    encoding = str(getattr(msg, 'encoding', '') or getattr(msg, 'format', ''))
    native = decode_image(msg, 'native')
    if native.ndim == 3 and native.shape[2] == 1:
        native = native[:, :, 0]
    if native.ndim == 2 and native.dtype == np.uint16:
        pixels, ext = native, 'png'
    elif native.ndim == 2 and native.dtype == np.uint8:
        pixels, ext = native, image_format
    else:
        pixels, ext = decode_image(msg, 'bgr'), image_format  # OpenCV writes BGR
    if transform is not None:
        pixels = transform(pixels)
    params = [cv2.IMWRITE_JPEG_QUALITY, int(jpeg_quality)] if ext == 'jpg' else [cv2.IMWRITE_PNG_COMPRESSION, 3]
    ok, encoded = cv2.imencode(f'.{ext}', np.ascontiguousarray(pixels), params)
    if not ok:
        raise ExportError(f'image: OpenCV cannot encode {pixels.dtype} {pixels.shape} as {ext}')
    height, width = pixels.shape[:2]
    return encoded.tobytes(), ext, {'width': int(width), 'height': int(height), 'encoding': encoding}


def cloud_points(msg: Any, msgtype: str, *, crop: tuple[float, ...] | None = None, voxel: float | None = None
                 ) -> tuple[np.ndarray, list[str], int]:
    """(structured points to write, their field names, the source's point count); crop then voxel, if asked."""
    points = laser_scan_points(msg) if msgtype == LASER_SCAN else pointcloud_to_numpy(msg)
    names = list(points.dtype.names or ())
    if not all(axis in names for axis in ('x', 'y', 'z')):
        raise ExportError(f'pointcloud: no x/y/z fields (it has {", ".join(names)})')
    source = int(points.shape[0])
    fields = points.dtype.fields
    assert fields is not None  # a structured dtype (it has x, y and z)
    # subarray fields (count > 1) have no single PCD column
    scalar = [n for n in names if fields[n][0].subdtype is None]
    points = points[scalar]
    if crop is not None:
        lo, hi = crop[:3], crop[3:]
        keep = np.ones(points.shape[0], bool)
        for axis, low, high in zip(('x', 'y', 'z'), lo, hi, strict=True):
            keep &= (points[axis] >= low) & (points[axis] <= high)
        points = points[keep]
    if voxel is not None:
        points = _voxel_down(points, voxel)
    return points, scalar, source


def laser_scan_points(msg: Any) -> np.ndarray:
    """A LaserScan as points in its own frame (z = 0), every beam kept (out-of-range ones as NaN)."""
    ranges = np.asarray(msg.ranges, dtype=np.float32)
    angles = float(msg.angle_min) + np.arange(ranges.size) * float(msg.angle_increment)
    valid = np.isfinite(ranges) & (ranges >= float(msg.range_min)) & (ranges <= float(msg.range_max))
    r = np.where(valid, ranges, np.nan).astype(np.float32)
    out = np.zeros(ranges.size, [('x', 'f4'), ('y', 'f4'), ('z', 'f4'), ('intensity', 'f4')])
    out['x'], out['y'] = r * np.cos(angles), r * np.sin(angles)
    intensities = np.asarray(msg.intensities, dtype=np.float32)
    if intensities.size == ranges.size:
        out['intensity'] = intensities
    return out


def _voxel_down(points: np.ndarray, voxel: float) -> np.ndarray:
    """One point per occupied voxel, every field averaged (as open3d's voxel_down_sample, but deterministic)."""
    xyz = np.stack([points[a].astype(np.float64) for a in ('x', 'y', 'z')], axis=1)
    finite = np.isfinite(xyz).all(axis=1)
    points, xyz = points[finite], xyz[finite]
    if points.shape[0] == 0:
        return points
    keys = np.floor(xyz / voxel).astype(np.int64)
    _, inverse, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    out = np.zeros(counts.shape[0], points.dtype)
    fields: Mapping[str, tuple[Any, ...]] = points.dtype.fields or {}  # every name below is one of them
    for name in points.dtype.names or ():
        sums = np.zeros(counts.shape[0], np.float64)
        np.add.at(sums, inverse, points[name].astype(np.float64))
        mean = sums / counts
        out[name] = np.rint(mean) if fields[name][0].kind in 'iu' else mean
    return out


def write_pcd(path: Path, points: np.ndarray) -> str:
    """Binary PCD with open3d's tensor API, every scalar field kept as its own column; returns its sha256."""
    # Start-up time: open3d (~550 ms, dash and plotly with it) loads only when a PCD file is written.
    import open3d as o3d

    cloud = o3d.t.geometry.PointCloud()
    xyz = np.stack([points[a] for a in ('x', 'y', 'z')], axis=1)
    # open3d's stubs make Tensor's dtype and device required; the binding defaults both (from the array, CPU)
    cloud.point.positions = o3d.core.Tensor(np.ascontiguousarray(  # type: ignore[call-overload]
        xyz, dtype=np.float64 if xyz.dtype == np.float64 else np.float32))
    for name in points.dtype.names or ():
        if name in ('x', 'y', 'z'):
            continue
        column = points[name]
        if column.dtype == np.int8:
            column = column.astype(np.int16)  # open3d's PCD writer has no signed 8-bit column
        cloud.point[name] = o3d.core.Tensor(np.ascontiguousarray(column.reshape(-1, 1)))  # type: ignore[call-overload]
    tmp = path.with_name(path.stem + '.partial.pcd')  # open3d picks the format by the extension
    if not o3d.t.io.write_point_cloud(tmp, cloud, write_ascii=False):
        tmp.unlink(missing_ok=True)
        raise ExportError(f'{path}: open3d could not write the point cloud')
    digest = hashlib.sha256(tmp.read_bytes()).hexdigest()
    replace_unless_same(tmp, path)
    return digest
