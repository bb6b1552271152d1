"""Segmenting recorded episodes or bags: stream the gripper and wrench topics out of each bag; an episode of a
dataset gets its events.json, a bag on its own is only read. A dataset of several robots is segmented robot by robot,
each with its own profile and its strokes pooled over its own episodes only."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, cast

from ros_robodata import untrusted
from ros_robodata.bag.reader import BagReader
from ros_robodata.bag.time_origin import time_origin
from ros_robodata.cluster import ClusterStats, Executor, JobFailure, content_key, files_fingerprint, map_jobs
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.lerobot_ref import LeRobotRef
from ros_robodata.dataset.targets import Filters, Item, RobotGroup, TargetLike, prepare
from ros_robodata.errors import BagError, RobodataError
from ros_robodata.events.calibration import Priors, needs_prior, part_way_in_a_full_dataset, pool_priors, read_prior
from ros_robodata.events.event import EventJson, SegmentResult, SegmentResultJson
from ros_robodata.events.segmenter import GRIPPER, WRENCH, Segmenter, episode_input_start
from ros_robodata.files import write_json
from ros_robodata.profile import Profile

if TYPE_CHECKING:  # 3.11's; the annotations below are never evaluated, so 3.10 runs this module too
    from typing import NotRequired

EVENTS_FILE = 'events.json'
DATASET = 'dataset'


class EventsExtra(TypedDict, total=False):
    """What `write_events` puts between the format and the result: the episode's id (every caller here gives it)."""

    episode_id: str


class EventsDoc(SegmentResultJson):
    """events.json as `write_events` writes it: its format, the episode's id, then `SegmentResult.to_json`."""

    format: str  # ros_robodata.events/1
    episode_id: NotRequired[str]


def segment_bag(path: str | Path, profile: Profile, *, use_gripper: bool = True, use_wrench: bool = True,
                since_ns: int | None = None, priors: Priors | None = None, lerobot: LeRobotRef | None = None
                ) -> SegmentResult:
    """Every event in one bag; times count from the episode's time origin (bag/time_origin.py). `since_ns`:
    samples stamped earlier are not read (a recorded episode's, see episode_input_start). `priors`: where earlier
    episodes found the gripper's strokes (None: the profile's values until the bag's own rests say more). A gripper
    or wrench topic, or the gripper joint, that the profile names but the bag lacks is an error naming what the bag
    has instead:
    never zero events."""
    segmenter = Segmenter(profile, use_gripper=use_gripper, use_wrench=use_wrench, since_ns=since_ns, priors=priors)
    if not segmenter.topics:
        raise BagError(f'{profile.source}: the profile names no gripper or wrench topic: nothing to segment from')
    if lerobot is not None:  # imported here for start-up time: reading a LeRobot folder brings PyAV and pyarrow
        from ros_robodata.dataset.lerobot_episode_source import open_episode
    with BagReader(path) if lerobot is None else open_episode(lerobot, images=False) as reader:
        _check_topics(path, segmenter, reader)
        for message in reader.messages(list(segmenter.topics)):
            segmenter.add_cdr(message.topic, message.data, partial(reader.decode, message), message.t_ns)
        segmenter.finish()
        if segmenter.joints_seen and segmenter.detector.gripper_samples == 0:
            raise BagError(f'{path}: the gripper joint {segmenter.gripper_joint!r} is in no message of '
                           f'{segmenter.topic_of(GRIPPER)}; its joints are {", ".join(segmenter.joints_seen[:12])}: '
                           'fix topics.gripper.joint in the profile')
        result = segmenter.result(start_ns=time_origin(reader, [spec.topic for _, spec in profile.all_topics()]))
        result.notes = list(reader.notes)
        return result


def _check_topics(path: str | Path, segmenter: Segmenter, reader: BagReader) -> None:
    """The gripper and wrench topics the segmenter is to read are in the bag (a command topic may be absent: the
    fingers alone are then read, with a warning)."""
    for role, flag in ((GRIPPER, '--no-gripper'), (WRENCH, '--no-wrench')):
        topic = segmenter.topic_of(role)
        if topic is None or topic in reader.topics:
            continue
        damage = f' ({"; ".join(reader.notes)})' if reader.damaged_files else ''
        other = WRENCH if role == GRIPPER else GRIPPER
        hint = f': {flag} segments from the {other} alone' if segmenter.topic_of(other) in reader.topics else ''
        raise BagError(f'{path}: the {role} topic {topic} is not in this bag{damage}; it has '
                       f'{_listed(reader.topics)}{hint}')


def _listed(topics: Any) -> str:
    names = sorted(topics)
    return ', '.join(names[:12]) + (f' and {len(names) - 12} more' if len(names) > 12 else '') if names else 'no topic'


def read_events_file(path: Path) -> EventsDoc:
    """An events.json checked against what `robodata segment` writes: events each with a kind and an integer t_ns,
    and timeline segments (when there) each with a name and integer start_ns/end_ns. RobodataError naming the
    file and what is wrong otherwise."""
    hint = 'run `robodata segment` on the episode to write it again'
    try:
        doc = untrusted.read_json(path)
    except RobodataError as err:
        raise RobodataError(f'{err}: {hint}') from None
    events = doc.get('events') if isinstance(doc, dict) else None
    if not isinstance(events, list):
        raise RobodataError(f'{path}: no list of events in it: {hint}')
    for n, event in enumerate(events):
        if not isinstance(event, dict) or not isinstance(event.get('kind'), str) or not _is_int(event.get('t_ns')):
            raise RobodataError(f'{path}: event {n} is not a mapping with a kind and an integer t_ns: {hint}')
    timeline = doc.get('timeline', [])
    if not isinstance(timeline, list) or not all(
            isinstance(s, dict) and isinstance(s.get('name'), str) and _is_int(s.get('start_ns'))
            and _is_int(s.get('end_ns')) for s in timeline):
        raise RobodataError(f'{path}: its timeline is not a list of segments with a name, start_ns and end_ns: {hint}')
    # What robodata writes, as far as checked above: its events and timeline; the other keys are read with .get and
    # their own checks where a reader needs them (a user may have edited the file).
    return cast(EventsDoc, doc)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def read_events(path: Path) -> list[EventJson]:
    """The events of an events.json (see read_events_file)."""
    return read_events_file(path)['events']


def write_events(path: Path, result: SegmentResult, extra: EventsExtra | None = None) -> None:
    """events.json, written whole or not at all (a crash leaves the previous file)."""
    doc: EventsDoc = {'format': 'ros_robodata.events/1', **(extra or {}), **result.to_json()}
    write_json(path, doc)


def segment_episode(dataset: Dataset, episode_id: str, profile: Profile, *, priors: Priors | None = None,
                    write: bool = True, **options: Any) -> SegmentResult:
    """A recorded episode's events, from the samples the live segmenter read of it; its events.json written
    (unless `write` is false)."""
    episode = dataset.episode(episode_id)
    since = None if episode.source else episode_input_start(episode.start_ns)  # imported: no live counterpart
    live, recorded = read_prior(dataset.episode_dir(episode_id)) if not episode.source else (False, None)
    if live:  # the strokes the live segmenter started from: the same events, to the nanosecond
        priors = recorded
    result = segment_bag(dataset.bag_dir(episode_id), profile, since_ns=since, priors=priors, **options)
    if live and result.calibration:
        result.calibration['prior_from'] = 'live'
    if write:
        write_events(dataset.episode_dir(episode_id) / EVENTS_FILE, result, {'episode_id': episode_id})
    return result


@dataclass
class SegmentRun:
    """What segmenting a set of episodes or bags gave: events per name, and what failed (and why)."""

    results: dict[str, SegmentResult] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    nothing_to_do: str = ''  # why nothing was segmented at all (a rig without gripper and wrench)
    priors: Priors | None = None  # the strokes pooled over the episodes, when there were several
    repeated: list[str] = field(default_factory=list)  # segmented again from the pooled strokes
    robots: dict[str, SegmentRun] = field(default_factory=dict)  # several robots: each one's run, by name


@dataclass(frozen=True)
class SegmentJob:
    """One episode or bag for a segmenting worker (pickled to a process or a Ray task): what to read, from when,
    with which strokes; everything a dataset knows is resolved here, so the worker needs no dataset."""

    name: str
    bag: Path
    profile: Profile
    use_gripper: bool
    use_wrench: bool
    since_ns: int | None = None
    priors: Priors | None = None
    live: bool = False  # the priors are the live segmenter's own: the same events, to the nanosecond
    lerobot: LeRobotRef | None = None

    @classmethod
    def of(cls, item: Item, profile: Profile, priors: Priors | None, *, use_gripper: bool, use_wrench: bool
           ) -> SegmentJob:
        episode, folder = item.episode, item.folder
        if episode is None or folder is None or episode.source:  # a bag, or imported: no live counterpart
            return cls(item.name, item.bag, profile, use_gripper, use_wrench, priors=priors, lerobot=item.lerobot)
        live, recorded = read_prior(folder)
        return cls(item.name, item.bag, profile, use_gripper, use_wrench, episode_input_start(episode.start_ns),
                   recorded if live else priors, live)

    def content_key(self) -> str | None:
        """What the result depends on: this job and the bag's files (see cluster/result_cache.py)."""
        bag = Path(self.bag)
        fingerprint = files_fingerprint([p for p in bag.rglob('*') if p.is_file()] if bag.is_dir() else [bag])
        return None if fingerprint is None else content_key('segment', self, fingerprint)


def _segment_one(job: SegmentJob) -> SegmentResult | str:
    """Worker: one episode's or bag's events, or why it cannot be segmented (one line). Writes nothing."""
    try:
        result = segment_bag(job.bag, job.profile, use_gripper=job.use_gripper, use_wrench=job.use_wrench,
                             since_ns=job.since_ns, priors=job.priors, lerobot=job.lerobot)
    except RobodataError as err:
        return ' '.join(str(err).split())
    if job.live and result.calibration:
        result.calibration['prior_from'] = 'live'
    return result


def segment_items(items: list[Item], profile: Profile, *, use_gripper: bool = True, use_wrench: bool = True,
                  progress: Callable[[Iterable[Any]], Iterator[Any]] | None = None, executor: Executor | None = None,
                  stats: ClusterStats | None = None) -> SegmentRun:
    """Segment each episode (writing its events.json, from this process only) or bag (in memory), in this process,
    local processes or on a Ray cluster (`executor`); a failure is kept, not raised."""
    run = SegmentRun()
    if profile.topics.gripper is None and profile.topics.wrench is None:
        run.nothing_to_do = (f'the profile ({profile.source}) names no gripper or wrench topic (a rig without a '
                             'gripper or a wrist sensor)')
        return run
    if not use_gripper and not use_wrench:
        raise RobodataError('segmenting needs the gripper or the wrench: both were left out')
    executor = executor or Executor()
    cache = executor.result_cache()
    stats = stats if stats is not None else ClusterStats()

    def segmented(chosen: list[Item], priors: Priors | None, show: bool) -> dict[str, SegmentResult | JobFailure | str]:
        jobs = [SegmentJob.of(item, profile, priors, use_gripper=use_gripper, use_wrench=use_wrench)
                for item in chosen]
        if executor.ray is not None:  # a Ray worker's working directory is not ours
            jobs = [replace(job, bag=Path(job.bag).absolute(),
                            lerobot=replace(job.lerobot, root=job.lerobot.root.absolute()) if job.lerobot else None)
                    for job in jobs]
        ran = map_jobs(_segment_one, jobs, executor, progress=progress if show else None, stats=stats, cache=cache,
                       key=SegmentJob.content_key)
        return {job.name: result for job, result in zip(jobs, ran, strict=True)}

    by_name = {item.name: item for item in items}
    for name, result in segmented(items, None, True).items():
        if isinstance(result, SegmentResult):
            run.results[name] = result
        else:
            run.failed[name] = result.reason if isinstance(result, JobFailure) else result
    # Pooled over what was segmented: where the gripper rests open and closes on nothing, for the episodes that
    # judged a stroke before their own rests said it, or never saw what others did.
    run.priors = pool_priors((r.calibration for r in run.results.values()), DATASET) if len(run.results) > 1 else None
    again = [by_name[name] for name, result in run.results.items()
             if run.priors is not None and needs_prior(result.calibration, run.priors)]
    for name, result in segmented(again, run.priors, False).items() if again else ():
        if isinstance(result, SegmentResult):
            run.results[name] = result
            run.repeated.append(name)
        else:  # read once already: a bag that changed under us
            run.failed[name] = result.reason if isinstance(result, JobFailure) else result
            del run.results[name]
    run.results = {name: part_way_in_a_full_dataset(result, run.priors) for name, result in run.results.items()}
    for name, result in run.results.items():
        item = by_name[name]
        if item.dataset is not None:
            write_events(item.dataset.episode_dir(name) / EVENTS_FILE, result, {'episode_id': name})
    return run


def segment_groups(groups: tuple[RobotGroup, ...], *, use_gripper: bool = True, use_wrench: bool = True,
                   progress: Callable[[Iterable[Any]], Iterator[Any]] | None = None, executor: Executor | None = None,
                   stats: ClusterStats | None = None) -> SegmentRun:
    """segment_items per robot (each group read with its profile, its strokes pooled over its own episodes only: the
    same events as a run over that robot's episodes alone), summed up in one run keeping each robot's in `robots`
    (a robot whose profile names no gripper or wrench says so there; `nothing_to_do` only when no robot has any);
    one group is segment_items itself."""
    if len(groups) == 1:
        return segment_items(groups[0].items, groups[0].profile, use_gripper=use_gripper, use_wrench=use_wrench,
                             progress=progress, executor=executor, stats=stats)
    executor = executor or Executor()
    stats = stats if stats is not None else ClusterStats()
    runs = {g.name: segment_items(g.items, g.profile, use_gripper=use_gripper, use_wrench=use_wrench,
                                  progress=progress, executor=executor, stats=stats) for g in groups}
    order = {item.name: n for n, item in enumerate(item for g in groups for item in g.items)}
    merged = SegmentRun(robots=runs)
    merged.results = dict(sorted(((n, r) for run in runs.values() for n, r in run.results.items()),
                                 key=lambda kv: order[kv[0]]))
    merged.failed = {n: why for run in runs.values() for n, why in run.failed.items()}
    merged.repeated = [n for run in runs.values() for n in run.repeated]
    if all(run.nothing_to_do for run in runs.values()):
        merged.nothing_to_do = '; '.join(f'{robot}: {run.nothing_to_do}' for robot, run in runs.items())
    return merged


def segment(target: TargetLike, *, profile: Profile | str | None = None, filters: Filters | None = None,
            use_gripper: bool = True, use_wrench: bool = True,
            progress: Callable[[Iterable[Any]], Iterator[Any]] | None = None) -> SegmentRun:
    """Grasp/contact/release events of a dataset's episodes (events.json written into each), one episode, a bag
    or a folder of bags (read, nothing written). `profile`: the dataset's own unless given (each episode's own in a
    dataset of several robots, segment_groups; required for bags)."""
    work = prepare(target, profile, filters, in_place=True)
    return segment_groups(work.robots, use_gripper=use_gripper, use_wrench=use_wrench, progress=progress)
