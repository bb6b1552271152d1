"""What the catalog indexes from an episode's sidecar files, read back when `catalog rebuild` makes it anew.

The files are the truth (quality.json from `score`, annotations.json from `review pull` and `annotations import`,
review/queue.json from `select`); the catalog only indexes them. A file that cannot be read leaves its columns
empty and is named in audit.jsonl, so a rebuild never stops on one hand-edited file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, cast

from ros_robodata import untrusted
from ros_robodata.dataset.annotations import read_annotations
from ros_robodata.dataset.audit import append_audit
from ros_robodata.dataset.catalog import Catalog, CatalogScores
from ros_robodata.errors import RobodataError

__all__ = ['Indexed', 'restore_review_queue', 'restore_reviewed_outcome', 'restore_scores']


class Indexed(Protocol):
    """What restoring a sidecar needs of a dataset (a `Dataset` is one): its files and its catalog. A protocol,
    not the class, because the class rebuilds its catalog from here and the import would go round in a loop."""

    root: Path
    audit_path: Path
    catalog: Catalog

    def episode_dir(self, episode_id: str) -> Path: ...


def restore_scores(dataset: Indexed, episode_id: str) -> None:
    """The score columns from the episode's quality.json."""
    path = dataset.episode_dir(episode_id) / 'quality.json'
    if not path.is_file():
        return
    try:
        data = untrusted.read_json(path)
        score, scores = data.get('score'), data.get('catalog', {})
        if not (score is None or isinstance(score, (int, float))) or not isinstance(scores, dict):
            raise RobodataError('not what robodata score writes')
        # An object, as checked: stored as quality.json holds it (what `robodata score` wrote there, unless edited).
        dataset.catalog.set_scores(episode_id, score, cast(CatalogScores, scores))
    except (RobodataError, AttributeError, TypeError, ValueError):
        append_audit(dataset.audit_path, 'unreadable_quality_file', episode_id, file=str(path))


def restore_reviewed_outcome(dataset: Indexed, episode_id: str) -> None:
    """The reviewers' verdict from the episode's annotations.json."""
    folder = dataset.episode_dir(episode_id)
    try:
        verdict = read_annotations(folder).reviewed_verdict()
    except RobodataError:
        append_audit(dataset.audit_path, 'unreadable_annotations_file', episode_id,
                     file=str(folder / 'annotations.json'))
        return
    if verdict:
        dataset.catalog.set_reviewed_outcome(episode_id, verdict)


def restore_review_queue(dataset: Indexed, episodes: set[str]) -> None:
    """The review columns from review/queue.json: none when it is not a queue (audited)."""
    path = dataset.root / 'review' / 'queue.json'
    try:
        data = untrusted.read_json(path) if path.is_file() else {'queue': []}
        picked = {str(p['episode_id']): (int(p['rank']), float(p['priority']), str((p.get('reasons') or [''])[0]))
                  for p in data['queue'] if str(p['episode_id']) in episodes}
        excluded = {str(x['episode_id']): str(x['reason']) for x in data.get('excluded', [])
                    if str(x['episode_id']) in episodes}
    except (RobodataError, KeyError, TypeError, ValueError, AttributeError):
        append_audit(dataset.audit_path, 'unreadable_review_queue', None, file=str(path))
        picked, excluded = {}, {}
    dataset.catalog.set_review(picked, excluded)
