"""Episodes copied, moved or discarded between datasets of one robot (`robodata episodes`, `robodata merge`).

A copy is built out of sight in the target (`episodes/.<id>.importing/`, what an import stages in, so the next import
or copy clears what a killed one left) and renamed over the id it reserved only once its bag, sidecars and
episode.yaml are whole; the source is touched only after that (a move's source folder is renamed aside, then
deleted). Pooling datasets of different robot profiles (embodiments) is refused: one robot per dataset.
"""

from __future__ import annotations

import errno
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ros_robodata.dataset.audit import append_audit
from ros_robodata.dataset.catalog import CatalogRow
from ros_robodata.dataset.copies import POOLED, record_copy
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.embodiments import embodiment_of, holds_several
from ros_robodata.dataset.episode import Episode, write_episode
from ros_robodata.dataset.participants import add_participant, read_participants
from ros_robodata.dataset.sidecars import restore_reviewed_outcome, restore_scores
from ros_robodata.dataset.staging import import_lock, staging_folder
from ros_robodata.errors import DatasetError

__all__ = ['FROZEN_STATES', 'PoolRun', 'Pooled', 'check_same_robot', 'copy_episodes', 'discard_episodes']

FROZEN_STATES = ('released', 'retired')  # a release is frozen; a retired episode's data is gone
MOVED_OUT_SUFFIX = '.moved-out'  # a moved episode's source folder, renamed aside until it is deleted


@dataclass(frozen=True)
class Pooled:
    """One episode copied or moved: its id in the source and in the target, and how its bag got there.

    Args:
        source_id: the episode's id in the source dataset.
        new_id: its id in the target (the same, or ID-2... when the target had that id).
        linked: its bag files are hard links to the source's.
    """

    source_id: str
    new_id: str
    linked: bool

    @property
    def renamed(self) -> bool:
        return self.source_id != self.new_id


@dataclass
class PoolRun:
    """What a copy, move or discard did: the episodes done, those refused (id -> why) and notes to pass on."""

    done: list[Pooled] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {'done': [{'episode': p.source_id, 'new_id': p.new_id, 'linked': p.linked} for p in self.done],
                'renamed': {p.source_id: p.new_id for p in self.done if p.renamed},
                'refused': dict(self.refused), 'notes': list(self.notes)}


def check_same_robot(source: Dataset, target: Dataset) -> None:
    """Refuse pooling episodes of two robot profiles (their sha256 differ), in one line naming both.

    Args:
        source: where the episodes come from.
        target: where they go.

    Raises:
        DatasetError: either has no robot profile, or the profiles differ.
    """
    theirs, ours = _profile_sha(source), _profile_sha(target)
    listed = {str(e.get('sha256')) for e in target.info.get('embodiments') or [] if isinstance(e, dict)}
    if theirs != ours and theirs not in listed:  # a dataset of several embodiments (dataset/embodiments.py) takes it
        raise DatasetError(f'{source.root} (robot profile {theirs[:12]}) and {target.root} (robot profile '
                           f'{ours[:12]}) have different robot profiles: pooling different embodiments is not '
                           'supported yet here (`robodata merge` pools them into a new dataset)')


def _profile_sha(dataset: Dataset) -> str:
    if not dataset.has_profile:
        raise DatasetError(f'{dataset.root}: dataset.yaml holds no robot profile, so it cannot be pooled: '
                           '`robodata init` with --profile, or set_profile, gives it one')
    return dataset.profile.sha256


def _frozen(row: CatalogRow | None, episode_id: str, verb: str) -> str:
    """Why the episode cannot be moved or discarded ('' when it can)."""
    if row is None:
        return ''
    if row.state == 'released':
        hint = ' (`robodata episodes copy` takes a copy)' if verb == 'move' else ''
        return f'in release {row.in_release}, and a release is frozen: {verb} refused{hint}'
    if row.state == 'retired':
        return f'retired (its data was deleted by `robodata retire`): nothing to {verb}'
    return ''


def copy_episodes(source: Dataset, target: Dataset, episode_ids: list[str], *, link: bool = False,
                  move: bool = False, who: str | None = None, audit_source: bool = True,
                  reason: str = '') -> PoolRun:
    """Copy (or move) episodes of `source` into `target`, each whole or not at all, the source touched only once
    its copy is in place.

    Each copy keeps its id, or gets ID-2, ID-3... when the target has it (PoolRun.done says which); its
    episode.yaml records where it came from (`copied_from`), its catalog row is made and its scores and reviewed
    verdict re-indexed from its sidecars, and both datasets get an audit line (`copy_out`/`copy_in`, or
    `move_out`/`move_in`). A move removes the source's folder and catalog row once the copy is in.

    Args:
        source: the dataset the episodes are in.
        target: the dataset they go to (the same robot profile).
        episode_ids: the episodes, by their id in `source`.
        link: hard-link the bag files instead of copying them (a copy where they are on another file system,
            said in PoolRun.notes). A move always links where it can: its source goes anyway.
        move: remove each episode from `source` once its copy is whole.
        who: who asked, for the audit logs; None: the current user.
        audit_source: False: write nothing into `source` (a merge, which leaves its sources as they were).
        reason: why, for the audit lines.

    Raises:
        DatasetError: the two datasets are one, have different robot profiles, a read-only target, or another
            import or copy is running into it. An episode that cannot go (unknown, released or retired for a
            move, retired for a copy) is named in PoolRun.refused and the others go on.
        RobodataError: a file cannot be written (disk full, no permission); episodes done before stay done.
    """
    if source.root.resolve() == target.root.resolve():
        raise DatasetError(f'{source.root}: the source and the target are the same dataset')
    check_same_robot(source, target)
    if target.catalog.read_only:
        raise DatasetError(f'{target.root}: the dataset is read-only here: nothing can be copied into it')
    run = PoolRun()
    verb = 'move' if move else 'copy'
    if move:  # a move killed between renaming its source aside and deleting it: its copy is whole in a target
        for aside in source.episodes_dir.glob(f'.*{MOVED_OUT_SUFFIX}'):
            shutil.rmtree(aside, ignore_errors=True)
    with import_lock(target):
        for episode_id in dict.fromkeys(episode_ids):  # each once, in the order given
            why = _refusal(source, episode_id, verb, move) or _other_robot(source, target, episode_id)
            if why:
                run.refused[episode_id] = why
                continue
            run.done.append(_copy_one(source, target, episode_id, link=link or move, move=move, who=who,
                                      audit_source=audit_source, reason=reason, notes=run.notes))
    return run


def _refusal(source: Dataset, episode_id: str, verb: str, move: bool) -> str:
    try:
        source.episode(episode_id)
    except DatasetError as err:
        row = source.catalog.get(episode_id) if _valid(episode_id) else None
        return _frozen(row, episode_id, verb) or str(err)
    row = source.catalog.get(episode_id)
    why = _frozen(row, episode_id, verb)
    if why and (move or (row is not None and row.state == 'retired')):
        return why
    return ''


def _other_robot(source: Dataset, target: Dataset, episode_id: str) -> str:
    """Why an episode of a dataset of several robots cannot go into `target` ('' when it can): `target` neither
    has nor lists its robot's profile (check_same_robot judged the source's first robot only)."""
    if not holds_several(source):
        return ''
    theirs = embodiment_of(source, source.episode(episode_id))
    listed = {str(e.get('sha256')) for e in target.info.get('embodiments') or [] if isinstance(e, dict)}
    if theirs.sha256 == _profile_sha(target) or theirs.sha256 in listed:
        return ''
    return (f'recorded with robot {theirs.name} (profile {theirs.sha256[:12]}), which {target.root} does not '
            'hold: `robodata merge` pools several robots into a new dataset')


def _valid(episode_id: str) -> bool:
    try:
        Episode(id=episode_id)
    except DatasetError:
        return False
    return True


def _copy_one(source: Dataset, target: Dataset, episode_id: str, *, link: bool, move: bool, who: str | None,
              audit_source: bool, reason: str, notes: list[str]) -> Pooled:
    episode = source.episode(episode_id)
    from_dir = source.episode_dir(episode_id)
    new_id = target.reserve_episode_id(episode_id)
    how = 'move' if move else 'copy'
    with staging_folder(target, new_id) as staging:
        linked = _fill(from_dir, staging, link, notes)
        episode.id = new_id
        if not episode.profile_sha256:  # which profile reads it, once it shares a dataset with other robots
            episode.profile_sha256, episode.robot = source.profile.sha256, episode.robot or source.profile.robot.name
        episode.copied_from = [*episode.copied_from, {
            'dataset': source.name, 'path': str(source.root.resolve()), 'episode': episode_id, 'how': how,
            'bag': 'linked' if linked else 'copied', 'time': time.strftime('%Y-%m-%dT%H:%M:%S%z')}]
        if episode.participant:
            _carry_participant(source, target, episode.participant)
        write_episode(staging / 'episode.yaml', episode)
        os.replace(staging, target.episode_dir(new_id))  # over its empty reservation: whole, or not there
    target.catalog.upsert(episode, **target.bag_stats(episode))
    restore_scores(target, new_id)
    restore_reviewed_outcome(target, new_id)
    details = {'from_dataset': source.name, 'from_path': str(source.root.resolve()), 'from_episode': episode_id,
               'bag': 'linked' if linked else 'copied', 'reason': reason}
    append_audit(target.audit_path, f'{how}_in', new_id, who, **details)
    if move:
        _remove_source(source, episode_id)
    if audit_source:
        append_audit(source.audit_path, f'{how}_out', episode_id, who, to_dataset=target.name,
                     to_path=str(target.root.resolve()), to_episode=new_id, reason=reason)
        if not move:  # consent withdrawn in the source reaches the copy (robodata retire)
            note = record_copy(source.root, POOLED, target.episode_dir(new_id), [episode_id])
            if note:
                notes.append(f'{episode_id}: {note}')
    return Pooled(episode_id, new_id, linked)


def _fill(from_dir: Path, staging: Path, link: bool, notes: list[str]) -> bool:
    """The episode folder's files into `staging`: the bag's hard-linked when `link` and possible (said in `notes`
    when not), the rest copied. Whether the bag was linked."""
    if link:
        cannot = _cannot_link(from_dir / 'bag', staging)
        if cannot:
            notes.append(f'{from_dir.name}: the bag cannot be hard-linked ({cannot}): copied instead')
            link = False
    for folder, _dirs, files in os.walk(from_dir):
        here = Path(folder)
        rel = here.relative_to(from_dir)
        (staging / rel).mkdir(parents=True, exist_ok=True)
        for name in files:
            if name == 'episode.yaml' and rel == Path('.'):
                continue  # written anew, with its new id and where it came from
            if link and rel.parts[:1] == ('bag',):
                os.link(here / name, staging / rel / name)
            else:
                shutil.copy2(here / name, staging / rel / name)
    return link


def _cannot_link(bag: Path, staging: Path) -> str:
    """Why the bag's files cannot be hard-linked into `staging` ('' when they can): tried on one of them."""
    probe = next((p for p in sorted(bag.rglob('*')) if p.is_file()), None) if bag.is_dir() else None
    if probe is None:
        return 'the episode has no bag'
    test = staging / '.link-probe'
    try:
        os.link(probe, test)
    except OSError as err:
        return f'{os.strerror(err.errno or errno.EXDEV)}: another file system?'
    test.unlink()
    return ''


def _carry_participant(source: Dataset, target: Dataset, participant: str) -> None:
    """The person recorded goes into the target's registry with the consent they gave the source, so a consent
    withdrawal there finds their episodes too."""
    if participant in read_participants(target.root):
        return
    entry = read_participants(source.root).get(participant)
    if entry is None:
        raise DatasetError(f'{source.root}: episode names participant {participant}, who is not in its registry')
    add_participant(target.root, participant, str(entry.get('consent', '')))


def _remove_source(source: Dataset, episode_id: str) -> None:
    """A moved episode's folder out of the source: renamed aside first (so no half-deleted episode is ever seen),
    its catalog row and the folder then deleted."""
    folder = source.episode_dir(episode_id)
    aside = source.episodes_dir / f'.{episode_id}{MOVED_OUT_SUFFIX}'
    shutil.rmtree(aside, ignore_errors=True)
    os.replace(folder, aside)
    source.catalog.delete(episode_id)
    shutil.rmtree(aside, ignore_errors=True)


def discard_episodes(dataset: Dataset, episode_ids: list[str], *, why: str, who: str | None = None) -> PoolRun:
    """Discard episodes: status `discarded`, each with its audit line; reversible (`robodata set --status`), and
    the data stays (`robodata retire` deletes it).

    Args:
        dataset: the dataset.
        episode_ids: the episodes.
        why: why, for the audit log (required: a discard with no reason cannot be reviewed).
        who: who discarded them; None: the current user.

    Raises:
        DatasetError: no reason given, or a change cannot be written. An unknown, released or retired episode is
            named in PoolRun.refused and the others go on.
    """
    if not why.strip():
        raise DatasetError('a discard needs a reason (--why): it is kept in the audit log')
    run = PoolRun()
    for episode_id in dict.fromkeys(episode_ids):
        refusal = _refusal(dataset, episode_id, 'discard', True)
        if refusal:
            run.refused[episode_id] = refusal
            continue
        if dataset.episode(episode_id).status == 'discarded':
            run.notes.append(f'{episode_id}: discarded already')
            continue
        dataset.set_status(episode_id, 'discarded', who, why)
        run.done.append(Pooled(episode_id, episode_id, False))
    return run
