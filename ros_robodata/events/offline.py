"""Segmenting recorded episodes: stream the gripper and wrench topics out of the bag, write events.json."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ros_robodata.bag.reader import BagReader
from ros_robodata.dataset import Dataset
from ros_robodata.dataset.targets import dataset_profile  # noqa: F401 - re-exported for callers
from ros_robodata.errors import BagError
from ros_robodata.events.event import SegmentResult
from ros_robodata.events.segmenter import Segmenter
from ros_robodata.files import write_json
from ros_robodata.profile import Profile

EVENTS_FILE = 'events.json'


def segment_bag(path: str | Path, profile: Profile, *, use_gripper: bool = True, use_wrench: bool = True
                ) -> SegmentResult:
    """Every event in one bag; times are relative to the bag's first message (pre-roll included)."""
    segmenter = Segmenter(profile, use_gripper=use_gripper, use_wrench=use_wrench)
    if not segmenter.topics:
        raise BagError(f'{profile.source}: the profile names no gripper or wrench topic: nothing to segment from')
    with BagReader(path) as reader:
        present = [t for t in segmenter.topics if t in reader.topics]
        if not present:
            wanted = ', '.join(sorted(segmenter.topics))
            raise BagError(f'{path}: none of the topics the segmenter reads ({wanted}) is in this bag')
        for message in reader.messages(present):
            segmenter.add_cdr(message.topic, message.data, lambda m=message: reader.decode(m))
        segmenter.finish()
        result = segmenter.result(reader.start_ns, reader.end_ns)
        result.skipped.update({f'missing_topic:{t}': 0 for t in segmenter.topics if t not in present})
        return result


def write_events(path: Path, result: SegmentResult, extra: dict[str, Any] | None = None) -> None:
    """events.json, written whole or not at all (a crash leaves the previous file)."""
    write_json(path, {'format': 'ros_robodata.events/1', **(extra or {}), **result.to_json()})


def segment_episode(dataset: Dataset, episode_id: str, profile: Profile, **options: bool) -> SegmentResult:
    result = segment_bag(dataset.bag_dir(episode_id), profile, **options)
    write_events(dataset.episode_dir(episode_id) / EVENTS_FILE, result, {'episode_id': episode_id})
    return result
