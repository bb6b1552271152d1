"""The terminal a person watches: consoles for stdout and stderr, progress bars, sizes. Shared by the `robodata`
command and the nodes that talk to an operator (the demo), so neither imports the other."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:
    from rich.console import Console

T = TypeVar('T')


class _Terminal:
    """A rich Console made when first printed to: loading rich costs every command ~0.1 s of its start, and a
    command run with --json (or that fails on its arguments) prints nothing through it."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: Console | None = None

    def real(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real(), name)


def say(line: str) -> None:
    """One plain line on stderr (a command's notes and per-episode failures): printed as it is, without loading
    rich for it."""
    print(line, file=sys.stderr, flush=True)


def real_console(console: Console) -> Console:
    """The Console behind `stdout` or `stderr`, for rich's own widgets (a Progress), which keep state on it."""
    return console.real() if isinstance(console, _Terminal) else console


# Piped output (CI logs, `| less`) gets wide lines rather than tables truncated at 80 columns.
stdout = cast('Console', _Terminal(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160))
stderr = cast('Console', _Terminal(stderr=True, highlight=False, soft_wrap=True))


def progress(items: Iterable[T], description: str, total: int | None = None, quiet: bool = False) -> Iterator[T]:
    """A progress bar on stderr when someone is watching; plain iteration otherwise."""
    if quiet or not sys.stderr.isatty():
        yield from items
        return
    from rich.progress import track

    yield from track(items, description=description, total=total, console=real_console(stderr), transient=True)


def human_bytes(size: int) -> str:
    value = float(size)
    for unit in ('B', 'KiB', 'MiB', 'GiB'):
        if value < 1024 or unit == 'GiB':
            return f'{value:.0f} {unit}' if unit == 'B' else f'{value:.1f} {unit}'
        value /= 1024
    return f'{value:.1f} TiB'
