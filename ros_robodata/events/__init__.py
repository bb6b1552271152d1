"""Grasp, contact and release events from the gripper and wrist wrench, live and offline (no rclpy here)."""

from ros_robodata.events.detector import EventDetector, SegmenterSettings
from ros_robodata.events.event import Event, Evidence, Segment, SegmentResult
from ros_robodata.events.segmenter import Segmenter, settings_from_profile
from ros_robodata.signals.samples import GripperReading, WrenchReading

__all__ = ['Event', 'EventDetector', 'Evidence', 'GripperReading', 'Segment', 'SegmentResult',
           'Segmenter', 'SegmenterSettings', 'WrenchReading', 'settings_from_profile']
