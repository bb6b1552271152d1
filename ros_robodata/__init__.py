"""ros_robodata: robot demonstrations recorded, segmented, checked and exported as training data.

The front door for Python users (notebooks, batch jobs), the same functions the `robodata` command calls:

    from ros_robodata import Dataset, score, segment, export_frames, write_report, import_recordings

    dataset = Dataset.open('robodata_demo/dataset')
    run = score(dataset, filters=Filters(task='pick_cube'))     # ScoreRun: .scores, .failed, .summary
    events = segment('old_bags/', profile='config/example_arm.yaml')   # bags on their own: nothing written

Names are loaded on first use, so `import ros_robodata.msg` in a ROS node does not pull in OpenCV or NumPy.
"""

from __future__ import annotations

import importlib as _importlib
import os as _os
import sys as _sys
from typing import TYPE_CHECKING, Any


def _generated_interface_dirs() -> list:
    """colcon installs the generated ros_robodata.msg/.srv modules into a copy of this package under
    each ament prefix; let that copy complete this one (sources first), so an editable checkout and
    its colcon build form one package."""
    found = []
    version = f'python{_sys.version_info.major}.{_sys.version_info.minor}'
    for prefix in _os.environ.get('AMENT_PREFIX_PATH', '').split(_os.pathsep):
        for site in ('site-packages', 'dist-packages'):
            candidate = _os.path.join(prefix, 'lib', version, site, __name__)
            if prefix and _os.path.isdir(candidate) and candidate not in __path__:
                found.append(candidate)
    return found


__path__ = [*__path__, *_generated_interface_dirs()]

from ros_robodata.version import __version__  # noqa: E402, F401 (the front door shows it; after __path__ is whole)

# name -> module that defines it
_EXPORTS = {
    'BagReader': 'ros_robodata.bag.reader',
    'BagWriter': 'ros_robodata.bag.writer',
    'Dataset': 'ros_robodata.dataset.dataset',
    'Episode': 'ros_robodata.dataset.episode',
    'Filters': 'ros_robodata.dataset.targets',
    'Target': 'ros_robodata.dataset.targets',
    'resolve': 'ros_robodata.dataset.targets',
    'ImportOptions': 'ros_robodata.dataset.importers',
    'ImportRun': 'ros_robodata.dataset.importers',
    'import_recordings': 'ros_robodata.dataset.importers',
    'SplitSpec': 'ros_robodata.dataset.split',
    'repair_dataset': 'ros_robodata.dataset.dataset_repair',
    'describe': 'ros_robodata.dataset.describe',
    'Profile': 'ros_robodata.profile',
    'load_profile': 'ros_robodata.profile',
    'segment': 'ros_robodata.events.offline',
    'SegmentRun': 'ros_robodata.events.offline',
    'SegmentResult': 'ros_robodata.events.event',
    'score': 'ros_robodata.quality.scoring',
    'ScoreRun': 'ros_robodata.quality.scoring',
    'export_frames': 'ros_robodata.export.frames_run',
    'ExportOptions': 'ros_robodata.export.export_plan',
    'ExportResult': 'ros_robodata.export.frames_run',
    'ScheduleSpec': 'ros_robodata.export.schedule',
    'export_lerobot': 'ros_robodata.export.lerobot.exporter',
    'LeRobotOptions': 'ros_robodata.export.lerobot.lerobot_options',
    'LeRobotExport': 'ros_robodata.export.lerobot.exporter',
    'Policy': 'ros_robodata.export.lerobot.policy',
    'write_report': 'ros_robodata.report.build',
    'ReportResult': 'ros_robodata.report.build',
    'select_for_review': 'ros_robodata.selection.queue',
    'SelectRun': 'ros_robodata.selection.queue',
    'RobodataError': 'ros_robodata.errors',
    'ProfileError': 'ros_robodata.errors',
    'BagError': 'ros_robodata.errors',
    'DatasetError': 'ros_robodata.errors',
    'ExportError': 'ros_robodata.errors',
    'OUTCOMES': 'ros_robodata.vocabulary',
    'STATUSES': 'ros_robodata.vocabulary',
    'MODES': 'ros_robodata.vocabulary',
    'EVENT_KINDS': 'ros_robodata.vocabulary',
}

__all__ = [
    'EVENT_KINDS',
    'MODES',
    'OUTCOMES',
    'STATUSES',
    'BagError',
    'BagReader',
    'BagWriter',
    'Dataset',
    'DatasetError',
    'Episode',
    'ExportError',
    'ExportOptions',
    'ExportResult',
    'Filters',
    'ImportOptions',
    'ImportRun',
    'LeRobotExport',
    'LeRobotOptions',
    'Policy',
    'Profile',
    'ProfileError',
    'ReportResult',
    'RobodataError',
    'ScheduleSpec',
    'ScoreRun',
    'SegmentResult',
    'SegmentRun',
    'SelectRun',
    'SplitSpec',
    'Target',
    'describe',
    'export_frames',
    'export_lerobot',
    'import_recordings',
    'load_profile',
    'repair_dataset',
    'resolve',
    'score',
    'segment',
    'select_for_review',
    'write_report',
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value  # once loaded, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


if TYPE_CHECKING:  # what the names are, for type checkers and editors
    from ros_robodata.bag.reader import BagReader
    from ros_robodata.bag.writer import BagWriter
    from ros_robodata.dataset.dataset import Dataset
    from ros_robodata.dataset.dataset_repair import repair_dataset
    from ros_robodata.dataset.describe import describe
    from ros_robodata.dataset.episode import Episode
    from ros_robodata.dataset.importers import ImportOptions, ImportRun, import_recordings
    from ros_robodata.dataset.split import SplitSpec
    from ros_robodata.dataset.targets import Filters, Target, resolve
    from ros_robodata.errors import BagError, DatasetError, ExportError, ProfileError, RobodataError
    from ros_robodata.events.event import SegmentResult
    from ros_robodata.events.offline import SegmentRun, segment
    from ros_robodata.export.export_plan import ExportOptions
    from ros_robodata.export.frames_run import ExportResult, export_frames
    from ros_robodata.export.schedule import ScheduleSpec
    from ros_robodata.profile import Profile, load_profile
    from ros_robodata.quality.scoring import ScoreRun, score
    from ros_robodata.report.build import ReportResult, write_report
    from ros_robodata.selection.queue import SelectRun, select_for_review
    from ros_robodata.vocabulary import EVENT_KINDS, MODES, OUTCOMES, STATUSES
