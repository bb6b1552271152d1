"""ROS 1 bags, imported as they are: many teams' archives are ROS 1, and rosbags (already the bag library here)
converts them to rosbag2, message definitions and all, without a ROS 1 installation.

The conversion is written into a hidden folder of the dataset (the same file system, so the import then moves
it in without a second copy) and removed whatever happens; the episode remembers the .bag it came from, by that
file's content, so the same ROS 1 bag is never imported twice.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager

from ros_robodata.bag.reader import STORAGE_SUFFIXES
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.sources import Recording
from ros_robodata.errors import RobodataError

__all__ = ['CONVERTED_NOTE', 'converted_rosbag1']

CONVERTED_NOTE = 'a ROS 1 bag, converted to rosbag2 (MCAP) by rosbags on import'


@contextmanager
def converted_rosbag1(dataset: Dataset, recording: Recording) -> Iterator[Recording]:
    """The ROS 1 bag `recording` as a rosbag2 bag in a hidden folder of `dataset`, removed on leaving.

    Args:
        dataset: The dataset the bag is imported into.
        recording: A recording of kind 'rosbag1'.

    Raises:
        RobodataError: The file is not a ROS 1 bag rosbags can read, or the conversion could not be written.
    """
    # Start-up time: rosbags.convert (~45 ms, NumPy with it) loads only when a ROS 1 bag is imported.
    from rosbags.convert import ConverterError, convert

    work = dataset.root / f'.{recording.path.stem}.rosbag1-converting'
    shutil.rmtree(work, ignore_errors=True)
    out = work / recording.path.stem
    try:
        work.mkdir()
        convert([recording.path], out, dst_storage='mcap', dst_version=9, compress=None, compress_mode='file',
                default_typestore=None, typestore=None, exclude_topics=[], include_topics=[], exclude_msgtypes=[],
                include_msgtypes=[])
        files = tuple(sorted(p for p in out.iterdir() if p.suffix in STORAGE_SUFFIXES))
        yield Recording('bag', out, files, origin=recording)
    except ConverterError as err:
        raise RobodataError(f'{recording.path}: not a ROS 1 bag rosbags can convert: {_reason(err)}') from None
    except OSError as err:
        raise RobodataError(f'{recording.path}: converting the ROS 1 bag into {dataset.root} failed: '
                            f'{err.strerror or err}') from None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _reason(err: BaseException) -> str:
    """rosbags chains the reader's error under its own: the innermost says what is wrong with the file."""
    while err.__cause__ is not None:
        err = err.__cause__
    return ' '.join(str(err).split()) or type(err).__name__

