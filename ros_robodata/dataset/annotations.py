"""episodes/<id>/annotations.json: every human label of an episode, append-only, in revisions.

A label is never edited or removed: a changed label (same source item, other content) is a new label that
supersedes the old one, and both stay. Importing or pulling the same labels again adds nothing, so a rerun
changes no byte. Each revision that adds something gets one line in audit.jsonl (who, the source, how many labels)
before annotations.json is replaced: a revision on disk always has its audit line.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ros_robodata import untrusted
from ros_robodata.dataset.audit import append_audit, check_audit_writable, current_user
from ros_robodata.dataset.label import VERDICT, Label
from ros_robodata.errors import AnnotationError, DatasetError, RobodataError
from ros_robodata.files import write_json

FILE = 'annotations.json'
FORMAT = 'ros_robodata.annotations'
VERSION = 1
DISPUTED = 'disputed'  # the reviewed verdict when reviewers are split evenly


@dataclass(frozen=True)
class Stored:
    """A label as annotations.json holds it: its id, the revision that added it and what it supersedes."""

    id: str
    key: str
    revision: int
    label: Label
    supersedes: str = ''


@dataclass
class EpisodeAnnotations:
    """One episode's annotations.json in memory."""

    episode_id: str
    labels: list[Stored] = field(default_factory=list)
    revisions: list[dict[str, Any]] = field(default_factory=list)

    def current(self) -> list[Stored]:
        """Labels no later label supersedes, in the order they were added."""
        replaced = {s.supersedes for s in self.labels if s.supersedes}
        return [s for s in self.labels if s.id not in replaced]

    def reviewed_verdict(self) -> str:
        """The verdict reviewers gave ('' if none): each annotator's latest counts once; a tie is `disputed`."""
        latest: dict[str, str] = {}
        for stored in self.current():
            if stored.label.kind == VERDICT:
                latest[stored.label.annotator] = stored.label.value
        if not latest:
            return ''
        ranked = Counter(latest.values()).most_common()
        if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
            return DISPUTED
        return ranked[0][0]

    def to_json(self) -> dict[str, Any]:
        return {
            'format': FORMAT, 'version': VERSION, 'episode': self.episode_id,
            'revisions': self.revisions,
            'labels': [{'id': s.id, 'key': s.key, 'revision': s.revision,
                        **({'supersedes': s.supersedes} if s.supersedes else {}), **s.label.to_json()}
                       for s in self.labels],
        }


@dataclass(frozen=True)
class Added:
    """What one `add_labels` call did to one episode."""

    episode_id: str
    added: int
    superseded: int
    unchanged: int
    revision: int | None


def annotations_path(episode_dir: Path) -> Path:
    return episode_dir / FILE


def read_annotations(episode_dir: Path) -> EpisodeAnnotations:
    """The episode's annotations (empty when it has none); AnnotationError naming the file when it is not ours."""
    path = annotations_path(episode_dir)
    episode_id = episode_dir.name
    if not path.exists():
        return EpisodeAnnotations(episode_id)
    try:
        data = untrusted.read_json(path, AnnotationError)
    except RobodataError as err:
        raise AnnotationError(str(err)) from None
    if not isinstance(data, dict) or data.get('format') != FORMAT:
        raise AnnotationError(f'{path}: not a ros_robodata annotations file (format {FORMAT!r} expected)')
    if not isinstance(data.get('version'), int) or data['version'] > VERSION:
        raise AnnotationError(f'{path}: annotations version {data.get("version")!r} is not one this ros_robodata '
                              f'reads ({VERSION})')
    labels, revisions = data.get('labels'), data.get('revisions')
    if not isinstance(labels, list) or not isinstance(revisions, list):
        raise AnnotationError(f'{path}: labels and revisions must be lists')
    stored = []
    for n, entry in enumerate(labels):
        where = f'{path}: labels[{n}]'
        label = Label.from_json(entry, where)
        if not isinstance(entry.get('id'), str) or not isinstance(entry.get('revision'), int):
            raise AnnotationError(f'{where}: no id or revision')
        stored.append(Stored(entry['id'], str(entry.get('key', label.key)), entry['revision'], label,
                             str(entry.get('supersedes', ''))))
    return EpisodeAnnotations(episode_id, stored, [r for r in revisions if isinstance(r, dict)])


def plan_labels(existing: EpisodeAnnotations, labels: Iterable[Label]) -> tuple[list[Label], list[str], int]:
    """(labels to add, ids they supersede ('' for new ones), how many are already there as they are)."""
    latest: dict[str, Stored] = {}
    for stored in existing.labels:
        latest[stored.key] = stored  # later revisions come later
    to_add: list[Label] = []
    supersedes: list[str] = []
    unchanged = 0
    seen: set[str] = set()
    for label in labels:
        if label.key in seen:
            raise AnnotationError(f'{label.source.tool} {label.source.project}: item {label.source.item!r} of task '
                                  f'{label.source.task!r} appears twice')
        seen.add(label.key)
        before = latest.get(label.key)
        if before is not None and before.label.content() == label.content():
            unchanged += 1
            continue
        to_add.append(label)
        supersedes.append(before.id if before is not None else '')
    return to_add, supersedes, unchanged


def add_labels(episode_dir: Path, audit_path: Path, labels: Iterable[Label], *, who: str | None = None,
               source: Mapping[str, Any] | None = None) -> Added:
    """Append `labels` to the episode's annotations.json as one revision (nothing when all are there already).

    The audit line is written first (after checking it can be): if annotations.json then cannot be written, the
    audit says so in a second line and the old file stays."""
    existing = read_annotations(episode_dir)
    to_add, supersedes, unchanged = plan_labels(existing, labels)
    episode_id = episode_dir.name
    if not to_add:
        return Added(episode_id, 0, 0, unchanged, None)
    check_audit_writable(audit_path)
    revision = 1 + max((int(r.get('revision', 0)) for r in existing.revisions), default=0)
    next_id = 1 + len(existing.labels)
    who = who or current_user()
    added_ids = []
    for n, (label, old) in enumerate(zip(to_add, supersedes, strict=True)):
        label_id = f'{episode_id}/L{next_id + n:05d}'
        added_ids.append(label_id)
        existing.labels.append(Stored(label_id, label.key, revision, label, old))
    superseded = [s for s in supersedes if s]
    entry = {'revision': revision, 'time': time.strftime('%Y-%m-%dT%H:%M:%S%z'), 'who': who,
             'source': dict(source or {}), 'added': len(added_ids), 'superseded': len(superseded)}
    existing.revisions.append(entry)
    append_audit(audit_path, 'add_labels', episode_id, who, revision=revision, source=dict(source or {}),
                 labels=added_ids, superseded=superseded, kinds=dict(Counter(label.kind for label in to_add)))
    try:
        write_json(annotations_path(episode_dir), existing.to_json(), durable=True)
    except RobodataError as err:
        append_audit(audit_path, 'add_labels_failed', episode_id, who, revision=revision, reason=str(err))
        raise
    return Added(episode_id, len(added_ids), len(superseded), unchanged, revision)


def check_writable_episode(episode_dir: Path) -> None:
    """DatasetError unless the episode folder exists and its annotations.json can be read (checked before any
    episode of an import is written, so a bad one stops the import before it starts)."""
    if not (episode_dir / 'episode.yaml').is_file():
        raise DatasetError(f'{episode_dir}: no such episode in the dataset')
    read_annotations(episode_dir)
