"""`robodata export lerobot --pool`: one training mix from a dataset of several robots (a `robodata merge`).

Per embodiment a LeRobot v3.0 dataset in OUT/<embodiment>/ (its own state and action names and shapes, the curation
policy applied to its episodes alone), and OUT/mixture.json: per source (one embodiment) its folder, embodiment tag,
sampling weight, counts and the normalisation statistics of its state and action, read back from the dataset written.
With `--unify pad` the sources are padded into one dataset instead (lerobot_pad.py). OUT must be absent or empty; the
parts are written into a hidden folder beside it and OUT appears whole, or not at all.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ros_robodata.dataset import lerobot_layout as layout
from ros_robodata.dataset.copies import record_copy
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.embodiments import Embodiment, embodiment_of, embodiments
from ros_robodata.errors import ExportError, RobodataError
from ros_robodata.export.lerobot.exporter import LeRobotExport, export_lerobot
from ros_robodata.export.lerobot.lerobot_options import LeRobotOptions
from ros_robodata.export.lerobot.lerobot_pad import pad_sources
from ros_robodata.files import write_atomic

__all__ = ['MIXTURE_FILE', 'PooledExport', 'export_pool', 'parse_weights']

MIXTURE_FILE = 'mixture.json'
MIXTURE_FORMAT = 'ros_robodata.mixture/1'
WEIGHTINGS = ('episodes', 'hours')
STAT_KEYS = ('mean', 'std', 'min', 'max', 'q01', 'q99')


@dataclass
class PooledExport:
    """What a pooled export wrote: OUT, per source (embodiment) its export, the mixture, and what was left out.

    Args:
        out_dir: the folder written (the per-embodiment datasets and mixture.json, or the padded dataset).
        parts: per source, the LeRobot export of its episodes.
        mixture: the content of mixture.json.
        left_out: per source with no episode exported, why.
        notes: warnings for the user.
    """

    out_dir: Path
    parts: dict[str, LeRobotExport] = field(default_factory=dict)
    mixture: dict[str, Any] = field(default_factory=dict)
    left_out: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> dict[str, str]:
        return {f'{name}/{k}': v for name, part in self.parts.items() for k, v in part.failed.items()}

    def to_json(self) -> dict[str, Any]:
        return {'out': str(self.out_dir), 'mixture': self.mixture, 'left_out': self.left_out,
                'parts': {name: part.to_json() for name, part in self.parts.items()}, 'warnings': self.notes}


def parse_weights(text: str | None) -> str | dict[str, float]:
    """`--weights`: 'episodes' (the default: by episode count), 'hours' (by duration), or NAME=W,NAME=W.

    Raises:
        RobodataError: not one of those, a weight that is not a number >= 0, or all of them 0.
    """
    text = (text or 'episodes').strip()
    if text in WEIGHTINGS:
        return text
    out: dict[str, float] = {}
    for part in (p.strip() for p in text.split(',') if p.strip()):
        name, sep, value = part.partition('=')
        try:
            weight = float(value)
        except ValueError:
            weight = -1.0
        if not sep or not name.strip() or not weight >= 0:
            raise RobodataError(f'--weights: {part!r} is not NAME=WEIGHT (a number >= 0); or give '
                                f'{" or ".join(WEIGHTINGS)}')
        out[name.strip()] = weight
    if not out or sum(out.values()) <= 0:
        raise RobodataError('--weights: the weights add up to 0')
    return out


def export_pool(dataset: Dataset, out: str | os.PathLike[str], options: LeRobotOptions | None = None, *,
                episode_ids: list[str] | None = None, weights: str | dict[str, float] = 'episodes',
                unify: str | None = None,
                progress: Callable[[Iterable[Any]], Iterator[Any]] | None = None) -> PooledExport:
    """Export a dataset's episodes as a training mix: one LeRobot dataset per embodiment and mixture.json (or,
    `unify='pad'`, one dataset padded to the widest embodiment; see lerobot_pad.py).

    Args:
        dataset: the dataset (of one robot or several).
        out: the folder to write (new or empty).
        options: the curation policy and format, applied to each embodiment's episodes alone; `cameras` names the
            cameras wanted of any embodiment (each exports those it has).
        episode_ids: the episodes to choose from; None: all.
        weights: 'episodes' (by source episodes exported), 'hours' (by frames over fps), or a weight per source
            name (an embodiment's name), normalised to add up to 1.
        unify: None (a dataset per embodiment), or 'pad'.
        progress: wraps each source's episodes to show progress.

    Raises:
        ExportError: `out` is not empty, no source has an episode that passes the policy, or a part fails.
        RobodataError: `weights` names an unknown source or leaves one out, or `unify` is not 'pad'.
    """
    options = options or LeRobotOptions()
    options.check()
    if unify not in (None, 'pad'):
        raise RobodataError(f'--unify: {unify!r} is not a way to unify; the one there is: pad')
    out_dir = Path(out)
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise ExportError(f'{out_dir}: exists and is not empty: an export never writes over anything; give a new '
                          'folder')
    known = embodiments(dataset)
    groups: dict[str, list[str]] = {}
    by_name: dict[str, Embodiment] = {}
    for episode_id in (episode_ids if episode_ids is not None else dataset.episode_ids()):
        embodiment = embodiment_of(dataset, dataset.episode(episode_id), known)
        groups.setdefault(embodiment.name, []).append(episode_id)
        by_name[embodiment.name] = embodiment
    if not groups:
        raise ExportError(f'{dataset.root}: no episode to export')
    if isinstance(weights, dict):
        unknown, missing = sorted(set(weights) - set(groups)), sorted(set(groups) - set(weights))
        if unknown or missing:
            raise RobodataError('--weights: ' + '; '.join(
                ([f'no source {", ".join(unknown)}'] if unknown else [])
                + ([f'no weight for {", ".join(missing)}'] if missing else []))
                + f' (the sources: {", ".join(groups)})')
    result = PooledExport(out_dir)
    staging = out_dir.parent / f'.{out_dir.name}.pool-partial'
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        for name, ids in groups.items():
            profile = by_name[name].profile
            mine = [c.name for c in profile.topics.cameras]
            cameras = () if unify else (None if options.cameras is None else
                                        tuple(c for c in options.cameras if c in mine))
            if unify and mine:
                result.notes.append(f'{name}: --unify pad writes state and action only (its cameras '
                                    f'{", ".join(mine)} are left out: the robots do not share them)')
            try:
                part = export_lerobot(dataset, staging / name, replace(options, cameras=cameras), episode_ids=ids,
                                      progress=progress, profile=profile, record=False)
            except ExportError as err:
                if 'no episode passes the policy' not in str(err):
                    raise
                result.left_out[name] = ' '.join(str(err).split())
                continue
            result.parts[name] = part
        if not result.parts:
            raise ExportError(f'{dataset.root}: no source has an episode that passes the policy: ' + '; '.join(
                f'{k}: {v}' for k, v in result.left_out.items()))
        sources = _sources(dataset, staging, result, by_name, weights)
        if unify == 'pad':
            padded = staging.parent / f'.{out_dir.name}.pad-partial'
            shutil.rmtree(padded, ignore_errors=True)
            pad_sources(padded, [(s['name'], staging / s['name']) for s in sources], dataset.name)
            shutil.rmtree(staging)
            staging = padded
            for source in sources:
                source['path'] = '.'
        result.mixture = {'format': MIXTURE_FORMAT, 'dataset': dataset.name,
                          'unify': unify, 'weighting': weights if isinstance(weights, str) else 'given',
                          'sources': sources}
        write_atomic(staging / MIXTURE_FILE, (json.dumps(result.mixture, indent=2) + '\n').encode())
        if out_dir.exists():
            out_dir.rmdir()  # found empty above
        staging.rename(out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    kept = [e for part in result.parts.values() for e in part.selection.kept if e not in part.failed]
    if note := record_copy(dataset.root, 'lerobot', out_dir, kept):
        result.notes.append(note)
    for name, part in result.parts.items():
        part.out_dir = out_dir if unify else out_dir / name
    return result


def _sources(dataset: Dataset, staging: Path, result: PooledExport, by_name: dict[str, Embodiment],
             weights: str | dict[str, float]) -> list[dict[str, Any]]:
    """mixture.json's sources: per embodiment exported its folder, tags, counts, weight and normalisation stats."""
    sources = []
    for index, (name, part) in enumerate(result.parts.items()):
        root = staging / name
        info = layout.read_info(root)
        stats = json.loads((root / layout.STATS).read_text(encoding='utf-8'))
        kept = [e for e in part.selection.kept if e not in part.failed]
        origins = sorted({(dataset.episode(e).copied_from or [{}])[0].get('dataset') or dataset.name for e in kept})
        profile = by_name[name].profile
        sources.append({
            'name': name, 'path': name, 'embodiment': name, 'embodiment_index': index,
            'robot_type': profile.robot.name, 'profile_sha256': profile.sha256, 'from_datasets': origins,
            'episodes': len(kept), 'lerobot_episodes': part.episodes, 'frames': part.frames, 'fps': info['fps'],
            'hours': part.frames / info['fps'] / 3600,
            'state_names': info['features'][layout.STATE]['names'],
            'action_names': info['features'][layout.ACTION]['names'],
            'stats': {key: {k: stats[key][k] for k in STAT_KEYS if k in stats.get(key, {})}
                      for key in (layout.STATE, layout.ACTION)}})
    if isinstance(weights, dict):
        raw = {s['name']: weights[s['name']] for s in sources}
    else:
        raw = {s['name']: float(s[weights]) for s in sources}
    total = sum(raw.values())
    if total <= 0:
        raise ExportError(f'--weights: the sources exported ({", ".join(raw)}) weigh 0 in all')
    for source in sources:
        source['weight'] = raw[source['name']] / total
    return sources
