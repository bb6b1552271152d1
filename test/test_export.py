"""`robodata export frames`: what a labeling team checks before it trusts an export."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import cv2
import numpy as np
import pytest

from ros_robodata.cli.main import main
from ros_robodata.errors import DatasetError, RobodataError
from ros_robodata.profile import load_profile
from ros_robodata.sim.to_bag import write_sim_episode

PROFILE = Path(__file__).resolve().parent.parent / 'config' / 'sim_cell.yaml'
SEEDS = (0, 1)
SIZE = (96, 72)
WRIST = '/camera/wrist/image_raw'
LIDAR = '/lidar/points'


@pytest.fixture(scope='module')
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Two simulated 6 s episodes with both cameras and the LiDAR, segmented (events.json)."""
    from ros_robodata.dataset import Dataset
    from ros_robodata.dataset.episode import Episode

    profile = load_profile(PROFILE)
    root = tmp_path_factory.mktemp('export') / 'ds'
    ds = Dataset.create(root, profile=profile)
    for seed in SEEDS:
        episode_id = f'20260101-12000{seed}'
        write_sim_episode(ds.bag_dir(episode_id), profile, seed=seed, cameras=True, lidar=True, image_size=SIZE,
                          max_duration_s=6.0)
        ds.add_episode(Episode(id=episode_id, task='pick', status='complete', outcome='success'))
    assert main(['segment', str(root)]) == 0
    return ds


@pytest.fixture(scope='module')
def source(dataset: Any) -> dict[str, dict[str, Any]]:
    """Per episode, straight from the bag: the reference camera's stamps and each LiDAR scan's point count."""
    from ros_robodata.bag.pointcloud import pointcloud_to_numpy
    from ros_robodata.bag.reader import BagReader
    from ros_robodata.signals.cdr import header_stamp_ns

    out = {}
    for episode_id in dataset.episode_ids():
        stamps, clouds = [], {}
        with BagReader(dataset.bag_dir(episode_id)) as reader:
            for m in reader.messages([WRIST, LIDAR]):
                if m.topic == WRIST:
                    stamps.append(header_stamp_ns(m.data))
                else:
                    clouds[header_stamp_ns(m.data)] = pointcloud_to_numpy(reader.decode(m)).shape[0]
        out[episode_id] = {'stamps': stamps, 'clouds': clouds}
    return out


def export(dataset: Any, out: Path, *options: str) -> int:
    return main(['export', 'frames', str(dataset.root), '--out', str(out), *options])


@pytest.fixture(scope='module')
def every_half_second(dataset: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp('out') / 'frames'
    assert export(dataset, out, '--every', '0.5s', '--lidar') == 0
    return out


def manifest_of(out: Path) -> dict[str, Any]:
    return json.loads((out / 'manifest.json').read_text())


def test_every_half_second_gives_the_scheduled_count(every_half_second: Path, source: dict[str, Any]) -> None:
    manifest = manifest_of(every_half_second)
    for episode in manifest['episodes']:
        stamps = source[episode['episode_id']]['stamps']
        expected = (stamps[-1] - stamps[0]) // 500_000_000 + 1
        assert episode['frames'] == expected == 13
        frames = [f for f in manifest['frames'] if f['episode_id'] == episode['episode_id']]
        assert [f['index'] for f in frames] == list(range(expected))
        # each frame is the reference frame nearest its scheduled time: a real image, never interpolated
        for k, frame in enumerate(frames):
            assert frame['t_ns'] in stamps
            assert abs(frame['t_ns'] - (stamps[0] + k * 500_000_000)) <= 1e9 / 30 / 2 + 1


def test_manifest_validates_and_pairs_within_tolerance(every_half_second: Path) -> None:
    from ros_robodata.export.manifest import validate_manifest

    manifest = manifest_of(every_half_second)
    validate_manifest(manifest)
    assert manifest['sync'] == {'reference': 'camera_wrist', 'tolerance_ms': 50.0}
    for frame in manifest['frames']:
        assert set(frame['sensors']) == {'camera_wrist', 'camera_scene', 'lidar_scene'}
        offsets = [s['offset_ms'] for s in frame['sensors'].values()]
        offsets += [frame['joint_state']['offset_ms'], frame['gripper']['offset_ms']]
        assert all(abs(o) <= 50.0 for o in offsets)
        assert 0.0 <= frame['gripper']['opening'] <= 1.0 and len(frame['joint_state']['names']) == 6
        assert frame['unmatched'] == [] and isinstance(frame['events_active'], list)
    assert any('grasp' in f['events_active'] for f in manifest['frames'])
    broken = json.loads(json.dumps(manifest))
    broken['frames'][0]['sensors']['camera_wrist']['file'] = '../../etc/passwd'
    with pytest.raises(RobodataError, match='file'):
        validate_manifest(broken)


def test_every_file_opens_with_the_source_size(every_half_second: Path, source: dict[str, Any]) -> None:
    import open3d as o3d

    manifest = manifest_of(every_half_second)
    for frame in manifest['frames']:
        for name, entry in frame['sensors'].items():
            path = every_half_second / entry['file']
            assert path.resolve().is_relative_to(every_half_second.resolve())
            if name.startswith('camera_'):
                image = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
                assert image is not None and image.shape[:2] == (SIZE[1], SIZE[0])
                assert (entry['width'], entry['height'], entry['encoding']) == (*SIZE, 'rgb8')
            else:
                cloud = o3d.t.io.read_point_cloud(str(path))
                count = source[frame['episode_id']]['clouds'][entry['stamp_ns']]
                assert cloud.point.positions.shape[0] == entry['points'] == count > 0
                assert 'intensity' in cloud.point and cloud.point.intensity.shape == (count, 1)


def test_a_scan_shared_by_several_frames_is_written_once(dataset: Any, tmp_path: Path) -> None:
    """At 30 Hz frames and a 10 Hz LiDAR, each scan pairs with about three frames: one PCD, shared."""
    assert export(dataset, tmp_path, '--every-n', '1', '--lidar', '--tasks', 'none') == 0
    manifest = manifest_of(tmp_path)
    scans = [(f['episode_id'], f['sensors']['lidar_scene']) for f in manifest['frames']
             if 'lidar_scene' in f['sensors']]
    by_stamp: dict[tuple[str, int], set[str]] = {}
    for episode_id, scan in scans:
        by_stamp.setdefault((episode_id, scan['stamp_ns']), set()).add(scan['file'])
    assert all(len(files) == 1 for files in by_stamp.values())  # one file per scan
    assert len(scans) > 2 * len(by_stamp)  # and frames do share them
    on_disk = list((tmp_path / 'episodes').glob('*/lidar_scene/*.pcd'))
    assert len(on_disk) == len(by_stamp)


def test_every_nth_frame(dataset: Any, source: dict[str, Any], tmp_path: Path) -> None:
    assert export(dataset, tmp_path, '--every-n', '10', '--cameras', 'scene', '--format', 'png', '--workers', '2') == 0
    manifest = manifest_of(tmp_path)
    for episode in manifest['episodes']:
        count = len(source[episode['episode_id']]['stamps'])
        assert episode['frames'] == math.ceil(count / 10)
        frames = [f for f in manifest['frames'] if f['episode_id'] == episode['episode_id']]
        assert [f['source_index'] for f in frames] == list(range(0, count, 10))
        assert all(set(f['sensors']) == {'camera_scene'} for f in frames)
        assert all(f['sensors']['camera_scene']['file'].endswith('.png') for f in frames)
    assert manifest['sync']['reference'] == 'camera_scene'


def test_around_events_keeps_only_frames_near_them(dataset: Any, tmp_path: Path) -> None:
    assert export(dataset, tmp_path, '--around-events', 'grasp', '--window', '1s', '--every', '250ms') == 0
    manifest = manifest_of(tmp_path)
    assert manifest['frames']
    for episode_id in dataset.episode_ids():
        events = json.loads((dataset.episode_dir(episode_id) / 'events.json').read_text())['events']
        grasps = [e['t_ns'] for e in events if e['kind'] == 'grasp']
        frames = [f for f in manifest['frames'] if f['episode_id'] == episode_id]
        assert len(grasps) == 1 and len(frames) == 9  # -1 s .. +1 s in 0.25 s steps
        half_frame = 1e9 / 30 / 2
        assert all(abs(f['t_ns'] - grasps[0]) <= 1e9 + half_frame for f in frames)
    # without --every: every reference frame inside the window
    assert export(dataset, tmp_path / 'all', '--around-events', 'grasp', '--window', '200ms') == 0
    frames = manifest_of(tmp_path / 'all')['frames']
    assert 2 * 11 <= len(frames) <= 2 * 13


def test_tiny_tolerance_reports_unmatched_partners(dataset: Any, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert export(dataset, tmp_path, '--every-n', '5', '--lidar', '--tolerance', '0.1ms', '--cameras', 'wrist') == 0
    out = capsys.readouterr().out
    manifest = manifest_of(tmp_path)
    lidar_missing = [f for f in manifest['frames'] if any(u['sensor'] == 'lidar_scene' for u in f['unmatched'])]
    assert lidar_missing and 'no partner within tolerance' in out and 'frame(s) with unmatched sensors' in out
    for frame in lidar_missing:
        nearest = next(u['nearest_offset_ms'] for u in frame['unmatched'] if u['sensor'] == 'lidar_scene')
        assert nearest is not None and abs(nearest) > 0.1
        assert 'lidar_scene' not in frame['sensors']  # never silently paired
    for frame in manifest['frames']:
        assert all(abs(s['offset_ms']) <= 0.1 for s in frame['sensors'].values())
    assert sum(e['unmatched'] for e in manifest['episodes']) == len([f for f in manifest['frames'] if f['unmatched']])


def test_one_episode_with_cropped_downsampled_scans(dataset: Any, tmp_path: Path) -> None:
    import open3d as o3d

    episode = dataset.episode_dir(dataset.episode_ids()[1])
    assert main(['export', 'frames', str(episode), '--out', str(tmp_path), '--every', '2s', '--lidar',
                 '--lidar-voxel', '0.05', '--lidar-crop=-2,-2,-0.5,2,2,2']) == 0
    manifest = manifest_of(tmp_path)
    assert [e['episode_id'] for e in manifest['episodes']] == [episode.name] and len(manifest['frames']) == 4
    for frame in manifest['frames']:
        entry = frame['sensors']['lidar_scene']
        cloud = o3d.t.io.read_point_cloud(str(tmp_path / entry['file']))
        xyz = cloud.point.positions.numpy()
        assert 0 < entry['points'] == xyz.shape[0] < entry['source_points']
        assert (xyz >= [-2 - 1e-6, -2 - 1e-6, -0.5 - 1e-6]).all() and (xyz <= [2 + 1e-6, 2 + 1e-6, 2 + 1e-6]).all()
        assert 'intensity' in cloud.point


def _tree(out: Path) -> dict[str, tuple[int, bytes]]:
    return {p.relative_to(out).as_posix(): (p.stat().st_mtime_ns, p.read_bytes())
            for p in sorted(out.rglob('*')) if p.is_file()}


def test_rerun_is_idempotent_and_an_interrupted_export_resumes(dataset: Any, every_half_second: Path,
                                                               tmp_path: Path) -> None:
    out = tmp_path / 'copy'
    shutil.copytree(every_half_second, out)
    before = _tree(out)
    assert export(dataset, out, '--every', '0.5s', '--lidar') == 0
    assert _tree(out) == before  # same bytes, not even rewritten
    # interrupted: one episode lost its frames.json (written last) and one of its files
    episode_id = dataset.episode_ids()[0]
    (out / 'episodes' / episode_id / 'frames.json').unlink()
    lost = out / 'episodes' / episode_id / 'lidar_scene' / '000003.pcd'
    lost.unlink()
    assert export(dataset, out, '--every', '0.5s', '--lidar') == 0
    after = _tree(out)
    assert {k: v[1] for k, v in after.items()} == {k: v[1] for k, v in before.items()}
    other = dataset.episode_ids()[1]
    assert all(after[k][0] == before[k][0] for k in after if k.startswith(f'episodes/{other}/'))
    # other settings redo the episodes and leave no stale files behind
    assert export(dataset, out, '--every', '1s') == 0
    manifest = manifest_of(out)
    assert len(manifest['frames']) == 2 * 7
    assert not list(out.rglob('*.pcd')) and not list(out.rglob('*.partial*'))


def test_names_are_safe(dataset: Any, tmp_path: Path) -> None:
    from ros_robodata.dataset.episode import check_episode_id
    from ros_robodata.export.frames import ExportOptions, export_episode, plan_export, sanitize_name
    from ros_robodata.files import safe_path

    with pytest.raises(DatasetError):
        check_episode_id('../x')
    plan = plan_export(load_profile(PROFILE), ExportOptions())
    with pytest.raises(DatasetError):
        export_episode(dataset.bag_dir(dataset.episode_ids()[0]), '../x', tmp_path, plan)
    assert not (tmp_path.parent / 'x').exists()
    assert sanitize_name('Wrist Cam/../../etc') == 'wrist_cam_______etc'
    with pytest.raises(RobodataError):
        sanitize_name('../')
    for bad in ('..', '../x', '/etc', 'a/b'):
        with pytest.raises(RobodataError):
            safe_path(tmp_path, bad)
    assert safe_path(tmp_path, 'episodes', 'ep1') == tmp_path / 'episodes' / 'ep1'


@pytest.mark.parametrize(('options', 'message'), [
    (['--every', '0s'], '--every: must be greater than 0'),
    (['--every', '0.5'], 'with a unit'),
    (['--every', '1s', '--every-n', '3'], 'exclude each other'),
    (['--cameras', 'wrist,nope'], "unknown camera 'nope'"),
    (['--reference', 'scene', '--cameras', 'wrist'], 'not among --cameras'),
    (['--format', 'gif'], "'gif' is not supported"),
    (['--around-events', 'grasp'], 'needs --window'),
    (['--lidar-crop', '0,0,0,1,1'], 'expected 6'),
    (['--lidar', '--lidar-crop', '0,0,0,1,-1,1'], 'min below its max'),
])
def test_bad_options_are_one_line_errors(dataset: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         options: list[str], message: str) -> None:
    assert export(dataset, tmp_path / 'out', *options) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith('robodata export: error:') and message in err
    assert not (tmp_path / 'out').exists()


# -- the pieces, on synthetic data ------------------------------------------------------------------------


def test_schedule_picks_the_nearest_real_frame() -> None:
    from ros_robodata.export.schedule import ScheduleSpec, select_frames

    stamps = [k * 100 for k in range(11)]  # 0..1000
    assert select_frames(stamps, ScheduleSpec(every_ns=250)) == [0, 2, 5, 7, 10]  # ties go to the earlier frame
    assert select_frames(stamps, ScheduleSpec(every_ns=40)) == list(range(11))  # finer than the camera: once each
    assert select_frames(stamps, ScheduleSpec(every_n=4)) == [0, 4, 8]
    assert select_frames(stamps, ScheduleSpec()) == list(range(11))
    events = [('grasp', 500), ('contact', 120), ('grasp', 2000)]
    assert select_frames(stamps, ScheduleSpec(around_events=('grasp',), window_ns=150), events) == [4, 5, 6]
    spec = ScheduleSpec(around_events=('grasp',), window_ns=200, every_ns=200)
    assert select_frames(stamps, spec, events) == [3, 5, 7]  # 2000 +- 200 is after the recording: skipped


def test_sync_pairs_nearest_within_tolerance_and_stays_bounded() -> None:
    from ros_robodata.export.sensor_pairing import Sample, Synchronizer

    sync = Synchronizer(['fast', 'slow'], tolerance_ns=5)
    settled = []
    for t in range(0, 1000):
        sync.add_sample('fast', Sample(t, t, t))
        if t % 100 == 37:
            sync.add_sample('slow', Sample(t, t, t))
        if t % 50 == 0:
            sync.add_frame(t, t)
            sync.set_floor(t)
        settled += sync.advance(t)
        # a frame waits for the slow sensor's next sample: the fast queue spans at most its period plus the slop
        assert sync.buffered()['fast'] <= 100 + 2 * 5 + 1
    settled += sync.finish()
    assert [f.stamp_ns for f in settled] == list(range(0, 1000, 50))
    for frame in settled:
        assert frame.matches['fast'].offset_ns == 0 and frame.matches['fast'].matched
        slow = frame.matches['slow']
        assert not slow.matched and slow.sample is None
        nearest = min((s - frame.stamp_ns for s in range(37, 1000, 100)), key=lambda d: (abs(d), d))
        assert slow.offset_ns == nearest


def test_mono16_is_written_as_16_bit_png() -> None:
    from ros_robodata.bag.image import encode_image
    from ros_robodata.bag.sensor_files import encode_frame_image

    depth = (np.arange(12 * 16, dtype=np.uint16).reshape(12, 16) * 300).astype(np.uint16)
    msg = SimpleNamespace(**encode_image(depth, 'mono16'))
    data, ext, info = encode_frame_image(msg, 'jpg')
    assert ext == 'png' and info == {'width': 16, 'height': 12, 'encoding': 'mono16'}
    back = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    assert back.dtype == np.uint16 and np.array_equal(back, depth)
    bgr = SimpleNamespace(**encode_image(np.full((4, 6, 3), [10, 20, 30], np.uint8), 'rgb8'))
    data, ext, info = encode_frame_image(bgr, 'png')
    back = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    assert ext == 'png' and back[0, 0].tolist() == [30, 20, 10]  # RGB in the message, BGR on disk


def test_compressed_mono16_and_bgr_cameras_export_with_their_sizes(tmp_path: Path) -> None:
    """A rig whose cameras publish CompressedImage (JPEG), 16-bit depth and bgr8: every frame decodes and is
    written with the source size (depth as 16-bit PNG, keeping its values)."""
    import yaml

    from ros_robodata.bag.image import encode_compressed, encode_image
    from ros_robodata.bag.types import typestore
    from ros_robodata.bag.writer import BagWriter
    from ros_robodata.cli.main import main
    from ros_robodata.dataset import Dataset
    from ros_robodata.dataset.episode import Episode

    profile_data = yaml.safe_load(Path('config/sim_cell.yaml').read_text())
    profile_data['topics']['cameras'] = [
        {'name': 'jpeg', 'topic': '/cam/jpeg/compressed', 'type': 'sensor_msgs/msg/CompressedImage', 'rate_hz': 10},
        {'name': 'depth', 'topic': '/cam/depth', 'type': 'sensor_msgs/msg/Image', 'rate_hz': 10},
        {'name': 'bgr', 'topic': '/cam/bgr', 'type': 'sensor_msgs/msg/Image', 'rate_hz': 10}]
    profile_data['topics']['lidars'] = []
    profile_path = tmp_path / 'rig.yaml'
    profile_path.write_text(yaml.safe_dump(profile_data))
    store = typestore()
    types = store.types

    def header(ns: int) -> Any:
        return types['std_msgs/msg/Header'](stamp=types['builtin_interfaces/msg/Time'](sec=ns // 10**9,
                                                                                     nanosec=ns % 10**9),
                                            frame_id='cam')

    rng = np.random.default_rng(0)
    dataset = Dataset.create(tmp_path / 'ds')
    with BagWriter(dataset.bag_dir('20260101-130000')) as bag:
        bag.add_topic('/cam/jpeg/compressed', 'sensor_msgs/msg/CompressedImage')
        bag.add_topic('/cam/depth', 'sensor_msgs/msg/Image')
        bag.add_topic('/cam/bgr', 'sensor_msgs/msg/Image')
        for i in range(20):  # 2 s at 10 Hz
            ns = 1_700_000_000_000_000_000 + i * 100_000_000
            rgb = rng.integers(0, 255, (48, 64, 3), dtype=np.uint8)
            depth = rng.integers(0, 5000, (30, 40), dtype=np.uint16)
            bag.write_message('/cam/jpeg/compressed', ns, types['sensor_msgs/msg/CompressedImage'](
                header=header(ns), **encode_compressed(rgb, 'jpeg')))
            bag.write_message('/cam/depth', ns, types['sensor_msgs/msg/Image'](
                header=header(ns), **encode_image(depth, '16UC1')))
            bag.write_message('/cam/bgr', ns, types['sensor_msgs/msg/Image'](
                header=header(ns), **encode_image(rgb[:, :, ::-1].copy(), 'bgr8')))
    dataset.add_episode(Episode(id='20260101-130000', task='pick', status='complete'))
    out = tmp_path / 'frames'
    assert main(['export', 'frames', str(dataset.root), '--out', str(out), '--profile', str(profile_path),
                 '--every', '0.5s', '--tasks', 'none']) == 0
    manifest = json.loads((out / 'manifest.json').read_text())
    assert len(manifest['frames']) == 4  # 0, 0.5, 1.0, 1.5 s
    for frame in manifest['frames']:
        sensors = frame['sensors']
        assert cv2.imread(str(out / sensors['camera_jpeg']['file'])).shape == (48, 64, 3)
        assert cv2.imread(str(out / sensors['camera_bgr']['file'])).shape == (48, 64, 3)
        depth = cv2.imread(str(out / sensors['camera_depth']['file']), cv2.IMREAD_UNCHANGED)
        assert sensors['camera_depth']['file'].endswith('.png') and depth.dtype == np.uint16
        assert depth.shape == (30, 40) and depth.max() > 255
