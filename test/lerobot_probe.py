"""Run by LeRobot's own venv (.venv-lerobot, see tools/lerobot_venv.py), not by the project's: load a dataset with
LeRobotDataset and report what a training script would see, as JSON on stdout; decoded frames go to .npy files.

    .venv-lerobot/bin/python test/lerobot_probe.py DATASET_ROOT OUT_DIR INDEX [INDEX ...]
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ.setdefault('HF_HUB_OFFLINE', '1')  # a local dataset: never the hub


def main() -> int:
    import numpy as np
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    root, out = Path(sys.argv[1]), Path(sys.argv[2])
    dataset = LeRobotDataset('local/robodata_export', root=root, tolerance_s=1e-4)
    report = {'num_frames': dataset.num_frames, 'num_episodes': dataset.num_episodes, 'fps': dataset.fps,
              'features': {k: list(v['shape']) for k, v in dataset.features.items()},
              'camera_keys': list(dataset.meta.camera_keys), 'video_backend': dataset.video_backend,
              'stats_keys': {k: sorted(v) for k, v in (dataset.meta.stats or {}).items()}, 'items': []}
    for index in (int(i) for i in sys.argv[3:]):
        item = dataset[index]  # decodes the video frames at this frame's timestamp, checked to tolerance_s
        entry = {'index': index}
        for key, value in item.items():
            if key in dataset.meta.camera_keys:
                path = out / f'{index}_{key}.npy'
                np.save(path, (value.numpy().transpose(1, 2, 0) * 255).round().astype(np.uint8))
                entry[key] = str(path)
            elif hasattr(value, 'tolist'):
                entry[key] = value.tolist()
            else:
                entry[key] = value
        report['items'].append(entry)
    # a training window: this frame and the one before, found by timestamp and checked to tolerance_s by LeRobot
    keys = ['observation.state', *dataset.meta.camera_keys]
    windowed = LeRobotDataset('local/robodata_export', root=root, tolerance_s=1e-4,
                              delta_timestamps={k: [-1 / dataset.fps, 0.0] for k in keys})
    middle = windowed[int(sys.argv[-2])]
    report['window'] = {k: list(middle[k].shape) for k in keys}
    report['window_padded'] = {k: middle[f'{k}_is_pad'].tolist() for k in keys}
    # LeRobot's own statistics of the exported state and action, episode by episode then pooled, as its recorder does
    from lerobot.datasets.compute_stats import aggregate_stats, compute_episode_stats

    table = dataset.hf_dataset.with_format(None)
    columns = {key: np.asarray(table[key], dtype=np.float32) for key in ('observation.state', 'action')}
    episodes = np.asarray(table['episode_index'])
    per_episode = [compute_episode_stats({key: values[episodes == e] for key, values in columns.items()},
                                         dataset.features) for e in sorted(set(episodes.tolist()))]
    report['lerobot_stats'] = {key: {k: np.asarray(v).tolist() for k, v in value.items()}
                               for key, value in aggregate_stats(per_episode).items()}
    print(json.dumps(report))
    return 0


if __name__ == '__main__':
    sys.exit(main())
