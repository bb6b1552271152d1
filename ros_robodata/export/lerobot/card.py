"""The dataset card (README.md) of a LeRobot export: where the data came from and how it was chosen, so whoever
trains on it can trace every episode back to its bag and rebuild the export."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from ros_robodata.dataset.dataset import Dataset
from ros_robodata.export.lerobot.policy import Selection
from ros_robodata.profile import Profile


def write_card(path: Path, dataset: Dataset, profile: Profile, policy: dict[str, Any], selection: Selection,
               rows: list[dict[str, Any]], failed: dict[str, str], version: str,
               release: tuple[str, str] | None = None) -> None:
    sources = sorted({r['source_episode_id'] for r in rows})
    outcomes = Counter(dataset.episode(e).outcome for e in sources)
    splits = Counter(r['split'] for r in rows)
    front = {'tags': ['LeRobot', 'ros_robodata', profile.robot.name], 'task_categories': ['robotics'],
             'configs': [{'config_name': 'default', 'data_files': 'data/*/*.parquet'}]}
    lines = ['---', yaml.safe_dump(front, sort_keys=False).rstrip(), '---', '',
             f'# {dataset.name}: {profile.robot.name}', '',
             f'A LeRobot v3.0 dataset exported by ros_robodata {version} (`robodata export lerobot`).', '',
             '## Provenance', '',
             f'- source dataset: `{dataset.name}` ({dataset.root})',
             f'- robot profile: `{profile.source}`, sha256 `{profile.sha256}`',
             f'- ros_robodata version: {version}',
             *([f'- release: `{release[0]}`, manifest sha256 `{release[1]}` (exactly its episodes; '
                f'`robodata release verify {dataset.root} {release[0]}` checks the source still holds them)']
               if release else []),
             f'- source episodes ({len(sources)}): ' + ', '.join(f'`{e}`' for e in sources), '',
             '## Curation policy', '']
    lines += [f'- {key}: {json.dumps(value)}' for key, value in policy.items()]
    lines += ['', '## Counts', '',
              f'- LeRobot episodes: {len(rows)} (from {len(sources)} source episodes; a source episode cut at '
              'flagged windows gives several)',
              f'- frames: {sum(r["length"] for r in rows)}',
              '- outcome mix: ' + ', '.join(f'{k} {v}' for k, v in sorted(outcomes.items())),
              '- splits (LeRobot episodes): ' + ', '.join(f'{k} {v}' for k, v in sorted(splits.items())), '']
    if selection.warnings:
        lines += ['## Warnings', ''] + [f'- {w}' for w in selection.warnings] + ['']
    if selection.left_out or failed:
        lines += ['## Left out', '']
        lines += [f'- `{e}`: {why}' for e, why in sorted(selection.left_out.items())]
        lines += [f'- `{e}`: failed: {why}' for e, why in sorted(failed.items())]
        lines.append('')
    lines += ['## Columns beyond LeRobot\'s', '',
              '- per frame: `subtask` (the segmenter\'s timeline), `event` (grasp, release ... within half a frame), '
              '`quality.flags` (checks whose flagged windows hold the frame), `quality.flagged`',
              '- per episode (meta/episodes): `source_episode_id`, `source_part`, `source_start_ns`, `outcome`, '
              '`review` (approved / rejected), `score`, `operator`, `mode`, `split`, `flagged_frames`, `max_offset_ms` '
              '(the farthest any picked sample lay from its frame\'s time)',
              '- meta/info.json `ros_robodata`: where the action comes from, the policy, the profile\'s sha256', '']
    path.write_text('\n'.join(lines) + '\n', encoding='utf-8')
