"""What the catalog indexes from an episode's sidecar files, read back when `catalog rebuild` makes it anew.

The files are the truth (quality.json from `score`, annotations.json from `review pull` and `annotations import`,
review/queue.json from `select`, releases/*/manifest.json from `release create`); the catalog only indexes them. A
file that cannot be read leaves its columns empty and is named in audit.jsonl, so a rebuild never stops on one
hand-edited file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, cast

from ros_robodata import untrusted
from ros_robodata.dataset.annotations import read_annotations
from ros_robodata.dataset.audit import append_audit
from ros_robodata.dataset.catalog import Catalog, CatalogScores
from ros_robodata.dataset.episode import Episode
from ros_robodata.dataset.tombstones import read_tombstones
from ros_robodata.errors import RobodataError

__all__ = ['Indexed', 'restore_releases', 'restore_retired', 'restore_review_queue', 'restore_reviewed_outcome',
           'restore_scores']


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


def restore_releases(dataset: Indexed, episodes: set[str]) -> None:
    """Each episode's latest release from releases/*/manifest.json (`robodata release create`); a manifest that
    cannot be read is named in the audit and `release verify` says what is wrong with it."""
    latest: dict[str, tuple[int, str]] = {}
    for path in sorted((dataset.root / 'releases').glob('*/manifest.json')):
        try:
            data = untrusted.read_json(path)
            created, listed = int(data.get('created_ns') or 0), data['episodes']
            if not isinstance(listed, dict):
                raise TypeError
        except (RobodataError, KeyError, TypeError, ValueError, AttributeError):
            append_audit(dataset.audit_path, 'unreadable_release_manifest', None, file=str(path))
            continue
        for episode_id in listed:
            if episode_id in episodes and (episode_id not in latest or latest[episode_id][0] <= created):
                latest[episode_id] = (created, path.parent.name)
    by_release: dict[str, list[str]] = {}
    for episode_id, (_, release) in latest.items():
        by_release.setdefault(release, []).append(episode_id)
    for release, ids in sorted(by_release.items()):
        dataset.catalog.set_release(sorted(ids), release)


def restore_retired(dataset: Indexed, episodes: set[str]) -> None:
    """A row for each retired episode (tombstones/ID.json from `robodata retire`) whose folder is gone: it stays
    listed as retired, so nobody mistakes a withdrawal for a lost file."""
    for episode_id, stone in read_tombstones(dataset.root).items():
        if episode_id in episodes:
            continue  # a retire that was interrupted before the folder went: the episode is still there
        try:
            episode = Episode(id=episode_id, task=str(stone.get('task', '')),
                              outcome=str(stone.get('outcome') or 'unknown'), status='retired')
        except RobodataError:
            continue
        dataset.catalog.upsert(episode)
