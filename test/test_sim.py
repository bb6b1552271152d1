"""The simulated cell: reproducible episodes, physics ground truth, real rates, rendered frames, faults."""

from __future__ import annotations

import itertools
import math

import cv2
import numpy as np
import pytest

from ros_robodata.sim import sim_samples as S
from ros_robodata.sim.cell import SimCell
from ros_robodata.sim.faults import Fault
from ros_robodata.sim.rig import SimRig


def _run(seed: int, index: int, mode: str = 'teleop', streams=(S.JOINT_STATES, S.WRENCH)):
    with SimCell(seed, index, mode=mode, streams=streams) as cell:
        out: list[S.Sample] = []
        while not cell.finished:
            out += cell.step_until(cell.time + 1.0)
        return cell.ground_truth(), out


@pytest.fixture(scope='module')
def episodes():
    """The demo's default: seeds 0..5 as episodes 0..5."""
    return [_run(i, i) for i in range(6)]


def test_same_seed_same_episode(episodes):
    truth, samples = _run(4, 4)
    assert truth == episodes[4][0]
    js = [s.data.position for s in samples if s.stream == S.JOINT_STATES]
    ref = [s.data.position for s in episodes[4][1] if s.stream == S.JOINT_STATES]
    assert len(js) == len(ref) and all(np.array_equal(a, b) for a, b in zip(js, ref, strict=True))
    assert SimCell(4, 4, streams=[]).scene == SimCell(4, 4, streams=[]).scene
    assert SimCell(4, 4, streams=[]).scene != SimCell(5, 4, streams=[]).scene


def test_default_plan_has_failure_and_recovery(episodes):
    outcomes = [t['outcome'] for t, _ in episodes]
    assert outcomes.count('failure') >= 1
    assert outcomes.count('recovery') >= 1
    assert outcomes.count('success') > len(outcomes) / 2


def test_success_event_order_and_zone(episodes):
    for truth, _ in episodes:
        if truth['outcome'] != 'success':
            continue
        assert truth['contact_begin_s'] < truth['secured_s'] < truth['lifted_s'] < truth['released_s']
        x, y, _z = truth['object_final_xyz']
        cx, cy = truth['zone']['center_xy']
        assert np.hypot(x - cx, y - cy) < truth['zone']['radius_m']


def test_recovery_and_failure_show_the_fumble(episodes):
    for truth, _ in episodes:
        kinds = [e['kind'] for e in truth['events']]
        if truth['outcome'] == 'recovery':
            assert ('missed' in kinds or 'dropped' in kinds) and 'released' in kinds
        if truth['outcome'] == 'failure':
            assert not truth['success']


def test_wrench_shows_object_weight(episodes):
    truth, samples = next(e for e in episodes if e[0]['outcome'] == 'success')
    fz = np.array([(s.stamp, s.data.force[2]) for s in samples if s.stream == S.WRENCH])
    before = np.median(fz[fz[:, 0] < truth['contact_begin_s'], 1])
    held = np.median(fz[(fz[:, 0] > truth['lifted_s'] + 0.3) & (fz[:, 0] < truth['released_s'] - 1.0), 1])
    weight = truth['object']['mass_kg'] * 9.81
    assert held - before == pytest.approx(weight, rel=0.25)


def test_rates_and_frames():
    with SimCell(1, 1, image_size=(160, 120)) as cell:
        out = cell.step_until(2.0)
    for stream, rate in S.DEFAULT_RATES_HZ.items():
        stamps = [s.stamp for s in out if s.stream == stream]
        measured = (len(stamps) - 1) / (stamps[-1] - stamps[0])
        assert measured == pytest.approx(rate, rel=0.01), stream
    for cam in (S.CAMERA_WRIST, S.CAMERA_SCENE):
        frames = [s.data.rgb for s in out if s.stream == cam]
        assert all(f.shape == (120, 160, 3) and f.dtype == np.uint8 for f in frames)
        assert frames[0].std() > 5
        assert not np.array_equal(frames[0], frames[-1])
    cloud = next(s.data.points for s in out if s.stream == S.LIDAR_SCENE)
    assert cloud.shape[1] == 4 and len(cloud) > 1000 and np.isfinite(cloud).all()


def test_kinesthetic_completes_the_task():
    truth, _ = _run(0, 0, mode='kinesthetic', streams=(S.JOINT_STATES,))
    assert truth['outcome'] == 'success' and truth['mode'] == 'kinesthetic'


WINDOW = (0.8, 1.2)
FAULTS = [
    (S.CAMERA_SCENE, 'blur'),
    (S.CAMERA_SCENE, 'freeze'),
    (S.JOINT_STATES, 'drop'),
    (S.GRIPPER, 'silent'),
    (S.JOINT_STATES, 'nan'),
    (S.WRENCH, 'spike'),
    (S.WRENCH, 'clock_jump'),
]


def _stream(stream: str, faults=None) -> tuple[list[S.Sample], dict]:
    with SimCell(2, 0, faults=faults, streams=[stream], image_size=(160, 120)) as cell:
        return cell.step_until(1.6), cell.ground_truth()


def _inside(s: S.Sample) -> bool:
    return WINDOW[0] <= s.seq / S.DEFAULT_RATES_HZ[s.stream] < WINDOW[1]


def _same(a: S.Sample, b: S.Sample) -> bool:
    if a.stamp != b.stamp:
        return False
    fields = {S.ImageSample: 'rgb', S.JointSample: 'position', S.WrenchSample: 'force'}
    attr = fields[type(a.data)]
    return np.array_equal(getattr(a.data, attr), getattr(b.data, attr), equal_nan=False)


def _sharpness(rgb: np.ndarray) -> float:
    return float(cv2.Laplacian(cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY), cv2.CV_64F).var())


@pytest.mark.parametrize(('stream', 'kind'), FAULTS)
def test_fault_changes_its_window_only(stream, kind):
    clean, _ = _stream(stream)
    faulty, truth = _stream(stream, [Fault(stream, kind, *WINDOW, fraction=0.5)])
    by_seq = {s.seq: s for s in faulty}
    outside = [s for s in clean if not _inside(s)]
    assert all(s.seq in by_seq and _same(s, by_seq[s.seq]) for s in outside)
    inside = [s for s in clean if _inside(s)]
    kept = [(s, by_seq[s.seq]) for s in inside if s.seq in by_seq]
    if kind == 'silent':
        assert not kept
    elif kind == 'drop':
        assert 0.2 * len(inside) < len(inside) - len(kept) < 0.8 * len(inside)
    else:
        assert len(kept) == len(inside) and not any(_same(a, b) for a, b in kept[1:])
    if kind == 'blur':
        assert all(_sharpness(b.data.rgb) < 0.5 * _sharpness(a.data.rgb) for a, b in kept)
    if kind == 'freeze':
        assert all(np.array_equal(b.data.rgb, kept[0][1].data.rgb) for _, b in kept)
    if kind == 'nan':
        assert all(np.isnan(b.data.position[0]) for _, b in kept)
    if kind == 'spike':
        assert all(np.linalg.norm(b.data.force) > 100 for _, b in kept)
    if kind == 'clock_jump':
        assert all(b.stamp - a.stamp == pytest.approx(0.5) for a, b in kept)
    (report,) = truth['faults']
    assert (report['stream'], report['kind'], report['start_s'], report['end_s']) == (stream, kind, *WINDOW)
    assert report['affected'] > 0


def test_bad_fault_and_mode_are_rejected():
    with pytest.raises(ValueError):
        Fault(S.WRENCH, 'gremlins', 0.0, 1.0)
    with pytest.raises(ValueError):
        SimCell(0, mode='telepathy', streams=[])


# -- the cell as a rig: episodes one after another on one timeline ----------------------------------------------


def _drive(rig, until_s: float, from_s: float = 0.0, stop=lambda rig, events: False):
    """Step the rig in 50 ms turns from `from_s` to `until_s` (or until `stop`): its samples and events."""
    samples, events, t = [], [], from_s
    while t < until_s and not rig.finished:
        t += 0.05
        got, happened = rig.step_until(t)
        samples += got
        events += happened
        if stop(rig, events):
            break
    return samples, events


def test_the_rig_keeps_every_stream_on_its_grid_across_episodes():
    """What the issue saw at the old boundaries (lost samples, gaps, jumps) must not exist: a rig does not stop
    publishing while the next scene is set up, and its arm does not teleport home."""
    streams = (S.JOINT_STATES, S.GRIPPER, S.WRENCH, S.CAMERA_SCENE)
    with SimRig(0, streams=streams, episodes=3, image_size=(32, 24)) as rig:
        samples, events = _drive(rig, 120.0)
    assert rig.finished
    assert [(e.kind, e.index) for e in events] == [('begin', 0), ('done', 0), ('begin', 1), ('done', 1),
                                                   ('begin', 2), ('done', 2)]
    assert [e.truth['outcome'] for e in events if e.kind == 'done'] == ['success', 'success', 'failure']
    handovers = [e.at_ns for e in events if e.kind == 'begin'][1:]
    assert all(at % 1_000_000_000 == 0 for at in handovers)  # on whole seconds, where all grids line up
    for stream in streams:
        stamps = np.array([ns for ns, s in samples if s.stream == stream])
        period_ms = 1000 / S.DEFAULT_RATES_HZ[stream]
        steps = np.diff(stamps) / 1e6
        assert stamps[0] == 0 and steps.min() >= math.floor(period_ms) and steps.max() <= math.ceil(period_ms), stream
    joints = [(ns, s.data.position) for ns, s in samples if s.stream == S.JOINT_STATES]
    moves = np.array([np.abs(b[1] - a[1]).max() for a, b in itertools.pairwise(joints)])
    at = np.array([b[0] for b in joints[1:]])
    across = moves[np.isin(at, handovers)]
    assert len(across) == 2 and across.max() < 1e-3  # the joints go on from where they were (<1 mm in 2 ms)
    assert across.max() <= np.percentile(moves, 99)  # no bigger step than the arm makes while working


def test_with_start_key_the_rig_waits_at_home_and_a_stop_key_ends_the_episode_early():
    with SimRig(3, start='key', streams=(S.JOINT_STATES, S.GRIPPER)) as rig:
        samples, events = _drive(rig, 3.0)
        assert [e.kind for e in events] == ['ready']
        still = [s.data.velocity for _, s in samples[-50:] if s.stream == S.JOINT_STATES]
        assert np.abs(still).max() < 1e-3  # holding at home
        assert rig.begin() and not rig.begin()
        _, events = _drive(rig, 6.0, from_s=3.0)
        assert [e.kind for e in events] == ['begin']
        rig.end()  # the operator stops it before the script is through
        _, events = _drive(rig, 20.0, from_s=6.0, stop=lambda rig, ev: any(e.kind == 'ready' for e in ev))
    assert [e.kind for e in events] == ['done', 'ready']
    assert events[0].truth['cut_short'] and events[1].index == 1 and events[1].seed == 4



def test_the_cells_frames_for_rviz_point_where_its_sensors_look():
    with SimCell(0, 0, streams=[S.JOINT_STATES]) as cell:
        poses = cell.frame_poses()
    assert set(poses) == {'base_link', 'ft_sensor', 'camera_wrist', 'camera_scene'}

    def view(frame: str) -> np.ndarray:  # the optical z axis in world: where the camera looks
        x, y, z, w = poses[frame][1]
        return np.array([2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)])

    assert view('camera_wrist')[2] < -0.99  # the wrist camera looks down at the table
    scene = view('camera_scene')
    assert scene[1] > 0.5 and scene[2] < -0.5  # the scene camera looks across and down at the table
    assert all(abs(np.linalg.norm(q) - 1) < 1e-9 for _, q in poses.values())


def test_a_scene_made_ahead_on_another_thread_renders_the_episode_the_cell_makes_itself():
    """The rig makes the next scene (model, camera renderer) on a thread while the arm goes home, so the hand-over
    does not hold the publishing thread; the episode must be the same frame for frame as one set up in place."""
    import threading

    from ros_robodata.sim.scene_assets import prepare_scene

    streams = (S.JOINT_STATES, S.CAMERA_WRIST, S.CAMERA_SCENE)
    made: list = []
    worker = threading.Thread(target=lambda: made.append(
        prepare_scene(3, streams=streams, image_size=(64, 48), cameras_for_another_thread=True)))
    worker.start()
    worker.join()
    with SimCell(3, 3, streams=streams, image_size=(64, 48), assets=made[0]) as ahead, \
            SimCell(3, 3, streams=streams, image_size=(64, 48)) as in_place:
        first, second = ahead.step_until(0.5), in_place.step_until(0.5)
    frames = [(a.data.rgb, b.data.rgb) for a, b in zip(first, second, strict=True) if a.stream != S.JOINT_STATES]
    assert len(frames) == 2 * 16
    assert all(np.array_equal(a, b) for a, b in frames)
    assert ahead.scene == in_place.scene
