"""What every command shares: resolving a path to a bag, an episode or a dataset; output."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from rich.console import Console
from rich.progress import track

from ros_robodata.dataset import Dataset, is_dataset
from ros_robodata.errors import RobodataError

T = TypeVar('T')

# Piped output (CI logs, `| less`) gets wide lines rather than tables truncated at 80 columns.
stdout = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)
stderr = Console(stderr=True, highlight=False)


@dataclass(frozen=True)
class Target:
    """A path the user named, and what it is."""

    kind: str  # 'dataset' | 'episode' | 'bag'
    path: Path
    dataset: Dataset | None = None
    episode_id: str | None = None


def resolve(path_text: str) -> Target:
    """A dataset (has dataset.yaml), an episode folder (has episode.yaml), or else a bag."""
    path = Path(path_text)
    if not path.exists():
        raise RobodataError(f'{path}: no such file or directory')
    if path.is_dir() and is_dataset(path):
        return Target('dataset', path, Dataset.open(path))
    if path.is_dir() and (path / 'episode.yaml').is_file():
        root = path.resolve().parent.parent
        if not is_dataset(root):
            raise RobodataError(f'{path}: episode folder is not inside a dataset (no {root}/dataset.yaml)')
        return Target('episode', path, Dataset.open(root), path.resolve().name)
    return Target('bag', path)


def need(target: Target, *kinds: str) -> Target:
    if target.kind not in kinds:
        wanted = ' or '.join(_article(k) for k in kinds)
        raise RobodataError(f'{target.path}: is {_article(target.kind)}, not {wanted}')
    return target


def _article(kind: str) -> str:
    return f'an {kind}' if kind[0] in 'aeiou' else f'a {kind}'


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, default=str)
    sys.stdout.write('\n')


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
