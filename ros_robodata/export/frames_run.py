"""Exporting many episodes or bags for labeling: each in a worker (export_episode, frames.py), an episode already
exported with the same settings left as it is, one exported again with other settings swapped in whole, then every
current frames.json merged into manifest.json. The front door (`export_frames`) and the command (`export_work`).
The episodes of several robots (a merged dataset) go into one export per robot, OUT/<robot>/, each read with its own
profile: what `--where "robot = NAME" --out OUT/NAME` writes (one manifest holds one robot's sensors)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import cv2

from ros_robodata.cluster import ClusterStats, Executor, JobFailure, map_jobs
from ros_robodata.dataset.copies import COPIES_FILE, record_copy
from ros_robodata.dataset.episode import check_episode_id
from ros_robodata.dataset.targets import Filters, Item, RobotGroup, TargetLike, Work, prepare, why_none
from ros_robodata.errors import ExportError, RobodataError
from ros_robodata.events.offline import EVENTS_FILE, read_events_file
from ros_robodata.export.export_plan import ExportOptions, ExportPlan, plan_export
from ros_robodata.export.frames import STAGING_DIR, export_episode
from ros_robodata.export.manifest import build_manifest, episode_is_current, refresh_manifest
from ros_robodata.export.pii_guard import audit_pii
from ros_robodata.files import replace_folder, safe_path
from ros_robodata.outputs import check_export_outside_dataset, prepare_export_dir, recorded_data
from ros_robodata.profile import Profile

__all__ = ['ExportJob', 'ExportResult', 'export_frames', 'export_items', 'export_work']


@dataclass
class ExportResult:
    """What one export run did, for the caller to report or hand on to a labeling tool; `manifest` is what
    DIR/manifest.json now holds.

    Args:
        out_dir: the export folder.
        manifest: every frame exported so far into the folder (this run's and earlier runs').
        exported: the episodes (or bags) exported by this run.
        skipped: the episodes already exported with the same settings, left as they were.
        failed: per episode that could not be exported, why.
        missing: per episode, the sensors whose topic its bag lacks.
        notes: per episode, how its bag was read when not whole (a damaged chunk's frames are not in the export).
        robots: for episodes of several robots, each robot's export (its own folder and manifest), by name;
            `manifest` then holds every robot's episodes and frames, for counting (no such file is written).
        left_out: for episodes of several robots, a robot whose profile names no camera, and why.
    """

    out_dir: Path
    manifest: dict[str, Any]
    exported: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    missing: dict[str, list[str]] = field(default_factory=dict)  # sensors whose topic an episode's bag lacks
    notes: dict[str, list[str]] = field(default_factory=dict)  # how a bag was read: damage, a file cut off
    robots: dict[str, ExportResult] = field(default_factory=dict)  # several robots: each one's export, by name
    left_out: dict[str, str] = field(default_factory=dict)  # several robots: one not exported (no camera), why

    @property
    def files(self) -> int:
        """How many sensor files (images, PCDs) the manifest lists."""
        return sum(len(f['sensors']) for f in self.manifest['frames'])

    @property
    def unmatched_frames(self) -> list[dict[str, Any]]:
        """The frames some sensor had no sample for within the tolerance."""
        return [f for f in self.manifest['frames'] if f['unmatched']]


@dataclass(frozen=True)
class ExportJob:
    """One episode (or bag) for an export worker (pickled to its process): where its bag and events are, where
    the export goes, the plan, and the label its frames carry."""

    episode_id: str
    bag: Path
    events_path: Path | None
    out_dir: Path
    plan: ExportPlan
    task: str
    outcome: str

    @classmethod
    def of(cls, item: Item, out_dir: Path, plan: ExportPlan) -> ExportJob:
        events = None if item.folder is None else item.folder / EVENTS_FILE
        return cls(item.name, item.bag, events, out_dir, plan, item.task, item.outcome or '')


def _export_job(job: ExportJob) -> tuple[str, dict[str, Any] | str, bool]:
    """Worker: (episode_id, frames.json document or a one-line failure, skipped because already current)."""
    episode_id, out_dir, plan = job.episode_id, job.out_dir, job.plan
    episode_dir: Path | None = None
    fresh = False
    try:
        episode_dir = safe_path(out_dir, 'episodes', check_episode_id(episode_id))
        current = episode_is_current(episode_dir, plan.settings())
        if current is not None:
            return episode_id, current, True
        fresh = not episode_dir.exists()
        events = read_events_file(job.events_path) if job.events_path is not None and job.events_path.exists() \
            else None
        if fresh:
            doc = export_episode(job.bag, episode_id, out_dir, plan, events=events, task=job.task, outcome=job.outcome)
        else:
            # exported before with other settings: staged beside it and swapped in whole (paths in frames.json
            # are relative to the export's folder), so a failure half-way leaves the earlier export as it was
            doc = replace_folder(episode_dir, out_dir / STAGING_DIR / episode_id, lambda staging: export_episode(
                job.bag, episode_id, staging, plan, events=events, task=job.task, outcome=job.outcome),
                inner=Path('episodes', episode_id))
        return episode_id, doc, False
    except (RobodataError, OSError, ValueError, cv2.error) as err:
        if fresh and episode_dir is not None:  # half an episode's frames (a disk that filled) is no export: gone
            shutil.rmtree(episode_dir, ignore_errors=True)
        return episode_id, ' '.join(str(err).split()) or type(err).__name__, False


def export_items(items: list[Item], profile: Profile, out_dir: str | Path, options: ExportOptions, *,
                 name: str = '', workers: int = 1,
                 progress: Callable[[Iterable[Any]], Iterator[Any]] | None = None, executor: Executor | None = None,
                 stats: ClusterStats | None = None) -> ExportResult:
    """Export episodes or bags on their own (in `workers` processes, or as tasks of a Ray cluster that sees the
    same folders: `executor`), then merge every current frames.json into
    manifest.json. An episode's events (events.json) mark its frames; a bag on its own has none."""
    out = Path(out_dir)
    plan = replace(plan_export(profile, options), dataset=name)
    for item in items:
        check_episode_id(item.name)
    prepare_export_dir(out, force=True)  # the caller chose the folder; here only made, and checked not to be data
    by_name = {item.name: item for item in items}
    jobs = [ExportJob.of(item, out, plan) for item in items]
    executor = executor or Executor(workers=workers)
    if executor.ray is not None:  # a Ray worker's working directory is not ours; the folders must be shared
        jobs = [replace(job, bag=job.bag.absolute(), out_dir=job.out_dir.absolute(),
                        events_path=job.events_path.absolute() if job.events_path else None) for job in jobs]
    ran = map_jobs(_export_job, jobs, executor, progress=progress, stats=stats)
    collected = [(job.episode_id, r.reason, False) if isinstance(r, JobFailure) else r
                 for job, r in zip(jobs, ran, strict=True)]
    result = ExportResult(out, {})
    docs: dict[str, dict[str, Any]] = {}
    for episode_id, doc, skipped in collected:
        if isinstance(doc, str):
            result.failed[episode_id] = doc
            continue
        (result.skipped if skipped else result.exported).append(episode_id)
        item = by_name[episode_id]
        docs[episode_id] = {**doc, 'task': item.task, 'outcome': item.outcome or ''}
        if doc.get('missing_sensors'):
            result.missing[episode_id] = list(doc['missing_sensors'])
        if doc.get('bag_notes'):
            result.notes[episode_id] = [str(note) for note in doc['bag_notes']]
    datasets = {item.dataset.root for item in items if item.dataset is not None and item.name in docs}
    for root in datasets:  # where the data went, so `robodata retire` can withdraw it from here too
        if note := record_copy(root, 'frames', out, sorted(docs), ('episodes/{id}',)):
            result.notes.setdefault(COPIES_FILE, []).append(note)
    if docs or not result.failed:
        result.manifest = refresh_manifest(out, name, plan.settings(), docs, skip=set(result.failed))
    else:  # every episode failed: an earlier export's manifest stays as it was, with the episodes it lists
        result.manifest = build_manifest(name, plan.settings(), [])
    return result


def export_frames(target: TargetLike, out_dir: str | Path, options: ExportOptions | None = None, *,
                  profile: Profile | str | None = None, filters: Filters | None = None, workers: int = 1,
                  progress: Callable[[Iterable[Any]], Iterator[Any]] | None = None,
                  force: bool = False) -> ExportResult:
    """Frames of a dataset's episodes, one episode, a bag or a folder of bags, for labeling, into `out_dir`
    (images and PCDs, a frames.json per episode, manifest.json); the target resolved by `prepare()`, then
    export_work.

    Args:
        target: a Dataset, or a path to a dataset, an episode, a bag or a folder of bags.
        out_dir: the export folder (never inside a dataset or a bag).
        options: what to export and how (cameras, rate, format...).
        profile: the robot profile; the dataset's own unless given (required for bags).
        filters: which episodes of a dataset.
        workers: processes that export in parallel.
        progress: wraps the jobs to show progress.
        force: write into a folder that holds other files.
        executor: where the episodes are exported (a Ray cluster); `workers` local processes when None.
        stats: filled with episodes and seconds per node.

    Raises:
        RobodataError: the target, profile, options or folder cannot be used, or nothing was picked.
        ExportError: a camera the profile marks `pii: true` is exported without options.allow_pii or
            options.blur_faces.
    """
    return export_work(prepare(target, profile, filters), out_dir, options, filters=filters, workers=workers,
                       progress=progress, force=force)


def export_work(work: Work, out_dir: str | Path, options: ExportOptions | None = None, *,
                filters: Filters | None = None, workers: int = 1,
                progress: Callable[[Iterable[Any]], Iterator[Any]] | None = None, force: bool = False,
                executor: Executor | None = None, stats: ClusterStats | None = None) -> ExportResult:
    """Export what `prepare()` resolved. Options and `out_dir` are checked before anything is written: never
    inside a dataset or a bag, never over a manifest.json robodata did not write, and a folder holding other
    files needs `force` (outputs.prepare_export_dir). A pii camera exported with permission (options.allow_pii,
    options.blur_faces) is recorded in the dataset's audit.jsonl before any frame is written.

    Args:
        work: the target, its profile and the chosen episodes or bags.
        out_dir: the export folder.
        options: what to export and how.
        filters: the filters `work` was chosen with, to say why nothing was picked.
        workers: processes that export in parallel.
        progress: wraps the jobs to show progress.
        force: write into a folder that holds other files.
        executor: where the episodes are exported (a Ray cluster); `workers` local processes when None.
        stats: filled with episodes and seconds per node.

    Raises:
        RobodataError: the options or folder cannot be used, or nothing was picked.
        ExportError: a pii camera without options.allow_pii or options.blur_faces, or the permission cannot be
            written to the dataset's audit.jsonl.
    """
    options = options or ExportOptions()
    if work.mixed:
        return _export_robots(work, Path(out_dir), options, filters=filters, workers=workers, progress=progress,
                              force=force, executor=executor, stats=stats)
    plan = plan_export(work.profile, options)  # a pii camera without permission is refused here, before any file
    if not work.items:
        raise RobodataError(f'{work.target.path}: nothing to export: {why_none(work.target, filters)}')
    check_export_outside_dataset(Path(out_dir))
    created = not Path(out_dir).exists()
    prepare_export_dir(Path(out_dir), force=force)
    name = work.target.dataset.name if work.target.dataset is not None else work.target.path.resolve().name
    try:
        if plan.pii and work.target.dataset is not None:  # the permission on record before a frame is written
            audit_pii(work.target.dataset.root, plan.pii, Path(out_dir), export='frames',
                      allow_pii=options.allow_pii, blur_faces=options.blur_faces,
                      episodes=[item.name for item in work.items])
        result = export_items(work.items, work.profile, out_dir, options, name=name, workers=workers,
                              progress=progress, executor=executor, stats=stats)
    except BaseException:
        if created:  # a folder this run made holds nothing worth keeping when it stopped half-way
            shutil.rmtree(out_dir, ignore_errors=True)
        raise
    if created and not result.exported and not result.skipped:
        shutil.rmtree(out_dir, ignore_errors=True)  # every episode failed: no folder of an export that is not
    return result


def _export_robots(work: Work, out: Path, options: ExportOptions, *, filters: Filters | None, workers: int,
                   progress: Callable[[Iterable[Any]], Iterator[Any]] | None, force: bool,
                   executor: Executor | None, stats: ClusterStats | None) -> ExportResult:
    """Episodes of several robots: each robot's into OUT/<robot>/ with its own profile (export_work on its group);
    every robot's options checked before any file is written; a robot whose profile names no camera is left out
    (said in `left_out`), unless no robot has one."""
    if not work.items:
        raise RobodataError(f'{work.target.path}: nothing to export: {why_none(work.target, filters)}')
    groups: list[RobotGroup] = []
    left_out: dict[str, str] = {}
    for group in work.robots:
        if not group.profile.topics.cameras:
            left_out[group.name] = f'the profile names no camera: its {len(group.items)} episode(s) not exported'
            continue
        try:
            plan_export(group.profile, options)
        except RobodataError as err:  # ExportError (a pii camera) too: said for the robot it is about
            said = (f'{group.name}: {err} (its {len(group.items)} episode(s); `--where "robot = '
                    f'{group.profile.robot.name}"` exports this robot alone)')
            raise (ExportError(said) if isinstance(err, ExportError) else RobodataError(said)) from None
        groups.append(group)
    if not groups:
        raise RobodataError(f'{work.target.path}: nothing to export: no robot\'s profile names a camera '
                            f'({", ".join(left_out)})')
    check_export_outside_dataset(out)
    if (why := recorded_data(out.resolve())) is not None or (out.exists() and not out.is_dir()):
        raise RobodataError(f'{out}: not exporting there: {why or "not a folder"}; name a folder to export into')
    names = {g.name for g in work.robots}
    foreign = sorted(p.name for p in out.iterdir() if p.name not in names and not p.name.startswith('.')) \
        if out.is_dir() else []
    if foreign and not force:
        raise RobodataError(f'{out}: holds files that are not an export of ours ({", ".join(foreign[:3])}'
                            f'{" ..." if len(foreign) > 3 else ""}); the episodes of several robots go into one '
                            'folder per robot in it: name an empty or new folder, or add --force')
    created = not out.exists()
    result = ExportResult(out, {'episodes': [], 'frames': []}, left_out=left_out)
    try:
        for group in groups:
            own = export_work(Work(work.target, group.profile, group.items), out / group.name, options,
                              filters=filters, workers=workers, progress=progress, force=force, executor=executor,
                              stats=stats)
            result.robots[group.name] = own
            for key in ('episodes', 'frames'):
                result.manifest[key].extend(own.manifest.get(key, []))
            result.exported.extend(own.exported)
            result.skipped.extend(own.skipped)
            result.failed.update(own.failed)
            result.missing.update(own.missing)
            result.notes.update(own.notes)
    except BaseException:
        if created:
            shutil.rmtree(out, ignore_errors=True)
        raise
    return result
