"""The on-disk dataset: episodes, their bags, the catalog and the audit log; what a command works on (targets);
and recordings made elsewhere brought in (import, split, watch) or put right (repair).

Names load on first use: `from ros_robodata.dataset.episode import Episode` (what the commands import) no longer
loads the importers, the watcher, repair and their bag writers and OpenCV (~0.3 s of every start).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ros_robodata.lazy_names import lazy_names

_EXPORTS = {
    'Dataset': 'ros_robodata.dataset.dataset',
    'Episode': 'ros_robodata.dataset.episode',
    'Filters': 'ros_robodata.dataset.targets',
    'ImportOptions': 'ros_robodata.dataset.importers',
    'ImportRun': 'ros_robodata.dataset.importers',
    'Imported': 'ros_robodata.dataset.importers',
    'Item': 'ros_robodata.dataset.targets',
    'MODES': 'ros_robodata.vocabulary',
    'OUTCOMES': 'ros_robodata.vocabulary',
    'Problem': 'ros_robodata.dataset.verify',
    'Recording': 'ros_robodata.dataset.sources',
    'Repaired': 'ros_robodata.dataset.dataset_repair',
    'STATUSES': 'ros_robodata.vocabulary',
    'SplitSpec': 'ros_robodata.dataset.split',
    'Target': 'ros_robodata.dataset.targets',
    'Watcher': 'ros_robodata.dataset.watch',
    'Window': 'ros_robodata.dataset.split',
    'content_id': 'ros_robodata.dataset.sources',
    'describe': 'ros_robodata.dataset.describe',
    'find_recordings': 'ros_robodata.dataset.sources',
    'import_recording': 'ros_robodata.dataset.importers',
    'import_recordings': 'ros_robodata.dataset.importers',
    'is_dataset': 'ros_robodata.dataset.dataset',
    'prepare': 'ros_robodata.dataset.targets',
    'repair_dataset': 'ros_robodata.dataset.dataset_repair',
    'repair_episode': 'ros_robodata.dataset.dataset_repair',
    'resolve': 'ros_robodata.dataset.targets',
    'select': 'ros_robodata.dataset.targets',
    'verify_bag': 'ros_robodata.dataset.verify',
    'verify_dataset': 'ros_robodata.dataset.verify',
}

__all__ = ['MODES', 'OUTCOMES', 'STATUSES', 'Dataset', 'Episode', 'Filters', 'ImportOptions', 'ImportRun', 'Imported',
           'Item', 'Problem', 'Recording', 'Repaired', 'SplitSpec', 'Target', 'Watcher', 'Window', 'content_id',
           'describe', 'find_recordings', 'import_recording', 'import_recordings', 'is_dataset', 'prepare',
           'repair_dataset', 'repair_episode', 'resolve', 'select', 'verify_bag', 'verify_dataset']

__getattr__ = lazy_names(__name__, _EXPORTS)


if TYPE_CHECKING:
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
