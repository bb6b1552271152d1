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
    print(json.dumps(report))
    return 0


if __name__ == '__main__':
    sys.exit(main())
