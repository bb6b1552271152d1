"""Recordings made elsewhere into a dataset, one module per kind: `import_bag` (a rosbag2 bag whole, a ROS 1 bag
converted first), `import_split` (a long log split into episodes), `import_video`, `import_lerobot`; what they
share in `import_common`; `import_run` finds the recordings under the sources and hands each to its importer.

Every arrow points down: the kinds import `import_common`, `import_run` imports the kinds, nothing imports
`import_run` from below.
"""

from ros_robodata.dataset.importers.import_common import METHODS, Imported, ImportOptions, episode_id_for
from ros_robodata.dataset.importers.import_run import ImportRun, dataset_for_import, import_recording, import_recordings

__all__ = ['METHODS', 'ImportOptions', 'ImportRun', 'Imported', 'dataset_for_import', 'episode_id_for',
           'import_recording', 'import_recordings']
