"""Image-quality checks on real photos and on rendered sim camera streams, with the faults a user meets:
blur, a dark or blown-out exposure, a frozen feed and a covered lens, each found on exactly its frames."""

from __future__ import annotations

import json
import time

import cv2
import numpy as np
import pytest

from ros_robodata.quality.findings import Finding
from ros_robodata.quality.images import CHECKS, CameraWatch, ImageLimits
from ros_robodata.sim import sim_samples as S
from ros_robodata.sim.cell import SimCell
from ros_robodata.sim.faults import Fault
from test.real_data import read_photos

T0_NS = 1_700_000_000_000_000_000
PERIOD_NS = 33_333_333  # 30 Hz
FRAMES = 40
BAD = range(20, 28)  # the frames a test spoils
HAND = (60, 45, 40)  # a flat, darkish skin colour: a hand over the lens
SIM_WINDOW = (0.8, 1.2)
CAMERAS = (S.CAMERA_WRIST, S.CAMERA_SCENE)


@pytest.fixture(scope='module')
def photos() -> list[np.ndarray]:
    """All real photos as HxWx3 uint8 RGB, 640 wide."""
    return read_photos(640)


def stamps(n: int) -> list[int]:
    return [T0_NS + i * PERIOD_NS for i in range(n)]


def noisy(image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A sensor's frame-to-frame noise (+-3 gray levels), so no two frames of a still view are identical."""
    return np.clip(image.astype(np.int16) + rng.integers(-3, 4, image.shape, dtype=np.int16), 0, 255).astype(np.uint8)


def photo_stream(photos: list[np.ndarray], spoil=None, frames: int = FRAMES, seed: int = 0) -> list[np.ndarray]:
    """A camera looking at each photo for 10 frames in turn; `spoil(frame)` changes the frames in BAD before
    the sensor noise is added."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(frames):
        frame = photos[(i // 10) % len(photos)]
        if spoil is not None and i in BAD:
            frame = spoil(frame)
        out.append(noisy(frame, rng))
    return out


def watch(frames: list[np.ndarray], limits: ImageLimits | None = None, name: str = 'wrist',
          at: list[int] | None = None) -> tuple[CameraWatch, list[list[str]]]:
    """A CameraWatch fed the frames at 30 Hz (or at the given stamps); also what add() said per frame."""
    cam = CameraWatch(f'/camera/{name}/image_raw', name, limits or ImageLimits())
    times = stamps(len(frames)) if at is None else at
    fired = [cam.add(t, frame) for t, frame in zip(times, frames, strict=True)]
    return cam, fired


def by_check(cam: CameraWatch) -> dict[str, Finding]:
    found = {f.check: f for f in cam.findings()}
    assert len(found) == len(cam.findings()), 'one finding per check'
    return found


def bad_range() -> tuple[int, int]:
    ts = stamps(FRAMES)
    return ts[BAD[0]], ts[BAD[-1]]


def blur(frame: np.ndarray) -> np.ndarray:
    return cv2.GaussianBlur(frame, (21, 21), 0)


def dark(frame: np.ndarray) -> np.ndarray:
    return (frame * 0.05).astype(np.uint8)


def blown(frame: np.ndarray) -> np.ndarray:
    return np.clip(frame.astype(np.int16) + 200, 0, 255).astype(np.uint8)


def covered(frame: np.ndarray, share: float = 0.9, colour=HAND) -> np.ndarray:
    out = frame.copy()
    out[round(frame.shape[0] * (1 - share)):] = colour
    return out


# -- real photos ---------------------------------------------------------------------------------------


def test_clean_photo_stream_has_no_findings(photos):
    cam, fired = watch(photo_stream(photos))
    assert cam.findings() == []
    assert not any(fired)
    assert cam.frames == FRAMES
    stats = cam.stats()
    assert stats['frames'] == FRAMES
    assert stats['sharpness_median'] > 1000  # real photos are full of fine texture
    assert 60 < stats['brightness_median'] < 160


def test_blurred_photo_frames_are_found_exactly(photos):
    cam, fired = watch(photo_stream(photos, blur))
    found = by_check(cam)
    assert list(found) == ['image.blur']
    finding = found['image.blur']
    assert finding.ranges == (bad_range(),)
    assert finding.count == len(BAD)
    assert finding.severity == 'warn' and finding.topic == '/camera/wrist/image_raw'
    assert finding.value < finding.threshold < cam.stats()['sharpness_median']
    assert finding.message.startswith('wrist camera blurred in 8 frame(s): sharpness ')
    assert [i for i, f in enumerate(fired) if f] == list(BAD)
    assert all(fired[i] == ['image.blur'] for i in BAD)


@pytest.mark.parametrize(('spoil', 'check'), [(dark, 'image.dark'), (blown, 'image.overexposed'),
                                               (covered, 'image.occluded')])
def test_exposure_and_occlusion_fire_on_the_spoiled_frames_only(photos, spoil, check):
    cam, fired = watch(photo_stream(photos, spoil))
    found = by_check(cam)
    assert list(found) == [check], [f.message for f in found.values()]
    assert found[check].ranges == (bad_range(),)
    assert found[check].count == len(BAD)
    assert [i for i, f in enumerate(fired) if f] == list(BAD)


def test_exposure_values_and_limits(photos):
    dark_cam, _ = watch(photo_stream(photos, dark))
    f = by_check(dark_cam)['image.dark']
    assert f.value < 10 and f.threshold == 25.0 and 'too dark' in f.message
    blown_cam, _ = watch(photo_stream(photos, blown))
    f = by_check(blown_cam)['image.overexposed']
    assert f.value > 230 and f.threshold == 230.0 and 'saturated' in f.message


def test_half_saturated_frame_is_overexposed_even_with_a_moderate_mean(photos):
    def half_white(frame):
        out = (frame * 0.3).astype(np.uint8)
        out[: frame.shape[0] * 6 // 10] = 255
        return out

    cam, _ = watch(photo_stream(photos, half_white))
    f = by_check(cam)['image.overexposed']
    assert f.ranges == (bad_range(),)
    assert f.value < 230  # the mean alone would not have caught it


def test_partly_covered_lens_is_not_occluded(photos):
    cam, _ = watch(photo_stream(photos, lambda frame: covered(frame, 0.5)))
    assert 'image.occluded' not in by_check(cam)


# -- frozen ------------------------------------------------------------------------------------------------


def test_frozen_run_starts_at_its_first_repeat(photos):
    frames = photo_stream(photos)
    for i in BAD:
        frames[i] = frames[BAD[0] - 1]  # the feed got stuck on frame 19
    cam, fired = watch(frames)
    found = by_check(cam)
    assert list(found) == ['image.frozen']
    f = found['image.frozen']
    assert f.severity == 'error'
    assert f.ranges == (bad_range(),)
    assert f.count == len(BAD) and f.value == len(BAD) and f.threshold == 3
    # Live, the run is known frozen from its third repeat on.
    assert [i for i, f in enumerate(fired) if f] == list(BAD[2:])


def test_short_repeats_are_not_frozen(photos):
    frames = photo_stream(photos)
    frames[21] = frames[22] = frames[20]  # two repeats: a dropped-and-resent frame, not a stuck camera
    cam, _ = watch(frames)
    assert cam.findings() == []
    cam, _ = watch(frames, ImageLimits(frozen_frames=2))
    assert by_check(cam)['image.frozen'].ranges == ((stamps(FRAMES)[21], stamps(FRAMES)[22]),)


def test_frozen_needs_identical_frames_not_a_still_view(photos):
    still = [noisy(photos[0], np.random.default_rng(i)) for i in range(30)]  # nothing moves; noise does
    cam, _ = watch(still)
    assert cam.findings() == []


# -- the simulator's cameras -------------------------------------------------------------------------------


def render(faults: list[Fault] | None = None) -> dict[str, list[tuple[int, np.ndarray]]]:
    """1.5 s of episode 0 from both cameras at 320x240: (stamp ns, RGB frame) per camera."""
    with SimCell(0, 0, faults=faults, streams=list(CAMERAS), image_size=(320, 240)) as cell:
        samples = cell.step_until(1.5)
    return {cam: [(round(s.stamp * 1e9), s.data.rgb) for s in samples if s.stream == cam] for cam in CAMERAS}


def watch_sim(frames: list[tuple[int, np.ndarray]], camera: str) -> CameraWatch:
    cam = CameraWatch(f'/{camera}/image_raw', camera.split('/')[1])
    for stamp, rgb in frames:
        cam.add(stamp, rgb)
    return cam


def window_range(frames: list[tuple[int, np.ndarray]]) -> tuple[int, int]:
    inside = [t for t, _ in frames if SIM_WINDOW[0] * 1e9 <= t < SIM_WINDOW[1] * 1e9]
    return inside[0], inside[-1]


@pytest.fixture(scope='module')
def sim_clean() -> dict[str, list[tuple[int, np.ndarray]]]:
    return render()


def test_clean_sim_cameras_have_no_findings(sim_clean):
    for camera, frames in sim_clean.items():
        assert len(frames) >= 45
        cam = watch_sim(frames, camera)
        assert cam.findings() == [], camera


@pytest.mark.parametrize('blurred', CAMERAS)
def test_sim_blur_and_freeze_faults_are_found_in_their_window(blurred):
    frozen = next(c for c in CAMERAS if c != blurred)
    streams = render([Fault(blurred, 'blur', *SIM_WINDOW), Fault(frozen, 'freeze', *SIM_WINDOW)])
    blur_found = by_check(watch_sim(streams[blurred], blurred))
    assert list(blur_found) == ['image.blur']
    assert blur_found['image.blur'].ranges == (window_range(streams[blurred]),)
    frozen_found = by_check(watch_sim(streams[frozen], frozen))
    assert list(frozen_found) == ['image.frozen']
    assert frozen_found['image.frozen'].ranges == (window_range(streams[frozen]),)


def test_sim_lens_covered_by_a_hand_is_occluded(sim_clean):
    for camera, frames in sim_clean.items():
        spoiled = [(t, covered(rgb) if i in BAD else rgb) for i, (t, rgb) in enumerate(frames)]
        found = by_check(watch_sim(spoiled, camera))
        assert list(found) == ['image.occluded'], camera
        assert found['image.occluded'].ranges == ((frames[BAD[0]][0], frames[BAD[-1]][0]),)


def test_blur_limit_is_relative_to_each_camera(photos, sim_clean):
    """A plain sim table has a fraction of a photo's texture: a limit that suits one camera misreads the other."""
    real, _ = watch(photo_stream(photos))
    sims = {camera: watch_sim(frames, camera) for camera, frames in sim_clean.items()}
    photo_limit = real.stats()['blur_limit']
    for camera, cam in sims.items():
        stats = cam.stats()
        assert stats['blur_limit'] < photo_limit / 2, camera
        assert stats['sharpness_median'] < photo_limit, f'{camera}: a photo-sized limit calls most frames blurred'
    fixed, _ = watch(photo_stream(photos), ImageLimits(blur_threshold=photo_limit))
    assert fixed.findings() == []
    sim_fixed = CameraWatch('/camera/scene/image_raw', 'scene', ImageLimits(blur_threshold=photo_limit))
    for t, rgb in sim_clean[S.CAMERA_SCENE]:
        sim_fixed.add(t, rgb)
    assert by_check(sim_fixed)['image.blur'].count == sim_fixed.frames


# -- inputs --------------------------------------------------------------------------------------------


def test_uint16_and_mono_frames_are_accepted(photos):
    frames = photo_stream(photos, blur)
    reference, _ = watch(frames)
    variants = {
        'uint16': [f.astype(np.uint16) * 257 for f in frames],
        'mono': [cv2.cvtColor(f, cv2.COLOR_RGB2GRAY) for f in frames],
        'mono HxWx1': [cv2.cvtColor(f, cv2.COLOR_RGB2GRAY)[:, :, None] for f in frames],
        'mono16': [cv2.cvtColor(f, cv2.COLOR_RGB2GRAY).astype(np.uint16) * 257 for f in frames],
        'rgba': [cv2.cvtColor(f, cv2.COLOR_RGB2RGBA) for f in frames],
    }
    for kind, variant in variants.items():
        cam, _ = watch(variant)
        found = by_check(cam)
        assert list(found) == ['image.blur'], kind
        assert found['image.blur'].ranges == (bad_range(),), kind
        assert cam.stats()['sharpness_median'] == pytest.approx(reference.stats()['sharpness_median'], rel=0.05)
    dim = [(f.astype(np.uint16) * 10) for f in photo_stream(photos)]  # 16-bit data using 1/25 of its range
    cam, _ = watch(dim)
    assert list(by_check(cam)) == ['image.dark']


def test_unsupported_frames_are_refused(photos):
    cam = CameraWatch('/c', 'c')
    with pytest.raises(ValueError, match='dtype'):
        cam.add(T0_NS, photos[0].astype(np.float32))
    with pytest.raises(ValueError, match='shape'):
        cam.add(T0_NS, photos[0][:, :, :2])
    with pytest.raises(ValueError, match='empty'):
        cam.add(T0_NS, np.zeros((0, 10), np.uint8))
    assert cam.frames == 0 and cam.findings() == []
    assert all(np.isnan(v) for k, v in cam.stats().items() if k != 'frames')


@pytest.mark.parametrize('bad', [{'blur_ratio': 1.5}, {'blur_threshold': 0.0}, {'frozen_frames': 0},
                                 {'dark_mean': 240.0}, {'occluded_share': 0.0}, {'analysis_width': 4}])
def test_bad_limits_are_refused(bad):
    with pytest.raises(ValueError):
        ImageLimits(**bad)


def test_absolute_blur_threshold_applies_from_the_first_frame(photos):
    frames = photo_stream(photos)
    frames[0] = blur(frames[0])
    cam, fired = watch(frames, ImageLimits(blur_threshold=500.0))
    assert fired[0] == ['image.blur']
    f = by_check(cam)['image.blur']
    assert f.ranges == ((T0_NS, T0_NS),) and f.threshold == 500.0
    _, fired = watch(frames)
    assert fired[0] == []  # derived: the camera's own sharpness is not known yet


# -- findings as a report reads them ---------------------------------------------------------------------


def test_findings_are_well_formed_and_round_trip(photos):
    rng = np.random.default_rng(7)
    frames = photo_stream(photos, frames=80)
    spoilers = {range(12, 15): dark, range(22, 27): blur, range(45, 50): covered, range(55, 58): blown}
    for span, spoil in spoilers.items():
        for i in span:
            frames[i] = noisy(spoil(photos[(i // 10) % len(photos)]), rng)
    for i in range(33, 40):
        frames[i] = frames[32]
    for i in range(60, 64):  # a second, separate blurred stretch
        frames[i] = blur(frames[i])
    times = stamps(len(frames))
    cam, _ = watch(frames)
    found = by_check(cam)
    assert set(found) == set(CHECKS)
    assert [f.check for f in cam.findings()] == list(CHECKS)
    assert found['image.blur'].ranges == ((times[22], times[26]), (times[60], times[63]))
    assert found['image.frozen'].ranges == ((times[33], times[39]),)
    assert found['image.dark'].ranges == ((times[12], times[14]),)
    assert found['image.occluded'].ranges == ((times[45], times[49]),)
    assert found['image.overexposed'].ranges == ((times[55], times[57]),)
    for f in cam.findings():
        assert f.ranges and all(times[0] <= a <= b <= times[-1] for a, b in f.ranges)
        assert all(prev[1] < nxt[0] for prev, nxt in zip(f.ranges, f.ranges[1:], strict=False))
        assert f.count >= len(f.ranges)
        assert np.isfinite(f.value) and np.isfinite(f.threshold)
        assert '\n' not in f.message and f.message.startswith('wrist camera ')
        data = json.loads(json.dumps(f.to_json(episode_start_ns=T0_NS)))
        back = Finding.from_json(data)
        assert (back.check, back.severity, back.topic, back.message, back.ranges, back.count) == \
            (f.check, f.severity, f.topic, f.message, f.ranges, f.count)
        assert back.value == pytest.approx(f.value, abs=1e-6)
        assert back.threshold == pytest.approx(f.threshold, abs=1e-6)
        assert data['ranges_s'][0][0] >= 0


def test_findings_can_be_asked_at_any_time(photos):
    frames = photo_stream(photos, blur)
    cam = CameraWatch('/c', 'c')
    for i, (t, frame) in enumerate(zip(stamps(FRAMES), frames, strict=True)):
        cam.add(t, frame)
        if i == BAD[3]:
            assert by_check(cam)['image.blur'].count == 4
    assert by_check(cam)['image.blur'].count == len(BAD)


def test_a_320x240_frame_is_checked_well_under_a_millisecond(photos):
    base = cv2.resize(photos[0], (320, 240), interpolation=cv2.INTER_AREA)
    rng = np.random.default_rng(1)
    frames = [noisy(base, rng) for _ in range(10)]
    cam = CameraWatch('/c', 'c')
    spent = []
    for i in range(200):
        start = time.perf_counter()
        cam.add(T0_NS + i * PERIOD_NS, frames[i % 10])
        spent.append(time.perf_counter() - start)
    assert float(np.median(spent)) < 1e-3  # typically ~0.15 ms; the margin absorbs a busy test machine
