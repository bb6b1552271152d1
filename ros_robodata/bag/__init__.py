"""rosbag2 bags, read and written without ROS: ours and anyone's, whole or damaged.

Sensor payloads have modules of their own, imported where used because they load OpenCV, PyAV or open3d:
`bag.image` (Image / CompressedImage pixels), `bag.pointcloud` (PointCloud2 as arrays), `bag.sensor_files`
(frames and scans as JPEG/PNG/PCD files), `bag.video` (a video as a bag of JPEG frames).

Names load on first use: a command that only reads (score, segment, a LeRobot folder in place) does not load
rosbags' writer and storage plugins (~0.15 s of every start).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ros_robodata.lazy_names import lazy_names

_EXPORTS = {
    'RepairReport': 'ros_robodata.bag.bag_repair',
    'repair_bag': 'ros_robodata.bag.bag_repair',
    'BagMessage': 'ros_robodata.bag.reader',
    'BagReader': 'ros_robodata.bag.reader',
    'TopicInfo': 'ros_robodata.bag.reader',
    'bag_summary': 'ros_robodata.bag.summary',
    'typestore': 'ros_robodata.bag.types',
    'BagWriter': 'ros_robodata.bag.writer',
    'qos_profile': 'ros_robodata.bag.writer',
}

__all__ = ['BagMessage', 'BagReader', 'BagWriter', 'RepairReport', 'TopicInfo', 'bag_summary', 'qos_profile',
           'repair_bag', 'typestore']

__getattr__ = lazy_names(__name__, _EXPORTS)


if TYPE_CHECKING:
    from ros_robodata.bag.bag_repair import RepairReport, repair_bag
    from ros_robodata.bag.reader import BagMessage, BagReader, TopicInfo
    from ros_robodata.bag.summary import bag_summary
    from ros_robodata.bag.types import typestore
    from ros_robodata.bag.writer import BagWriter, qos_profile
