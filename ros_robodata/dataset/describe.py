"""What a dataset, an episode, a bag or a folder of bags holds, as plain data: what `robodata info` prints, and
what a notebook shows."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ros_robodata.bag.reader import BagReader
from ros_robodata.bag.summary import bag_summary
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.targets import Target


def describe(target: Target) -> dict[str, Any]:
    """What the target holds as plain data (what `robodata info` prints): a dataset's episodes and outcomes, an
    episode's description and bag, or a bag's topics, counts and duration.

    Args:
        target: what resolve() made of a path: a dataset, an episode, a bag or a folder of bags.

    Raises:
        BagError: a bag cannot be read.
        DatasetError: the episode's description or the catalog cannot be read.
    """
    if target.kind == 'bag':
        with BagReader(target.path) as reader:
            return {'kind': 'bag', **bag_summary(reader)}
    if target.kind == 'bags':
        bags = []
        for recording in target.recordings:
            with BagReader(recording.path) as reader:
                bags.append(bag_summary(reader))
        return {'kind': 'bags', 'path': str(target.path), 'bags': bags}
    assert target.dataset is not None
    if target.kind == 'episode':
        assert target.episode_id is not None
        return describe_episode(target.dataset, target.episode_id)
    return describe_dataset(target.dataset)


def describe_episode(dataset: Dataset, episode_id: str) -> dict[str, Any]:
    episode = dataset.episode(episode_id)
    data: dict[str, Any] = {'kind': 'episode', 'dataset': str(dataset.root), **episode.to_dict(),
                            'duration_s': episode.duration_s}
    if dataset.bag_files(episode_id):
        with BagReader(dataset.bag_dir(episode_id)) as reader:
            data['bag'] = bag_summary(reader)
    else:
        data['bag'] = None
    return data


def describe_dataset(dataset: Dataset) -> dict[str, Any]:
    rows = dataset.list()
    return {
        'kind': 'dataset',
        'path': str(dataset.root),
        'name': dataset.name,
        'schema_version': dataset.info.get('schema_version'),
        'created_by': dataset.info.get('created_by'),
        'robot': ((dataset.info.get('robot_profile') or {}).get('content') or {}).get('robot', {}).get('name'),
        'episodes': len(rows),
        'outcomes': dict(Counter(r.outcome for r in rows)),
        'statuses': dict(Counter(r.status for r in rows)),
        'tasks': dict(Counter(r.task for r in rows)),
        'duration_s': round(sum(r.duration_s or 0.0 for r in rows), 3),
        'message_count': sum(r.message_count for r in rows),
        'size_bytes': sum(r.size_bytes for r in rows),
        'episode_list': [
            {'id': r.id, 'task': r.task, 'operator': r.operator, 'mode': r.mode, 'outcome': r.outcome,
             'status': r.status, 'reviewed': r.reviewed_outcome or None, 'duration_s': r.duration_s,
             'messages': r.message_count, 'size_bytes': r.size_bytes, 'score': r.score}
            for r in rows
        ],
    }
