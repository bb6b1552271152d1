"""LeRobot datasets (v3.0 or v2.1) into rosbag2 bags, one per episode, for the benchmarks on real teleoperation
recordings (bench/segment_real.py, bench/quality_detection.py). This is `robodata import` (ros_robodata/dataset/
import_lerobot.py): the robot's measured joints (`observation.state`) become a sensor_msgs/JointState on
/observation/state, the commanded ones (`action`) one on /action, and each camera video JPEG CompressedImages, at
the dataset's frame times after a fixed epoch (episode k starts k hours after 2023-11-14 22:13 UTC). Joints are
named as meta/info.json names them, else joint_0, joint_1, ...

    .venv/bin/python bench/lerobot_to_bag.py test/data/lerobot/reachy2_apple_storage /tmp/reachy_bags
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ros_robodata.dataset.importers import import_recordings  # noqa: E402
from ros_robodata.errors import RobodataError  # noqa: E402


def convert(root: Path, out: Path) -> list[Path]:
    """Import the LeRobot dataset at `root` into a dataset at `out`; returns its episodes' bag folders, in the
    LeRobot dataset's episode order."""
    run = import_recordings([root], out)
    if run.failed:
        raise SystemExit('; '.join(f'{source}: {reason}' for source, reason in run.failed.items()))
    dataset = run.dataset
    order = sorted(dataset.episode_ids(), key=lambda e: dataset.episode(e).source['lerobot']['episode_index'])
    return [dataset.bag_dir(e) for e in order]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('dataset', type=Path, help='a LeRobot dataset folder (meta/info.json, data/...)')
    parser.add_argument('out', type=Path, help='the ros_robodata dataset to make (one episode per LeRobot episode)')
    args = parser.parse_args()
    try:
        for bag in convert(args.dataset, args.out):
            print(bag)
    except RobodataError as err:
        print(f'lerobot_to_bag: {err}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
