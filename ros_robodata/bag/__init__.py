"""rosbag2 bags, read and written without ROS: ours and anyone's, whole or damaged.

Sensor payloads have modules of their own, imported where used because they load OpenCV, PyAV or open3d:
`bag.image` (Image / CompressedImage pixels), `bag.pointcloud` (PointCloud2 as arrays), `bag.sensor_files`
(frames and scans as JPEG/PNG/PCD files), `bag.video` (a video as a bag of JPEG frames).
"""

from ros_robodata.bag.bag_repair import RepairReport, repair_bag
from ros_robodata.bag.reader import BagMessage, BagReader, TopicInfo
from ros_robodata.bag.summary import bag_summary
from ros_robodata.bag.types import typestore
from ros_robodata.bag.writer import BagWriter, qos_profile

__all__ = ['BagMessage', 'BagReader', 'BagWriter', 'RepairReport', 'TopicInfo', 'bag_summary', 'qos_profile',
           'repair_bag', 'typestore']
