"""Label Studio, for real: push episodes for review (project, timeline tasks with the machine's events as
predictions, the episode verdict) and pull the annotations back, through label-studio-sdk."""

from ros_robodata.review.label_studio.client import read_token

__all__ = ['read_token']
