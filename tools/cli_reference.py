"""Write docs/cli.md, every option of every `robodata` command, from the command line's own parser, so the
reference cannot drift from the code. `--check` only compares (exit 1 and a diff when docs/cli.md is stale): the
tests run it so.

    .venv/bin/python tools/cli_reference.py [--check]
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / 'docs' / 'cli.md'
WIDTH = '100'  # argparse wraps to $COLUMNS: one width, so every machine writes the same page


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path] if path else []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _commands(sub, (*path, name))
    return found


def _parser_of(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> argparse.ArgumentParser:
    for name in path:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return parser


def render() -> str:
    """The page: the top-level help, then each command's (and subcommand's) --help as it prints."""
    os.environ['COLUMNS'] = WIDTH
    from ros_robodata.cli.main import build_parser

    parser = build_parser()
    out = ['# Every option of every command', '',
           'Generated from the `robodata` command line itself by `tools/cli_reference.py` (`make docs` writes it; a '
           'test fails when it is stale). What each command is for: [commands.md](commands.md).', '',
           '## robodata', '', '```text', parser.format_help().rstrip(), '```', '']
    for path in _commands(parser):
        out += [f'## robodata {" ".join(path)}', '', '```text', _parser_of(parser, path).format_help().rstrip(),
                '```', '']
    return '\n'.join(out)


def main() -> int:
    check = '--check' in sys.argv[1:]
    page = render()
    if not check:
        OUT.write_text(page, encoding='utf-8')
        print(f'wrote {OUT}')
        return 0
    current = OUT.read_text(encoding='utf-8') if OUT.is_file() else ''
    if current == page:
        return 0
    sys.stdout.writelines(difflib.unified_diff(current.splitlines(True), page.splitlines(True), str(OUT), 'parser'))
    print(f'\n{OUT} is stale: run .venv/bin/python tools/cli_reference.py')
    return 1


if __name__ == '__main__':
    sys.exit(main())
