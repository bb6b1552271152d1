"""The on-disk dataset: episodes, their bags, the catalog and the audit log; what a command works on (targets);
and recordings made elsewhere brought in (import, split, watch) or put right (repair)."""

from ros_robodata.dataset.dataset import Dataset, is_dataset
from ros_robodata.dataset.dataset_repair import Repaired, repair_dataset, repair_episode
from ros_robodata.dataset.describe import describe
from ros_robodata.dataset.episode import Episode
from ros_robodata.dataset.importers import Imported, ImportOptions, ImportRun, import_recording, import_recordings
from ros_robodata.dataset.sources import Recording, content_id, find_recordings
from ros_robodata.dataset.split import SplitSpec, Window
from ros_robodata.dataset.targets import Filters, Item, Target, prepare, resolve, select
from ros_robodata.dataset.verify import Problem, verify_bag, verify_dataset
from ros_robodata.dataset.watch import Watcher
from ros_robodata.vocabulary import MODES, OUTCOMES, STATUSES

__all__ = ['MODES', 'OUTCOMES', 'STATUSES', 'Dataset', 'Episode', 'Filters', 'ImportOptions', 'ImportRun', 'Imported',
           'Item', 'Problem', 'Recording', 'Repaired', 'SplitSpec', 'Target', 'Watcher', 'Window', 'content_id',
           'describe', 'find_recordings', 'import_recording', 'import_recordings', 'is_dataset', 'prepare',
           'repair_dataset', 'repair_episode', 'resolve', 'select', 'verify_bag', 'verify_dataset']
