"""What `robodata export lerobot` costs: frames per second exported and the share of it spent encoding video,
against a raw read of the same bags in the same run.

A temporary dataset of simulated episodes (`write_sim_episode`, both cameras, no ROS) is exported with
`export_lerobot` (h264, crf 23, a key frame every 2 frames: the defaults). Baselines, timed on the same bags:

  raw read        every message of every bag (`BagReader.messages()`, nothing decoded)
  read + decode   the same, every camera image decoded to RGB (what the export cannot do without)

The export's own split is printed: time inside the video encoder (PyAV, frames in and packets muxed) against the
whole. The best of --repeats counts. No numeric target: the ratios are informative.

    .venv/bin/python bench/lerobot_export.py [--episodes 4] [--seconds 8] [--size 320x240] [--repeats 2]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ros_robodata.bag.image import decode_image  # noqa: E402
from ros_robodata.bag.reader import BagReader  # noqa: E402
from ros_robodata.dataset import Dataset  # noqa: E402
from ros_robodata.dataset.episode import Episode  # noqa: E402
from ros_robodata.export.lerobot import LeRobotOptions, export_lerobot  # noqa: E402
from ros_robodata.profile import load_profile  # noqa: E402
from ros_robodata.sim.to_bag import write_sim_episode  # noqa: E402

PROFILE = ROOT / 'config' / 'sim_cell.yaml'
CAMERAS = ('/camera/wrist/image_raw', '/camera/scene/image_raw')


def make_dataset(root: Path, episodes: int, seconds: float, size: tuple[int, int]) -> Dataset:
    profile = load_profile(PROFILE)
    dataset = Dataset.create(root, profile=profile)
    for seed in range(episodes):
        episode_id = f'20260101-1200{seed:02d}'
        write_sim_episode(dataset.bag_dir(episode_id), profile, seed=seed, cameras=True, image_size=size,
                          max_duration_s=seconds)
        dataset.add_episode(Episode(id=episode_id, task='pick_cube', status='complete', outcome='success'))
    return dataset


def raw_read(dataset: Dataset, decode: bool) -> tuple[float, int, int]:
    started = time.perf_counter()
    messages = images = 0
    for episode_id in dataset.episode_ids():
        with BagReader(dataset.bag_dir(episode_id)) as reader:
            for message in reader.messages():
                messages += 1
                if decode and message.topic in CAMERAS:
                    decode_image(reader.decode(message), 'rgb')
                    images += 1
    return time.perf_counter() - started, messages, images


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--episodes', type=int, default=4)
    parser.add_argument('--seconds', type=float, default=8.0, help='length of each simulated episode')
    parser.add_argument('--size', default='320x240', help='camera image size WxH')
    parser.add_argument('--repeats', type=int, default=2)
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.split('x'))
    with tempfile.TemporaryDirectory(prefix='robodata_lerobot_bench_') as tmp:
        dataset = make_dataset(Path(tmp) / 'ds', args.episodes, args.seconds, (width, height))
        read = min(raw_read(dataset, False) for _ in range(args.repeats))
        decoded = min(raw_read(dataset, True) for _ in range(args.repeats))
        runs = []
        for n in range(args.repeats):
            out = Path(tmp) / f'export_{n}'
            started = time.perf_counter()
            result = export_lerobot(dataset, out, LeRobotOptions())
            runs.append((time.perf_counter() - started, result))
            size = sum(p.stat().st_size for p in out.rglob('*') if p.is_file())
            shutil.rmtree(out)
        seconds, result = min(runs, key=lambda r: r[0])
        encode = result.seconds['video_encoding']
        frames = result.frames
        print(f'{args.episodes} episodes of {args.seconds:g} s, 2 cameras at {width}x{height}, 30 fps grid: '
              f'{frames} LeRobot frames ({2 * frames} video frames), {read[1]} bag messages')
        print(f'raw read       {read[0]:7.2f} s   {read[1] / read[0]:9.0f} messages/s')
        print(f'read + decode  {decoded[0]:7.2f} s   {decoded[2] / decoded[0]:9.0f} images/s '
              f'({decoded[2]} camera images)')
        print(f'export         {seconds:7.2f} s   {frames / seconds:9.1f} frames/s   '
              f'video encoding {encode:.2f} s = {encode / seconds:.0%} of the export   output {size / 1e6:.1f} MB')
        print(f'ratios: export / raw read = {seconds / read[0]:.1f}x, export / (read + decode) = '
              f'{seconds / decoded[0]:.1f}x')
    return 0


if __name__ == '__main__':
    sys.exit(main())
