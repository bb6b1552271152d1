"""`robodata retire`: delete an episode's data everywhere the dataset knows it went, and leave a tombstone.

Consent withdrawal and retention both end here. For each episode: its folder (bags, sidecars, annotations), every
recorded copy (copies.jsonl: frame exports cut per episode, LeRobot exports deleted whole, review media cut per
episode) is deleted; a copy pooled into another dataset (`episodes copy`, `merge`) is retired there first, as that
dataset's own episode (so a retire that fails there leaves this one to be run again). A tombstone (id, the files'
sha256, when, who, why, never the data) and an audit line are written first, so an interrupted retire is finished
by running it again; each release that held the episode gets a `withdrawn.jsonl` line, which `release verify`
reports.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ros_robodata.dataset.audit import append_audit, check_audit_writable, current_user
from ros_robodata.dataset.copies import POOLED, read_copies
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.episode import Episode
from ros_robodata.dataset.participants import read_participants, withdraw_participant
from ros_robodata.dataset.tombstones import read_tombstones, write_tombstone
from ros_robodata.errors import DatasetError, RobodataError
from ros_robodata.governance.release import RELEASES, hash_files, list_releases

__all__ = ['RetireRun', 'Retirement', 'expired_episodes', 'participant_episodes', 'retire']

NS_PER_DAY = 86_400 * 10**9


@dataclass(frozen=True)
class Retirement:
    """What retiring one episode removes (or, in a dry run, would remove)."""

    episode_id: str
    files: int
    bytes: int
    copies: tuple[str, ...]  # paths deleted outside the dataset
    releases: tuple[str, ...]  # releases that held it, now marked affected
    pooled: tuple[str, ...] = ()  # of the copies, episode folders in other datasets, retired there

    def to_json(self) -> dict[str, Any]:
        return {'episode': self.episode_id, 'files': self.files, 'bytes': self.bytes, 'copies': list(self.copies),
                'releases': list(self.releases), 'pooled': list(self.pooled)}


@dataclass
class RetireRun:
    """Every retirement of one `robodata retire`, and the episodes it would not retire with why."""

    dry_run: bool
    retired: list[Retirement] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {'dry_run': self.dry_run, 'retired': [r.to_json() for r in self.retired], 'refused': self.refused}


def participant_episodes(dataset: Dataset, participant: str) -> list[str]:
    """Every episode that names this participant (read from each episode.yaml: the catalog does not hold names).

    Raises:
        DatasetError: the participant is not in participants.yaml.
    """
    if participant not in read_participants(dataset.root):
        raise DatasetError(f'participant {participant} is not in {dataset.root}/participants.yaml')
    out = []
    for episode_id in dataset.episode_ids():
        try:
            if dataset.episode(episode_id).participant == participant:
                out.append(episode_id)
        except DatasetError:
            continue  # an unreadable episode.yaml: `robodata verify` names it
    return out


def expired_episodes(dataset: Dataset, now_ns: int | None = None) -> list[str]:
    """Episodes past the dataset's retention rule (dataset.yaml `retention_days`: unreleased episodes are retired
    after so many days from their start).

    Raises:
        RobodataError: the dataset has no retention rule, or one that is not a whole number of days.
    """
    days = dataset.info.get('retention_days')
    if days is None:
        raise RobodataError(f'{dataset.root}/dataset.yaml: no retention rule (add `retention_days: N` to retire '
                            'unreleased episodes N days after they were recorded)')
    if isinstance(days, bool) or not isinstance(days, int) or days < 0:
        raise RobodataError(f'{dataset.root}/dataset.yaml: retention_days: expected a whole number of days, got '
                            f'{days!r}')
    cutoff = (now_ns if now_ns is not None else time.time_ns()) - days * NS_PER_DAY
    return [r.id for r in dataset.list() if r.state not in ('released', 'retired') and r.status != 'recording'
            and r.start_ns is not None and r.start_ns < cutoff]


def retire(dataset: Dataset, episode_ids: list[str], *, why: str, who: str | None = None, dry_run: bool = False,
           participant: str | None = None) -> RetireRun:
    """Delete these episodes' data everywhere the dataset recorded it, each leaving a tombstone and an audit line.

    Args:
        dataset: the dataset.
        episode_ids: the episodes.
        why: why (required: a deletion nobody can explain is what an audit exists to prevent).
        who: who retires; None: the current user.
        dry_run: list what would be deleted; delete nothing.
        participant: the participant withdrawing consent, marked withdrawn in participants.yaml.

    Raises:
        RobodataError: no reason given.
        DatasetError: the audit cannot be written (nothing is deleted), or a deletion fails (the tombstone and audit
            line stay; run it again to finish).
    """
    if not why.strip():
        raise RobodataError('retire needs --why: the audit keeps the reason for every deletion')
    run = RetireRun(dry_run)
    if not dry_run:
        check_audit_writable(dataset.audit_path)
    copies = read_copies(dataset.root)
    held_by = {r.name: set(r.manifest['episodes']) for r in list_releases(dataset)}
    stones = read_tombstones(dataset.root)
    for episode_id in episode_ids:
        row = dataset.catalog.get(episode_id)
        folder = dataset.episode_dir(episode_id)
        if row is None and not folder.exists():
            run.refused[episode_id] = 'no such episode'
            continue
        if row is not None and row.state == 'retired' and not folder.exists():
            run.refused[episode_id] = f'already retired ({stones.get(episode_id, {}).get("time", "?")})'
            continue
        files = sorted(p for p in folder.rglob('*') if p.is_file()) if folder.exists() else []
        hashed = hash_files(files)
        targets = [(c.path / part.format(id=episode_id)) if c.parts else c.path
                   for c in copies if c.holds(episode_id) for part in (c.parts or ('',))]
        present = sorted({str(t) for t in targets if t.exists() or t.is_symlink()})
        pooled = tuple(sorted({str(c.path) for c in copies if c.kind == POOLED and c.holds(episode_id)
                               and str(c.path) in present}))
        releases = tuple(sorted(name for name, ids in held_by.items() if episode_id in ids))
        retirement = Retirement(episode_id, len(files), sum(size for _, size in hashed.values()), tuple(present),
                                releases, pooled)
        run.retired.append(retirement)
        if dry_run:
            continue
        for copy in pooled:
            _retire_pooled(Path(copy), dataset, episode_id, why=why, who=who, participant=participant)
        _retire_one(dataset, episode_id, row, folder, hashed, retirement, why=why, who=who or current_user(),
                    participant=participant)
    if participant and not dry_run:
        withdraw_participant(dataset.root, participant)
        append_audit(dataset.audit_path, 'withdraw_consent', None, who, participant=participant, why=why,
                     episodes=[r.episode_id for r in run.retired])
    return run


def _delete(path: Path) -> None:
    """A folder with what is in it, or a file or link (not what a link points at); nothing when absent."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _retire_pooled(copy: Path, dataset: Dataset, episode_id: str, *, why: str, who: str | None,
                   participant: str | None) -> None:
    """Retire the copy of `episode_id` that `episodes copy` or `merge` put into another dataset (its episode folder
    `copy`) there, with that dataset's own tombstone and audit line (and the participant's withdrawal, where the copy
    carried them there); a folder no dataset holds any more is deleted.

    Raises:
        DatasetError: the other dataset's audit cannot be written or a deletion there fails (nothing here is
            retired yet: run it again).
    """
    try:
        other = Dataset.open(copy.parent.parent)
    except RobodataError:
        other = None
    if other is None or other.root.resolve() == dataset.root.resolve():
        _delete(copy)
        return
    carried = participant if participant and participant in read_participants(other.root) else None
    done = retire(other, [copy.name], why=f'{why} (a copy of {episode_id} of {dataset.root.resolve()}, retired there)',
                  who=who, participant=carried)
    refused = done.refused.get(copy.name)
    if refused and not refused.startswith('already retired'):
        raise DatasetError(f'{copy}: the copy of {episode_id} in {other.root} cannot be retired there: {refused}')


def _retire_one(dataset: Dataset, episode_id: str, row: Any, folder: Path, hashed: dict[Path, tuple[str, int]],
                retirement: Retirement, *, why: str, who: str, participant: str | None) -> None:
    stamp = time.strftime('%Y-%m-%dT%H:%M:%S%z')
    stone: dict[str, Any] = {'id': episode_id, 'time': stamp, 'time_ns': time.time_ns(), 'who': who, 'why': why,
             'participant': participant or '', 'task': row.task if row else '', 'outcome': row.outcome if row else '',
             'files': {p.relative_to(folder).as_posix(): sha for p, (sha, _) in hashed.items()},
             'copies_deleted': list(retirement.copies), 'releases_affected': list(retirement.releases)}
    try:
        write_tombstone(dataset.root, episode_id, stone)
        append_audit(dataset.audit_path, 'retire', episode_id, who, why=why, files=retirement.files,
                     copies_deleted=list(retirement.copies), releases_affected=list(retirement.releases),
                     participant=participant or '')
        for path in [Path(p) for p in retirement.copies if p not in retirement.pooled] + [folder]:
            _delete(path)
        for release in retirement.releases:
            line = json.dumps({'episode': episode_id, 'time': stamp, 'who': who, 'why': why}) + '\n'
            fd = os.open(dataset.root / RELEASES / release / 'withdrawn.jsonl', os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                         0o640)
            try:
                os.write(fd, line.encode())
            finally:
                os.close(fd)
    except OSError as err:
        raise DatasetError(f'{err.filename or episode_id}: cannot retire {episode_id} ({err.strerror}): its tombstone '
                           'and audit line are written; run retire again to finish') from None
    dataset.catalog.upsert(Episode(id=episode_id, task=stone['task'], outcome=stone['outcome'] or 'unknown',
                                   status='retired'))
