"""What rides along with each frame of a LeRobot export: the quality checks that flagged it, the subtask and event of
the segmenter, and which runs of frames are kept when flagged windows are cut."""

from __future__ import annotations

from typing import Any

import numpy as np

MIN_PART_FRAMES = 2  # a stretch between flagged windows shorter than this is dropped, not exported


def _span(item: Any, start: str, end: str) -> tuple[int, int] | None:
    """(start, end) ns of a sidecar entry; None for one that is not (a hand-edited or damaged file)."""
    try:
        if isinstance(item, dict):
            return int(item[start]), int(item[end])
        return int(item[0]), int(item[1])
    except (KeyError, IndexError, TypeError, ValueError):
        return None


def flags_per_tick(findings: list[Any], ticks: np.ndarray) -> list[str]:
    """Per tick, the quality checks whose flagged windows hold it (comma-separated), '' for none."""
    out = [''] * len(ticks)
    for finding in findings if isinstance(findings, list) else []:
        if not isinstance(finding, dict) or not isinstance(finding.get('ranges_ns'), list):
            continue
        check = str(finding.get('check', ''))
        for window in finding['ranges_ns']:
            span = _span(window, '', '')
            if span is None:
                continue
            for k in np.flatnonzero((ticks >= span[0]) & (ticks <= span[1])):
                out[k] = f'{out[k]},{check}' if out[k] else check
    return out


def labels_per_tick(events: dict[str, Any], ticks: np.ndarray, fps: int) -> tuple[list[str], list[str]]:
    """Per tick, the subtask of the timeline it falls in and the event (if any) within half a frame of it."""
    subtask = [''] * len(ticks)
    timeline = events.get('timeline')
    for item in timeline if isinstance(timeline, list) else []:
        span = _span(item, 'start_ns', 'end_ns')
        if span is not None:
            for inside in np.flatnonzero((ticks >= span[0]) & (ticks < span[1])):
                subtask[inside] = str(item.get('name', ''))
    event = [''] * len(ticks)
    half = 5e8 / fps
    found = events.get('events')
    for item in found if isinstance(found, list) and len(ticks) else []:
        span = _span(item, 't_ns', 't_ns')
        if span is None:
            continue
        k = int(np.argmin(np.abs(ticks - span[0])))
        if abs(int(ticks[k]) - span[0]) <= half:
            kind = str(item.get('kind', ''))
            event[k] = f'{event[k]},{kind}' if event[k] else kind
    return subtask, event


def kept_runs(keep: np.ndarray) -> list[np.ndarray]:
    """Runs of consecutive kept ticks, each at least MIN_PART_FRAMES long."""
    idx = np.flatnonzero(keep)
    if not len(idx):
        return []
    runs = np.split(idx, np.flatnonzero(np.diff(idx) > 1) + 1)
    return [r for r in runs if len(r) >= MIN_PART_FRAMES]
