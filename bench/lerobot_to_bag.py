"""LeRobot datasets (v2.1 or v3.0 parquet) into rosbag2 bags, one per episode, for the segmenter benchmark on real
teleoperation recordings (bench/segment_real.py).

The robot's measured joints (`observation.state`) become a sensor_msgs/JointState on /observation/state and the
commanded ones (`action`: the leader arm, the VR controller) one on /action, at the dataset's frame times
(`timestamp`, seconds from the episode's start, put after a fixed epoch so every stamp is a real date). Joints are
named as meta/info.json names them, else joint_0, joint_1, ...; videos are left out.

    .venv/bin/python bench/lerobot_to_bag.py test/data/lerobot/reachy2_apple_storage /tmp/reachy_bags
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ros_robodata.bag.types import header, typestore  # noqa: E402
from ros_robodata.bag.writer import BagWriter  # noqa: E402

STATE_TOPIC, ACTION_TOPIC = '/observation/state', '/action'
EPOCH_NS = 1_700_000_000 * 1_000_000_000  # 2023-11-14: episode k starts k hours after it


def _names(info: dict[str, Any], feature: str, size: int) -> list[str]:
    names = (info.get('features', {}).get(feature) or {}).get('names')
    if isinstance(names, dict):  # v2.x: {"motors": [...]}
        names = next(iter(names.values()), None)
    if isinstance(names, list) and len(names) == size and all(isinstance(n, str) for n in names):
        return names
    return [f'joint_{i}' for i in range(size)]


def read_episodes(root: Path) -> tuple[dict[int, dict[str, np.ndarray]], dict[str, Any]]:
    """Every episode's timestamps, states and actions, by episode index."""
    import pyarrow.parquet as pq

    info_path = root / 'meta' / 'info.json'
    info = json.loads(info_path.read_text()) if info_path.is_file() else {}
    files = sorted((root / 'data').rglob('*.parquet'))
    if not files:
        raise SystemExit(f'{root}: no data/**/*.parquet: not a LeRobot dataset')
    columns: dict[str, list[Any]] = {'episode_index': [], 'timestamp': [], 'observation.state': [], 'action': []}
    for path in files:
        table = pq.read_table(path, columns=list(columns))
        for name in columns:
            columns[name] += table.column(name).to_pylist()
    episode = np.asarray(columns['episode_index'])
    out = {}
    for k in sorted(set(episode.tolist())):
        rows = np.flatnonzero(episode == k)
        order = rows[np.argsort(np.asarray(columns['timestamp'])[rows], kind='stable')]
        out[int(k)] = {'t': np.asarray(columns['timestamp'], dtype=np.float64)[order],
                       'state': np.asarray([columns['observation.state'][i] for i in order], dtype=np.float64),
                       'action': np.asarray([columns['action'][i] for i in order], dtype=np.float64)}
    return out, info


def convert(root: Path, out: Path) -> list[Path]:
    """One bag per episode under `out` (episode_000, ...); returns their folders."""
    episodes, info = read_episodes(root)
    types = typestore().types
    bags = []
    for k, ep in episodes.items():
        names = {STATE_TOPIC: _names(info, 'observation.state', ep['state'].shape[1]),
                 ACTION_TOPIC: _names(info, 'action', ep['action'].shape[1])}
        bag = out / f'episode_{k:03d}'
        with BagWriter(bag) as writer:
            for topic in (STATE_TOPIC, ACTION_TOPIC):
                writer.add_topic(topic, 'sensor_msgs/msg/JointState')
            for i, t_s in enumerate(ep['t']):
                stamp = EPOCH_NS + k * 3_600_000_000_000 + round(float(t_s) * 1e9)
                for topic, values in ((STATE_TOPIC, ep['state'][i]), (ACTION_TOPIC, ep['action'][i])):
                    empty = np.array([], dtype=np.float64)
                    writer.write_message(topic, stamp, types['sensor_msgs/msg/JointState'](
                        header=header(stamp), name=names[topic], position=values, velocity=empty, effort=empty))
        bags.append(bag)
    return bags


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('dataset', type=Path, help='a LeRobot dataset folder (meta/info.json, data/...)')
    parser.add_argument('out', type=Path, help='folder for the bags (one per episode)')
    args = parser.parse_args()
    for bag in convert(args.dataset, args.out):
        print(bag)
    return 0


if __name__ == '__main__':
    sys.exit(main())
