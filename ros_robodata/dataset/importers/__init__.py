"""Recordings made elsewhere into a dataset, one module per kind: `import_bag` (a rosbag2 bag whole, a ROS 1 bag
converted first), `import_split` (a long log split into episodes), `import_video`, `import_lerobot`; what they
share in `import_common`; `import_run` finds the recordings under the sources and hands each to its importer.

Every arrow points down: the kinds import `import_common`, `import_run` imports the kinds, nothing imports
`import_run` from below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ros_robodata.lazy_names import lazy_names

# Names load on first use: a command that reads datasets (score, a target's episode ids) loads none of the
# importers' bag writers, video decoders and OpenCV.
_EXPORTS = {
    'METHODS': 'ros_robodata.dataset.importers.import_common',
    'Imported': 'ros_robodata.dataset.importers.import_common',
    'ImportOptions': 'ros_robodata.dataset.importers.import_common',
    'episode_id_for': 'ros_robodata.dataset.importers.import_common',
    'ImportRun': 'ros_robodata.dataset.importers.import_run',
    'dataset_for_import': 'ros_robodata.dataset.importers.import_run',
    'import_recording': 'ros_robodata.dataset.importers.import_run',
    'import_recordings': 'ros_robodata.dataset.importers.import_run',
}

__all__ = ['METHODS', 'ImportOptions', 'ImportRun', 'Imported', 'dataset_for_import', 'episode_id_for',
           'import_recording', 'import_recordings']

__getattr__ = lazy_names(__name__, _EXPORTS)


if TYPE_CHECKING:
    from ros_robodata.dataset.importers.import_common import METHODS, Imported, ImportOptions, episode_id_for
    from ros_robodata.dataset.importers.import_run import (
        ImportRun,
        dataset_for_import,
        import_recording,
        import_recordings,
    )
