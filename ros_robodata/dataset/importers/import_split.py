"""A long log split into episodes, one per window (`robodata import --split`): every window written in one pass
of the log, each episode committed whole; a window already imported is not imported again, and a log imported
with other windows is refused."""

from __future__ import annotations

import shutil
from dataclasses import replace
from typing import Any

from ros_robodata.bag.reader import BagReader
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.episode import Episode
from ros_robodata.dataset.episode_stats import bag_checksums, expected_rates, fill_stats
from ros_robodata.dataset.importers.import_common import Imported, ImportOptions, episode_id_for, source_record
from ros_robodata.dataset.sources import Recording
from ros_robodata.dataset.split import find_windows, write_windows
from ros_robodata.dataset.staging import STAGING_SUFFIX, commit_episode
from ros_robodata.errors import RobodataError
from ros_robodata.profile import Profile


def import_split(dataset: Dataset, recording: Recording, options: ImportOptions, profile: Profile | None,
                 who: str | None, cid: str, done: dict[str, Episode], result: Imported) -> Imported:
    """Import the windows of `recording` not yet in the dataset (`done`: its episodes from this content)."""
    assert options.split is not None
    whole = [i for i, e in done.items() if not e.source.get('window')]
    if whole:
        result.existing = whole
        result.notes.append(f'already imported whole as {", ".join(whole)}; not split again')
        return result
    with BagReader(recording.path) as reader:
        windows = find_windows(reader, options.split, profile)
        if not windows:
            raise RobodataError(f'{recording.path}: {options.split.describe()} finds no episode in this recording '
                                f'({reader.duration_ns / 1e9:.1f} s, {reader.message_count} message(s))')
        have = {_window_key(e.source['window']): i for i, e in done.items()}
        wanted = {_window_key(w.to_json()) for w in windows}
        if stray := sorted(i for key, i in have.items() if key not in wanted):
            raise RobodataError(f'{recording.path}: already imported with other windows as {", ".join(stray)}; '
                                'remove those episodes first to split it differently')
        todo = [w for w in windows if _window_key(w.to_json()) not in have]
        result.existing = sorted(have.values())
        if not todo:
            return result
        width = max(2, len(str(len(windows))))
        base = episode_id_for(recording.name)
        ids = [dataset.reserve_episode_id(f'{base}-{w.index + 1:0{width}d}') for w in todo]
        stagings = [dataset.episodes_dir / f'.{i}{STAGING_SUFFIX}' for i in ids]
        try:
            for staging in stagings:
                shutil.rmtree(staging, ignore_errors=True)
                staging.mkdir()
            storage = profile.recording.storage if profile else 'mcap'
            compression = profile.recording.compression if profile else 'zstd'
            written = write_windows(reader, todo, [s / 'bag' for s in stagings], expected_rates(profile),
                                    storage=storage, compression=compression)
            for episode_id, staging, window, stats in zip(ids, stagings, todo, written, strict=True):
                if stats is None:
                    shutil.rmtree(staging)
                    dataset.episode_dir(episode_id).rmdir()
                    result.notes.append(f'window {window.index + 1} ({window.describe(reader.start_ns)}) holds no '
                                        'message: no episode')
                    continue
                episode = Episode(
                    id=episode_id, task=window.task or options.task, operator=window.operator or options.operator,
                    mode=window.mode or options.mode, robot=profile.robot.name if profile else '',
                    outcome=window.outcome or options.outcome, status='complete',
                    profile_sha256=profile.sha256 if profile else '',
                    notes='\n'.join([*result.notes, *([window.note] if window.note else [])]),
                    source=source_record(recording, replace(options, method='copy'), cid, window={
                        **window.to_json(), 'of': len(windows), 'split': options.split.describe()}))
                episode.start_ns, episode.stop_ns = stats.first_ns, stats.last_ns
                fill_stats(episode, stats.topics)
                episode.bag_sha256 = bag_checksums(staging / 'bag', {}, linked=False)
                commit_episode(dataset, staging, episode, who)
                result.episodes.append(episode_id)
        except BaseException:
            for staging, episode_id in zip(stagings, ids, strict=True):
                if staging.exists():
                    shutil.rmtree(staging, ignore_errors=True)
                    reserved = dataset.episode_dir(episode_id)
                    if reserved.is_dir() and not any(reserved.iterdir()):
                        reserved.rmdir()
            raise
    return result


def _window_key(window: dict[str, Any]) -> tuple[int, int]:
    return int(window['start_ns']), int(window['end_ns'])
