"""SQL over many datasets at once (`robodata query`): tidy tables of their episodes, events, subtasks and quality
findings, each row tagged with its dataset and rig, for DuckDB to query in memory.

The tables come from what is already on disk and small: each catalog (`Dataset.list`) and each episode's sidecars
(events.json from `robodata segment`, quality.json from `robodata score`), read once and only for the tables the
SQL names. No bag is opened. The query runs with DuckDB's file access turned off, so it reads these tables and
nothing else, and changes no dataset. pyarrow and DuckDB are the `query` extra: imported when a query runs.
"""

from __future__ import annotations

import datetime
import decimal
import io
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ros_robodata import untrusted
from ros_robodata.dataset.catalog import CatalogRow
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.errors import RobodataError
from ros_robodata.files import write_atomic

__all__ = ['COLUMNS', 'VIEWS', 'FleetTables', 'QueryError', 'QueryResult', 'fleet_tables', 'run_query',
           'write_result']

NEED_EXTRA = 'robodata query needs DuckDB and pyarrow: pip install ros_robodata[query]'

# Each table's columns as (name, pyarrow type name); docs/query.md says what each holds (a test holds the two equal).
_TAGS = (('dataset', 'string'), ('rig', 'string'))
_EPISODE = (('episode_id', 'string'), ('task', 'string'), ('outcome', 'string'))
COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    'episodes': (*_TAGS, ('id', 'string'), ('task', 'string'), ('operator', 'string'), ('mode', 'string'),
                 ('robot', 'string'), ('outcome', 'string'), ('reviewed_outcome', 'string'), ('status', 'string'),
                 ('state', 'string'), ('start_time', 'timestamp'), ('start_ns', 'int64'), ('duration_s', 'float64'),
                 ('score', 'float64'), ('errors', 'int64'), ('warnings', 'int64'), ('success_verdict', 'bool'),
                 ('disagrees', 'bool'), ('consistency', 'float64'), ('messages', 'int64'), ('size_bytes', 'int64'),
                 ('in_release', 'string'), ('review_rank', 'int64')),
    'events': (*_TAGS, *_EPISODE, ('kind', 'string'), ('t_s', 'float64'), ('t_ns', 'int64'),
               ('confidence', 'float64'), ('duration_s', 'float64'), ('ended_by', 'string'), ('note', 'string')),
    'subtasks': (*_TAGS, *_EPISODE, ('name', 'string'), ('attempt', 'int64'), ('start_s', 'float64'),
                 ('end_s', 'float64'), ('duration_s', 'float64'), ('start_ns', 'int64'), ('end_ns', 'int64')),
    'findings': (*_TAGS, *_EPISODE, ('check_name', 'string'), ('severity', 'string'), ('topic', 'string'),
                 ('message', 'string'), ('value', 'float64'), ('threshold', 'float64'), ('count', 'int64'),
                 ('stretches', 'int64'), ('t_s', 'float64'), ('t_ns', 'int64')),
}
VIEWS = tuple(COLUMNS)
# The sidecar each table is read from, and the command that writes it.
_SIDECARS = {'events': ('events.json', 'robodata segment'), 'subtasks': ('events.json', 'robodata segment'),
             'findings': ('quality.json', 'robodata score')}
# An event that lasts: its kind -> the kinds that end it. Its duration runs to the first of them after it, unless
# another of its own kind comes first (a regrip: it never ended on its own).
ENDED_BY = {'grasp': ('release', 'grasp_failed'), 'lift': ('release', 'grasp_failed'), 'contact': ('contact_lost',)}
_NO_SIDECAR = ('recording', 'discarded', 'retired')  # statuses that are not segmented or scored


class QueryError(RobodataError):
    """The SQL itself is wrong: DuckDB's message, on one line (`robodata query` exits 2 on it)."""


@dataclass
class FleetTables:
    """The tables of one query (pyarrow tables by name) and what the user should know about them: a sidecar
    missing or unreadable, said with the command that writes it."""

    tables: dict[str, Any]
    notes: list[str] = field(default_factory=list)


@dataclass
class QueryResult:
    """What a query returned: its columns, DuckDB's type of each, the rows as a pyarrow table, the notes."""

    columns: list[str]
    types: list[str]
    table: Any
    notes: list[str]

    def rows(self) -> list[dict[str, Any]]:
        """The rows as JSON-ready dicts: times as ISO 8601 text (UTC, to the microsecond: Python's datetime holds
        no nanoseconds, `start_ns` does), DuckDB's big sums as numbers."""
        pa = _pyarrow()
        table = self.table
        for n, column in enumerate(table.schema):
            if pa.types.is_timestamp(column.type) and column.type.unit == 'ns':
                table = table.set_column(n, column.name, table.column(n).cast(pa.timestamp('us', column.type.tz),
                                                                              safe=False))
        return [{k: _plain(v) for k, v in row.items()} for row in table.to_pylist()]


def _plain(value: Any) -> Any:
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _pyarrow() -> Any:
    try:
        import pyarrow  # the `query` extra: imported when a table is built
    except ImportError:
        raise RobodataError(NEED_EXTRA) from None
    return pyarrow


def _duckdb() -> Any:
    try:
        import duckdb  # the `query` extra: imported when a query runs
    except ImportError:
        raise RobodataError(NEED_EXTRA) from None
    return duckdb


def _labels(datasets: Sequence[Dataset]) -> list[str]:
    """Each dataset's name as its rows are tagged: its folder when another given dataset has the same name."""
    names = [d.name for d in datasets]
    return [str(d.root) if names.count(d.name) > 1 else d.name for d in datasets]


def _rig(dataset: Dataset) -> str:
    """The robot's name in dataset.yaml's profile snapshot ('' when it holds none)."""
    snapshot = dataset.info.get('robot_profile')
    content = snapshot.get('content') if isinstance(snapshot, dict) else None
    robot = content.get('robot') if isinstance(content, dict) else None
    name = robot.get('name') if isinstance(robot, dict) else None
    return name if isinstance(name, str) else ''


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ''


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _episode_row(row: CatalogRow) -> dict[str, Any]:
    scores = row.scores
    return {'id': row.id, 'task': row.task, 'operator': row.operator, 'mode': row.mode, 'robot': row.robot,
            'outcome': row.outcome, 'reviewed_outcome': row.reviewed_outcome, 'status': row.status,
            'state': row.state, 'start_time': row.start_ns, 'start_ns': row.start_ns, 'duration_s': row.duration_s,
            'score': row.score, 'errors': _integer(scores.get('errors')), 'warnings': _integer(scores.get('warnings')),
            'success_verdict': _flag(scores.get('success_verdict')), 'disagrees': _flag(scores.get('disagrees')),
            'consistency': _number(scores.get('consistency')), 'messages': row.message_count,
            'size_bytes': row.size_bytes, 'in_release': row.in_release, 'review_rank': row.review_rank}


def _events_rows(doc: Any) -> list[dict[str, Any]]:
    """events.json's events in time order, each with its duration where a later event ends it."""
    listed = doc.get('events') if isinstance(doc, dict) else None
    if not isinstance(listed, list) or not all(isinstance(e, dict) and isinstance(e.get('kind'), str)
                                                and _integer(e.get('t_ns')) is not None for e in listed):
        raise RobodataError('not what robodata segment writes (events each with a kind and an integer t_ns)')
    events = sorted(listed, key=lambda e: e['t_ns'])
    rows = []
    for n, event in enumerate(events):
        kind, duration, ended_by = event['kind'], None, None
        for later in events[n + 1:] if kind in ENDED_BY else ():
            if later['kind'] == kind:
                break
            if later['kind'] in ENDED_BY[kind]:
                duration, ended_by = (later['t_ns'] - event['t_ns']) / 1e9, later['kind']
                break
        rows.append({'kind': kind, 't_s': _number(event.get('t_s')), 't_ns': event['t_ns'],
                     'confidence': _number(event.get('confidence')), 'duration_s': duration, 'ended_by': ended_by,
                     'note': _text(event.get('note'))})
    return rows


def _subtask_rows(doc: Any) -> list[dict[str, Any]]:
    timeline = doc.get('timeline', []) if isinstance(doc, dict) else None
    if not isinstance(timeline, list) or not all(
            isinstance(s, dict) and isinstance(s.get('name'), str) and _integer(s.get('start_ns')) is not None
            and _integer(s.get('end_ns')) is not None for s in timeline):
        raise RobodataError('its timeline is not a list of subtasks with a name, start_ns and end_ns')
    return [{'name': s['name'], 'attempt': _integer(s.get('attempt')), 'start_s': _number(s.get('start_s')),
             'end_s': _number(s.get('end_s')), 'duration_s': (s['end_ns'] - s['start_ns']) / 1e9,
             'start_ns': s['start_ns'], 'end_ns': s['end_ns']} for s in timeline]


def _first(ranges: Any) -> Any:
    """The start of a finding's first stretch ([[start, end], ...]), None when it has none."""
    if isinstance(ranges, list) and ranges and isinstance(ranges[0], list) and ranges[0]:
        return ranges[0][0]
    return None


def _finding_rows(doc: Any) -> list[dict[str, Any]]:
    findings = doc.get('findings') if isinstance(doc, dict) else None
    if not isinstance(findings, list) or not all(isinstance(f, dict) and isinstance(f.get('check'), str)
                                                  for f in findings):
        raise RobodataError('not what robodata score writes (findings each with a check)')
    return [{'check_name': f['check'], 'severity': _text(f.get('severity')), 'topic': _text(f.get('topic')),
             'message': _text(f.get('message')), 'value': _number(f.get('value')),
             'threshold': _number(f.get('threshold')), 'count': _integer(f.get('count')),
             'stretches': _integer(f.get('stretches')), 't_s': _number(_first(f.get('ranges_s'))),
             't_ns': _integer(_first(f.get('ranges_ns')))} for f in findings]


_READERS: dict[str, Callable[[Any], list[dict[str, Any]]]] = {
    'events': _events_rows, 'subtasks': _subtask_rows, 'findings': _finding_rows}


def _sidecar_rows(dataset: Dataset, label: str, rows: list[CatalogRow], views: list[str],
                  out: dict[str, list[dict[str, Any]]], notes: list[str]) -> None:
    """The rows of the sidecar tables asked for, from one dataset; a sidecar missing or unreadable is a note."""
    rig = _rig(dataset)
    for file in dict.fromkeys(_SIDECARS[v][0] for v in views):
        mine = [v for v in views if _SIDECARS[v][0] == file]
        command = _SIDECARS[mine[0]][1]
        missing, unreadable, expected = 0, [], 0
        for row in rows:
            if row.status in _NO_SIDECAR:
                continue
            expected += 1
            path = dataset.episode_dir(row.id) / file
            if not path.is_file():
                missing += 1
                continue
            try:
                doc = untrusted.read_json(path)
                read = {v: _READERS[v](doc) for v in mine}
            except RobodataError as err:
                unreadable.append(f'{row.id} ({str(err).removeprefix(f"{path}: ")})')
                continue
            tags = {'dataset': label, 'rig': rig, 'episode_id': row.id, 'task': row.task, 'outcome': row.outcome}
            for view, found in read.items():
                out[view].extend({**tags, **r} for r in found)
        tables = ' and '.join(mine)
        if expected and missing == expected:
            notes.append(f'{label}: {tables} empty: no episode has {file} yet (`{command} {dataset.root}` writes it)')
        elif missing:
            notes.append(f'{label}: {tables} leave out {missing} of {expected} episodes: no {file} yet '
                         f'(`{command} {dataset.root}` writes it)')
        if unreadable:
            notes.append(f'{label}: {tables} leave out {len(unreadable)} episode(s) whose {file} cannot be read: '
                         f'{"; ".join(unreadable[:3])}{" ..." if len(unreadable) > 3 else ""} (`{command}` '
                         'writes it again)')


def fleet_tables(datasets: Sequence[Dataset], views: Iterable[str] = VIEWS) -> FleetTables:
    """The tables over these datasets, as pyarrow tables: `episodes` always, the others when asked for.

    Args:
        datasets: the datasets, each opened (its rows are tagged with its name and its profile's robot name).
        views: which of VIEWS to build; reading a sidecar table reads that file of every episode.

    Raises:
        RobodataError: pyarrow is not installed, or a dataset is given twice.
        DatasetError: a catalog cannot be read.
    """
    pa = _pyarrow()
    roots = [d.root.resolve() for d in datasets]
    for n, root in enumerate(roots):
        if root in roots[:n]:
            raise RobodataError(f'{datasets[n].root}: the same dataset given twice (its rows would count twice)')
    wanted = [v for v in VIEWS if v in set(views) and v != 'episodes']
    rows: dict[str, list[dict[str, Any]]] = {v: [] for v in VIEWS}
    notes: list[str] = []
    for dataset, label in zip(datasets, _labels(datasets), strict=True):
        catalog = dataset.list()
        rig = _rig(dataset)
        rows['episodes'].extend({'dataset': label, 'rig': rig, **_episode_row(r)} for r in catalog)
        if not catalog:
            notes.append(f'{label}: no episode in its catalog (`robodata list {dataset.root}` says why)')
        elif wanted:
            _sidecar_rows(dataset, label, catalog, wanted, rows, notes)
    types = {'string': pa.string(), 'int64': pa.int64(), 'float64': pa.float64(), 'bool': pa.bool_(),
             'timestamp': pa.timestamp('ns')}  # UTC, without a zone: DuckDB's date functions then need no ICU
    tables = {}
    for view in ('episodes', *wanted):
        schema = pa.schema([(name, types[kind]) for name, kind in COLUMNS[view]])
        tables[view] = pa.Table.from_pylist(rows[view], schema=schema)
    return FleetTables(tables, notes)


def _said(err: Exception) -> str:
    """DuckDB's message without its multi-line caret picture: the first paragraph, on one line."""
    return ' '.join(str(err).split('\n\n')[0].split())


def run_query(datasets: Sequence[Dataset], sql: str) -> QueryResult:
    """Run `sql` (DuckDB's dialect; several statements: the last one's rows) over the tables of these datasets.

    Args:
        datasets: the datasets, each opened.
        sql: the query; it may name the tables in VIEWS, and reads no file (DuckDB's file access is off).

    Raises:
        QueryError: the SQL does not parse, names what is not there, or fails as it runs (DuckDB's message).
        RobodataError: DuckDB or pyarrow is not installed, or a dataset is given twice.
        DatasetError: a catalog cannot be read.
    """
    duckdb = _duckdb()
    _pyarrow()
    con = duckdb.connect(':memory:')
    try:
        try:
            if not con.extract_statements(sql):
                raise QueryError('no SQL statement given (e.g. --sql "SELECT * FROM episodes")')
        except duckdb.Error as err:
            raise QueryError(_said(err)) from None
        try:
            named = {name.lower() for name in duckdb.get_table_names(sql)}
        except duckdb.Error:  # it fails to bind: build them all, and DuckDB says what is wrong as it runs
            named = set(VIEWS)
        built = fleet_tables(datasets, [v for v in VIEWS if v in named])
        for name, table in built.tables.items():
            con.register(name, table)
        con.execute('SET enable_external_access = false')
        con.execute('SET lock_configuration = true')
        try:
            relation = con.sql(sql)
            if relation is None:
                raise QueryError('the last statement returns no rows: end with a SELECT')
            fetch = getattr(relation, 'to_arrow_table', None) or relation.arrow  # 1.4 renamed it
            table = fetch()
            types = [str(t) for t in relation.types]
        except duckdb.Error as err:
            raise QueryError(_said(err)) from None
    finally:
        con.close()
    return QueryResult(list(table.column_names), types, table, built.notes)


def write_result(result: QueryResult, path: Path, kind: str) -> None:
    """The rows into a CSV or Parquet file, written whole or not at all.

    Args:
        result: what run_query returned.
        path: the file (its folder exists; the caller checked it is no recorded data).
        kind: 'csv' or 'parquet'.

    Raises:
        RobodataError: a column CSV cannot hold (a list), or the file cannot be written.
    """
    _pyarrow()
    import pyarrow.csv  # the `query` extra; the submodules load only for these files
    import pyarrow.parquet

    buffer = io.BytesIO()
    try:
        if kind == 'csv':
            pyarrow.csv.write_csv(result.table, buffer)
        else:
            pyarrow.parquet.write_table(result.table, buffer)
    except (pyarrow.ArrowException, ValueError) as err:
        raise RobodataError(f'{path}: cannot write the rows as {kind}: {" ".join(str(err).split())[:200]} '
                            '(a list or struct column: --parquet or --json hold it)') from None
    write_atomic(path, buffer.getvalue())
