"""Labels into a dataset: every episode checked first, then one revision per episode, then the catalog.

An import or a pull is all or nothing as far as the input goes: the whole file (or every pulled task) is read and
every episode it names is checked (it exists, its annotations.json is readable, audit.jsonl can be appended to)
before the first label is written. The catalog's reviewed outcome follows each episode's annotations.json.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ros_robodata.dataset.annotations import Added, add_labels, check_writable_episode, plan_labels, read_annotations
from ros_robodata.dataset.audit import check_audit_writable
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.label import Label
from ros_robodata.errors import DatasetError
from ros_robodata.labeling.labels_file import read_annotation_file
from ros_robodata.labeling.taxonomy import Taxonomy


@dataclass
class Applied:
    """What a set of labels did to a dataset: per episode, added / superseded / unchanged."""

    episodes: dict[str, Added] = field(default_factory=dict)
    format: str = ''

    @property
    def added(self) -> int:
        return sum(a.added for a in self.episodes.values())

    @property
    def superseded(self) -> int:
        return sum(a.superseded for a in self.episodes.values())

    @property
    def unchanged(self) -> int:
        return sum(a.unchanged for a in self.episodes.values())

    def to_json(self) -> dict[str, Any]:
        return {'format': self.format, 'added': self.added, 'superseded': self.superseded,
                'unchanged': self.unchanged,
                'episodes': {e: {'added': a.added, 'superseded': a.superseded, 'unchanged': a.unchanged,
                                 'revision': a.revision} for e, a in self.episodes.items()}}


def apply_labels(dataset: Dataset, labels: Mapping[str, Sequence[Label]], *, who: str | None = None,
                 source: Mapping[str, Any] | None = None) -> Applied:
    """Append labels per episode (see the module docstring); a rerun with the same labels changes nothing."""
    if dataset.catalog.read_only:
        raise DatasetError(f'{dataset.root}: the dataset is read-only here: labels cannot be added')
    for episode_id, episode_labels in labels.items():
        folder = dataset.episode_dir(episode_id)
        check_writable_episode(folder)
        plan_labels(read_annotations(folder), episode_labels)  # a repeated item stops here, before any write
    check_audit_writable(dataset.audit_path)
    applied = Applied()
    for episode_id, episode_labels in sorted(labels.items()):
        folder = dataset.episode_dir(episode_id)
        result = add_labels(folder, dataset.audit_path, episode_labels, who=who, source=source)
        applied.episodes[episode_id] = result
        row = dataset.catalog.get(episode_id)
        verdict = read_annotations(folder).reviewed_verdict()
        if row is not None and row.reviewed_outcome != verdict:  # also heals a catalog that missed an earlier one
            dataset.catalog.set_reviewed_outcome(episode_id, verdict)
    return applied


def import_annotations(dataset: Dataset, path: str | Path, *, fmt: str | None = None, episode: str | None = None,
                       annotator: str | None = None, taxonomy: Taxonomy | None = None,
                       who: str | None = None) -> Applied:
    """`robodata annotations import FILE --dataset D`: one annotation file into the dataset."""
    path = Path(path)
    if episode is not None:
        dataset.episode_dir(episode)  # a safe id, or one clear line
    found, labels = read_annotation_file(path, dataset.episode_ids(), fmt=fmt, episode=episode, annotator=annotator,
                                         taxonomy=taxonomy)
    applied = apply_labels(dataset, labels, who=who, source={'tool': found, 'file': str(path.resolve())})
    applied.format = found
    return applied


def current_labels(dataset: Dataset) -> dict[str, list[Label]]:
    """Every episode's current labels (superseded ones left out), episodes without labels left out."""
    out: dict[str, list[Label]] = {}
    for episode_id in dataset.episode_ids():
        stored = read_annotations(dataset.episode_dir(episode_id)).current()
        if stored:
            out[episode_id] = [s.label for s in stored]
    return out
