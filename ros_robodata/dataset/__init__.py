"""The on-disk dataset: episodes, their bags, the catalog and the audit log."""

from ros_robodata.dataset.dataset import Dataset, Problem, is_dataset
from ros_robodata.dataset.episode import Episode
from ros_robodata.vocabulary import MODES, OUTCOMES, STATUSES

__all__ = ['MODES', 'OUTCOMES', 'STATUSES', 'Dataset', 'Episode', 'Problem', 'is_dataset']
