"""`robodata audit verify` and `robodata audit seal`: a dataset's audit.jsonl checked line by line against its hash
chain, and an audit an older ros_robodata wrote sealed so that the chain can start."""

from __future__ import annotations

import argparse
import sys

from ros_robodata.cli.command_common import add_json, add_target, dataset_at, print_json, stdout
from ros_robodata.dataset.audit import seal_audit, verify_audit


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser('audit', help="check a dataset's audit log (audit.jsonl) or seal an old one",
                       description="Every line of a dataset's audit.jsonl carries the sha256 of the line before it: "
                                   '`verify` finds a line that was changed, removed, put in or moved; `seal` lets an '
                                   'audit an older ros_robodata wrote (no hash chain) start one.')
    actions = p.add_subparsers(dest='audit_action', metavar='ACTION', required=True)

    v = actions.add_parser('verify', help='check the hash chain of audit.jsonl',
                           description='Check every line of the audit log against the hash chain (and the sealed '
                                       'part against its seal). Exit status 1, with one line on stderr naming the '
                                       'file, the first bad line and what is wrong, when it does not check out. The '
                                       'last line is vouched for only by a head recorded elsewhere (a release).')
    add_target(v, 'a dataset', 'DATASET')
    add_json(v)
    v.set_defaults(func=run_verify)

    s = actions.add_parser('seal', help='seal an audit an older ros_robodata wrote, so that the chain starts',
                           description='Append one audit_seal entry carrying the sha256 of every line before it and '
                                       'how many there are; each entry written after it is chained. An audit that is '
                                       'sealed or chained already is left as it is.')
    add_target(s, 'a dataset', 'DATASET')
    s.add_argument('--who', help='who seals (kept in the seal; default: the login name)')
    s.add_argument('--why', default='', help='why (kept in the seal)')
    add_json(s)
    s.set_defaults(func=run_seal)


def run_verify(args: argparse.Namespace) -> int:
    path = dataset_at(args.target).audit_path
    check = verify_audit(path)
    if args.json:
        print_json({'audit': str(path), **check.to_dict()})
    else:
        for note in check.notes:
            stdout.print(f'note: {note}', markup=False)
        if check.ok:
            entries = f'{check.entries} entr{"y" if check.entries == 1 else "ies"}'
            stdout.print(f'{path}: ok: {entries}, the hash chain holds', markup=False)
    if not check.ok:
        print(f'robodata audit verify: error: {path}: {check.problem}', file=sys.stderr)
        return 1
    return 0


def run_seal(args: argparse.Namespace) -> int:
    path = dataset_at(args.target).audit_path
    sealed = seal_audit(path, args.who, args.why)
    if args.json:
        print_json({'audit': str(path), 'sealed': sealed.sealed, 'lines': sealed.lines,
                    'sha256': sealed.sha256, 'seal_line': sealed.seal_line, 'message': sealed.message})
    else:
        stdout.print(sealed.message, markup=False)
    return 0
