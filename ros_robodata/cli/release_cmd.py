"""`robodata release create|verify|diff|list`: frozen, hashed sets of approved episodes a model can name."""

from __future__ import annotations

import argparse
import sys

from rich.markup import escape
from rich.table import Table

from ros_robodata.cli.command_common import (
    add_filters,
    add_json,
    add_target,
    dataset_at,
    filters_from,
    human_bytes,
    print_json,
    stdout,
)
from ros_robodata.dataset.audit_chain import audit_head
from ros_robodata.dataset.targets import select_rows
from ros_robodata.dataset.tombstones import read_tombstones
from ros_robodata.governance import load_approval_policy
from ros_robodata.governance.release import create_release, diff_releases, list_releases, verify_release


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser('release', help='freeze approved episodes as a release; verify, compare and list releases',
                       description='A release is an immutable manifest (releases/NAME/manifest.json) of approved '
                                   'episodes: every file with its sha256, the policy, the profile, the ros_robodata '
                                   'version and the audit chain\'s head; its own sha256 (manifest.sha256, sha256sum '
                                   'format) is what an export from it and a model trained on it name.')
    actions = p.add_subparsers(dest='action', metavar='ACTION', required=True)
    c = actions.add_parser('create', help='freeze the approved episodes as release NAME',
                           description='Freeze the approved episodes (of those the filters pick; with --policy only '
                                       'those approved under exactly that policy file) as release NAME.')
    add_target(c, 'a dataset', 'DATASET')
    c.add_argument('name', metavar='NAME', help='the release name (letters, digits, "_", "-", "."; never reused)')
    c.add_argument('--policy', metavar='FILE', help='only episodes approved under this approval policy')
    c.add_argument('--who', help='who releases (default: the login name)')
    c.add_argument('--why', default='', help='why (kept in the manifest and the audit log)')
    add_filters(c)
    add_json(c)
    c.set_defaults(func=run_create)
    v = actions.add_parser('verify', help="re-hash a release's files and name every change",
                           description='Re-hash every file release NAME lists and name every change: a changed byte, '
                                       'a missing or added file, a withdrawn episode, an edited manifest. Exit status '
                                       '1 when anything changed.')
    add_target(v, 'a dataset', 'DATASET')
    v.add_argument('name', metavar='NAME', help='the release')
    add_json(v)
    v.set_defaults(func=run_verify)
    d = actions.add_parser('diff', help='episodes added, removed and changed between two releases')
    add_target(d, 'a dataset', 'DATASET')
    d.add_argument('a', metavar='A', help='the earlier release')
    d.add_argument('b', metavar='B', help='the later release')
    add_json(d)
    d.set_defaults(func=run_diff)
    ls = actions.add_parser('list', help="a dataset's releases")
    add_target(ls, 'a dataset', 'DATASET')
    add_json(ls)
    ls.set_defaults(func=run_list)


def run_create(args: argparse.Namespace) -> int:
    dataset = dataset_at(args.target)
    policy = load_approval_policy(args.policy) if args.policy else None
    filters = filters_from(args)
    rows = select_rows(dataset, filters)
    release = create_release(dataset, args.name, rows, policy=policy, where=filters.where,
                             who=args.who, why=args.why, audit_head=audit_head(dataset.audit_path))
    left = len(rows) - len(release.episodes)
    if args.json:
        print_json({**release.to_json(), 'left_out': left})
        return 0
    info = release.to_json()
    stdout.print(f'release {release.name}: {info["episodes"]} episode(s), {info["files"]} file(s), '
                 f'{human_bytes(info["bytes"])}; manifest sha256 {release.sha256}', markup=False)
    if left:
        stdout.print(f'{left} picked episode(s) left out: not approved' + (f' under policy {policy.name}' if policy
                                                                           else ''), markup=False)
    return 0


def run_verify(args: argparse.Namespace) -> int:
    dataset = dataset_at(args.target)
    check = verify_release(dataset, args.name, read_tombstones(dataset.root))
    if args.json:
        print_json(check.to_json())
    else:
        for change in check.changes:
            tag = '[yellow]WITHDRAWN[/]' if change.what == 'withdrawn' else '[red]CHANGED[/]'
            stdout.print(f'{tag} {escape(str(change))}')
        stdout.print(f'release {args.name}: {check.files} file(s), {human_bytes(check.bytes)} re-hashed, '
                     f'{len(check.changes)} change(s)', markup=False)
    if not check.ok:
        print(f'robodata release verify: error: release {args.name} does not match its manifest: '
              f'{len(check.changes)} change(s) (listed on stdout)', file=sys.stderr)
    return 0 if check.ok else 1


def run_diff(args: argparse.Namespace) -> int:
    diff = diff_releases(dataset_at(args.target), args.a, args.b)
    if args.json:
        print_json(diff.to_json())
        return 0
    for episode_id in diff.added:
        stdout.print(f'+ {episode_id}', markup=False)
    for episode_id in diff.removed:
        stdout.print(f'- {episode_id}', markup=False)
    for episode_id, files in diff.changed.items():
        stdout.print(f'~ {episode_id}: {", ".join(files)}', markup=False)
    stdout.print(f'{args.a} -> {args.b}: {len(diff.added)} added, {len(diff.removed)} removed, '
                 f'{len(diff.changed)} changed', markup=False)
    return 0


def run_list(args: argparse.Namespace) -> int:
    releases = list_releases(dataset_at(args.target))
    if args.json:
        print_json([r.to_json() for r in releases])
        return 0
    if not releases:
        stdout.print('no release yet (`robodata release create DATASET NAME` makes one from approved episodes)',
                     markup=False)
        return 0
    table = Table(box=None, pad_edge=False)
    for column in ('release', 'created', 'who', 'episodes', 'size', 'policy', 'manifest sha256'):
        table.add_column(column)
    for r in releases:
        info = r.to_json()
        table.add_row(r.name, info['created'], info['who'], str(info['episodes']), human_bytes(info['bytes']),
                      info['policy'] or '-', r.sha256[:16])
    stdout.print(table)
    return 0
