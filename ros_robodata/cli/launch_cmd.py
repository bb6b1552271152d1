"""`robodata check-launch [PATH...]`: find broken launch files without ROS, before a rig does."""

from __future__ import annotations

import argparse
from pathlib import Path

from ros_robodata.cli.command_common import print_json
from ros_robodata.errors import RobodataError
from ros_robodata.launch_files.check import PACKAGE, check_launch_file, find_package_root


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        'check-launch', help='statically check launch XML files (arguments, nodes, paths, substitutions)',
        description='Check ROS 2 launch XML files without running them: well-formed, every <arg> described, every '
                    f'{PACKAGE} node executable present in scripts/ and installed, every $(find-pkg-share {PACKAGE}) '
                    'path present, every $(var ...) declared, no unknown substitution. Exit status 1 if anything '
                    'is wrong.')
    p.add_argument('paths', nargs='*', metavar='PATH',
                   help='a launch file, a folder of *.launch.xml, or a package folder (its launch/); '
                        'default: the package around the current directory')
    p.add_argument('--package-root', metavar='DIR',
                   help=f'the {PACKAGE} source folder $(find-pkg-share {PACKAGE}) stands for '
                        '(default: found above each PATH)')
    p.add_argument('--json', action='store_true', help='print {launch file: [problems]} as JSON')
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    results = {str(path): check_launch_file(path, root) for path, root in _targets(args)}
    if args.json:
        print_json(results)
    else:
        for path, problems in results.items():
            for problem in problems or ['ok']:
                print(f'{path}: {problem}')
        bad = sum(1 for problems in results.values() if problems)
        if bad:
            count = sum(len(problems) for problems in results.values())
            print(f'{count} problem(s) in {bad} of {len(results)} launch file(s)')
    return 1 if any(results.values()) else 0


def _targets(args: argparse.Namespace) -> list[tuple[Path, Path]]:
    """(launch file, package root) pairs; finding nothing to check is an error, not a pass."""
    given_root = Path(args.package_root) if args.package_root else None
    if given_root is not None and not (given_root / 'package.xml').is_file():
        raise RobodataError(f'{given_root}: not a package folder (no package.xml)')
    paths = [Path(p) for p in args.paths]
    if not paths:
        root = given_root or find_package_root(Path.cwd())
        if root is None:
            raise RobodataError(f'no {PACKAGE} package.xml at or above the current directory; '
                                'name the launch files or pass --package-root')
        paths = [root]
    targets: list[tuple[Path, Path]] = []
    for path in paths:
        if not path.exists():
            raise RobodataError(f'{path}: no such file or directory')
        root = given_root or find_package_root(path)
        if root is None:
            raise RobodataError(f'{path}: not inside the {PACKAGE} package (no package.xml naming it above); '
                                'pass --package-root')
        if path.is_file():
            files = [path]
        else:
            folder = path / 'launch' if (path / 'package.xml').is_file() else path
            files = sorted(folder.glob('*.launch.xml'))
            if not files:
                raise RobodataError(f'{folder}: no *.launch.xml files to check')
        targets.extend((file, root) for file in files)
    return targets
