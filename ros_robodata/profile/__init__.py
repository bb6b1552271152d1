"""The robot profile: one YAML file that describes a rig, checked before anything runs.

Every node and every CLI command takes the same file, so a mistake in it must stop the work at once
with one line naming the file, the key and the reason, instead of surfacing later as a silent topic
or an empty bag. The schema is the dataclasses below; a small validator walks their type
annotations, so adding a key means adding a field with a default and a comment. Rules beyond the
type ride on the field (`_rule`) or, when they involve several keys, in the class's `_validate`.
"""

from ros_robodata.profile.profile_file import load_profile, profile_from_dict
from ros_robodata.profile.schema import (
    COMPRESSED_IMAGE,
    IMAGE,
    JOINT_STATE,
    LASER_SCAN,
    POINT_CLOUD2,
    WRENCH_STAMPED,
    CameraSpec,
    GripperSpec,
    LidarSpec,
    Profile,
    Quality,
    Recording,
    Robot,
    Segmenter,
    Success,
    Topics,
    TopicSpec,
)
from ros_robodata.profile.validate import topic_name_problem

__all__ = ['COMPRESSED_IMAGE', 'IMAGE', 'JOINT_STATE', 'LASER_SCAN', 'POINT_CLOUD2', 'WRENCH_STAMPED', 'CameraSpec',
           'GripperSpec', 'LidarSpec', 'Profile', 'Quality', 'Recording', 'Robot', 'Segmenter', 'Success', 'TopicSpec',
           'Topics', 'load_profile', 'profile_from_dict', 'topic_name_problem']
