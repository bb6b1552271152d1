"""What a command was pointed at: a dataset, an episode, a bag or a folder of bags, and the episodes in it.

Every command names its input the same way and answers a wrong one in the same words (dataset / episode /
bag), with the next step. Analysis commands work on `Item`s: an episode of a dataset (results are written
beside it) or a bag on its own (results are printed, nothing is written next to somebody else's recording).

Why one module: resolving the target, picking its episodes (and their profiles: in a dataset of several robots the
picked episodes are grouped by robot, each group with its own profile, dataset/embodiments.py) and saying why none
were picked share Filters and their wording; apart, the commands' answers to the same input would drift.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Union

from ros_robodata.bag.reader import BagReader
from ros_robodata.dataset.catalog import CatalogRow
from ros_robodata.dataset.dataset import Dataset, is_dataset
from ros_robodata.dataset.embodiments import embodiment_of, embodiments, holds_several, profile_of
from ros_robodata.dataset.episode import Episode
from ros_robodata.dataset.episode_query import EpisodeQuery, compile_query
from ros_robodata.dataset.importers.import_common import episode_id_for
from ros_robodata.dataset.lerobot_ref import LeRobotRef, episode_name
from ros_robodata.dataset.sources import IMPORT_FIRST, Recording, find_recordings, recording_at
from ros_robodata.errors import DatasetError, RobodataError
from ros_robodata.profile import Profile, load_profile
from ros_robodata.vocabulary import OUTCOMES, STATUSES, check_choice

KINDS = ('dataset', 'episode', 'bag', 'bags', 'lerobot')
# left out unless asked for: thrown away by the operator, or deleted by `robodata retire` (nothing left to work on)
HIDDEN = ('discarded', 'retired')


@dataclass(frozen=True)
class Target:
    """A path the user named, and what it is, so every command answers a wrong one in the same words: kind is
    'dataset', 'episode', 'bag', 'bags' (a folder of bags) or 'lerobot' (a LeRobot dataset read in place, for the
    analyses that can); `recordings` holds the bag(s) for 'bag' and 'bags', the LeRobot folder for 'lerobot'.

    Args:
        kind: 'dataset', 'episode', 'bag', 'bags' or 'lerobot'.
        path: the path as the user named it.
        dataset: the opened dataset, for a dataset or one of its episodes.
        episode_id: the episode, for kind 'episode'.
        recordings: the bag(s) found, for kinds 'bag' and 'bags'.
    """

    kind: str
    path: Path
    dataset: Dataset | None = None
    episode_id: str | None = None
    recordings: tuple[Recording, ...] = ()

    @property
    def what(self) -> str:
        """What it is in words ('a dataset', 'a folder of bags'), for messages."""
        return {'dataset': 'a dataset', 'episode': 'an episode', 'bag': 'a bag', 'bags': 'a folder of bags',
                'lerobot': 'a LeRobot dataset'}[self.kind]


@dataclass(frozen=True)
class Item:
    """One episode (of a dataset), one bag (on its own) or one episode of a LeRobot folder read in place (`lerobot`
    says where; `bag` is then the folder, `episode` what its import would record) for a command to work on."""

    name: str
    bag: Path
    episode: Episode | None = None
    dataset: Dataset | None = None
    lerobot: LeRobotRef | None = None

    @property
    def task(self) -> str:
        return self.episode.task if self.episode is not None else ''

    @property
    def outcome(self) -> str | None:
        """The operator's label; None for a bag on its own, which was never labelled."""
        return self.episode.outcome if self.episode is not None else None

    @property
    def folder(self) -> Path | None:
        """Where results are written (the episode's folder); None for a bag on its own."""
        return self.dataset.episode_dir(self.name) if self.dataset is not None else None


def resolve(path_text: str | os.PathLike[str], *, in_place: bool = False) -> Target:
    """Tell what `path_text` is (a dataset, an episode, a bag or a folder of bags), as every command does.

    Args:
        path_text: the path the user named.
        in_place: a LeRobot dataset is a target of its own ('lerobot': score, segment and report read it in
            place); otherwise it is to be imported first.

    Raises:
        DatasetError: an episode folder outside a dataset or without episode.yaml, or a dataset that cannot be
            opened.
        RobodataError: nothing there, or not a dataset, an episode or a bag (saying what to do instead).
    """
    path = Path(path_text)
    if not path.exists():
        raise RobodataError(f'{path}: no such file or directory')
    if path.is_dir() and path.resolve() == Path(path.resolve().anchor):  # searching / would walk /proc and /sys
        raise RobodataError(f'{path}: the root of the file system, not a dataset, an episode or a bag: name the '
                            'folder that holds them')
    if path.is_dir() and is_dataset(path):
        return Target('dataset', path, Dataset.open(path))
    if path.is_dir() and path.name == 'episodes' and is_dataset(path.parent):  # DS/episodes: every episode of DS
        return Target('dataset', path.parent, Dataset.open(path.parent))
    for name in ('dataset.yaml', 'episode.yaml', 'metadata.yaml'):
        if os.path.lexists(path / name) and not (path / name).is_file():
            raise RobodataError(f'{path / name}: not a file (a folder, or a symlink to nothing): move it away, then '
                                '`robodata repair` or `robodata catalog rebuild` can restore what it held')
    if path.is_dir() and (path / 'episode.yaml').is_file():
        root = path.resolve().parent.parent
        if not is_dataset(root):
            raise DatasetError(f'{path}: an episode folder not inside a dataset (no {root}/dataset.yaml): run '
                               f'`robodata import {path / "bag"} --dataset D` to make it an episode of one')
        return Target('episode', path, Dataset.open(root), path.resolve().name)
    dataset_root = path.resolve().parent.parent
    if path.is_dir() and path.resolve().parent.name == 'episodes' and is_dataset(dataset_root):
        raise DatasetError(f'{path}: an episode folder without episode.yaml (a bag copied in by hand, or an import '
                           f'that was stopped): run `robodata repair {dataset_root}` to register it')
    here = recording_at(path)
    if here is not None:
        if here.kind == 'lerobot' and in_place:
            return Target('lerobot', path, recordings=(here,))
        if here.kind in IMPORT_FIRST:
            made = 'episodes' if here.kind == 'lerobot' else 'an episode'
            raise RobodataError(f'{path}: {IMPORT_FIRST[here.kind]}, not a rosbag2 bag: run `robodata import {path} '
                                f'--dataset D` to make it {made} first')
        return Target('bag', path, recordings=(here,))
    if path.is_file():
        raise RobodataError(f'{path}: not a dataset, an episode or a bag (a bag is a folder with metadata.yaml, '
                            'or a .mcap or .db3 file)')
    try:
        found = tuple(find_recordings([path], videos=False))
    except RobodataError:
        found = ()
    if not found:
        raise RobodataError(f'{path}: not a dataset, an episode or a bag: no dataset.yaml, episode.yaml, '
                            'metadata.yaml, .mcap or .db3 file in it or below it')
    return Target('bags', path, recordings=found)


def need(target: Target, *kinds: str, hint: str = '') -> Target:
    """The target if it is one of `kinds`, else one line saying what it is and what would do."""
    if target.kind in kinds:
        return target
    wanted = ' or '.join(Target(k, target.path).what for k in kinds)
    owner = target.path.resolve().parent
    if target.kind == 'bag' and (owner / 'episode.yaml').is_file() and not hint:
        hint = f'it is the bag of episode {owner.name}: name the episode folder {target.path.parent} instead'
    elif target.kind in ('bag', 'bags', 'lerobot') and 'episode' in kinds and not hint:
        hint = f'run `robodata import {target.path} --dataset D` first'
    raise RobodataError(f'{target.path}: {target.what}, not {wanted}' + (f': {hint}' if hint else ''))


def profile_for(target: Target, profile_path: str | os.PathLike[str] | None) -> Profile:
    """The robot profile to read the target with: the one given, else the dataset's (the episode's: embodiments.py)."""
    if profile_path:
        return load_profile(profile_path)
    if target.episode_id is not None and target.dataset is not None and holds_several(target.dataset):
        return profile_of(target.dataset, target.dataset.episode(target.episode_id))
    if target.dataset is not None:
        return target.dataset.profile
    if target.kind == 'lerobot':
        from ros_robodata.dataset.lerobot_episode_source import lerobot_profile  # start-up time: PyAV, pyarrow

        return lerobot_profile(target.path)
    them = 'it' if target.kind == 'bag' else 'them'
    raise RobodataError(f'{target.path}: {target.what}, not an episode of a dataset: run `robodata import '
                        f'{target.path} --dataset D`, or pass --profile to work on {them} alone')


@dataclass(frozen=True)
class Filters:
    """Which episodes of a dataset a command works on. Discarded episodes are left out unless status (or the
    `where` query) names them; `since_ns` keeps episodes (or bags) whose first message is at or after it.

    Args:
        task: only episodes of this task, e.g. pick_cube.
        outcome: only episodes with this outcome, one of OUTCOMES.
        status: only episodes with this status, one of STATUSES.
        since_ns: only episodes (or bags) recorded at or after this time (ns since the epoch).
        where: only episodes this query picks, e.g. 'score < 0.8 and outcome = success' (the language is in
            episode_query.py); compiled here, so a query that does not parse fails before any work.

    Raises:
        RobodataError: an outcome or status that is not one of the known ones, or a `where` that is not a query.
    """

    task: str | None = None
    outcome: str | None = None
    status: str | None = None
    since_ns: int | None = None
    where: str | None = None

    def __post_init__(self) -> None:
        if self.outcome is not None:
            check_choice('--outcome', self.outcome, OUTCOMES)
        if self.status is not None:
            check_choice('--status', self.status, STATUSES)
        if self.where is not None:
            compile_query(self.where)

    @property
    def query(self) -> EpisodeQuery | None:
        """The `where` query compiled (once: compile_query keeps what it compiled), or None without one."""
        return None if self.where is None else compile_query(self.where)

    @property
    def shows_discarded(self) -> bool:
        """Discarded and retired episodes (HIDDEN) are not hidden first: --status discarded, or a query that names
        them."""
        query = self.query
        return self.status == 'discarded' or (query is not None and query.names_discarded)

    @property
    def by_label(self) -> bool:
        """Asks for what only an episode of a dataset has (a task, an outcome, a status, a query on the catalog)."""
        return any(v is not None for v in (self.task, self.outcome, self.status, self.where))


def select(target: Target, filters: Filters | None = None, *, need_bag: bool = True,
           profile: Profile | None = None) -> list[Item]:
    """The episodes (or bags) a command works on, in order: the one named, or those of a dataset or folder that
    pass `filters` (episodes without a bag are left out while `need_bag`); every episode of a LeRobot folder, read
    with `profile`. What every command uses, so every command picks the same episodes."""
    filters = filters or Filters()
    if target.kind == 'lerobot':
        if filters.by_label or filters.since_ns is not None:
            raise RobodataError(f'{target.path}: --task, --outcome, --status, --where and --since pick episodes of a '
                                f'dataset; {target.what} read in place has none (run `robodata import {target.path} '
                                '--dataset D` to pick among its episodes)')
        from ros_robodata.dataset.lerobot_episode_source import in_place_episodes  # start-up time: PyAV, pyarrow

        return [Item(episode_name(ref.index), target.path, e, lerobot=ref)
                for e, ref in in_place_episodes(target.path, profile)]
    if target.kind in ('bag', 'bags'):
        if filters.by_label:
            options = '--task, --outcome, --status and --where' if filters.where is not None else \
                '--task, --outcome and --status'
            raise RobodataError(f'{target.path}: {options} pick episodes of a dataset; {target.what} has none')
        names: set[str] = set()
        out = []
        root = target.path if target.kind == 'bags' else target.path.parent.parent
        chosen = [r for r in target.recordings
                  if filters.since_ns is None or _starts_since(r.path, filters.since_ns)]
        for recording, name in zip(chosen, _bag_names(chosen, root), strict=True):
            out.append(Item(_unique(name, names), recording.path))
        return out
    dataset = target.dataset
    assert dataset is not None
    if target.kind == 'episode':
        assert target.episode_id is not None
        return [Item(target.episode_id, dataset.bag_dir(target.episode_id), dataset.episode(target.episode_id),
                     dataset)]
    picked: list[Item] = []
    for row in select_rows(dataset, filters):
        if need_bag and not dataset.bag_files(row.id):
            continue
        picked.append(Item(row.id, dataset.bag_dir(row.id), dataset.episode(row.id), dataset))
    return picked


def select_rows(dataset: Dataset, filters: Filters | None = None) -> list[CatalogRow]:
    """The catalog rows `filters` pick (the rule select() applies, from the catalog alone: fast for a listing).

    Raises:
        DatasetError: the catalog cannot be read, or has no column the `where` query names.
    """
    filters = filters or Filters()
    rows = dataset.list(task=filters.task, status=filters.status, outcome=filters.outcome, where=filters.query)
    return [row for row in rows
            if (row.status not in HIDDEN or filters.shows_discarded or filters.status == row.status)
            and (filters.since_ns is None or (row.start_ns is not None and row.start_ns >= filters.since_ns))]


def why_none(target: Target, filters: Filters | None = None, *, need_bag: bool = True) -> str:
    """Why select() picked nothing, in a user's words: the filter that matched no episode, with what the dataset
    holds instead (a task misspelled is the usual cause), or that there is nothing to pick from at all."""
    filters = filters or Filters()
    if target.kind == 'lerobot':
        return f'{target.what} whose data files hold no rows'
    if target.kind in ('bag', 'bags'):
        if filters.since_ns is not None:
            return f'no bag starts at or after {_when(filters.since_ns)}'
        return f'{target.what} holds no bag'
    dataset = target.dataset
    if dataset is None or target.kind == 'episode':
        return 'the episode has no bag'
    rows = dataset.list()
    if not rows:
        return 'the dataset has no episodes yet'
    for name, value in (('task', filters.task), ('outcome', filters.outcome), ('status', filters.status)):
        if value is not None and not any(getattr(row, name) == value for row in rows):
            present = sorted({getattr(row, name) or '(none)' for row in rows})
            return f'no episode has {name} {value!r} (here: {", ".join(present)})'
    if not filters.shows_discarded and all(row.status == 'discarded' for row in rows):
        return f'all {len(rows)} episodes are discarded (status discarded picks them)'
    if filters.where is not None:
        matched = dataset.list(where=filters.query)
        if not matched:
            discarded = sum(row.status == 'discarded' for row in rows)
            return (f'no episode matches --where {filters.where!r} (the dataset has {len(rows)} episode(s)'
                    + (f', {discarded} of them discarded)' if discarded else ')'))
        if not filters.shows_discarded and all(row.status == 'discarded' for row in matched):
            return (f'the {len(matched)} episode(s) --where {filters.where!r} matches are all discarded (status = '
                    'discarded in the query, or --status discarded, picks them)')
    if filters.since_ns is not None and not any((row.start_ns or 0) >= filters.since_ns for row in rows):
        latest = max((row.start_ns for row in rows if row.start_ns is not None), default=None)
        return (f'no episode starts at or after {_when(filters.since_ns)}'
                + (f' (the latest started {_when(latest)})' if latest is not None else ''))
    picked = select_rows(dataset, filters)
    if picked and need_bag:
        return f'{len(picked)} episode(s) match but none has a bag'
    asked = [f'{name} {value!r}' for name, value in (('task', filters.task), ('outcome', filters.outcome),
                                                       ('status', filters.status)) if value is not None]
    if filters.since_ns is not None:
        asked.append(f'since {_when(filters.since_ns)}')
    if filters.where is not None:
        return (f'no episode has {" and ".join(asked)} and matches --where {filters.where!r}' if asked else
                f'no episode matches --where {filters.where!r} (the dataset has {len(rows)} episode(s))')
    return f'no episode has {" and ".join(asked)} together' if asked else 'no episode to work on'


def _when(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).strftime('%Y-%m-%d %H:%M UTC')


def discarded_count(target: Target) -> int:
    """How many discarded episodes the dataset holds (a listing says it left them out)."""
    if target.kind != 'dataset' or target.dataset is None:
        return 0
    return len(target.dataset.list(status='discarded'))


TargetLike = Union[Dataset, Target, str, 'os.PathLike[str]']


@dataclass(frozen=True)
class RobotGroup:
    """The picked episodes of one robot and the profile they are read with: a command on a dataset of several robots
    runs per group, so what compares episodes with each other (consistency, pooled strokes, diversity) never
    compares two robots.

    Args:
        name: the embodiment's name (dataset.yaml `embodiments`), or the profile's robot name.
        profile: the profile the group's episodes are read with.
        items: the group's episodes, in the order they were picked.
    """

    name: str
    profile: Profile
    items: list[Item]


@dataclass(frozen=True)
class Work:
    """What an analysis runs over: the target, the profile to read it with, and the chosen episodes or bags.

    Args:
        target: what the user named.
        profile: the one profile of the run; for a run over several robots (`mixed`) the dataset's first, for what
            is dataset-wide only: each episode is read with its group's.
        items: the chosen episodes or bags.
        groups: the items by robot, each with its profile (one group unless `mixed`); empty: one group of all.
    """

    target: Target
    profile: Profile
    items: list[Item]
    groups: tuple[RobotGroup, ...] = ()

    @property
    def robots(self) -> tuple[RobotGroup, ...]:
        """The groups to run, one per robot: at least one (all items with `profile`)."""
        return self.groups or (RobotGroup(self.profile.robot.name, self.profile, self.items),)

    @property
    def mixed(self) -> bool:
        """The picked episodes are of several robots, each group read with its own profile."""
        return len(self.robots) > 1


def robot_groups(dataset: Dataset, items: list[Item]) -> tuple[RobotGroup, ...]:
    """`items` of `dataset` grouped by the embodiment each episode was recorded with, in the order dataset.yaml lists
    them (an item without an episode goes with the first).

    Raises:
        DatasetError: as embodiments() does (a profile file missing or edited).
    """
    known = embodiments(dataset)
    picked: dict[str, list[Item]] = {}
    for item in items:
        name = embodiment_of(dataset, item.episode, known).name if item.episode is not None else known[0].name
        picked.setdefault(name, []).append(item)
    return tuple(RobotGroup(e.name, e.profile, picked[e.name]) for e in known if e.name in picked)


def as_target(target: TargetLike, *, in_place: bool = False) -> Target:
    """A Target from a Dataset, a Target, or a path (resolved as the command line resolves it; `in_place`: a
    LeRobot folder is read where it lies)."""
    if isinstance(target, Target):
        return target
    if isinstance(target, Dataset):
        return Target('dataset', target.root, target)
    return resolve(target, in_place=in_place)


def prepare(target: TargetLike, profile: Profile | str | os.PathLike[str] | None = None,
            filters: Filters | None = None, *, need_bag: bool = True, pick: bool = True, in_place: bool = False
            ) -> Work:
    """The target resolved, its profile (given, or the dataset's own; for a LeRobot folder the one `robodata
    import` would write) and the episodes `filters` pick; with `pick` False no episode is picked (a caller that
    reads the catalog itself: no episode.yaml is read). `in_place`: a LeRobot folder is a target (score, segment
    and report read it where it lies), not an error asking for an import. In a dataset of several robots without a
    given profile, the picked episodes are grouped by robot (`Work.groups`), each group with its own profile."""
    resolved = as_target(target, in_place=in_place)
    chosen_profile = profile if isinstance(profile, Profile) else profile_for(resolved, profile)
    if resolved.kind == 'lerobot':
        from ros_robodata.dataset.lerobot_episode_source import check_lerobot_profile  # start-up time: PyAV, pyarrow

        check_lerobot_profile(resolved.path, chosen_profile)
    items = select(resolved, filters, need_bag=need_bag, profile=chosen_profile) if pick else []
    groups: tuple[RobotGroup, ...] = ()
    if profile is None and resolved.dataset is not None and items and holds_several(resolved.dataset):
        groups = robot_groups(resolved.dataset, items)
        if len(groups) == 1:
            chosen_profile = groups[0].profile
    return Work(resolved, chosen_profile, items, groups)


def _starts_since(path: Path, since_ns: int) -> bool:
    with BagReader(path) as reader:
        return reader.start_ns is not None and reader.start_ns >= since_ns


GENERIC_BAG_NAMES = frozenset({'bag', 'rosbag', 'rosbag2', 'recording', 'data'})


def _bag_names(recordings: list[Recording], root: Path) -> list[str]:
    """A name per bag that tells them apart: its own (folder or file) name, or, where that is generic (`bag`) or
    shared with another bag of the set (run_a/bag.mcap, run_b/bag.mcap), its folders below `root` joined by '-'
    (run_a, run_b): what the user sees in the folder listing, not bag, bag-2."""
    own = [recording.name for recording in recordings]
    counts = Counter(own)
    out = []
    for recording, name in zip(recordings, own, strict=True):
        if name in GENERIC_BAG_NAMES or counts[name] > 1:
            try:
                parts = [*recording.path.resolve().relative_to(root.resolve()).parent.parts]
            except ValueError:
                parts = []
            if name not in GENERIC_BAG_NAMES or not parts:
                parts.append(name)
            name = '-'.join(parts) or name
        out.append(_safe_name(name))
    return out


def _safe_name(name: str) -> str:
    try:
        return episode_id_for(name)
    except RobodataError:
        return 'bag'


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f'{name}-{n}'
    taken.add(candidate)
    return candidate
