"""A take, once its episode stops: capture.json (what `robodata coverage` counts) and `capture:` in the episode's
episode.yaml (what a reviewer reads: the protocol, the participant, the conditions intended and measured)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ros_robodata.capture.take_record import TakeRecord, write_take
from ros_robodata.dataset.dataset import Dataset

__all__ = ['save_take']


def save_take(dataset: Dataset, episode_id: str, record: TakeRecord, measured: dict[str, dict[str, Any]],
              total: int, who: str | None = None) -> Path:
    """Write a stopped episode's take: capture.json, then episode.yaml's `capture:` and its participant.

    Args:
        dataset: the dataset the episode was recorded into.
        episode_id: the episode.
        record: the take record (`take_check.take_record`).
        measured: per factor, what episode.yaml shows (`TakeCheck.stop`).
        total: the protocol's takes in all ("take 14 of 120").
        who: who recorded it, for the audit line of the participant; None: the current user.

    Raises:
        DatasetError: no such episode, a record that is not valid, or the catalog cannot be written.
        RobodataError: a file cannot be written.
    """
    path = write_take(dataset.episode_dir(episode_id), record)
    if record['participant'] and dataset.episode(episode_id).participant != record['participant']:
        dataset.set_participant(episode_id, record['participant'], who, reason=f'take of {record["protocol"]}')
    episode = dataset.episode(episode_id)
    in_spec = all(m.get('verdict') != 'outside' for m in measured.values())
    episode.capture = {'protocol': record['protocol'], 'protocol_sha256': record['protocol_sha256'],
                       'participant': record['participant'], 'take': record['take'], 'of': total,
                       'intended': dict(record['intended']), 'measured': measured, 'in_spec': in_spec}
    dataset.save_episode(episode)
    return path
