"""What rides along with each frame of a LeRobot export: the quality checks that flagged it, the subtask and event of
the segmenter, and which runs of frames are kept when flagged windows are cut."""

from __future__ import annotations

from typing import Any

import numpy as np

MIN_PART_FRAMES = 2  # a stretch between flagged windows shorter than this is dropped, not exported


def flags_per_tick(findings: list[dict[str, Any]], ticks: np.ndarray) -> list[str]:
    """Per tick, the quality checks whose flagged windows hold it (comma-separated), '' for none."""
    out = [''] * len(ticks)
    for finding in findings:
        for start, end in finding.get('ranges_ns') or []:
            inside = np.flatnonzero((ticks >= int(start)) & (ticks <= int(end)))
            for k in inside:
                out[k] = f'{out[k]},{finding.get("check", "")}' if out[k] else str(finding.get('check', ''))
    return out


def labels_per_tick(events: dict[str, Any], ticks: np.ndarray, fps: int) -> tuple[list[str], list[str]]:
    """Per tick, the subtask of the timeline it falls in and the event (if any) within half a frame of it."""
    subtask = [''] * len(ticks)
    for span in events.get('timeline') or []:
        name = str(span.get('name', ''))
        for k in np.flatnonzero((ticks >= int(span['start_ns'])) & (ticks < int(span['end_ns']))):
            subtask[k] = name
    event = [''] * len(ticks)
    half = 5e8 / fps
    for item in events.get('events') or []:
        t = int(item['t_ns'])
        k = int(np.argmin(np.abs(ticks - t))) if len(ticks) else -1
        if k >= 0 and abs(int(ticks[k]) - t) <= half:
            event[k] = f'{event[k]},{item["kind"]}' if event[k] else str(item['kind'])
    return subtask, event


def kept_runs(keep: np.ndarray) -> list[np.ndarray]:
    """Runs of consecutive kept ticks, each at least MIN_PART_FRAMES long."""
    idx = np.flatnonzero(keep)
    if not len(idx):
        return []
    runs = np.split(idx, np.flatnonzero(np.diff(idx) > 1) + 1)
    return [r for r in runs if len(r) >= MIN_PART_FRAMES]
