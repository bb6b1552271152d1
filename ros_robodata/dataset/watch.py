"""Recordings that keep arriving (robots' logs every shift, uploads): a folder watched, each one imported once.

What counts as one recording and when its writer has finished it is arrivals.py's to say: a folder of storage
files is one bag, taken once its metadata.yaml is there, or (for recorders that write none) once every MCAP file
ends in its footer, and its files have not changed for `settle_s`. A recording whose end never comes (a killed
recorder) is taken as it is after `incomplete_after_s` unchanged. Whether it was imported already is decided by
its content id against the dataset, so a restarted watcher, a renamed file or a second copy of a log never makes
a second episode; what was decided is remembered (memory.py) by path, size and mtime, so a restart does not read
10,000 recordings again.

Left running for weeks, it says (once each) what it waits for, what it cannot read (and tries again later), and
when the watched folder is gone (an unmounted share) and back; it never stops on a bad file.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ros_robodata.dataset.arrivals import find_arrivals, unfinished
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.importers import Imported, ImportOptions, import_recording
from ros_robodata.dataset.sources import METADATA_FILE, Recording, file_state
from ros_robodata.dataset.staging import import_lock
from ros_robodata.dataset.watch_memory import WatchMemory
from ros_robodata.errors import RobodataError
from ros_robodata.files import write_cause
from ros_robodata.profile import Profile

__all__ = ['RETRY_S', 'Watcher']

RETRY_S = 60.0  # a recording that could not be read (permission, a share that went away) is tried again after this

State = tuple[tuple[str, int, int], ...]


@dataclass
class _Seen:
    state: State
    since: float
    done: bool = False  # imported, found in the dataset already, or refused for this state of its files
    told: str = ''  # what was last said about it (each thing once)
    retry_at: float = 0.0


def _state(recording: Recording) -> State:
    """(name, size, mtime_ns) of its files, metadata.yaml too: what tells a recording still being written."""
    files = list(recording.files)
    if recording.kind == 'bag':
        files.append(recording.path / METADATA_FILE)
    return file_state(files)


@dataclass
class Watcher:
    """Polls `folder` every `interval_s`; `poll()` imports what became complete since the last call.

    `on_note(path, text)` hears what the watcher waits for, cannot read, or took as it is; `on_imported` and
    `on_failed` each result."""

    folder: Path
    dataset: Dataset
    options: ImportOptions
    profile: Profile | None = None
    settle_s: float = 5.0
    on_imported: Callable[[Imported], None] = lambda _r: None
    on_failed: Callable[[Recording, str], None] = lambda _r, _m: None
    on_note: Callable[[Path, str], None] = lambda _p, _m: None
    incomplete_after_s: float = 600.0
    _seen: dict[Path, _Seen] = field(default_factory=dict)
    _told_unreadable: dict[Path, str] = field(default_factory=dict)
    _gone: bool = False
    memory: WatchMemory | None = None

    def __post_init__(self) -> None:
        if self.memory is None:
            self.memory = WatchMemory.open(self.dataset, self.folder)

    def poll(self, now: float | None = None) -> list[Imported]:
        now = time.monotonic() if now is None else now
        if not self._folder_there():
            return []
        recordings, unreadable = find_arrivals(self.folder, skip=self.dataset.root)
        self._say_unreadable(unreadable)
        present = {recording.path for recording in recordings}
        for gone in [path for path in self._seen if path not in present]:  # moved away (--move), deleted: forgotten
            del self._seen[gone]
        ready: list[tuple[Recording, str]] = []
        for recording in recordings:
            state = _state(recording)
            seen = self._seen.get(recording.path)
            if seen is None or seen.state != state:
                done = self.memory is not None and self.memory.decided(recording.path, state)
                self._seen[recording.path] = _Seen(state, now, done=done)  # new or changing: look again next time
                continue
            if seen.done or now < seen.retry_at:
                continue
            waited = now - seen.since
            why = unfinished(recording)
            if not why and (recording.has_metadata or waited >= self.settle_s):
                ready.append((recording, ''))
            elif why and waited >= self.incomplete_after_s:
                ready.append((recording, f'taken as it is after {waited:.0f} s unchanged: {why}'))
            elif why and waited >= self.settle_s and seen.told != why:
                seen.told = why
                self.on_note(recording.path, f'waiting: {why}; taken as it is if it does not change for '
                                             f'{self.incomplete_after_s:g} s')
        return self._take(ready, now) if ready else []

    def _take(self, ready: list[tuple[Recording, str]], now: float) -> list[Imported]:
        results = []
        with import_lock(self.dataset):
            for recording, note in ready:
                seen = self._seen[recording.path]
                if note:
                    self.on_note(recording.path, note)
                try:
                    result = import_recording(self.dataset, recording, self.options, profile=self.profile)
                except RobodataError as err:
                    self.on_failed(recording, ' '.join(str(err).split()))
                    seen.done = True  # a bad recording: looked at again only when its files change
                    self._remember(recording, seen, 'refused')
                    continue
                except OSError as err:  # cannot read it now (permission, a share gone): not its fault, try later
                    seen.retry_at = now + RETRY_S
                    self.on_failed(recording, f'{getattr(err, "filename", None) or recording.path}: cannot read: '
                                              f'{write_cause(err)}; tried again in {RETRY_S:g} s')
                    continue
                seen.done = True
                self._remember(recording, seen, 'imported')
                results.append(result)
                self.on_imported(result)
        return results

    def _remember(self, recording: Recording, seen: _Seen, outcome: str) -> None:
        if self.memory is not None:
            self.memory.remember(recording.path, seen.state, outcome)

    def _folder_there(self) -> bool:
        there = self.folder.is_dir()
        if not there and not self._gone:
            self.on_note(self.folder, 'the watched folder is gone (an unmounted share?): waiting for it to come back')
        elif there and self._gone:
            self.on_note(self.folder, 'the watched folder is back: watching it again')
        self._gone = not there
        return there

    def _say_unreadable(self, unreadable: list[tuple[Path, str]]) -> None:
        for path, why in unreadable:
            if self._told_unreadable.get(path) != why:
                self._told_unreadable[path] = why
                self.on_note(path, f'cannot read: {why}; looked at again at every scan')
        now_unreadable = {path for path, _ in unreadable}
        for path in [p for p in self._told_unreadable if p not in now_unreadable]:
            del self._told_unreadable[path]

    def run(self, interval_s: float = 2.0, stop: Callable[[], bool] = lambda: False) -> None:
        """Poll until `stop()` says so (or Ctrl-C, which leaves every finished import in place)."""
        while not stop():
            self.poll()
            deadline = time.monotonic() + interval_s
            while time.monotonic() < deadline and not stop():
                time.sleep(min(0.1, interval_s))
