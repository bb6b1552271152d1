"""`robodata query`: SQL over the episodes, events, subtasks and findings of many datasets at once."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from rich.table import Table

from ros_robodata import untrusted
from ros_robodata.cli.command_common import EXIT_OK, dataset_at, print_json, stderr, stdout
from ros_robodata.dataset.fleet_query import (
    COLUMNS,
    VIEWS,
    QueryError,
    QueryResult,
    fleet_tables,
    run_query,
    write_result,
)
from ros_robodata.errors import RobodataError, one_line
from ros_robodata.outputs import recorded_data

EXIT_BAD_SQL = 2  # as argparse's for a wrong command line: the query is the command line's


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        'query', help='SQL over the episodes, events, subtasks and findings of many datasets at once',
        description='Run SQL (DuckDB) over tables built from the catalogs and sidecars of the datasets given, each '
                    'row tagged with its dataset and rig: episodes (the catalog), events (events.json of '
                    '`robodata segment`), subtasks (its timeline), findings (quality.json of `robodata score`). '
                    'No bag is read; the query reads no file and changes nothing. Without --sql or --file, lists '
                    'the tables, their columns and row counts. Needs the query extra (pip install '
                    'ros_robodata[query]); docs/query.md has worked examples.',
        epilog='Exit status: 2 when the SQL is wrong (DuckDB\'s message on one line).')
    p.add_argument('datasets', nargs='+', metavar='DATASET', help='the datasets to query together')
    sql = p.add_mutually_exclusive_group()
    sql.add_argument('--sql', help='the query, e.g. "SELECT rig, count(*) FROM episodes GROUP BY rig"; several '
                                   'statements: the last one\'s rows')
    sql.add_argument('--file', metavar='FILE', help='read the query from this file')
    out = p.add_mutually_exclusive_group()
    out.add_argument('--json', action='store_true', help='print the rows as a JSON list of objects (times as ISO '
                                                         '8601, UTC)')
    out.add_argument('--csv', metavar='FILE', help='write the rows to this CSV file instead of printing them')
    out.add_argument('--parquet', metavar='FILE', help='write the rows to this Parquet file instead of printing them')
    p.add_argument('--force', action='store_true', help='replace an existing --csv/--parquet file (never a '
                                                        "recording or a dataset's own file)")
    p.set_defaults(func=run)


def _output(text: str, force: bool) -> Path:
    """Where --csv/--parquet writes: a file in an existing folder, outside any recorded data, new unless forced."""
    path = Path(text)
    target = path.resolve()
    if not target.parent.is_dir():
        raise RobodataError(f'{path}: no folder {path.parent} to write into')
    if (why := recorded_data(target)) is not None:
        raise RobodataError(f'{path}: not writing there: {why}; name a file outside it')
    if os.path.lexists(path) and (not force or not target.is_file()):
        raise RobodataError(f'{path}: exists; name another file, or add --force to replace it' if target.is_file()
                            else f'{path}: exists and is not a regular file; name another file')
    return path


def _cell(value: Any) -> str:
    if value is None:
        return '-'
    if isinstance(value, float):
        return f'{value:.4f}'.rstrip('0').rstrip('.') if abs(value) < 1e15 else f'{value:.4g}'
    return str(value)


def _print_table(result: QueryResult) -> None:
    numeric = ('INT', 'DOUBLE', 'FLOAT', 'DECIMAL', 'REAL')
    table = Table(box=None, pad_edge=False)
    for name, kind in zip(result.columns, result.types, strict=True):
        table.add_column(name, justify='right' if any(n in kind.upper() for n in numeric) else 'left')
    rows = result.rows()
    for row in rows:
        table.add_row(*(_cell(v) for v in row.values()))
    stdout.print(table)
    stdout.print(f'{len(rows)} row(s)' if rows else 'no row', markup=False)


def _describe(args: argparse.Namespace) -> int:
    """No query: each table with its row count and columns, so the first query can be written."""
    built = fleet_tables([dataset_at(d) for d in args.datasets])
    _notes(built.notes)
    counts = {view: built.tables[view].num_rows for view in VIEWS}
    if args.json:
        print_json({view: {'rows': counts[view], 'columns': dict(COLUMNS[view])} for view in VIEWS})
        return EXIT_OK
    table = Table('table', 'rows', 'columns', box=None, pad_edge=False)
    for view in VIEWS:
        table.add_row(view, str(counts[view]), ', '.join(name for name, _ in COLUMNS[view]))
    stdout.print(table)
    stdout.print('query them with --sql "SELECT ..." (docs/query.md has examples)', markup=False)
    return EXIT_OK


def _notes(notes: list[str]) -> None:
    for note in notes:
        stderr.print(f'robodata query: {note}', markup=False)


def run(args: argparse.Namespace) -> int:
    if args.sql is None and args.file is None:
        if args.csv or args.parquet:
            raise RobodataError('--csv and --parquet write the rows of a query: give --sql or --file')
        return _describe(args)
    sql = args.sql if args.sql is not None else untrusted.read_text(Path(args.file))
    output = _output(args.csv or args.parquet, args.force) if args.csv or args.parquet else None
    datasets = [dataset_at(d) for d in args.datasets]
    try:
        result = run_query(datasets, sql)
    except QueryError as err:
        print(f'robodata query: error: {one_line(err)}', file=sys.stderr)
        return EXIT_BAD_SQL
    _notes(result.notes)
    if output is not None:
        write_result(result, output, 'csv' if args.csv else 'parquet')
        stdout.print(f'{result.table.num_rows} row(s) written to {output}', markup=False)
    elif args.json:
        print_json(result.rows())
    else:
        _print_table(result)
    return EXIT_OK
