"""catalog.sqlite: one row per episode, for listing and querying thousands of episodes fast.

SQLite in WAL mode survives a crash mid-write. The rows are an index over each episode's
episode.yaml (and later its scores); `Dataset.rebuild_catalog()` recreates them from the files.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from ros_robodata.dataset.episode import Episode
from ros_robodata.errors import DatasetError
from ros_robodata.files import free_bytes, mib

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS episodes (
    id            TEXT PRIMARY KEY,
    task          TEXT NOT NULL DEFAULT '',
    operator      TEXT NOT NULL DEFAULT '',
    mode          TEXT NOT NULL DEFAULT 'teleop',
    robot         TEXT NOT NULL DEFAULT '',
    outcome       TEXT NOT NULL DEFAULT 'unknown',
    status        TEXT NOT NULL DEFAULT 'recording',
    start_ns      INTEGER,
    stop_ns       INTEGER,
    duration_s    REAL,
    message_count INTEGER NOT NULL DEFAULT 0,
    size_bytes    INTEGER NOT NULL DEFAULT 0,
    score         REAL,
    scores        TEXT NOT NULL DEFAULT '{}',
    bag_sha256    TEXT NOT NULL DEFAULT '{}',
    updated_ns    INTEGER NOT NULL,
    source_id     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS episodes_task ON episodes (task);
CREATE INDEX IF NOT EXISTS episodes_status ON episodes (status);
"""
# An episode's lifecycle state, from the columns that decide it: retired (its data deleted) and released (in a frozen
# release) win over a decision, a decision (`robodata approve`, `set --status`) over the reviewers' verdict, a verdict
# over a score. Recorded -> scored -> reviewed -> approved | rejected -> released -> retired.
LIFECYCLE_STATES = ('recorded', 'scored', 'reviewed', 'approved', 'rejected', 'released', 'retired')
STATE_SQL = ("CASE WHEN status = 'retired' THEN 'retired' WHEN in_release != '' THEN 'released' "
             "WHEN status IN ('approved', 'rejected') THEN status WHEN reviewed_outcome != '' THEN 'reviewed' "
             "WHEN score IS NOT NULL THEN 'scored' ELSE 'recorded' END")
# Columns added after schema 1 was released, with their definitions: a catalog written by an older ros_robodata
# gains them when opened (an older ros_robodata ignores them: it names the columns it reads).
_ADDED_COLUMNS = {'source_id': "TEXT NOT NULL DEFAULT ''",
                  # the review queue (`robodata select`): rank in the queue (NULL: not picked), its priority, the
                  # main reason, or why it was filtered out; review/queue.json is where they come from
                  'review_rank': 'INTEGER', 'review_priority': 'REAL', 'review_reason': "TEXT NOT NULL DEFAULT ''",
                  'review_excluded': "TEXT NOT NULL DEFAULT ''",
                  # the reviewers' verdict from annotations.json (success/failure/recovery/unusable/disputed), beside
                  # the operator's `outcome`, which it never replaces
                  'reviewed_outcome': "TEXT NOT NULL DEFAULT ''",
                  # the latest release that holds the episode (releases/NAME/manifest.json is where it comes from)
                  'in_release': "TEXT NOT NULL DEFAULT ''",
                  # where the episode stands in its life (governance): never written, always what the columns it is
                  # computed from say, so no command can leave it stale
                  'state': f'TEXT GENERATED ALWAYS AS ({STATE_SQL}) VIRTUAL'}
_REVIEW_COLUMNS = ('review_rank', 'review_priority', 'review_reason', 'review_excluded')
_ADDED_INDEXES = ('CREATE INDEX IF NOT EXISTS episodes_source ON episodes (source_id)',)


class CatalogScores(TypedDict):
    """An episode's `scores` column as `robodata score` fills it (and quality.json's `catalog` holds it): finding
    counts, the checks that fired, the consistency figure and the success verdict."""

    errors: int
    warnings: int
    checks: list[str]
    consistency: float | None  # normalized DTW distance to its nearest demos (1.0 typical)
    success_verdict: bool | None
    disagrees: bool | None  # the verdict contradicts the operator's label


@dataclass(frozen=True)
class CatalogRow:
    """One episode as the catalog lists it."""

    id: str
    task: str
    operator: str
    mode: str
    robot: str
    outcome: str
    status: str
    start_ns: int | None
    stop_ns: int | None
    duration_s: float | None
    message_count: int
    size_bytes: int
    score: float | None
    scores: dict[str, Any]
    bag_sha256: dict[str, str]
    review_rank: int | None = None
    review_priority: float | None = None
    review_reason: str = ''
    review_excluded: str = ''
    reviewed_outcome: str = ''
    in_release: str = ''  # the latest release holding it ('' none)
    state: str = 'recorded'  # its lifecycle state, one of LIFECYCLE_STATES

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


_TEXT, _INT, _REAL, _NONE = (str,), (int,), (float,), (type(None),)
# (column, the Python types its values may have) in the order `rows` selects them; scores and bag_sha256 (13, 14)
# are JSON, checked by Catalog._json
_ROW_TYPES: tuple[tuple[str, tuple[type, ...]], ...] = (
    ('id', _TEXT), ('task', _TEXT), ('operator', _TEXT), ('mode', _TEXT), ('robot', _TEXT), ('outcome', _TEXT),
    ('status', _TEXT), ('start_ns', _INT + _NONE), ('stop_ns', _INT + _NONE), ('duration_s', _REAL + _NONE),
    ('message_count', _INT), ('size_bytes', _INT), ('score', _REAL + _NONE), ('scores', _TEXT), ('bag_sha256', _TEXT),
    ('review_rank', _INT + _NONE), ('review_priority', _REAL + _NONE), ('review_reason', _TEXT),
    ('review_excluded', _TEXT), ('reviewed_outcome', _TEXT), ('in_release', _TEXT), ('state', _TEXT))


def _state_of(row: Any) -> str:
    """STATE_SQL in Python, for a catalog too old to have the column and opened read-only (it cannot gain it)."""
    status, score, reviewed, released = row[6], row[12], row[19], row[20]
    if status == 'retired':
        return 'retired'
    if released:
        return 'released'
    if status in ('approved', 'rejected'):
        return str(status)
    return 'reviewed' if reviewed else 'scored' if score is not None else 'recorded'


def _sqlite_kind(value: Any) -> str:
    if value is None:
        return 'nothing (NULL)'
    if isinstance(value, float) and value != value:
        return 'NaN'
    return {str: 'text', bytes: 'bytes', int: 'an integer', float: 'a fraction'}.get(type(value), 'a value') + \
        f' ({str(value)[:20]!r})'


FULL_BELOW_BYTES = 1 << 20  # a disk with less free than this is full for SQLite (its WAL side files, a page)


def _disk_full(path: Path) -> bool:
    free = free_bytes(path.parent)
    return free is not None and free < FULL_BELOW_BYTES


def _free(path: Path) -> str:
    return mib(free_bytes(path.parent))


def _open_read_only(path: Path) -> sqlite3.Connection:
    """A connection that creates no file: immutable (the WAL's side files are neither made nor read)."""
    return sqlite3.connect(f'{path.resolve().as_uri()}?mode=ro&immutable=1', uri=True, timeout=30.0)


class Catalog:
    """The dataset's index. Connections are short-lived so several processes can share it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def read_only(self) -> bool:
        """A dataset on read-only media or without write permission: read it as it is, change nothing."""
        folder_writable = os.access(self.path.parent, os.W_OK)
        return not folder_writable or (self.path.exists() and not os.access(self.path, os.W_OK))

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        read_only = self.read_only
        full = False
        try:
            if read_only:  # immutable: no -wal/-shm files to create, nobody can be writing it
                conn = _open_read_only(self.path)
            elif _disk_full(self.path) and not self.path.with_name(self.path.name + '-wal').exists():
                # A full disk: SQLite would make its WAL side files and leave them behind when it cannot map them;
                # with no WAL there is nothing newer than the file itself to read.
                conn, full = _open_read_only(self.path), True
            else:
                conn = sqlite3.connect(self.path, timeout=30.0)
                try:
                    conn.execute('PRAGMA journal_mode=WAL')
                    conn.execute('PRAGMA synchronous=FULL')
                except sqlite3.OperationalError:
                    if not _disk_full(self.path):
                        raise
                    # A full disk cannot take the WAL's side files: read as it is, so that a command that only
                    # reads (list, report --out elsewhere) still works; a change then says why it cannot be made.
                    conn.close()
                    conn, full = _open_read_only(self.path), True
        except sqlite3.Error as err:
            raise DatasetError(f'{self.path}: cannot open catalog: {self._cause(err)}') from None
        try:
            with conn:
                yield conn
        except sqlite3.DatabaseError as err:
            if full or _disk_full(self.path):
                raise self._full() from None
            if read_only and 'readonly' in str(err):
                raise DatasetError(f'{self.path.parent}: the dataset is read-only here: this command would change '
                                   'it (copy it somewhere writable, or ask for write permission)') from None
            raise DatasetError(f'{self.path}: catalog error: {self._cause(err)}') from None
        finally:
            conn.close()

    def _cause(self, err: sqlite3.Error) -> str:
        """SQLite's words by their cause, with the advice that fits it ("disk I/O error" says none)."""
        text = str(err)
        if _disk_full(self.path):
            return f'{text}: the disk is full ({_free(self.path)} free); free some space'
        if not os.access(self.path.parent, os.W_OK):
            return f'{text}: no permission to write in {self.path.parent}'
        if 'malformed' in text or 'not a database' in text:
            return f'{text} (`robodata catalog rebuild` recreates it from the episodes)'
        return f'{text} (if the file is damaged, `robodata catalog rebuild` recreates it from the episodes)'

    def create(self) -> None:
        with self._connect() as conn:
            conn.executescript(_SCHEMA)
            conn.execute(
                'INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)', ('schema_version', str(SCHEMA_VERSION))
            )
            _add_columns(conn)

    def _full(self) -> DatasetError:
        return DatasetError(f'{self.path.parent}: the disk holding the dataset is full ({_free(self.path)} free): '
                            'this command would change it; free some space and run it again (nothing was changed)')

    def check_room(self) -> None:
        """Refuse a change up front on a full disk: the catalog's write would fail after the change's files were
        written (episode.yaml, audit.jsonl, review/queue.json), and nothing may change half.

        Raises:
            DatasetError: the disk holding the dataset has less than FULL_BELOW_BYTES free.
        """
        if _disk_full(self.path):
            raise self._full()

    def check(self) -> None:
        """Fail clearly on a catalog that is not ours or is from a newer version."""
        if not self.path.is_file():
            raise DatasetError(f'{self.path}: catalog missing (run `robodata catalog rebuild`)')
        with self._connect() as conn:
            try:
                row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            except sqlite3.OperationalError:
                row = None
        if row is None:
            raise DatasetError(f'{self.path}: not a ros_robodata catalog (no schema_version)')
        if int(row[0]) > SCHEMA_VERSION:
            msg = f'{self.path}: catalog schema {row[0]} is newer than this ros_robodata ({SCHEMA_VERSION})'
            raise DatasetError(msg)
        if self.read_only:
            return  # an older catalog is read as it is (its missing columns read as empty)
        with self._connect() as conn:
            _add_columns(conn)

    def upsert(self, episode: Episode, *, message_count: int = 0, size_bytes: int = 0) -> None:
        with self._connect() as conn:
            conn.execute(
                """INSERT INTO episodes (id, task, operator, mode, robot, outcome, status, start_ns, stop_ns,
                       duration_s, message_count, size_bytes, bag_sha256, updated_ns, source_id)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT (id) DO UPDATE SET task=excluded.task, operator=excluded.operator,
                       mode=excluded.mode, robot=excluded.robot, outcome=excluded.outcome,
                       status=excluded.status, start_ns=excluded.start_ns, stop_ns=excluded.stop_ns,
                       duration_s=excluded.duration_s, message_count=excluded.message_count,
                       size_bytes=excluded.size_bytes, bag_sha256=excluded.bag_sha256,
                       updated_ns=excluded.updated_ns, source_id=excluded.source_id""",
                (
                    episode.id, episode.task, episode.operator, episode.mode, episode.robot, episode.outcome,
                    episode.status, episode.start_ns, episode.stop_ns, episode.duration_s, message_count,
                    size_bytes, json.dumps(episode.bag_sha256, sort_keys=True), time.time_ns(),
                    str(episode.source.get('content_id', '')),
                ),
            )

    def set_scores(self, episode_id: str, score: float | None, scores: CatalogScores) -> None:
        """The episode's score and counts; a row that already holds them is left alone (a rescore that finds the
        same changes nothing on disk, so a dataset in object storage puts nothing back)."""
        text = json.dumps(scores, sort_keys=True)
        with self._connect() as conn:
            cur = conn.execute(
                'UPDATE episodes SET score = ?, scores = ?, updated_ns = ? WHERE id = ? '
                'AND (score IS NOT ? OR scores IS NOT ?)',
                (score, text, time.time_ns(), episode_id, score, text),
            )
            if cur.rowcount == 0 and conn.execute('SELECT 1 FROM episodes WHERE id = ?', (episode_id,)).fetchone() \
                    is None:
                raise DatasetError(f'{self.path}: no episode {episode_id} in the catalog')

    def set_reviewed_outcome(self, episode_id: str, verdict: str) -> None:
        """The reviewers' verdict (annotations.json) beside the operator's outcome; '' when nobody reviewed it."""
        with self._connect() as conn:
            cur = conn.execute('UPDATE episodes SET reviewed_outcome = ?, updated_ns = ? WHERE id = ?',
                               (verdict, time.time_ns(), episode_id))
            if cur.rowcount == 0:
                raise DatasetError(f'{self.path}: no episode {episode_id} in the catalog')

    def set_release(self, episode_ids: list[str], release: str) -> None:
        """The latest release that holds each of these episodes (which makes their state `released`)."""
        with self._connect() as conn:
            conn.executemany('UPDATE episodes SET in_release = ?, updated_ns = ? WHERE id = ?',
                             [(release, time.time_ns(), i) for i in episode_ids])

    def with_source(self, content_id: str) -> list[str]:
        """Ids of the episodes imported from the recording with this content id."""
        with self._connect() as conn:
            rows = conn.execute('SELECT id FROM episodes WHERE source_id = ? ORDER BY id', (content_id,)).fetchall()
        return [row[0] for row in rows]

    def get(self, episode_id: str) -> CatalogRow | None:
        rows = self.query('id = ?', (episode_id,))
        return rows[0] if rows else None

    def query(self, where: str = '', params: tuple[Any, ...] = ()) -> list[CatalogRow]:
        with self._connect() as conn:
            have = {row[1] for row in conn.execute('PRAGMA table_xinfo(episodes)')}
            # an older catalog opened read-only lacks the added columns: they read as empty
            review = ', '.join(c if c in have else 'NULL' for c in _REVIEW_COLUMNS)
            reviewed = 'reviewed_outcome' if 'reviewed_outcome' in have else "''"
            released = 'in_release' if 'in_release' in have else "''"
            state = 'state' if 'state' in have else 'NULL'  # NULL: worked out below from the columns it comes from
            sql = 'SELECT id, task, operator, mode, robot, outcome, status, start_ns, stop_ns, duration_s, ' \
                  f'message_count, size_bytes, score, scores, bag_sha256, {review}, {reviewed}, {released}, ' \
                  f'{state} FROM episodes'
            if where:
                sql += f' WHERE {where}'
            sql += ' ORDER BY id'
            rows = conn.execute(sql, params).fetchall()
        return [CatalogRow(*[*self._typed(row, 0, 13), self._json(row, 13, 'scores'), self._json(row, 14, 'bag_sha256'),
                             *self._typed(row, 15, len(row) - 1), row[-1] or _state_of(row)]) for row in rows]

    def _typed(self, row: Any, first: int, end: int) -> list[Any]:
        """Row values checked against what robodata writes in each column (SQLite keeps any type in any column,
        and a hand edit or a damaged page may put one there); one line naming the episode and the column if not."""
        out = []
        for value, (column, allowed) in zip(row[first:end], _ROW_TYPES[first:end], strict=True):
            if value is None and str in allowed:
                value = ''  # a text column left NULL by an older writer or a hand edit: empty
            elif type(value) not in allowed or (type(value) is float and value != value):
                if type(value) is int and float in allowed:
                    value = float(value)  # SQLite stores a whole REAL as an integer
                else:
                    raise DatasetError(f'{self.path}: episode {row[0]!r}: its {column} column holds '
                                       f'{_sqlite_kind(value)}, not what robodata writes (the catalog was edited or '
                                       'damaged): `robodata catalog rebuild` recreates it from the episode files')
            out.append(value)
        return out

    def _json(self, row: Any, index: int, column: str) -> dict[str, Any]:
        """A JSON column of a row, as robodata wrote it; one line naming the episode when it is not."""
        try:
            value = json.loads(row[index])
        except (TypeError, ValueError, RecursionError):
            value = None
        if not isinstance(value, dict):
            raise DatasetError(f'{self.path}: episode {row[0]}: its {column} column is not what robodata writes (the '
                               'catalog was edited or damaged): `robodata catalog rebuild` recreates it from the '
                               'episode files')
        return value

    def set_review(self, picked: dict[str, tuple[int, float, str]], excluded: dict[str, str]) -> None:
        """The review queue's columns, all episodes at once: (rank, priority, main reason) of each pick, the reason
        of each episode filtered out; every other episode's are cleared (it is in no queue)."""
        with self._connect() as conn:
            conn.execute("UPDATE episodes SET review_rank = NULL, review_priority = NULL, review_reason = '', "
                         "review_excluded = ''")
            conn.executemany('UPDATE episodes SET review_rank = ?, review_priority = ?, review_reason = ? WHERE id = ?',
                             [(rank, priority, reason, i) for i, (rank, priority, reason) in picked.items()])
            conn.executemany('UPDATE episodes SET review_excluded = ? WHERE id = ?',
                             [(why, i) for i, why in excluded.items()])

    def set_aside(self) -> Path | None:
        """Move an unreadable catalog (and its WAL files) out of the way, keeping it for inspection."""
        if not self.path.exists():
            return None
        kept = self.path.with_name(f'{self.path.name}.corrupt-{time.strftime("%Y%m%d-%H%M%S")}')
        for suffix in ('-wal', '-shm'):
            side = self.path.with_name(self.path.name + suffix)
            if side.exists():
                side.rename(kept.with_name(kept.name + suffix))
        self.path.rename(kept)
        return kept

    def delete(self, episode_id: str) -> None:
        with self._connect() as conn:
            conn.execute('DELETE FROM episodes WHERE id = ?', (episode_id,))


def _add_columns(conn: sqlite3.Connection) -> None:
    have = {row[1] for row in conn.execute('PRAGMA table_xinfo(episodes)')}
    for name, definition in _ADDED_COLUMNS.items():
        if name not in have:
            conn.execute(f'ALTER TABLE episodes ADD COLUMN {name} {definition}')
    for statement in _ADDED_INDEXES:
        conn.execute(statement)
