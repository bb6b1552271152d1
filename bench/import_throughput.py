"""What importing costs: a whole bag, a 20-way split and a linked import, against reading and rewriting it.

A rig-like bag of about --size-mb on disk is written first (joint states and wrench at 500 Hz, two 640x480 rgb8
cameras at 30 Hz made of real photos with sensor noise, as zstd-compressed MCAP like the recorder writes). In the
same run, best of --repeats each:

- raw read: every message of the bag through BagReader (decompressed, nothing decoded);
- read + write: every message read and written into a new bag (BagWriter, the recorder's MCAP settings): the cost
  of moving the same bytes through rosbag2 once, the baseline the split is judged against;
- split: `import_recording` with --split-every (duration / 20) into a fresh dataset: 20 bags, each episode's
  stats, checksums and catalog row. Target: at most 1.5x read + write;
- copy import: the bag copied (hashed on the way) plus a stats pass over its messages (informative);
- link import: the same bag and a bag a tenth its size, each linked into a fresh dataset. Target: the time does
  not depend on the bag's size (large / small at most 1.5; the figure that matters is that it stays in ms).

Needs about 5x --size-mb of free space in the temporary folder (--tmp).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SPLIT_TARGET = 1.5
LINK_TARGET = 1.5


def write_rig_bag(path: Path, size_mb: float, seed: int = 0) -> tuple[int, float]:
    """A bag of about size_mb on disk; returns (messages, seconds of recording)."""
    import cv2

    from ros_robodata.bag.image import encode_image
    from ros_robodata.bag.types import typestore
    from ros_robodata.bag.writer import BagWriter

    types = typestore().types
    rng = np.random.default_rng(seed)
    photos = []
    for file in sorted((ROOT / 'test' / 'data' / 'photos').glob('*.png')):
        bgr = cv2.imread(str(file))
        photos.append(cv2.cvtColor(cv2.resize(bgr, (640, 480)), cv2.COLOR_BGR2RGB))
    noise = [rng.integers(-6, 7, (480, 640, 3)).astype(np.int16) for _ in range(8)]

    def header(ns: int, frame: str) -> object:
        return types['std_msgs/msg/Header'](stamp=types['builtin_interfaces/msg/Time'](sec=ns // 10**9,
                                                                                     nanosec=ns % 10**9),
                                            frame_id=frame)

    vec = types['geometry_msgs/msg/Vector3']
    t0 = 1_760_000_000_000_000_000
    messages = 0
    tick = 0
    with BagWriter(path) as writer:
        writer.add_topic('/joint_states', 'sensor_msgs/msg/JointState')
        writer.add_topic('/wrist/wrench', 'geometry_msgs/msg/WrenchStamped')
        for cam in ('wrist', 'scene'):
            writer.add_topic(f'/camera/{cam}/image_raw', 'sensor_msgs/msg/Image')
        while True:
            t = t0 + tick * 2_000_000  # 500 Hz
            writer.write_message('/joint_states', t, types['sensor_msgs/msg/JointState'](
                header=header(t, 'base'), name=[f'j{i}' for i in range(7)],
                position=np.sin(np.arange(7) + tick * 1e-3), velocity=np.zeros(7), effort=np.zeros(7)))
            writer.write_message('/wrist/wrench', t + 1, types['geometry_msgs/msg/WrenchStamped'](
                header=header(t, 'wrist'), wrench=types['geometry_msgs/msg/Wrench'](
                    force=vec(0.1, 0.2, 9.8), torque=vec(0.0, 0.0, 0.01))))
            messages += 2
            if tick % 17 == 0:  # ~30 Hz
                for k, cam in enumerate(('wrist', 'scene')):
                    pixels = np.clip(np.roll(photos[(tick // 17 + k) % len(photos)], tick % 640, axis=1)
                                     + noise[(tick + k) % len(noise)], 0, 255).astype(np.uint8)
                    writer.write_message(f'/camera/{cam}/image_raw', t + 2 + k, types['sensor_msgs/msg/Image'](
                        header=header(t, cam), **encode_image(pixels, 'rgb8')))
                    messages += 1
                if sum(f.stat().st_size for f in path.glob('*.mcap')) > size_mb * 1e6:
                    break
            tick += 1
    return messages, tick * 2e-3


def best_of(repeats: int, fn: Callable[[], object], before: Callable[[], object] = lambda: None) -> float:
    times = []
    for _ in range(repeats):
        before()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def raw_read(bag: Path) -> int:
    from ros_robodata.bag.reader import BagReader

    with BagReader(bag) as reader:
        return sum(1 for _ in reader.messages())


def read_write(bag: Path, out: Path) -> int:
    from ros_robodata.bag.reader import BagReader
    from ros_robodata.bag.writer import BagWriter

    with BagReader(bag) as reader, BagWriter(out) as writer:
        for info in reader.topics.values():
            writer.add_topic(info.name, info.msgtype, store=reader.typestore)
        count = 0
        for message in reader.messages():
            writer.write(message.topic, message.t_ns, message.data)
            count += 1
    return count


def import_into(root: Path, bag: Path, **options: object) -> list[str]:
    from ros_robodata.dataset import Dataset
    from ros_robodata.dataset.importers import ImportOptions, import_recording
    from ros_robodata.dataset.sources import find_recordings
    from ros_robodata.dataset.staging import import_lock

    dataset = Dataset.create(root)
    (recording,) = find_recordings([bag])
    with import_lock(dataset):
        return import_recording(dataset, recording, ImportOptions(**options)).episodes  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--size-mb', type=float, default=1000.0, help='size of the bag on disk (default 1000)')
    parser.add_argument('--repeats', type=int, default=2, help='timings are the best of this many (default 2)')
    parser.add_argument('--parts', type=int, default=20, help='episodes the split makes (default 20)')
    parser.add_argument('--tmp', help='folder for the bags (default: the system temporary folder)')
    args = parser.parse_args()
    from ros_robodata.dataset.split import SplitSpec

    work = Path(tempfile.mkdtemp(prefix='robodata-import-bench-', dir=args.tmp))
    try:
        big, small = work / 'big', work / 'small'
        start = time.perf_counter()
        messages, duration = write_rig_bag(big, args.size_mb)
        write_rig_bag(small, args.size_mb / 10, seed=1)
        size = sum(f.stat().st_size for f in big.glob('*.mcap'))
        small_size = sum(f.stat().st_size for f in small.glob('*.mcap'))
        print(f'bag: {size / 1e6:.0f} MB on disk, {messages} messages, {duration:.1f} s of recording '
              f'(written in {time.perf_counter() - start:.0f} s); small bag {small_size / 1e6:.0f} MB')

        def fresh(path: Path) -> Callable[[], None]:
            return lambda: shutil.rmtree(path, ignore_errors=True)

        read_s = best_of(args.repeats, lambda: raw_read(big))
        rw_s = best_of(args.repeats, lambda: read_write(big, work / 'rewritten'), fresh(work / 'rewritten'))
        fresh(work / 'rewritten')()
        spec = SplitSpec('every', duration / args.parts + 1e-3)
        parts: list[str] = []
        split_s = best_of(args.repeats, lambda: parts.extend(import_into(work / 'split', big, split=spec)),
                          lambda: (fresh(work / 'split')(), parts.clear()))
        fresh(work / 'split')()
        copy_s = best_of(args.repeats, lambda: import_into(work / 'copied', big), fresh(work / 'copied'))
        fresh(work / 'copied')()
        link_big = best_of(args.repeats + 1, lambda: import_into(work / 'linked', big, method='link'),
                           fresh(work / 'linked'))
        link_small = best_of(args.repeats + 1, lambda: import_into(work / 'linked', small, method='link'),
                             fresh(work / 'linked'))
        mb = size / 1e6
        print(f'\n== best of {args.repeats} ==')
        print(f'raw read              {read_s:7.2f} s  ({mb / read_s:.0f} MB/s)')
        print(f'read + write          {rw_s:7.2f} s  ({mb / rw_s:.0f} MB/s)')
        print(f'split into {len(parts):2d}         {split_s:7.2f} s  = {split_s / read_s:.2f} x read, '
              f'{split_s / rw_s:.2f} x read + write')
        print(f'copy import           {copy_s:7.2f} s  = {copy_s / read_s:.2f} x read, '
              f'{copy_s / rw_s:.2f} x read + write (copy hashed on the way, then one stats pass over the messages)')
        print(f'link import           {link_big * 1e3:7.1f} ms for {mb:.0f} MB, {link_small * 1e3:.1f} ms for '
              f'{small_size / 1e6:.0f} MB')
        ratio = split_s / rw_s
        print(f'\nsplit / (read + write) {ratio:.2f} (target <= {SPLIT_TARGET}): '
              f'{"met" if ratio <= SPLIT_TARGET else "NOT met"}')
        growth = link_big / link_small
        print(f'link import, {mb / (small_size / 1e6):.0f}x the bytes: {growth:.2f}x the time '
              f'(target <= {LINK_TARGET}, independent of size): {"met" if growth <= LINK_TARGET else "NOT met"}')
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    main()
