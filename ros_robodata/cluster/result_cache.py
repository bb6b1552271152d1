"""Per-episode results kept by content, so a cluster run that was stopped (Ctrl-C, a lost driver, episodes that
failed) finishes only what is missing when it runs again, and a rerun of a finished run submits nothing.

Kept in the user's own cache folder ($XDG_CACHE_HOME/ros_robodata/results, else ~/.cache/...), never in the dataset:
the results are pickles, and a pickle is only read from a place that another person's dataset cannot plant files
in. The key is a hash of everything the result depends on (the bag files' sizes, times and recorded hashes, the
sidecars read, the profile, the options, the code), so a changed input is a miss, never a stale result."""

from __future__ import annotations

import hashlib
import os
import pickle
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

_FORMAT = b'ros_robodata.result/1\n'


def default_folder() -> Path:
    base = os.environ.get('XDG_CACHE_HOME') or str(Path.home() / '.cache')
    return Path(base) / 'ros_robodata' / 'results'


@cache
def code_fingerprint() -> str:
    """The installed ros_robodata's source files (names, sizes, times): results of other code are not reused."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob('*.py')):
        stat = path.stat()
        digest.update(f'{path.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns}\n'.encode())
    return digest.hexdigest()


def content_key(*parts: Any) -> str:
    """A key from the parts' reprs (dataclasses, paths, numbers, strings) and the code's fingerprint."""
    digest = hashlib.sha256(code_fingerprint().encode())
    for part in parts:
        digest.update(repr(part).encode('utf-8', 'backslashreplace') + b'\0')
    return digest.hexdigest()


SMALL = 1 << 20  # a file this small (a sidecar, metadata.yaml) is known by its bytes, a larger one by size and time


def files_fingerprint(paths: Iterable[Path]) -> tuple[tuple[str, int, int | str], ...] | None:
    """(name, size, and the SHA-256 of a small file or the mtime of a large one) of each file: a sidecar copied
    again with the same bytes is the same input. None when one cannot be read (nothing is reused then)."""
    out: list[tuple[str, int, int | str]] = []
    try:
        for p in sorted(paths):
            stat = p.stat()
            tag = hashlib.sha256(p.read_bytes()).hexdigest() if stat.st_size <= SMALL else stat.st_mtime_ns
            out.append((str(p), stat.st_size, tag))
    except OSError:
        return None
    return tuple(out)


class ResultCache:
    """Pickled results by key in a folder of the user's. A broken or foreign entry is a miss, never an error.

    Args:
        folder: where the entries live; default_folder() when None.
    """

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or default_folder()
        self.hits = 0

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f'{key}.pickle'

    def get(self, key: str) -> Any | None:
        path = self._path(key)
        try:
            raw = path.read_bytes()
            if not raw.startswith(_FORMAT) or path.stat().st_uid != os.getuid():
                return None
            value = pickle.loads(raw[len(_FORMAT):])  # our own entry, in the user's own folder
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError, TypeError):
            return None
        self.hits += 1
        return value

    def put(self, key: str, value: Any) -> None:
        """Keep `value` (best effort: a full or read-only cache folder costs a rerun, not this run)."""
        path = self._path(key)
        tmp = path.with_name(f'.{path.name}.{os.getpid()}.tmp')
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 'wb') as f:
                f.write(_FORMAT + pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
            os.replace(tmp, path)
        except (OSError, pickle.PicklingError, TypeError, AttributeError):
            tmp.unlink(missing_ok=True)
