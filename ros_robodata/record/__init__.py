"""Recording episodes: what the recorder node does, without ROS (tested and reused offline)."""

from ros_robodata.record.preroll import PreRoll
from ros_robodata.record.recorder import EpisodeRecorder, RecorderSettings, Transition
from ros_robodata.signals.topic_stats import TopicStats, stamp_range

__all__ = ['EpisodeRecorder', 'PreRoll', 'RecorderSettings', 'TopicStats', 'Transition', 'stamp_range']
