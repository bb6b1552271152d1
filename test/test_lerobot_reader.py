"""Our LeRobot export read by LeRobot itself (lerobot 0.4.4's LeRobotDataset, in .venv-lerobot: torch stays out of
the project's .venv). What a team that trains on it checks: the frame count, the feature shapes, a decoded video
frame against the bag's own frame, the state at a frame against the bag's at that time, LeRobot's timestamp check
(its decoder refuses a frame more than tolerance_s = 1e-4 s from where the data says it is), and the statistics
LeRobot itself computes from the data.

The first run makes .venv-lerobot (tools/lerobot_venv.py: about 80 s here, from the machine's local wheel files,
plus FFmpeg's shared libraries with apt when missing); later runs reuse it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from ros_robodata.cli.main import main
from ros_robodata.profile import load_profile
from ros_robodata.sim.to_bag import write_sim_episode

ROOT = Path(__file__).resolve().parent.parent
PROFILE = ROOT / 'config' / 'sim_cell.yaml'
SIZE = (128, 96)
sys.path.insert(0, str(ROOT / 'tools'))


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float('inf') if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


@pytest.fixture(scope='module')
def lerobot_python() -> Path:
    from lerobot_venv import ensure

    return ensure()


@pytest.fixture(scope='module')
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    from ros_robodata.dataset import Dataset
    from ros_robodata.dataset.episode import Episode

    profile = load_profile(PROFILE)
    ds = Dataset.create(tmp_path_factory.mktemp('reader') / 'ds', profile=profile)
    for seed in (0, 1):
        episode_id = f'20260101-12000{seed}'
        write_sim_episode(ds.bag_dir(episode_id), profile, seed=seed, cameras=True, image_size=SIZE,
                          max_duration_s=3.0)
        ds.add_episode(Episode(id=episode_id, task='pick_cube', status='complete', outcome='success'))
    out = tmp_path_factory.mktemp('export') / 'lerobot'
    assert main(['export', 'lerobot', str(ds.root), '--out', str(out)]) == 0
    return ds, out


def _bag_frame(ds: Any, episode_id: str, topic: str, stamp_ns: int) -> tuple[np.ndarray, int]:
    from ros_robodata.bag.image import decode_image
    from ros_robodata.bag.reader import BagReader

    best = None
    with BagReader(ds.bag_dir(episode_id)) as reader:
        for m in reader.messages([topic]):
            msg = reader.decode(m)
            t = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
            if best is None or abs(t - stamp_ns) < abs(best[1] - stamp_ns):
                best = (decode_image(msg, 'rgb'), t)
    assert best is not None
    return best


def _bag_state(ds: Any, episode_id: str, stamp_ns: int) -> list[float]:
    from ros_robodata.bag.reader import BagReader

    best: tuple[list[float], int] | None = None
    with BagReader(ds.bag_dir(episode_id)) as reader:
        for m in reader.messages(['/joint_states']):
            msg = reader.decode(m)
            t = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
            if best is None or abs(t - stamp_ns) < abs(best[1] - stamp_ns):
                best = (list(msg.position), t)
    assert best is not None
    return best[0]


def test_lerobot_loads_our_export(lerobot_python: Path, exported: tuple[Any, Path], tmp_path: Path) -> None:
    ds, out = exported
    info = json.loads((out / 'meta' / 'info.json').read_text())
    episodes = pq.read_table(out / 'meta' / 'episodes' / 'chunk-000' / 'file-000.parquet').to_pylist()
    second = episodes[1]
    wanted = [0, second['dataset_from_index'] + second['length'] // 2, info['total_frames'] - 1]
    run = subprocess.run([str(lerobot_python), str(ROOT / 'test' / 'lerobot_probe.py'), str(out), str(tmp_path),
                          *map(str, wanted)], capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report['num_frames'] == info['total_frames'] and report['num_episodes'] == 2
    assert report['fps'] == 30 and report['video_backend'] == 'torchcodec'
    assert report['features']['observation.state'] == [7] and report['features']['action'] == [6]
    assert report['camera_keys'] == ['observation.images.wrist', 'observation.images.scene']
    assert report['features']['observation.images.wrist'] == [SIZE[1], SIZE[0], 3]
    for item in report['items']:
        episode = episodes[item['episode_index']]
        k = item['frame_index']
        assert item['timestamp'] == pytest.approx(k / 30, abs=1e-4)
        tick = episode['source_start_ns'] + round(k * 1e9 / 30)
        state = _bag_state(ds, episode['source_episode_id'], tick)
        assert item['observation.state'][:6] == pytest.approx(np.float32(state).tolist(), abs=0)
        for camera, topic in (('wrist', '/camera/wrist/image_raw'), ('scene', '/camera/scene/image_raw')):
            decoded = np.load(item[f'observation.images.{camera}'])
            frame, stamp = _bag_frame(ds, episode['source_episode_id'], topic, tick)
            assert abs(stamp - tick) < 1e9 / 60  # the frame nearest the tick is this tick's
            quality = psnr(decoded, frame)
            print(f'frame {item["index"]} {camera}: PSNR {quality:.1f} dB against the bag')
            assert quality > 25  # h264 at crf 23 in yuv420p: the same picture (a neighbour scores lower, below)
            others = [psnr(decoded, _bag_frame(ds, episode['source_episode_id'], topic, tick + d)[0])
                      for d in (-round(1e9 / 3), round(1e9 / 3)) if 0 <= k + d * 30 / 1e9 < episode['length']]
            print(f'  frames 1/3 s before and after: {", ".join(f"{o:.1f}" for o in others)} dB')
            assert all(o < quality for o in others)
    window = report['window']  # LeRobot's delta_timestamps query: the frame before, by time, within tolerance_s
    assert window['observation.state'] == [2, 7]
    assert window['observation.images.wrist'] == [2, 3, SIZE[1], SIZE[0]]
    assert all(padded == [False, False] for padded in report['window_padded'].values())
    ours = json.loads((out / 'meta' / 'stats.json').read_text())
    for feature in ('observation.state', 'action'):
        theirs = report['lerobot_stats'][feature]
        assert set(theirs) <= set(ours[feature])
        scale = np.asarray(ours[feature]['mean']) ** 2 + np.asarray(ours[feature]['std']) ** 2
        for key, value in theirs.items():
            if key == 'std':  # LeRobot takes E[x^2] - E[x]^2 in float32: its variance is good to float32 rounding
                assert np.all(np.abs(np.asarray(ours[feature][key]) ** 2 - np.asarray(value) ** 2)
                              <= 1e-5 * scale + 1e-12), (feature, key, ours[feature][key], value)
            else:
                assert np.allclose(ours[feature][key], value, rtol=1e-5, atol=1e-7), (feature, key)
