"""Recordings that keep arriving (robots' logs every shift, uploads): a folder watched, each one imported once.

A recording is taken when it is complete: a bag folder once its metadata.yaml is there (rosbag2 writes it when
the bag closes) and its files stopped changing, anything else (a bare .mcap/.db3, a bag folder still without
metadata, a video) once its files have not changed for `settle_s`. Whether it was imported already is decided
by its content id against the dataset, so a restarted watcher, a renamed file or a second copy of a log never
makes a second episode.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.importer import Imported, ImportOptions, import_recording
from ros_robodata.dataset.sources import Recording, file_state, find_recordings
from ros_robodata.dataset.staging import import_lock
from ros_robodata.errors import RobodataError
from ros_robodata.profile import Profile


@dataclass
class _Seen:
    state: tuple[tuple[str, int, int], ...]
    since: float
    done: bool = False  # imported, found in the dataset already, or failed for this state of its files


@dataclass
class Watcher:
    """Polls `folder` every `interval_s`; `poll()` imports what became complete since the last call."""

    folder: Path
    dataset: Dataset
    options: ImportOptions
    profile: Profile | None = None
    settle_s: float = 5.0
    on_imported: Callable[[Imported], None] = lambda _r: None
    on_failed: Callable[[Recording, str], None] = lambda _r, _m: None
    _seen: dict[Path, _Seen] = field(default_factory=dict)

    def poll(self, now: float | None = None) -> list[Imported]:
        now = time.monotonic() if now is None else now
        try:
            recordings = find_recordings([self.folder])
        except RobodataError:
            return []  # an empty folder: nothing yet
        ready = []
        root = self.dataset.root.resolve()
        for recording in recordings:
            if recording.path.resolve().is_relative_to(root):
                continue  # the dataset's own bags, when it lies inside the watched folder
            state = file_state(recording.files)
            seen = self._seen.get(recording.path)
            if seen is None or seen.state != state:
                self._seen[recording.path] = _Seen(state, now)  # new or still changing: look again next time
                continue
            if seen.done:
                continue
            if recording.has_metadata or now - seen.since >= self.settle_s:
                ready.append(recording)
        results = []
        if not ready:
            return results
        with import_lock(self.dataset):
            for recording in ready:
                seen = self._seen[recording.path]
                try:
                    result = import_recording(self.dataset, recording, self.options, profile=self.profile)
                except RobodataError as err:
                    self.on_failed(recording, ' '.join(str(err).split()))
                    seen.done = True
                    continue
                seen.done = True
                results.append(result)
                self.on_imported(result)
        return results

    def run(self, interval_s: float = 2.0, stop: Callable[[], bool] = lambda: False) -> None:
        """Poll until `stop()` says so (or Ctrl-C, which leaves every finished import in place)."""
        while not stop():
            self.poll()
            deadline = time.monotonic() + interval_s
            while time.monotonic() < deadline and not stop():
                time.sleep(min(0.1, interval_s))
