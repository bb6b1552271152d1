"""Grasp, contact and release events from the gripper and wrist wrench, live and offline (no rclpy here)."""

from ros_robodata.events.detector import EventDetector, SegmenterSettings
from ros_robodata.events.event import Event, Evidence, Segment, SegmentResult
from ros_robodata.events.offline import EVENTS_FILE, SegmentRun, segment, segment_bag, segment_episode, segment_items
from ros_robodata.events.segmenter import Segmenter, settings_from_profile

__all__ = ['EVENTS_FILE', 'Event', 'EventDetector', 'Evidence', 'Segment', 'SegmentResult', 'SegmentRun', 'Segmenter',
           'SegmenterSettings', 'segment', 'segment_bag', 'segment_episode', 'segment_items', 'settings_from_profile']
