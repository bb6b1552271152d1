"""`robodata coverage`: a dataset's takes against a capture protocol, and what to capture next."""

from __future__ import annotations

import argparse
from typing import Any

from rich.table import Table

from ros_robodata.capture.coverage import Coverage, coverage
from ros_robodata.capture.protocol import SHIPPED_PROTOCOLS, load_protocol
from ros_robodata.capture.take_record import CAPTURE_FILE
from ros_robodata.cli.command_common import (
    EXIT_OK,
    add_json,
    add_target,
    dataset_at,
    print_json,
    stderr,
    stdout,
)
from ros_robodata.errors import RobodataError

SHOWN_MISSING = 20


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        'coverage', help='which combinations of a capture protocol a dataset still lacks, and what to capture next',
        description=f'Count the takes of a dataset ({CAPTURE_FILE} in an episode folder) against a capture protocol '
                    '(config/protocols/*.yaml): per combination of its factors, the takes required, captured and '
                    'within spec (a take counts for the cell its measured conditions fall in, else its intended '
                    'one), and per demographic group the participants with a take within spec (participants.yaml, '
                    '`demographics`). Lists the missing combinations in the order to capture them: fewest takes '
                    'first, then protocol order.')
    add_target(p, 'a dataset', 'DATASET')
    p.add_argument('--protocol', required=True, metavar='P',
                   help=f'a protocol file, or a shipped one by name ({", ".join(SHIPPED_PROTOCOLS)})')
    p.add_argument('--next', type=int, metavar='N', dest='next_n',
                   help='list exactly the next N takes to capture (fewer only when fewer are missing)')
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.next_n is not None and args.next_n < 1:
        raise RobodataError('--next must be at least 1')
    protocol = load_protocol(args.protocol)
    dataset = dataset_at(args.target)
    result = coverage(dataset, protocol)
    if args.json:
        print_json(result.to_json(args.next_n))
        return EXIT_OK
    empty = result.empty_message()
    if empty:
        stdout.print(empty, markup=False)
    elif args.next_n is None:
        _show(result)
    if args.next_n is not None:
        for i, cell in enumerate(result.next_takes(args.next_n), 1):
            stdout.print(f'{i:>3}. {cell.key}', markup=False)
    for note in result.notes:
        stderr.print(f'robodata coverage: note: {note}', markup=False)
    stdout.print(f'{protocol.name}: {result.summary()}', markup=False)
    return EXIT_OK


def _show(result: Coverage) -> None:
    """Per factor, the takes within spec against those required at each level; then the missing cells."""
    for index, factor in enumerate(result.protocol.factors):
        table = Table('level', 'within spec', 'required', 'missing', title=f'{factor.name}'
                      + (f' ({factor.unit})' if factor.unit else ''))
        for level in factor.labels:
            counts = [c for c in result.cells if c.cell.conditions[index][1] == level]
            table.add_row(level, str(sum(min(c.within_spec, c.cell.required) for c in counts)),
                          str(sum(c.cell.required for c in counts)), str(sum(c.missing for c in counts)))
        stdout.print(table)
    missing = result.missing_cells()
    for c in missing[:SHOWN_MISSING]:
        stdout.print(f'missing: {c.cell.key}  {c.within_spec}/{c.cell.required}', markup=False)
    if len(missing) > SHOWN_MISSING:
        stdout.print(f'... and {len(missing) - SHOWN_MISSING} more missing combinations (see --json, or --next N)',
                     markup=False)
