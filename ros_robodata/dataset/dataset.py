"""A dataset on disk: dataset.yaml, catalog.sqlite, audit.jsonl and one folder per episode.

    DATASET/
      dataset.yaml            schema version, name, robot profile snapshot, created_by
      catalog.sqlite          one row per episode (WAL)
      audit.jsonl             who changed what, when
      episodes/<id>/bag/      the rosbag2 bag, never rewritten
      episodes/<id>/episode.yaml

Why one module: the methods of Dataset keep episode.yaml, its catalog row and its audit line changing together (all
or none), and much of its length is their Args and Raises for the front door; what they build on has modules of its
own (catalog.py, episode.py, audit.py, sidecars.py).
"""

from __future__ import annotations

import builtins  # Dataset.list() shadows the name `list` in the class's annotations
import os
import time
from pathlib import Path
from typing import Any

from ros_robodata.dataset.audit import append_audit, check_audit_writable
from ros_robodata.dataset.catalog import SCHEMA_VERSION, Catalog, CatalogRow
from ros_robodata.dataset.episode import Episode, check_episode_id, read_episode, write_episode
from ros_robodata.dataset.episode_query import EpisodeQuery, compile_query
from ros_robodata.dataset.participants import read_participants
from ros_robodata.dataset.sidecars import (
    restore_releases,
    restore_retired,
    restore_review_queue,
    restore_reviewed_outcome,
    restore_scores,
)
from ros_robodata.errors import DatasetError
from ros_robodata.files import file_sha256, read_yaml, write_atomic, write_yaml
from ros_robodata.profile import Profile, profile_from_dict
from ros_robodata.version import __version__
from ros_robodata.vocabulary import OUTCOMES, STATUSES

DATASET_FILE = 'dataset.yaml'
UNREADABLE = 'episode.yaml unreadable'  # how skipped_folders names an episode it could not read


def _check_fields(info: dict[str, Any], file: Path) -> None:
    """dataset.yaml's fields of the types robodata writes (a hand edit may leave anything): one line naming the key
    and what it must be."""
    for key in ('name', 'created', 'created_by'):
        if key in info and not isinstance(info[key], (str, type(None))) and not (key == 'created' and
                                                                                  hasattr(info[key], 'isoformat')):
            raise DatasetError(f'{file}: {key}: expected text, got {info[key]!r:.60}')
    snapshot = info.get('robot_profile')
    if snapshot is None:
        return
    if not isinstance(snapshot, dict) or not isinstance(snapshot.get('content', {}), (dict, type(None))):
        raise DatasetError(f'{file}: robot_profile: expected the snapshot robodata writes (a mapping with source, '
                           f'sha256 and content), got {snapshot!r:.60}: remove the key and pass --profile to commands')


def _one_line_value(field: str, value: str) -> str:
    """A task or operator as a catalog column and a --where value hold it: text on one line, not empty."""
    if not isinstance(value, str) or not value.strip() or '\n' in value or '\r' in value:
        raise DatasetError(f'{field} {value!r:.60}: expected text on one line, not empty')
    return value.strip()


def is_dataset(path: Path) -> bool:
    return (Path(path) / DATASET_FILE).is_file()


class Dataset:
    """A folder of recorded episodes with their catalog and audit log, the unit every command works on.

    Open with Dataset.open(path) or make one with Dataset.create(path, ...).
    """

    def __init__(self, root: Path, info: dict[str, Any]) -> None:
        """The dataset at `root` as dataset.yaml describes it; nothing is read or checked (use open() or create()).

        Args:
            root: the dataset folder.
            info: the content of its dataset.yaml (schema version, name, robot profile snapshot).
        """
        self.root = root
        self.info = info
        self.catalog = Catalog(root / 'catalog.sqlite')
        self.audit_path = root / 'audit.jsonl'
        self.episodes_dir = root / 'episodes'

    # -- creating and opening -------------------------------------------------------------------

    @classmethod
    def create(cls, path: str | os.PathLike[str], *, name: str | None = None, profile: Any = None) -> Dataset:
        """Make a new, empty dataset; refuses a folder that already holds one (or anything else).

        Args:
            path: the folder to make it in (absent or empty).
            name: the dataset's name; None: the folder's name.
            profile: the robot profile its episodes are recorded with, kept as a snapshot; None: set it later.

        Raises:
            DatasetError: `path` holds a dataset, is a file or a folder that is not empty, lies inside another
                dataset, or the catalog cannot be made there.
            RobodataError: a file of the dataset cannot be written (disk full, no permission).
        """
        root = Path(path)
        if is_dataset(root):
            raise DatasetError(f'{root}: a dataset exists here already')
        if root.exists() and not root.is_dir():
            raise DatasetError(f'{root}: exists and is not a folder')
        if root.exists() and any(root.iterdir()):
            raise DatasetError(f'{root}: folder is not empty and is not a dataset')
        inside = next((parent for parent in root.resolve().parents if is_dataset(parent)), None)
        if inside is not None:  # its episodes would be files of the other dataset, which verify and repair then trip on
            raise DatasetError(f'{root}: inside the dataset {inside}: make a dataset beside it, not in it')
        info = {
            'schema_version': SCHEMA_VERSION,
            'name': name or root.resolve().name,
            'created': time.strftime('%Y-%m-%dT%H:%M:%S%z'),
            'created_by': f'ros_robodata {__version__}',
            'robot_profile': None if profile is None else {
                'source': str(getattr(profile, 'source', '')),
                'sha256': profile.sha256,
                'content': profile.to_dict(),
            },
        }
        (root / 'episodes').mkdir(parents=True, exist_ok=True)
        dataset = cls(root, info)
        dataset.catalog.create()
        write_yaml(root / DATASET_FILE, info, durable=True)  # written last: a dataset.yaml means the layout is whole
        append_audit(dataset.audit_path, 'create_dataset', None, name=info['name'])
        return dataset

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, check_catalog: bool = True) -> Dataset:
        """Open a dataset made by Dataset.create (or `robodata record`/`import`), its description checked.

        Args:
            path: the dataset folder (the one holding dataset.yaml).
            check_catalog: check catalog.sqlite now; False lets a broken catalog be rebuilt.

        Raises:
            DatasetError: no dataset.yaml, one robodata did not write or a newer schema, or a broken catalog.
        """
        root = Path(path)
        file = root / DATASET_FILE
        if not file.is_file():
            raise DatasetError(f'{root}: not a dataset (no {DATASET_FILE})')
        info = read_yaml(file, DatasetError)
        if not isinstance(info, dict) or 'schema_version' not in info:
            raise DatasetError(f'{file}: not a ros_robodata dataset description (no schema_version)')
        try:
            schema = int(info['schema_version'])
        except (TypeError, ValueError):
            raise DatasetError(f'{file}: schema_version must be an integer, got {info["schema_version"]!r}') from None
        if schema > SCHEMA_VERSION:
            raise DatasetError(f'{file}: schema {info["schema_version"]} is newer than this ros_robodata')
        _check_fields(info, file)
        dataset = cls(root, info)
        catalog = dataset.catalog.path
        if (catalog.is_symlink() and not catalog.exists()) or (catalog.exists() and not catalog.is_file()):
            raise DatasetError(f'{catalog}: not a file (a folder, or a symlink to nothing): move it away and run '
                               '`robodata catalog rebuild`')
        if not catalog.exists():
            dataset.catalog.create()
            dataset.rebuild_catalog()
        if check_catalog:
            dataset.catalog.check()
        return dataset

    @classmethod
    def open_or_create(cls, path: str | Path, *, profile: Any = None) -> Dataset:
        """The dataset at `path`, made when absent: where a recording session or an import writes.

        Args:
            path: the dataset folder.
            profile: the robot profile a new dataset gets; an existing one keeps its own.

        Raises:
            DatasetError: `path` is not a dataset and cannot become one, or its description or catalog is broken.
        """
        return cls.open(path) if is_dataset(Path(path)) else cls.create(path, profile=profile)

    @property
    def name(self) -> str:
        """The dataset's name from dataset.yaml (its folder's name when it has none)."""
        return str(self.info.get('name', self.root.name))

    @property
    def profile(self) -> Profile:
        """The robot profile the dataset was recorded with (its snapshot in dataset.yaml).

        Raises:
            DatasetError: dataset.yaml holds no robot profile.
            ProfileError: the snapshot is not a valid profile (edited by hand).
        """
        snapshot = (self.info.get('robot_profile') or {}).get('content')
        if not snapshot:
            raise DatasetError(f'{self.root}: dataset.yaml holds no robot profile; pass --profile')
        return profile_from_dict(snapshot, source=f'{self.root}/{DATASET_FILE}')

    @property
    def has_profile(self) -> bool:
        """Whether dataset.yaml holds a robot profile (a dataset made by an import may have none yet)."""
        return bool((self.info.get('robot_profile') or {}).get('content'))

    def set_profile(self, profile: Any, who: str | None = None) -> None:
        """Give a dataset made without a robot profile its snapshot (never replaces one it has).

        Args:
            profile: the robot profile its episodes were recorded with.
            who: who asked, for the audit log; None: the current user.

        Raises:
            DatasetError: the dataset has a robot profile already.
            RobodataError: a file of the dataset cannot be written (disk full, no permission).
        """
        if self.info.get('robot_profile'):
            raise DatasetError(f'{self.root}: has a robot profile already')
        self.info['robot_profile'] = {'source': str(getattr(profile, 'source', '')), 'sha256': profile.sha256,
                                      'content': profile.to_dict()}
        write_yaml(self.root / DATASET_FILE, self.info, durable=True)
        append_audit(self.audit_path, 'set_profile', None, who, sha256=profile.sha256)

    # -- episodes -------------------------------------------------------------------------------

    def episode_dir(self, episode_id: str) -> Path:
        """The episode's folder (episodes/<id>), where its bag, episode.yaml and results are.

        Args:
            episode_id: the episode.

        Raises:
            DatasetError: `episode_id` is not a valid id (it becomes a folder name, never a path).
        """
        return self.episodes_dir / check_episode_id(episode_id)

    def bag_dir(self, episode_id: str) -> Path:
        """The episode's bag folder (episodes/<id>/bag), never rewritten once recorded.

        Args:
            episode_id: the episode.

        Raises:
            DatasetError: `episode_id` is not a valid id.
        """
        return self.episode_dir(episode_id) / 'bag'

    def new_episode_id(self, now: float | None = None) -> str:
        """A readable, sortable id (UTC start time); reserves its folder so two recorders never share one.

        Args:
            now: the episode's start (s since the epoch); None: now.

        Raises:
            DatasetError: no free id is left for that second.
        """
        return self.reserve_episode_id(time.strftime('%Y%m%d-%H%M%S', time.gmtime(time.time() if now is None else now)))

    def reserve_episode_id(self, wanted: str) -> str:
        """`wanted`, or wanted-2, wanted-3 ... when an episode (or a reserved folder) has that name; the folder is
        created empty, so two recorders or importers never take the same id.

        Args:
            wanted: the id asked for (a recording's name, a start time).

        Raises:
            DatasetError: `wanted` is not a valid id, or no free id is left.
        """
        check_episode_id(wanted)
        self.episodes_dir.mkdir(parents=True, exist_ok=True)
        for n in range(1, 10_000):
            candidate = wanted if n == 1 else f'{wanted}-{n}'
            try:
                (self.episodes_dir / candidate).mkdir()
            except FileExistsError:
                continue
            return candidate
        raise DatasetError(f'{self.episodes_dir}: cannot allocate an episode id for {wanted}')

    def add_episode(self, episode: Episode, who: str | None = None) -> Episode:
        """Register a new episode (its folder may already hold the bag): episode.yaml, catalog row, audit line.

        Args:
            episode: the episode's description.
            who: who recorded or imported it, for the audit log; None: the current user.

        Raises:
            DatasetError: the episode exists already, its id is invalid, or the catalog cannot be written.
            RobodataError: a file of the dataset cannot be written (disk full, no permission).
        """
        self.episode_dir(episode.id).mkdir(parents=True, exist_ok=True)
        if (self.episode_dir(episode.id) / 'episode.yaml').exists():
            raise DatasetError(f'{self.root}: episode {episode.id} exists already')
        self.save_episode(episode)
        append_audit(self.audit_path, 'create_episode', episode.id, who, task=episode.task,
                     operator=episode.operator, mode=episode.mode)
        return episode

    def save_episode(self, episode: Episode) -> None:
        """Write episode.yaml and refresh its catalog row (no audit entry: see set_outcome/set_status).

        Args:
            episode: the episode's description, as it now is.

        Raises:
            DatasetError: its id is invalid, or the catalog cannot be written.
            RobodataError: a file of the dataset cannot be written (disk full, no permission).
        """
        write_episode(self.episode_dir(episode.id) / 'episode.yaml', episode)
        self.catalog.upsert(episode, **self.bag_stats(episode))

    def episode(self, episode_id: str) -> Episode:
        """The episode as its episode.yaml describes it (the catalog is only an index over these files).

        Args:
            episode_id: the episode.

        Raises:
            DatasetError: no such episode, or its episode.yaml is missing or unreadable.
        """
        path = self.episode_dir(episode_id) / 'episode.yaml'
        if not path.parent.is_dir():
            raise DatasetError(f'{self.root}: no episode {episode_id}')
        return read_episode(path)

    def episode_ids(self) -> list[str]:
        """Every episode folder with an episode.yaml, sorted: the episodes as the files say, whatever the catalog."""
        if not self.episodes_dir.is_dir():
            return []
        return sorted(p.name for p in self.episodes_dir.iterdir()
                      if not p.name.startswith('.') and (p / 'episode.yaml').is_file())

    def list(
        self, *, task: str | None = None, status: str | None = None, outcome: str | None = None,
        where: str | EpisodeQuery | None = None,
    ) -> list[CatalogRow]:
        """The catalog's rows, filtered, for a quick look at many episodes without reading each episode.yaml.

        Args:
            task: only episodes of this task.
            status: only episodes with this status (recording, complete, discarded...).
            outcome: only episodes with this outcome (success, failure, recovery...).
            where: only episodes this query picks (`--where`, e.g. 'score < 0.8 and outcome = success'; the
                language is in episode_query.py), as text or compiled.

        Raises:
            DatasetError: the catalog cannot be read, or has no column the query names (an older catalog).
            RobodataError: `where` is not a query (one line saying where it stops making sense).
        """
        clauses: builtins.list[str] = []
        params: builtins.list[Any] = []
        for column, value in (('task', task), ('status', status), ('outcome', outcome)):
            if value is not None:
                clauses.append(f'{column} = ?')
                params.append(value)
        query = compile_query(where) if isinstance(where, str) else where
        if query is not None:  # its SQL names only catalog columns; every value the user wrote is a parameter
            clauses.append(f'({query.sql})')
            params.extend(query.params)
        try:
            return self.catalog.query(' AND '.join(clauses), tuple(params))
        except DatasetError as err:
            if query is not None and ('parser stack overflow' in str(err) or 'too large' in str(err)):
                raise DatasetError(f'--where {query.text!r}: too deeply nested for SQLite: write it flatter') from None
            missing = [c for c in sorted(query.columns) if f'no such column: {c}' in str(err)] if query else []
            if not missing:
                raise
            raise DatasetError(f'{self.catalog.path}: --where reads {missing[0]}, a column this catalog does not '
                               f'have (an older catalog, read-only here): `robodata catalog rebuild {self.root}` '
                               'where it can be written gives it every column') from None

    def set_outcome(self, episode_id: str, outcome: str, who: str | None = None, reason: str = '') -> Episode:
        """Label how the episode ended (what a training set is chosen by), with its audit line, or change nothing.

        Args:
            episode_id: the episode.
            outcome: one of OUTCOMES (success, failure, recovery...).
            who: who labelled it, for the audit log; None: the current user.
            reason: why, for the audit log.

        Raises:
            DatasetError: an unknown outcome or episode, a read-only dataset or catalog, or an audit line that
                cannot be written (the change is undone).
            RobodataError: a file of the dataset cannot be written (disk full, no permission).
        """
        if outcome not in OUTCOMES:
            raise DatasetError(f'outcome {outcome!r} is not one of {", ".join(OUTCOMES)}')
        return self._change(episode_id, {'outcome': outcome}, who, reason=reason)

    def set_status(self, episode_id: str, status: str, who: str | None = None, reason: str = '') -> Episode:
        """Change where the episode stands (complete, discarded...), with its audit line, or change nothing.

        Args:
            episode_id: the episode.
            status: one of STATUSES.
            who: who changed it, for the audit log; None: the current user.
            reason: why, for the audit log.

        Raises:
            DatasetError: an unknown status or episode, a read-only dataset or catalog, or an audit line that
                cannot be written (the change is undone).
            RobodataError: a file of the dataset cannot be written (disk full, no permission).
        """
        if status not in STATUSES:
            raise DatasetError(f'status {status!r} is not one of {", ".join(STATUSES)}')
        if status == 'retired':
            raise DatasetError(f'{episode_id}: an episode is retired only by `robodata retire`, which deletes its data '
                               'and leaves a tombstone')
        return self._change(episode_id, {'status': status}, who, reason=reason)

    def set_task(self, episode_id: str, task: str, who: str | None = None, reason: str = '') -> Episode:
        """Name what the robot was doing in the episode (a task renamed, a mislabelled one), with its audit line.

        Args:
            episode_id: the episode.
            task: the task's name (text on one line, not empty).
            who: who changed it, for the audit log; None: the current user.
            reason: why, for the audit log.

        Raises:
            DatasetError: an empty task or one with a line break, an unknown episode, or the change cannot be
                written (the change is undone).
        """
        return self._change(episode_id, {'task': _one_line_value('task', task)}, who, reason=reason)

    def set_operator(self, episode_id: str, operator: str, who: str | None = None, reason: str = '') -> Episode:
        """Name who drove the episode (a teleoperator's name, 'scripted'), with its audit line.

        Args:
            episode_id: the episode.
            operator: who drove it (text on one line, not empty).
            who: who changed it, for the audit log; None: the current user.
            reason: why, for the audit log.

        Raises:
            DatasetError: an empty operator or one with a line break, an unknown episode, or the change cannot be
                written (the change is undone).
        """
        return self._change(episode_id, {'operator': _one_line_value('operator', operator)}, who, reason=reason)

    def set_participant(self, episode_id: str, participant: str, who: str | None = None, reason: str = '') -> Episode:
        """Name the person recorded in an episode by their pseudonymous id, with its audit line.

        Args:
            episode_id: the episode.
            participant: an id registered in participants.yaml ('' clears it).
            who: who changed it, for the audit log; None: the current user.
            reason: why, for the audit log.

        Raises:
            DatasetError: an id not registered (or withdrawn), an unknown episode, or the change cannot be written.
        """
        if participant:
            people = read_participants(self.root)
            if participant not in people:
                raise DatasetError(f'participant {participant} is not registered: `robodata participant add '
                                   f'{self.root} {participant} --consent ...` first')
            if people[participant].get('withdrawn'):
                raise DatasetError(f'participant {participant} withdrew consent on {people[participant]["withdrawn"]}')
        return self._change(episode_id, {'participant': participant}, who, reason=reason)

    def decide(self, episode_id: str, verdict: str, decision: dict[str, Any], who: str | None = None) -> Episode:
        """Approve or reject an episode (governance): its status and the decision's record (policy, reasons, who,
        why) in episode.yaml, with one audit line `approve` or `reject` carrying the same record.

        Args:
            episode_id: the episode.
            verdict: 'approved' or 'rejected'.
            decision: what the decision rests on, kept as it is (plain data: the policy's name and hash, reasons,
                why).
            who: who decided, for the audit log; None: the current user.

        Raises:
            DatasetError: a verdict other than approved/rejected, an unknown episode, a read-only dataset or
                catalog, or an audit line that cannot be written (the change is undone).
        """
        if verdict not in ('approved', 'rejected'):
            raise DatasetError(f'a decision is approved or rejected, not {verdict!r}')
        return self._change(episode_id, {'status': verdict, 'decision': decision}, who,
                            action='approve' if verdict == 'approved' else 'reject', details=decision)

    def _change(self, episode_id: str, changes: dict[str, Any], who: str | None, *, reason: str = '',
                action: str = '', details: dict[str, Any] | None = None) -> Episode:
        """A change and its audit line together or not at all: the catalog and audit.jsonl are checked first, and
        an audit line that cannot be written puts episode.yaml back as it was. The audit line is `set_<field>` with
        old, new and reason for one field, or `action` with `details`."""
        episode = self.episode(episode_id)
        if self.catalog.read_only:
            raise DatasetError(f'{self.root}: the dataset is read-only here: the {" and ".join(changes)} of '
                               f'{episode_id} cannot be changed (copy it somewhere writable, or ask for write '
                               'permission)')
        self.catalog.check()
        self.catalog.check_room()
        check_audit_writable(self.audit_path)
        path = self.episode_dir(episode_id) / 'episode.yaml'
        before = path.read_bytes()
        field, value = next(iter(changes.items()))
        old = getattr(episode, field)
        for name, new_value in changes.items():
            setattr(episode, name, new_value)
        write_episode(path, episode)
        try:
            if action:
                append_audit(self.audit_path, action, episode_id, who, old=old, new=value, **(details or {}))
            else:
                append_audit(self.audit_path, f'set_{field}', episode_id, who, old=old, new=value, reason=reason)
        except OSError as err:
            write_atomic(path, before)
            raise DatasetError(f'{self.audit_path}: cannot append the audit line ({err.strerror or err}): the change '
                               f'to {episode_id} was undone') from None
        self.catalog.upsert(episode, **self.bag_stats(episode))
        return episode

    # -- integrity ------------------------------------------------------------------------------

    def bag_files(self, episode_id: str) -> builtins.list[Path]:
        """The files of the episode's bag (storage files and metadata.yaml), sorted; [] when it has no bag.

        Args:
            episode_id: the episode.

        Raises:
            DatasetError: `episode_id` is not a valid id.
        """
        bag = self.bag_dir(episode_id)
        if not bag.is_dir():
            return []
        return sorted(p for p in bag.iterdir() if p.is_file())

    def record_checksums(self, episode_id: str, who: str | None = None,
                         known: dict[str, str] | None = None) -> Episode:
        """Fingerprint the bag's files now, so later corruption or edits are detectable.

        Args:
            episode_id: the episode.
            who: who asked, for the audit log; None: the current user.
            known: sums taken as the files were written (BagWriter.sha256); files it does not name are read.

        Raises:
            DatasetError: no such episode, its episode.yaml is unreadable, or the catalog cannot be written.
            RobodataError: a file of the dataset cannot be written (disk full, no permission).
        """
        episode = self.episode(episode_id)
        known = known or {}
        episode.bag_sha256 = {p.name: known.get(p.name) or file_sha256(p) for p in self.bag_files(episode_id)}
        self.save_episode(episode)
        append_audit(self.audit_path, 'record_checksums', episode_id, who, files=sorted(episode.bag_sha256))
        return episode

    def rebuild_catalog(self) -> int:
        """Recreate every catalog row from the episode.yaml files; returns how many episodes it lists.

        An unreadable catalog is moved aside (catalog.sqlite.corrupt-<time>) and made anew. An episode.yaml that
        cannot be read is left out (see skipped_folders() for what was left out and why).

        Raises:
            DatasetError: the new catalog cannot be written (a read-only dataset, a full disk).
        """
        try:
            self.catalog.check()
            rows = self.catalog.query()
        except DatasetError:
            kept = self.catalog.set_aside()
            self.catalog.create()
            append_audit(self.audit_path, 'catalog_set_aside', None, kept=str(kept))
            rows = []
        listed = 0
        readable = set()
        for episode_id in self.episode_ids():
            try:
                episode = self.episode(episode_id)
            except DatasetError:
                continue
            readable.add(episode_id)
            self.catalog.upsert(episode, **self.bag_stats(episode))
            restore_scores(self, episode_id)
            restore_reviewed_outcome(self, episode_id)
            listed += 1
        for row in rows:
            if row.id not in readable:
                self.catalog.delete(row.id)
        restore_review_queue(self, readable)
        restore_releases(self, readable)
        restore_retired(self, readable)
        return listed

    def folders_not_in_catalog(self) -> builtins.list[str]:
        """Folders under episodes/ the catalog does not list (an episode.yaml it could not read, a bag copied in by
        hand, a crash between folder and catalog row), sorted: what `robodata repair` would look at.

        Raises:
            DatasetError: the catalog cannot be read.
        """
        if not self.episodes_dir.is_dir():
            return []
        listed = {row.id for row in self.catalog.query()}
        return sorted(p.name for p in self.episodes_dir.iterdir()
                      if p.is_dir() and not p.name.startswith('.') and p.name not in listed)

    def skipped_folders(self) -> builtins.list[tuple[str, str]]:
        """(folder name, why) for every folder under episodes/ that is not a readable episode, with what to do."""
        out: list[tuple[str, str]] = []
        if not self.episodes_dir.is_dir():
            return out
        for folder in sorted(p for p in self.episodes_dir.iterdir() if p.is_dir() and not p.name.startswith('.')):
            if not (folder / 'episode.yaml').is_file():
                empty = not any(folder.iterdir())
                out.append((folder.name, 'empty (a recording or an import that was stopped): `robodata repair '
                                         'DATASET` removes it' if empty else 'no episode.yaml (a bag copied in by '
                                         'hand?): `robodata repair DATASET` registers it'))
                continue
            try:
                self.episode(folder.name)
            except DatasetError as err:
                out.append((folder.name, f'{UNREADABLE}: {" ".join(str(err).split())}'))
        return out

    def bag_stats(self, episode: Episode) -> dict[str, int]:
        """The message count (from episode.yaml's topics) and bag size on disk, for the episode's catalog row.

        Args:
            episode: the episode.

        Raises:
            DatasetError: its id is not a valid id.
        """
        files = self.bag_files(episode.id)
        count = sum(int(t.get('count', 0)) for t in episode.topics.values())
        return {'message_count': count, 'size_bytes': sum(p.stat().st_size for p in files)}
