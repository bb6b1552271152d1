"""The terminal a person watches: consoles for stdout and stderr, progress bars, sizes. Shared by the `robodata`
command and the nodes that talk to an operator (the demo), so neither imports the other."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

from rich.console import Console
from rich.progress import track

T = TypeVar('T')

# Piped output (CI logs, `| less`) gets wide lines rather than tables truncated at 80 columns.
stdout = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)


def progress(items: Iterable[T], description: str, total: int | None = None, quiet: bool = False) -> Iterator[T]:
    """A progress bar on stderr when someone is watching; plain iteration otherwise."""
    if quiet or not sys.stderr.isatty():
        yield from items
        return
    yield from track(items, description=description, total=total, console=stderr, transient=True)


def human_bytes(size: int) -> str:
    value = float(size)
    for unit in ('B', 'KiB', 'MiB', 'GiB'):
        if value < 1024 or unit == 'GiB':
            return f'{value:.0f} {unit}' if unit == 'B' else f'{value:.1f} {unit}'
        value /= 1024
    return f'{value:.1f} TiB'
