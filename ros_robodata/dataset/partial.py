"""A recording that arrives whole after a partial copy of it was imported: the same recording, more of it.

A watcher (or a user) may import a bag while its writer is still at it or after it was killed: the episode is a
salvage, `incomplete`. When the whole recording arrives later its content id differs (it holds more), so the
content id alone would make it a second episode holding the same data again. What tells them apart is the start
of the file: MCAP is written front to back, so the partial copy's first bytes are the whole one's first bytes, and
those bytes hold the recording's first chunk, whose times no other recording shares.
"""

from __future__ import annotations

from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.episode import Episode
from ros_robodata.dataset.sources import Recording, head_of
from ros_robodata.errors import DatasetError

__all__ = ['partial_episode']


def partial_episode(dataset: Dataset, recording: Recording) -> Episode | None:
    """An `incomplete` episode of the dataset that holds the start of this (longer) recording: a salvage of the
    same recording imported before its writer finished it. Told by the content of its first bytes (MCAP only)."""
    if recording.kind not in ('bag', 'bag_file') or not recording.files:
        return None
    size = recording.size_bytes
    for row in dataset.catalog.query('status = ?', ('incomplete',)):
        try:
            episode = dataset.episode(row.id)
        except DatasetError:
            continue
        source = episode.source
        length, digest = source.get('head_bytes'), source.get('head_sha256')
        if not isinstance(length, int) or not isinstance(digest, str) or not isinstance(source.get('size_bytes'),
                                                                                         int):
            continue
        if source['size_bytes'] >= size or row.message_count == 0:
            continue  # not more of it; an episode without a message holds no chunk to tell recordings apart
        if head_of(recording.files[0], length) == (length, digest):
            return episode
    return None
