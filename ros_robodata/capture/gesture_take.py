"""A recorded gesture take's repetitions put into its record: the camera's frames read from the take's bag,
counted (capture/repetitions.py), and written as `repetitions` into capture.json's `measured` and episode.yaml's
`capture.measured` (an irregular take or one with too few repetitions is then out of spec, and coverage does not count
it within spec)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ros_robodata.bag.image import decode_image
from ros_robodata.bag.reader import BagReader
from ros_robodata.capture.protocol import Protocol
from ros_robodata.capture.repetitions import (
    REPETITIONS,
    count_repetitions,
    gesture_region,
    motion_energy,
    repetitions_entry,
)
from ros_robodata.capture.take_conditions import FaceDetector
from ros_robodata.capture.take_record import read_take, write_take
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.errors import DatasetError

__all__ = ['add_repetitions']


def add_repetitions(dataset: Dataset, episode_id: str, camera_topic: str, protocol: Protocol,
                    detector: FaceDetector | None = None) -> dict[str, Any]:
    """Count a recorded take's repetitions from its camera and record them; returns what episode.yaml shows.

    Args:
        dataset: the dataset.
        episode_id: the take's episode (with capture.json).
        camera_topic: the camera filming the participant, in the take's bag.
        protocol: the protocol the take was captured to (its `repetition`: count and interval).
        detector: the face detector that places the region; the module's unless given.

    Raises:
        DatasetError: the episode has no take record, or its bag has no frames of `camera_topic`.
        BagError: the bag cannot be read or a frame decoded.
    """
    folder = dataset.episode_dir(episode_id)
    record = read_take(folder)
    if record is None:
        raise DatasetError(f'{folder}: no capture.json: not a take captured to a protocol')
    stamps: list[int] = []
    with BagReader(dataset.bag_dir(episode_id)) as reader:
        if camera_topic not in reader.topics:
            raise DatasetError(f'{folder}: no {camera_topic} in its bag (it has: {", ".join(reader.topics)})')
        first = next(iter(reader.messages([camera_topic])), None)
        if first is None:
            raise DatasetError(f'{folder}: no frames of {camera_topic}')
        region, note = gesture_region(decode_image(reader.decode(first), 'bgr'), detector)

        def frames() -> Iterator[np.ndarray]:  # one frame in memory at a time, however long the take
            for message in reader.messages([camera_topic]):
                stamps.append(message.t_ns)
                yield decode_image(reader.decode(message), 'bgr')

        energy = motion_energy(frames(), region)
    if len(stamps) < 2 or stamps[-1] <= stamps[0]:
        raise DatasetError(f'{folder}: {len(stamps)} frame(s) of {camera_topic}: too few to count repetitions')
    fps = (len(stamps) - 1) / ((stamps[-1] - stamps[0]) / 1e9)
    found = count_repetitions(energy, fps, region, (note,) if note else ())
    measured, shown = repetitions_entry(found, protocol.repetition)
    record['measured'][REPETITIONS] = measured
    write_take(folder, record)
    episode = dataset.episode(episode_id)
    if episode.capture:
        episode.capture.setdefault('measured', {})[REPETITIONS] = shown
        episode.capture['in_spec'] = all(m.get('verdict') != 'outside' for m in episode.capture['measured'].values())
        dataset.save_episode(episode)
    return shown
