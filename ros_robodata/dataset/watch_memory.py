"""What a watcher decided about each recording, kept across restarts.

Telling whether a recording was imported already means reading it (its content id); a watcher restarted over a
folder of 10,000 recordings would read them all again. So each decision is kept with the recording's path and
the size and mtime of its files: a recording found again unchanged is known, one that changed is looked at
afresh. The memory is a JSON-lines file in the dataset (one per watched folder), appended to and compacted
when it holds many superseded lines; a damaged or missing memory only costs a re-read, never a wrong import (the
content id against the dataset still decides).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ros_robodata.dataset.dataset import Dataset

__all__ = ['MEMORY_FOLDER', 'WatchMemory']

MEMORY_FOLDER = '.watch'  # in the dataset's root, hidden from listings

State = tuple[tuple[str, int, int], ...]


@dataclass
class WatchMemory:
    """The decisions of the watchers of one folder into one dataset."""

    path: Path
    known: dict[str, tuple[State, str]] = field(default_factory=dict)
    _lines: int = 0

    @classmethod
    def open(cls, dataset: Dataset, folder: Path) -> WatchMemory:
        """The memory of watching `folder` into `dataset` (empty the first time, or when it cannot be read)."""
        name = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:16]
        memory = cls(dataset.root / MEMORY_FOLDER / f'{name}.jsonl')
        try:
            with memory.path.open(encoding='utf-8', errors='replace') as f:
                for line in f:
                    memory._lines += 1
                    memory._learn(line)
        except OSError:
            pass
        return memory

    def _learn(self, line: str) -> None:
        try:
            entry = json.loads(line)
            state = tuple((str(n), int(s), int(m)) for n, s, m in entry['state'])
            self.known[str(entry['path'])] = (state, str(entry['outcome']))
        except (ValueError, KeyError, TypeError, RecursionError):
            pass  # a line cut by a crash: that recording is read again

    def decided(self, recording: Path, state: State) -> bool:
        """The recording was imported or refused before, its files unchanged since."""
        known = self.known.get(str(recording))
        return known is not None and known[0] == state

    def remember(self, recording: Path, state: State, outcome: str) -> None:
        """Keep a decision ('imported', 'refused'); a memory that cannot be written is only a slower restart."""
        self.known[str(recording)] = (state, outcome)
        line = json.dumps({'path': str(recording), 'state': [list(s) for s in state], 'outcome': outcome})
        try:
            self.path.parent.mkdir(exist_ok=True)
            if self._lines > 1000 and self._lines > 2 * len(self.known):
                self._compact()  # holds this decision too
                return
            with self.path.open('a', encoding='utf-8') as f:
                f.write(line + '\n')
            self._lines += 1
        except OSError:
            pass

    def _compact(self) -> None:
        tmp = self.path.with_name(f'.{self.path.name}.tmp')
        entries: list[dict[str, Any]] = [{'path': p, 'state': [list(s) for s in state], 'outcome': outcome}
                                         for p, (state, outcome) in self.known.items()]
        tmp.write_text(''.join(json.dumps(e) + '\n' for e in entries), encoding='utf-8')
        os.replace(tmp, self.path)
        self._lines = len(entries)
