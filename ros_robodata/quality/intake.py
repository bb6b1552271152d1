"""What an import runs on the episodes it made (`robodata import --then segment,score`), and a watched folder
wired to the same steps (`robodata import --watch`): the segmenter and scorer of `robodata segment` and
`robodata score`, so an episode that arrives is judged exactly as one scored later by hand.

It lives in `quality/` because it is the lowest layer that sees both the importers (`dataset/`) and the two
steps (`events/`, `quality/`); the command line only parses and prints.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.importers import Imported, ImportOptions
from ros_robodata.dataset.sources import Recording
from ros_robodata.dataset.watch import Watcher
from ros_robodata.errors import RobodataError
from ros_robodata.events.offline import segment_episode
from ros_robodata.profile import Profile
from ros_robodata.quality.scoring import score_episodes

__all__ = ['THEN_STEPS', 'AfterImport', 'WatchRun', 'after_import', 'then_steps', 'watch_folder']

THEN_STEPS = ('segment', 'score')


def then_steps(text: str | None) -> tuple[str, ...]:
    """The steps of a `--then` value ('segment,score'), in the order given.

    Raises:
        RobodataError: a step that is not one of THEN_STEPS.
    """
    steps = tuple(s.strip() for s in (text or '').split(',') if s.strip())
    if unknown := [s for s in steps if s not in THEN_STEPS]:
        raise RobodataError(f'--then: unknown step(s) {", ".join(unknown)} (any of {", ".join(THEN_STEPS)})')
    return steps


@dataclass
class AfterImport:
    """What the steps after an import found: per episode the events segmented (or why not), the scores (and
    what failed), the checks the profile leaves out; `segment_skipped` when the rig has nothing to segment."""

    segmented: dict[str, int | str] | None = None
    segment_skipped: str | None = None
    scores: dict[str, float] | None = None
    score_failed: dict[str, str] = field(default_factory=dict)
    skipped_checks: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The `then` object of `robodata import --json`: 'segment' and 'score' for the steps that ran."""
        out: dict[str, Any] = {}
        if self.segment_skipped is not None:
            out['segment'] = f'skipped: {self.segment_skipped}'
        elif self.segmented is not None:
            out['segment'] = dict(self.segmented)
        if self.scores is not None:
            out['score'] = {**self.scores, **self.score_failed}
        return out


def after_import(dataset: Dataset, profile: Profile | None, episode_ids: list[str],
                 steps: tuple[str, ...]) -> AfterImport:
    """Segment and/or score the new episodes of `dataset` (events.json, quality.json and the catalog written).

    Args:
        dataset: where the episodes were imported.
        profile: the dataset's robot profile (None when it has none).
        episode_ids: the episodes just made.
        steps: any of THEN_STEPS.

    Raises:
        RobodataError: steps were asked for but the dataset has no profile to read the episodes with.
    """
    done = AfterImport()
    if not steps or not episode_ids:
        return done
    if profile is None:
        raise RobodataError(f'--then {",".join(steps)}: {dataset.root} has no robot profile to read the episodes '
                            'with; import with --profile')
    if 'segment' in steps:
        if profile.topics.gripper is None and profile.topics.wrench is None:
            done.segment_skipped = 'the profile has no gripper or wrench topic'
        else:
            done.segmented = {}
            for episode_id in episode_ids:
                try:
                    done.segmented[episode_id] = len(segment_episode(dataset, episode_id, profile).events)
                except RobodataError as err:
                    done.segmented[episode_id] = ' '.join(str(err).split())
    if 'score' in steps:
        run = score_episodes(dataset, profile, episode_ids)
        done.scores = {i: s.score for i, s in run.scores.items()}  # the catalog's score, extras counted in
        done.score_failed = dict(run.failed)
        done.skipped_checks = list(run.skipped)
    return done


@dataclass
class WatchRun:
    """What a watch did before it stopped: the episodes imported and how long it watched."""

    imported: list[str] = field(default_factory=list)
    seconds: float = 0.0


def watch_folder(folder: Path, dataset: Dataset, options: ImportOptions, profile: Profile | None,
                 steps: tuple[str, ...], *, interval_s: float, settle_s: float, incomplete_after_s: float,
                 on_imported: Callable[[Imported, AfterImport], None],
                 on_failed: Callable[[Recording, str], None], on_note: Callable[[Path, str], None],
                 stop: Callable[[], bool]) -> WatchRun:
    """Import what arrives in `folder` until `stop()` (or Ctrl-C), running `steps` on each arrival's episodes.

    Args:
        folder: the folder recordings arrive in.
        dataset: where they go.
        options: how they are imported.
        profile: the dataset's robot profile, read once.
        steps: what runs on each arrival's episodes (any of THEN_STEPS).
        interval_s: seconds between looks at the folder.
        settle_s: how long a recording must be unchanged before it is imported.
        incomplete_after_s: how long an unfinished recording waits before it is imported as partial.
        on_imported: hears each arrival's result and what the steps found.
        on_failed: hears a recording that could not be imported, and why.
        on_note: hears what the watcher waits for or cannot read.
        stop: polled; True ends the watch.
    """
    run = WatchRun()

    def imported(result: Imported) -> None:
        run.imported.extend(result.episodes)
        on_imported(result, after_import(dataset, profile, result.episodes, steps))

    watcher = Watcher(folder, dataset, options, profile, settle_s, imported, on_failed, on_note, incomplete_after_s)
    started = time.monotonic()
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C ends a watch; every finished import stays
        watcher.run(interval_s, stop=stop)
    run.seconds = time.monotonic() - started
    return run
