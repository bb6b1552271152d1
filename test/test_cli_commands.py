"""`robodata` loads a command's module only when that command runs: its table of commands must name every command
the modules add, and a command's parser built alone must be the one `robodata --help` lists."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from ros_robodata.cli.main import COMMANDS, build_parser


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_the_table_names_every_command_module_and_every_command_it_adds() -> None:
    cli = Path(__file__).resolve().parents[1] / 'ros_robodata' / 'cli'
    sources = {p.stem: p.read_text() for p in cli.glob('*.py')}
    tabled = {module for module, _, _ in COMMANDS}
    for module in sources:  # a command module the table leaves out is one another command adds (export lerobot)
        if module.endswith(('_cmd', '_cmds')) and module not in tabled:
            assert any(f'import {module}' in text or f'{module},' in text for other, text in sources.items()
                       if other != module), f'{module} is in no command of the table'
    assert list(_commands(build_parser())) == [name for _, _, names in COMMANDS for name in names]


def test_a_command_built_alone_has_the_options_and_help_it_has_among_all() -> None:
    everything = _commands(build_parser())
    for _, _, names in COMMANDS:
        for name in names:
            alone = _commands(build_parser(name))
            assert set(alone) == set(names)
            assert alone[name].format_help() == everything[name].format_help()


def test_help_lists_every_command_and_a_mistyped_one_is_named_with_the_choices() -> None:
    run = subprocess.run([sys.executable, '-m', 'ros_robodata.cli.main', '--help'], capture_output=True, text=True,
                         check=False)
    assert run.returncode == 0
    for _, _, names in COMMANDS:
        for name in names:
            assert f'\n    {name}' in run.stdout
    wrong = subprocess.run([sys.executable, '-m', 'ros_robodata.cli.main', 'scor'], capture_output=True, text=True,
                           check=False)
    assert wrong.returncode == 2
    assert "invalid choice: 'scor' (choose from 'info'," in wrong.stderr and "'query'" in wrong.stderr
