"""`robodata merge`: several datasets pooled into a new one, which appears whole or not at all.

Datasets of different robots (embodiments) pool too: each episode keeps its own robot profile (the new dataset lists
one per embodiment, dataset/embodiments.py), and every command reads each episode with its own.

The new dataset is built beside where it goes (`C.partial-<pid>`) with the same copy as `robodata episodes copy`,
and renamed into place once every episode, merge.json and its audit lines are in: a merge killed midway leaves its
sources' episodes as they were and no C (the partial folder of a dead process is removed by the next merge into C).
The sources are only read, but for one line per episode in their copies.jsonl, written before C appears, saying
where its copy will be: consent withdrawn in a source reaches the copy (`robodata retire` retires it in C too); a
line whose copy never appeared (a killed merge) is passed over.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ros_robodata.dataset.audit import append_audit
from ros_robodata.dataset.copies import POOLED, record_copy
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.embodiments import add_embodiments, embodiments
from ros_robodata.dataset.episode_moves import PoolRun, copy_episodes
from ros_robodata.dataset.targets import HIDDEN
from ros_robodata.errors import DatasetError
from ros_robodata.files import write_atomic

__all__ = ['MERGE_FILE', 'Merged', 'merge_datasets']

MERGE_FILE = 'merge.json'
PARTIAL = '.partial-'  # C.partial-<pid>: a merge being built


@dataclass
class Merged:
    """What a merge made: the new dataset, per source what was copied (and renamed), and what was left out."""

    root: Path
    runs: dict[str, PoolRun] = field(default_factory=dict)  # by source path
    left_out: dict[str, list[str]] = field(default_factory=dict)  # by source path: hidden episodes not taken
    embodiments: list[str] = field(default_factory=list)  # the robot profiles it holds, by name

    @property
    def episodes(self) -> int:
        return sum(len(run.done) for run in self.runs.values())

    def to_json(self) -> dict[str, Any]:
        return {'dataset': str(self.root), 'episodes': self.episodes, 'embodiments': self.embodiments,
                'sources': [{'path': path, **run.to_json(), 'left_out': self.left_out.get(path, [])}
                            for path, run in self.runs.items()]}


def merge_datasets(sources: list[Dataset], into: Path, *, link: bool = False, include_all: bool = False,
                   who: str | None = None, name: str | None = None) -> Merged:
    """Pool every episode of `sources` into a new dataset at `into`.

    Episodes keep their ids; a clash gets ID-2, ID-3... and merge.json keeps every source episode's new id. The
    new dataset.yaml holds the first source's robot profile and, when the sources hold different ones, lists every
    embodiment (profiles/<robot>.yaml), each episode pointing at its own.

    Args:
        sources: the datasets to pool (each with its robot profile; different robots are fine).
        into: where the new dataset goes (absent, or an empty folder).
        link: hard-link the bag files instead of copying them (copied where that is impossible, said in the notes).
        include_all: take discarded and retired-listed episodes too (retired ones have no data and are never taken).
        who: who merged, for the audit log; None: the current user.
        name: the new dataset's name; None: its folder's name.

    Raises:
        DatasetError: no source, a source given twice or that is `into`, a source without a robot profile, or
            `into` holds something; nothing is left at `into` then.
        RobodataError: a file cannot be written (disk full): the partial dataset is removed.
    """
    if not sources:
        raise DatasetError('nothing to merge: name at least one dataset')
    into = Path(into)
    roots = [s.root.resolve() for s in sources]
    if len(set(roots)) != len(roots):
        raise DatasetError('a dataset is named twice among the sources')
    if into.resolve() in roots:
        raise DatasetError(f'{into}: is one of the sources; merge into a new folder')
    for source in sources:
        if not source.has_profile:
            raise DatasetError(f'{source.root}: dataset.yaml holds no robot profile, so it cannot be pooled: '
                               '`robodata init` with --profile, or set_profile, gives it one')
    profiles = {e.sha256: e.profile for source in sources for e in embodiments(source)}
    if into.exists() and (not into.is_dir() or any(into.iterdir())):
        raise DatasetError(f'{into}: exists and is not an empty folder: merge into a new one')
    _clear_dead_partials(into)
    partial = into.with_name(f'{into.name}{PARTIAL}{os.getpid()}')
    shutil.rmtree(partial, ignore_errors=True)
    merged = Merged(into)
    try:
        target = Dataset.create(partial, name=name or into.resolve().name, profile=sources[0].profile)
        if len(profiles) > 1:
            add_embodiments(target, list(profiles.values()), who)
        mapping: list[dict[str, str]] = []
        for source in sources:
            hidden = [] if include_all else [row.id for row in source.list() if row.status in HIDDEN]
            ids = [i for i in source.episode_ids() if i not in hidden]
            run = copy_episodes(source, target, ids, link=link, who=who, audit_source=False,
                                reason=f'robodata merge into {into.resolve()}')
            merged.runs[str(source.root)] = run
            merged.left_out[str(source.root)] = hidden
            mapping += [{'dataset': source.name, 'path': str(source.root.resolve()), 'episode': p.source_id,
                         'new_id': p.new_id, 'robot': target.episode(p.new_id).robot} for p in run.done]
        final = into.resolve()
        for source in sources:  # where each copy will be, so that consent withdrawn there reaches it (retire)
            run = merged.runs[str(source.root)]
            for p in run.done:
                note = record_copy(source.root, POOLED, final / target.episode_dir(p.new_id).relative_to(target.root),
                                   [p.source_id])
                if note:
                    run.notes.append(f'{p.source_id}: {note}')
        write_atomic(partial / MERGE_FILE, (json.dumps(
            {'sources': [{'dataset': s.name, 'path': str(s.root.resolve())} for s in sources],
             'episodes': mapping}, indent=2) + '\n').encode())
        append_audit(target.audit_path, 'merge', None, who, sources=[str(r) for r in roots],
                     episodes=merged.episodes, renamed=sum(m['episode'] != m['new_id'] for m in mapping),
                     embodiments=[e.name for e in embodiments(target)])
        merged.embodiments = [e.name for e in embodiments(target)]
        os.replace(partial, into)  # over an empty folder too (checked above)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return merged


def _clear_dead_partials(into: Path) -> None:
    """Partial folders beside `into` of merges whose process is gone (killed: nothing of them is whole)."""
    if not into.parent.is_dir():
        return
    for partial in into.parent.glob(f'{into.name}{PARTIAL}*'):
        pid = partial.name[len(into.name) + len(PARTIAL):]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(partial, ignore_errors=True)
        except PermissionError:
            continue  # another user's process, alive: leave it
