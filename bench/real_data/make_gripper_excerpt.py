#!/usr/bin/env python3
"""Cut the right gripper of a few episodes out of the bimanual SO-101 recording (bench/real_data/bi_so101_clean_desk,
Ghosty2003/Techin517 at 3d659b17931c047a0a82c8fa73cc69d78f9a46dc, Apache-2.0) into test/data/grippers/.

The output .npz holds, per kept episode i (its LeRobot episode index): `t_<i>` (s, the recording's own timestamps),
`position_<i>` (observation.state right_gripper.pos) and `command_<i>` (action right_gripper.pos), float64 as
recorded (LeRobot's 0..100 gripper units); and `source`, `episodes`. Values are copied, never changed.

    .venv/bin/python bench/real_data/make_gripper_excerpt.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / 'bench/real_data/bi_so101_clean_desk'
OUT = ROOT / 'test/data/grippers/bi_so101_right_gripper.npz'
EPISODES = (3, 12, 13, 14, 16, 20, 22, 29)


def main() -> None:
    names = json.loads((SOURCE / 'meta/info.json').read_text())['features']['observation.state']['names']
    column = names.index('right_gripper.pos')
    table = pq.read_table(sorted((SOURCE / 'data').rglob('*.parquet'))[0],
                          columns=['episode_index', 'timestamp', 'observation.state', 'action']).to_pandas()
    arrays: dict[str, np.ndarray] = {
        'source': np.array('github.com/Ghosty2003/Techin517@3d659b17931c047a0a82c8fa73cc69d78f9a46dc:'
                           'huggingface/lerobot/project/bi_so101_test (Apache-2.0)'),
        'episodes': np.array(EPISODES)}
    for episode in EPISODES:
        rows = table[table.episode_index == episode]
        arrays[f't_{episode}'] = rows['timestamp'].to_numpy(dtype=np.float64)
        arrays[f'position_{episode}'] = np.array([row[column] for row in rows['observation.state']], dtype=np.float64)
        arrays[f'command_{episode}'] = np.array([row[column] for row in rows['action']], dtype=np.float64)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **arrays)
    print(f'{OUT}: {len(EPISODES)} episodes, {OUT.stat().st_size} bytes')


if __name__ == '__main__':
    main()
