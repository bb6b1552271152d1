"""The pre-roll: the last few seconds before the operator pressed start.

Operators press start a moment after they begin moving; the approach matters for learning. While
no episode runs, messages go into this ring buffer, bounded by time and by memory, and the start
of an episode writes what it holds.
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple


class Buffered(NamedTuple):
    topic: str
    t_ns: int
    data: bytes | memoryview


class PreRoll:
    def __init__(self, seconds: float, max_bytes: int = 512 * 1024 * 1024) -> None:
        self.window_ns = int(seconds * 1e9)
        self.max_bytes = max_bytes
        self._items: deque[Buffered] = deque()
        self._bytes = 0
        self.evicted_for_memory = 0

    def push(self, topic: str, t_ns: int, data: bytes | memoryview) -> None:
        if self.window_ns <= 0:
            return
        self._items.append(Buffered(topic, t_ns, data))
        self._bytes += len(data)
        oldest_kept = t_ns - self.window_ns
        while self._items and (self._items[0].t_ns < oldest_kept or self._bytes > self.max_bytes):
            dropped = self._items.popleft()
            self._bytes -= len(dropped.data)
            if dropped.t_ns >= oldest_kept:
                self.evicted_for_memory += 1

    def take(self, since_ns: int) -> list[Buffered]:
        """Everything received at or after since_ns, in arrival order; empties the buffer."""
        items = [item for item in self._items if item.t_ns >= since_ns]
        self.clear()
        return items

    def clear(self) -> None:
        self._items.clear()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._items)

    @property
    def bytes(self) -> int:
        return self._bytes
