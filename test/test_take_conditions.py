"""A take's conditions measured from its frames (ros_robodata/capture/take_conditions.py), on the real portraits in
test/data/faces/ (public domain: sources in its NOTICE.md) put through a simulated camera.

The simulated camera: a participant whose inter-ocular distance is the adult mean (63 mm) stands at a known
distance; the photo is scaled so the face's eyes are as far apart in pixels as they would be there (the focal
length times 63 mm over the distance) and pasted on a grey background, the eyes on the optical axis. The photos'
own eye distances are measured by the detector on the full-size photo (41 px for the astronaut, 82 px for Grace
Hopper; the astronaut's pupils, read by eye on the photo, are 40 to 41 px apart). So these tests measure the
pipeline (detection of small faces, landmark placement, the scale-to-distance geometry), not the anthropometric
error of assuming every adult has the mean eyes (+-6% for one SD, see `distance_m`).
"""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest

from ros_robodata.capture.take_conditions import (
    DETECTOR_MIN_FACE_PX,
    INTEROCULAR_M,
    MEASURE_MIN_FACE_PX,
    Face,
    FaceDetector,
    Intrinsics,
    LuxSample,
    estimate_distance,
    face_width_px,
    fit_lux_calibration,
    illuminance,
    measure_frame,
    min_face_px_needed,
    orientation,
    resolution_needed,
    yaw_pitch,
)
from ros_robodata.errors import RobodataError
from test.real_data import real_data

PHOTOS = ('astronaut.png', 'grace_hopper.jpg')
# two cameras: 640x480 with a 55-degree view, 1280x720 with a 69-degree view
CAMERAS = {
    '640x480': Intrinsics.from_camera_info([615.0, 0, 320, 0, 615.0, 240, 0, 0, 1], 640, 480),
    '1280x720': Intrinsics.from_camera_info([922.5, 0, 640, 0, 922.5, 360, 0, 0, 1], 1280, 720),
}
DISTANCES = (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0)
MAX_ERROR = 0.15


@pytest.fixture(scope='module')
def detector() -> FaceDetector:
    return FaceDetector()


@pytest.fixture(scope='module')
def photos(detector: FaceDetector) -> dict[str, tuple[np.ndarray, Face]]:
    """Each photo with its face as found at full size."""
    out = {}
    for name in PHOTOS:
        bgr = cv2.imread(str(real_data(f'faces/{name}')), cv2.IMREAD_COLOR)
        assert bgr is not None, name
        faces = detector(bgr)
        assert len(faces) == 1, name
        out[name] = (bgr, faces[0])
    return out


def render(photo: np.ndarray, face: Face, distance: float, camera: Intrinsics, offset: tuple[int, int] = (0, 0),
           off_axis_deg: float = 0.0) -> np.ndarray:
    """The photo scaled so its face is at `distance` metres from `camera`, the point between its eyes on the
    optical axis (moved by `offset` px), on a grey frame of the camera's size. With `off_axis_deg`, the face is
    that far to the side, still facing the camera (square to its ray): seen there, it is stretched by 1/cos^2
    across and 1/cos up and down (the pinhole's u = f tan(angle))."""
    angle = math.radians(off_axis_deg)
    scale = camera.fx * INTEROCULAR_M / distance / face.eye_distance_px
    sx, sy = scale / math.cos(angle) ** 2, scale / math.cos(angle)
    interpolation = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    image = cv2.resize(photo, None, fx=sx, fy=sy, interpolation=interpolation)
    frame = np.full((camera.height, camera.width, 3), 128, np.uint8)
    ex = (face.right_eye[0] + face.left_eye[0]) / 2 * sx
    ey = (face.right_eye[1] + face.left_eye[1]) / 2 * sy
    ox = round(camera.cx + camera.fx * math.tan(angle) - ex) + offset[0]
    oy = round(camera.cy - ey) + offset[1]
    h, w = image.shape[:2]
    x0, y0, x1, y1 = max(0, ox), max(0, oy), min(camera.width, ox + w), min(camera.height, oy + h)
    frame[y0:y1, x0:x1] = image[y0 - oy:y1 - oy, x0 - ox:x1 - ox]
    return frame


def turned(photo: np.ndarray, face: Face, degrees: float) -> np.ndarray:
    """The photo with the head turned about a vertical axis by `degrees` (positive: to the participant's left,
    their nose to the image's right), as a 2.5D warp: the face a half-cylinder as wide as its box with a nose
    standing 0.5 eye distances out of it at the nose landmark, rotated and seen from far (x' = x cos + z sin).
    Not a real turned head, but it moves the nose against the eyes as one does."""
    x, _, w, _ = face.box
    axis = x + w / 2
    radius = w / 2 * 1.1
    iod = face.eye_distance_px
    nx, ny = face.nose
    height, width = photo.shape[:2]
    xs = np.arange(width, dtype=np.float64)
    theta = math.radians(degrees)
    map_x = np.empty((height, width), np.float32)
    for row in range(height):
        depth = np.sqrt(np.clip(radius ** 2 - (xs - axis) ** 2, 0, None))
        depth += 0.5 * iod * np.exp(-((xs - nx) ** 2) / (2 * (0.15 * iod) ** 2)
                                    - ((row - ny) ** 2) / (2 * (0.35 * iod) ** 2))
        forward = axis + (xs - axis) * math.cos(theta) + depth * math.sin(theta)
        forward = np.maximum.accumulate(forward)  # what is hidden behind the turned face is not seen
        map_x[row] = np.interp(xs, forward, xs)
    map_y = np.repeat(np.arange(height, dtype=np.float32)[:, None], width, axis=1)
    return cv2.remap(photo, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


@pytest.mark.parametrize('camera_name', CAMERAS)
@pytest.mark.parametrize('name', PHOTOS)
def test_distance_within_15_percent_from_1_to_6_m(photos: dict[str, tuple[np.ndarray, Face]],
                                                   detector: FaceDetector, name: str, camera_name: str) -> None:
    photo, face = photos[name]
    camera = CAMERAS[camera_name]
    errors = {}
    for distance in DISTANCES:
        for offset in ((0, 0), (1, 1)):  # two sub-pixel placements of the face
            measured = measure_frame(render(photo, face, distance, camera, offset), camera, detector=detector)
            assert measured.faces == 1, (distance, measured.notes)
            assert measured.distance_m is not None, (distance, measured.notes)
            assert measured.orientation == 'front', (distance, measured.orientation)
            errors[distance, offset] = measured.distance_m / distance - 1
    print(name, camera_name, {f'{d} m{" +1px" if o != (0, 0) else ""}': f'{e:+.1%}' for (d, o), e in errors.items()})
    assert max(abs(e) for e in errors.values()) <= MAX_ERROR, errors


def test_a_face_off_the_axis_is_measured_along_its_ray(photos: dict[str, tuple[np.ndarray, Face]],
                                                       detector: FaceDetector) -> None:
    """The angle between the eye rays, not their pixel distance: a face at the frame's side, facing the camera,
    is measured at its distance (its eyes are further apart in pixels there than on the axis)."""
    photo, face = photos['grace_hopper.jpg']
    camera = CAMERAS['1280x720']
    for angle in (20.0, 30.0):
        frame = render(photo, face, 3.0, camera, off_axis_deg=angle)
        measured = measure_frame(frame, camera, detector=detector)
        assert measured.distance_m is not None, measured.notes
        assert measured.distance_m == pytest.approx(3.0, rel=0.08)
        stretched = measured.face
        assert stretched is not None
        assert 3.0 * stretched.eye_distance_px / camera.fx / INTEROCULAR_M > 1.1  # what pixels alone would say


def test_smallest_faces_found_and_not_measured_below_the_limit(photos: dict[str, tuple[np.ndarray, Face]],
                                                                detector: FaceDetector) -> None:
    """Far beyond 6 m the detector still finds a face, down to about DETECTOR_MIN_FACE_PX; under
    MEASURE_MIN_FACE_PX its distance is not measured, rather than guessed from 4 px between the eyes."""
    camera = CAMERAS['640x480']
    smallest = math.inf
    for name in PHOTOS:
        photo, face = photos[name]
        for distance in (8.0, 10.0, 12.0):
            measured = measure_frame(render(photo, face, distance, camera), camera, detector=detector)
            if measured.face is None:
                assert measured.notes[0] == 'no face found'
                continue
            smallest = min(smallest, measured.face.width_px)
            if measured.face.width_px < MEASURE_MIN_FACE_PX:
                assert measured.distance_m is None
                assert any('distance not measured' in n for n in measured.notes)
            else:
                assert measured.distance_m is not None
                assert abs(measured.distance_m / distance - 1) <= MAX_ERROR
    print('smallest face found:', f'{smallest:.1f} px')
    assert DETECTOR_MIN_FACE_PX <= smallest < MEASURE_MIN_FACE_PX


@pytest.mark.parametrize('name', PHOTOS)
def test_a_dark_frame_finds_the_face_or_says_not_measured(photos: dict[str, tuple[np.ndarray, Face]],
                                                          detector: FaceDetector, name: str) -> None:
    """Darkened (scaled down, and gamma 2.2 as a dim room's low end) and noisy: a distance within 15% or none."""
    photo, face = photos[name]
    camera = CAMERAS['1280x720']
    rng = np.random.default_rng(0)
    outcomes: list[tuple[float, float, float | None]] = []
    for distance in (1.0, 3.0, 6.0):
        frame = render(photo, face, distance, camera).astype(np.float64) / 255
        for factor, gamma in ((0.3, 1.0), (0.1, 1.0), (0.05, 2.2), (0.02, 2.2)):
            dark = factor * frame ** gamma * 255 + rng.normal(0, 1.5, frame.shape)
            measured = measure_frame(np.clip(np.rint(dark), 0, 255).astype(np.uint8), camera, detector=detector)
            if measured.distance_m is None:
                assert any('not measured' in n or n == 'no face found' for n in measured.notes), measured
                outcomes.append((distance, factor, None))
            else:
                error = measured.distance_m / distance - 1
                assert abs(error) <= MAX_ERROR, (distance, factor, gamma, measured)
                outcomes.append((distance, factor, round(error, 3)))
    print(name, outcomes)
    assert any(e is not None for *_, e in outcomes)  # the darkening leaves some faces measurable


@pytest.mark.parametrize('name', PHOTOS)
def test_a_mirrored_head_turns_the_other_way(photos: dict[str, tuple[np.ndarray, Face]], detector: FaceDetector,
                                             name: str) -> None:
    photo, face = photos[name]
    # as they are, both portraits face the camera, and so do their mirror images
    assert orientation(face) == 'front'
    mirrored = detector(cv2.flip(photo, 1))
    assert len(mirrored) == 1 and orientation(mirrored[0]) == 'front'
    for degrees, side, other in ((45, 'left', 'right'), (-45, 'right', 'left')):
        image = turned(photo, face, degrees)
        found = detector(image)
        assert len(found) == 1
        flipped = detector(cv2.flip(image, 1))
        assert len(flipped) == 1
        yaw, _ = yaw_pitch(found[0])
        yaw_flipped, _ = yaw_pitch(flipped[0])
        print(name, degrees, f'yaw {yaw:+.2f}, mirrored {yaw_flipped:+.2f}')
        assert orientation(found[0]) == side
        assert orientation(flipped[0]) == other


def _face(nose: tuple[float, float]) -> Face:
    """A face with the 5-point template's landmarks (ArcFace's 112x112) and its nose moved to `nose`."""
    return Face((20.0, 30.0, 72.0, 80.0), 0.9,
                ((38.3, 51.7), (73.5, 51.5), nose, (41.5, 92.4), (70.7, 92.2)))


@pytest.mark.parametrize(('nose', 'expected'), [
    ((56.0, 71.7), 'front'),
    ((56.0 + 0.2 * 35.2, 71.7), 'left'),  # the nose towards the participant's left eye (the image's right)
    ((56.0 - 0.2 * 35.2, 71.7), 'right'),
    ((56.0, 51.6 + 0.3 * 40.7), 'up'),  # the nose tip nearer the eye line than the mouth
    ((56.0, 51.6 + 0.7 * 40.7), 'down'),
])
def test_orientation_bins(nose: tuple[float, float], expected: str) -> None:
    assert orientation(_face(nose)) == expected


def test_orientation_does_not_change_with_roll() -> None:
    """A head tilted sideways by 30 degrees, turned to its left: still 'left'."""
    face = _face((56.0 + 0.2 * 35.2, 71.7))
    angle = math.radians(30)
    c, s = math.cos(angle), math.sin(angle)
    points = tuple((56 + c * (x - 56) - s * (y - 70), 70 + s * (x - 56) + c * (y - 70)) for x, y in face.landmarks)
    assert orientation(Face(face.box, face.score, points)) == 'left'  # type: ignore[arg-type]


def _campus(name: str) -> np.ndarray:
    photo = cv2.imread(str(real_data(f'photos/{name}')), cv2.IMREAD_COLOR)
    assert photo is not None, name
    return cv2.resize(photo, (640, 480), interpolation=cv2.INTER_AREA)


def test_a_frame_without_a_face(detector: FaceDetector) -> None:
    camera = CAMERAS['640x480']
    measured = measure_frame(_campus('P1070494.png'), camera, detector=detector)  # a campus, no one near
    assert measured.faces == 0 and measured.distance_m is None and measured.orientation is None
    assert measured.notes == ('no face found', 'lux not measured: no meter and no calibration')
    blank = measure_frame(np.full((480, 640, 3), 128, np.uint8), camera, detector=detector)
    assert blank.faces == 0 and 'no face found' in blank.notes


@pytest.mark.parametrize('name', ['P1070491.png', 'P1070496.png', 'P1070498.png'])
def test_passers_by_far_away_are_found_but_not_measured(detector: FaceDetector, name: str) -> None:
    """The campus photos hold people walking by, their faces 5 to 12 px high: found, too small to measure."""
    measured = measure_frame(_campus(name), CAMERAS['640x480'], detector=detector)
    assert measured.faces >= 1 and measured.face is not None
    assert measured.face.width_px < MEASURE_MIN_FACE_PX
    assert measured.distance_m is None and measured.orientation is None
    assert any(n.startswith('distance not measured: face') for n in measured.notes)


def test_a_frame_of_the_wrong_size_is_refused(detector: FaceDetector) -> None:
    with pytest.raises(RobodataError, match='scale the intrinsics'):
        measure_frame(np.zeros((720, 1280, 3), np.uint8), CAMERAS['640x480'], detector=detector)


def test_intrinsics_from_camera_info() -> None:
    camera = Intrinsics.from_camera_info(np.array([[600.0, 0, 310], [0, 601.0, 242], [0, 0, 1]]), 640, 480)
    assert (camera.fx, camera.fy, camera.cx, camera.cy) == (600.0, 601.0, 310.0, 242.0)
    with pytest.raises(RobodataError, match='not calibrated'):
        Intrinsics.from_camera_info([0.0] * 9, 640, 480)
    with pytest.raises(RobodataError, match='9 numbers'):
        Intrinsics.from_camera_info([600.0, 0, 320], 640, 480)


def test_lux_from_the_meter_else_the_calibration_else_not_measured() -> None:
    class Reading:  # what sensor_msgs/msg/Illuminance carries
        illuminance = 420.0
        variance = 0.0

    assert illuminance(Reading()) == 420.0
    assert illuminance(35.0) == 35.0
    with pytest.raises(RobodataError, match='not a light level'):
        illuminance(-1.0)
    assert illuminance(None, brightness=120.0, exposure=0.01, gain=1.0) is None  # brightness alone says nothing


def _auto_exposed(lux: float, a: float, b: float, target: float) -> tuple[float, float, float]:
    """(brightness, exposure s, gain) of a camera whose response is lux = a * x ** b, x = brightness / (exposure *
    gain), its auto exposure aiming at `target` with exposure capped at a 30 Hz frame and gain at 16."""
    x = (lux / a) ** (1 / b)
    exposure = min(target / x, 0.033)
    gain = float(np.clip(target / (x * exposure), 1.0, 16.0))
    return min(x * exposure * gain, 255.0), exposure, gain


def test_lux_calibration_round_trip() -> None:
    """Samples from a known camera response over 10 to 4000 lux at auto exposure, with 5% meter noise: the fit
    finds the response back, and lux from it is within 8%."""
    rng = np.random.default_rng(1)
    a, b = 0.01, 1.2
    samples = []
    for lux in np.geomspace(10, 4000, 24):
        brightness, exposure, gain = _auto_exposed(float(lux), a, b, float(rng.uniform(80, 160)))
        samples.append(LuxSample(float(lux * rng.normal(1, 0.05)), brightness, exposure, gain))
    samples.append(LuxSample(5000.0, 255.0, 0.001, 1.0))  # saturated: left out of the fit
    calibration = fit_lux_calibration(samples)
    assert calibration.samples == 24
    assert calibration.b == pytest.approx(b, rel=0.03)
    assert calibration.a == pytest.approx(a, rel=0.3)
    for lux in (10.0, 300.0, 4000.0):
        measured = illuminance(None, calibration, *_auto_exposed(lux, a, b, 118.0))
        assert measured is not None and measured == pytest.approx(lux, rel=0.08)
    assert illuminance(None, calibration, 255.0, 0.01, 1.0) is None  # saturated: not measured
    assert illuminance(None, calibration, 100.0, 10.0, 1.0) is None  # far outside what was calibrated
    assert illuminance(120.0, calibration, 100.0, 0.01, 1.0) == 120.0  # the meter wins


def test_lux_calibration_refuses_what_it_cannot_fit() -> None:
    with pytest.raises(RobodataError, match='usable samples'):
        fit_lux_calibration([LuxSample(100.0, 120.0, 0.01, 1.0), LuxSample(200.0, 240.0, 0.01, 1.0)])
    with pytest.raises(RobodataError, match='factor of 2'):
        fit_lux_calibration([LuxSample(100.0 + i, 120.0 + i, 0.01, 1.0) for i in range(5)])
    with pytest.raises(RobodataError, match='positive'):
        fit_lux_calibration([LuxSample(0.0, 120.0, 0.01, 1.0)] * 3)


def test_measure_frame_uses_the_calibration(photos: dict[str, tuple[np.ndarray, Face]],
                                            detector: FaceDetector) -> None:
    camera = CAMERAS['640x480']
    calibration = fit_lux_calibration([LuxSample(float(v) * 10, float(v), 0.01, 1.0) for v in (20, 60, 120, 200)])
    frame = render(*photos['astronaut.png'], 2.0, camera)
    measured = measure_frame(frame, camera, calibration=calibration, exposure=0.01, gain=1.0, detector=detector)
    assert measured.lux == pytest.approx(10 * float(np.mean(cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY))), rel=1e-6)
    assert measured.distance_m is not None and measured.notes == ()
    no_exposure = measure_frame(frame, camera, calibration=calibration, detector=detector)
    assert no_exposure.lux is None and 'lux not measured: no exposure and gain for the calibration' in no_exposure.notes
    metered = measure_frame(frame, camera, lux_reading=250.0, detector=detector)
    assert metered.lux == 250.0


def test_face_size_and_resolution_needed() -> None:
    # the protocol's figure: a 640-px camera with a 60-degree view sees a 150 mm face at 20 ft as about 14 px
    assert face_width_px(6.096, Intrinsics.from_hfov(640, 480, 60), face_m=0.150) == pytest.approx(13.6, abs=0.1)
    assert resolution_needed(6.096, 60, min_px=14, face_m=0.150) == 657
    camera = CAMERAS['640x480']
    at_6 = min_face_px_needed(6.0, camera)
    assert at_6.enough and at_6.expected_px == pytest.approx(615 * 0.126 / 6)
    assert not min_face_px_needed(8.0, camera).enough
    # what the rig needs for 20 ft with YuNet's 126 mm box at MEASURE_MIN_FACE_PX: the 55-degree 640-px camera
    # is just enough, a 69-degree one needs 805 px
    assert resolution_needed(6.096, 55.0) <= 640 < resolution_needed(6.096, 69.4) == 805
    with pytest.raises(RobodataError):
        resolution_needed(0.0, 60)


def test_eyes_and_box_must_agree(photos: dict[str, tuple[np.ndarray, Face]]) -> None:
    """Landmarks the box does not confirm (eyes placed twice too close) give no distance, not a wrong one."""
    _, face = photos['grace_hopper.jpg']
    (rx, ry), (lx, ly) = face.right_eye, face.left_eye
    mx = (rx + lx) / 2
    squeezed = Face(face.box, face.score, ((mx - (mx - rx) / 2, ry), (mx + (lx - mx) / 2, ly), face.nose,
                                           face.landmarks[3], face.landmarks[4]))
    estimate = estimate_distance(squeezed, Intrinsics.from_hfov(512, 600, 60))
    assert estimate.distance_m is None and 'eyes say' in estimate.note
