"""Puts samples of several streams into header-stamp order, so live and offline runs see the same sequence.

Live, messages of different topics arrive interleaved by the network's whims; in a bag, by the recorder's.
Ordering by stamp makes the detector's input depend only on each stream's own sequence. A stream that falls
silent holds the others back at most `max_wait_ns` of stamp time.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any


class StampOrder:
    def __init__(self, streams: Sequence[str], max_wait_ns: int = 300_000_000) -> None:
        self._streams = list(streams)
        self._queues: dict[str, deque[tuple[int, Any]]] = {s: deque() for s in self._streams}
        self._last: dict[str, int | None] = dict.fromkeys(self._streams)
        self._newest: int | None = None
        self._max_wait_ns = max_wait_ns

    def push(self, stream: str, stamp_ns: int, item: Any) -> list[tuple[str, int, Any]]:
        """Queue one sample; returns the samples (stream, stamp, item) now safe to process, in stamp order."""
        self._queues[stream].append((stamp_ns, item))
        if self._newest is None or stamp_ns > self._newest:
            self._newest = stamp_ns
        return self._release(final=False)

    def flush(self) -> list[tuple[str, int, Any]]:
        """Everything still queued (end of the bag or episode)."""
        return self._release(final=True)

    def _release(self, final: bool) -> list[tuple[str, int, Any]]:
        out: list[tuple[str, int, Any]] = []
        while True:
            heads = [(q[0][0], i, s) for i, (s, q) in enumerate(self._queues.items()) if q]
            if not heads:
                return out
            stamp, _, stream = min(heads)
            if not final:
                for other in self._streams:
                    if other == stream or self._queues[other]:
                        continue
                    last = self._last[other]
                    caught_up = last is not None and last >= stamp
                    timed_out = self._newest is not None and self._newest - stamp > self._max_wait_ns
                    if not (caught_up or timed_out):
                        return out
            _, item = self._queues[stream].popleft()
            previous = self._last[stream]
            self._last[stream] = stamp if previous is None else max(stamp, previous)
            out.append((stream, stamp, item))
