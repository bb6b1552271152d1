"""Light measured without a meter (issue 36, part 3): `robodata calibrate lux` fits a camera's response from takes
that had a lux meter and writes it into the profile's camera entry; takes without a meter then get their light
estimated, marked so, with the fit's error; and a camera below the protocol's requirement flags the take.

The takes are a real portrait (test/data/faces/astronaut.png, public domain) seen by a simulated camera at a fixed
exposure and gain whose mean brightness follows the light as 255 * (lux / 4000) ** 0.45 (a gamma-like response).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml

from ros_robodata.bag.image import encode_compressed
from ros_robodata.bag.types import header, typestore
from ros_robodata.bag.writer import BagWriter
from ros_robodata.capture.coverage import coverage
from ros_robodata.capture.frame_measure import FrameMeasurer
from ros_robodata.capture.lux_calibration import calibrated_camera, camera_calibration, profile_camera_calibration
from ros_robodata.capture.protocol import load_protocol
from ros_robodata.capture.take_check import CAMERA, ILLUMINANCE, TakeCheck, camera_value, take_record
from ros_robodata.capture.take_record import write_take
from ros_robodata.cli.main import main
from ros_robodata.dataset import Dataset, Episode
from ros_robodata.errors import ProfileError
from ros_robodata.profile import load_profile
from test.real_data import real_data

T0_NS = 1_700_000_000_000_000_000
TOPIC = '/camera/front/image_raw/compressed'
METER = '/illuminance (sensor_msgs/Illuminance)'
MEASURED_LUX = (20.0, 60.0, 200.0, 600.0, 2000.0)


def brightness_at(lux: float) -> float:
    return 255 * (lux / 4000) ** 0.45


def frame_with(photo: np.ndarray, brightness: float) -> np.ndarray:
    """The portrait scaled to this mean brightness (pixels over 255 clip, as a sensor's do)."""
    grey = cv2.cvtColor(photo, cv2.COLOR_BGR2GRAY)
    return np.clip(photo.astype(np.float32) * (brightness / float(grey.mean())), 0, 255).astype(np.uint8)


def frame_at(photo: np.ndarray, lux: float) -> np.ndarray:
    """The portrait as the fixed-exposure camera sees it in this light: mean brightness brightness_at(lux)."""
    return frame_with(photo, brightness_at(lux))


@pytest.fixture(scope='module')
def photo() -> np.ndarray:
    image = cv2.imread(str(real_data('faces/astronaut.png')), cv2.IMREAD_COLOR)
    return cv2.resize(image, (320, 320), interpolation=cv2.INTER_AREA)


def _take(dataset: Dataset, episode_id: str, photo: np.ndarray, lux: float, source: str | None) -> None:
    types = typestore().types
    with BagWriter(dataset.bag_dir(episode_id)) as bag:
        bag.add_topic(TOPIC, 'sensor_msgs/msg/CompressedImage')
        for i in range(5):
            ns = T0_NS + i * 33_000_000
            bag.write_message(TOPIC, ns, types['sensor_msgs/msg/CompressedImage'](
                header=header(ns, 'front'), **encode_compressed(frame_at(photo, lux)[:, :, ::-1], 'png')))
    measured = {'illuminance': {'value': lux, 'unit': 'lux', 'verdict': 'within', 'source': source}} if source \
        else {'illuminance': {'verdict': 'not measured', 'why': 'no meter'}}
    dataset.add_episode(Episode(id=episode_id, task='expressions', status='complete', start_ns=T0_NS,
                                stop_ns=T0_NS + 4 * 33_000_000, capture={'protocol': 'hri_expressions',
                                                                         'measured': measured}))


@pytest.fixture
def studio(tmp_path: Path, photo: np.ndarray) -> tuple[Path, Path]:
    """(the dataset, the profile file it was recorded with): five takes with a meter, one without."""
    profile = tmp_path / 'capture_studio.yaml'
    shutil.copy(Path(__file__).parents[1] / 'config' / 'capture_studio.yaml', profile)
    dataset = Dataset.create(tmp_path / 'ds', profile=load_profile(profile))
    for i, lux in enumerate(MEASURED_LUX):
        _take(dataset, f'take_{i}', photo, lux, METER)
    _take(dataset, 'take_no_meter', photo, 300.0, None)
    return dataset.root, profile


def test_calibrate_lux_writes_the_fit_into_the_profile_and_keeps_the_file(
        studio: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    root, profile_path = studio
    before = profile_path.read_text(encoding='utf-8')
    assert main(['calibrate', 'lux', str(root), '--camera', 'front']) == 0
    out, err = capsys.readouterr()
    assert 'front: lux = ' in out and 'from 5 takes' in out
    assert 'limit: brightness alone: valid only at the exposure and gain' in out
    assert '1 episode(s) without a lux meter reading' in err
    after = profile_path.read_text(encoding='utf-8')
    assert after.startswith(before.split('  cameras:')[0])  # the comments and keys above are kept as written
    assert '# cameras over USB hubs deliver a frame' in after
    profile = load_profile(profile_path)
    front, side = profile.topics.cameras
    assert side.lux_calibration is None and front.lux_calibration is not None
    spec = front.lux_calibration
    assert (spec.model, spec.samples, spec.exposure_topic) == ('brightness', 5, None)
    assert spec.b == pytest.approx(1 / 0.45, rel=0.05)
    fit = camera_calibration(front)
    assert fit is not None and fit.error_pct < 15  # pixels clipped at 255 in bright light bend the curve
    lux = fit.lux(brightness_at(300.0), 1.0, 1.0)  # a light it was not fitted at
    assert lux == pytest.approx(300.0, rel=0.15)
    assert fit.lux(brightness_at(100_000.0), 1.0, 1.0) is None  # far outside what it covered: not guessed

    # `robodata session --camera TOPIC` hands the shot list the camera's calibration when it has one.
    assert calibrated_camera(str(profile_path), TOPIC) == f'{profile_path}:front'
    assert calibrated_camera(str(profile_path), '/camera/side/image_raw/compressed') == ''
    assert profile_camera_calibration(f'{profile_path}:front') == fit
    with pytest.raises(ProfileError, match="camera 'side' has no lux_calibration: run robodata calibrate lux"):
        profile_camera_calibration(f'{profile_path}:side')

    # Again: the entry is replaced, not repeated.
    assert main(['calibrate', 'lux', str(root), '--camera', 'front', '--json']) == 0
    assert profile_path.read_text(encoding='utf-8').count('lux_calibration:') == 1


def test_calibrate_lux_says_why_it_cannot(studio: tuple[Path, Path], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    root, profile_path = studio
    assert main(['calibrate', 'lux', str(root), '--camera', 'wrist']) == 1
    assert capsys.readouterr().err.strip() == (f"robodata calibrate: error: {profile_path}: no camera 'wrist' (it "
                                               "has: front, side)")
    assert main(['calibrate', 'lux', str(root), '--camera', 'side']) == 1
    assert 'no take with a lux meter reading and frames of /camera/side/image_raw/compressed' in \
        capsys.readouterr().err
    assert main(['calibrate', 'lux', str(root), '--camera', 'front', '--exposure-topic', '/exposure']) == 1
    assert capsys.readouterr().err.strip() == ('robodata calibrate: error: --exposure-topic and --gain-topic go '
                                               'together (or neither: brightness alone)')
    before = profile_path.read_text(encoding='utf-8')
    assert main(['calibrate', 'lux', str(root), '--camera', 'front', '--dry-run']) == 0
    assert profile_path.read_text(encoding='utf-8') == before


def test_the_profile_checks_lux_calibration(tmp_path: Path) -> None:
    data = yaml.safe_load((Path(__file__).parents[1] / 'config' / 'capture_studio.yaml').read_text())
    good = {'model': 'brightness', 'a': 0.5, 'b': 2.2, 'low': 20.0, 'high': 190.0, 'samples': 5, 'rms_log10': 0.02}
    path = tmp_path / 'p.yaml'
    for entry, message in (
            ({**good, 'model': 'exposure_gain'}, 'topics.cameras[0].lux_calibration.model: model exposure_gain needs '
                                                 'exposure_topic and gain_topic'),
            ({**good, 'a': -1.0}, 'topics.cameras[0].lux_calibration.a: must be greater than 0, got -1'),
            ({**good, 'high': 10.0}, 'topics.cameras[0].lux_calibration.high: is below low (20)'),
            ({**good, 'model': 'guess'}, "topics.cameras[0].lux_calibration.model: expected one of exposure_gain, "
                                         "brightness, got 'guess'")):
        data['topics']['cameras'][0]['lux_calibration'] = entry
        path.write_text(yaml.safe_dump(data))
        with pytest.raises(ProfileError) as err:
            load_profile(path)
        assert str(err.value) == f'{path}: {message}'
    data['topics']['cameras'][0]['lux_calibration'] = good
    path.write_text(yaml.safe_dump(data))
    assert load_profile(path).topics.cameras[0].lux_calibration is not None
    # A profile without the key keeps the hash it always had (datasets recorded with it still match).
    del data['topics']['cameras'][0]['lux_calibration']
    path.write_text(yaml.safe_dump(data))
    shipped = load_profile(Path(__file__).parents[1] / 'config' / 'capture_studio.yaml')
    assert load_profile(path).sha256 == shipped.sha256


def test_a_take_without_a_meter_gets_estimated_light_and_a_meter_wins(photo: np.ndarray) -> None:
    from ros_robodata.capture.take_conditions import LuxCalibration, LuxSample, fit_lux_calibration

    fit: LuxCalibration = fit_lux_calibration([LuxSample(lux, brightness_at(lux), 1.0, 1.0) for lux in MEASURED_LUX])
    fit = LuxCalibration(fit.a, fit.b, fit.low, fit.high, fit.samples, fit.rms_log10, 'brightness')
    measurer = FrameMeasurer('/cam (faces)', clock=lambda: 5.0, calibration=fit)
    measurer.set_camera_info([300.0, 0, 160, 0, 300.0, 160, 0, 0, 1], 320, 320)
    readings = {r.kind: r for r in measurer.measure(frame_at(photo, 300.0))}
    assert readings[ILLUMINANCE].value == pytest.approx(300.0, rel=0.1)
    protocol = load_protocol('hri_expressions')
    intended = {'distance': '3-6', 'illuminance': '100-500', 'orientation': 'front', 'expression': 'smile'}

    check = TakeCheck(protocol, {ILLUMINANCE: METER})
    check.estimate_lux_from('/cam (faces)', '+-5% (fit of 5 takes, brightness alone)')
    check.start()
    check.add(ILLUMINANCE, float(readings[ILLUMINANCE].value), '/cam (faces)', 5.0)
    record, shown = check.stop(intended)
    assert record['illuminance'] == {'value': pytest.approx(300.0, rel=0.1), 'verdict': 'within',
                                     'estimated': '+-5% (fit of 5 takes, brightness alone)'}
    assert (shown['illuminance']['source'], shown['illuminance']['estimated']) == (
        '/cam (faces)', '+-5% (fit of 5 takes, brightness alone)')

    check.start()  # a meter reading in the same take: the estimate is not used
    check.add(ILLUMINANCE, 250.0, '/cam (faces)', 6.0)
    check.add(ILLUMINANCE, 42.0, METER, 6.0)
    record, shown = check.stop(intended)
    assert record['illuminance'] == {'value': 42.0, 'verdict': 'within'}
    assert shown['illuminance']['source'] == METER and 'estimated' not in shown['illuminance']

    # Without a calibration the camera gives no light: "not measured", never guessed from brightness.
    bare = FrameMeasurer('/cam (faces)', clock=lambda: 5.0)
    bare.set_camera_info([300.0, 0, 160, 0, 300.0, 160, 0, 0, 1], 320, 320)
    assert ILLUMINANCE not in {r.kind for r in bare.measure(frame_at(photo, 300.0))}


def test_a_camera_below_the_protocol_flags_the_take_and_it_is_not_within_spec(tmp_path: Path) -> None:
    protocol = load_protocol('hri_expressions')  # camera: at least 1920x1080 at 30 Hz
    intended = {'distance': '3-6', 'illuminance': '100-500', 'orientation': 'front', 'expression': 'smile'}
    check = TakeCheck(protocol)
    check.start()
    check.add(CAMERA, camera_value(640, 480, 30.0), '/cam (faces)', 1.0)
    check.add(ILLUMINANCE, 200.0, METER, 1.0)
    assert [f.text for f in check.flags(intended, 1.5)] == [
        'camera: intended at least 1920x1080 at 30 Hz, measured 640x480 at 30.0 Hz']
    assert check.camera_problem(camera_value(1920, 1080, 14.9)) == '14.9 Hz below 30 Hz'
    assert check.camera_problem(camera_value(1920, 1080, 29.5)) == ''
    record, shown = check.stop(intended)
    assert shown['camera'] == {'value': '640x480 at 30.0 Hz', 'required': 'at least 1920x1080 at 30 Hz',
                               'verdict': 'outside', 'why': '640x480 below 1920x1080'}
    dataset = Dataset.create(tmp_path / 'ds')
    dataset.add_episode(Episode(id='take_1', task='expressions', status='complete', start_ns=T0_NS,
                                stop_ns=T0_NS + 10))
    write_take(dataset.episode_dir('take_1'), take_record(protocol, '', 1, intended, record))
    counted = [c for c in coverage(dataset, protocol).cells if c.captured]
    assert [(c.captured, c.within_spec) for c in counted] == [(1, 0)]



LINEAR = 0.05  # the auto-exposing camera's response: brightness = LINEAR * lux * exposure * gain (gamma undone)


def auto_exposed(lux: float, target: float) -> tuple[float, float]:
    """(exposure in ms, linear gain) that auto-exposure picks for this light to reach `target` brightness."""
    gain = 2.0 if lux < 100 else 1.0
    return target / (LINEAR * lux * gain), gain


def test_calibrate_lux_with_exposure_and_gain_holds_under_auto_exposure(tmp_path: Path, photo: np.ndarray,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A camera whose auto-exposure keeps every take at about the same brightness: only its exposure and gain
    (std_msgs/Float64 beside its frames) tell the light."""
    profile_path = tmp_path / 'capture_studio.yaml'
    shutil.copy(Path(__file__).parents[1] / 'config' / 'capture_studio.yaml', profile_path)
    dataset = Dataset.create(tmp_path / 'ds', profile=load_profile(profile_path))
    types = typestore().types
    for i, lux in enumerate(MEASURED_LUX):
        target = 100.0 + 8 * i  # auto-exposure lands anywhere from 100 to 132
        exposure, gain = auto_exposed(lux, target)
        with BagWriter(dataset.bag_dir(f'take_{i}')) as bag:
            bag.add_topic(TOPIC, 'sensor_msgs/msg/CompressedImage')
            bag.add_topic('/front/exposure', 'std_msgs/msg/Float64')
            bag.add_topic('/front/gain', 'std_msgs/msg/Float64')
            for k in range(3):
                ns = T0_NS + k * 33_000_000
                bag.write_message('/front/exposure', ns, types['std_msgs/msg/Float64'](data=exposure))
                bag.write_message('/front/gain', ns, types['std_msgs/msg/Float64'](data=gain))
                bag.write_message(TOPIC, ns, types['sensor_msgs/msg/CompressedImage'](
                    header=header(ns, 'front'), **encode_compressed(frame_with(photo, target)[:, :, ::-1], 'png')))
        dataset.add_episode(Episode(id=f'take_{i}', task='expressions', status='complete', start_ns=T0_NS,
                                    stop_ns=T0_NS + 66_000_000, capture={'measured': {'illuminance': {
                                        'value': lux, 'unit': 'lux', 'verdict': 'within', 'source': METER}}}))
    assert main(['calibrate', 'lux', str(dataset.root), '--camera', 'front', '--exposure-topic', '/front/exposure',
                 '--gain-topic', '/front/gain', '--json']) == 0
    out = yaml.safe_load(capsys.readouterr().out)
    assert (out['lux_calibration']['model'], out['written']) == ('exposure_gain', True)
    assert [t['gain'] for t in out['takes']] == [2.0, 2.0, 1.0, 1.0, 1.0]
    front = load_profile(profile_path).topics.cameras[0]
    assert front.lux_calibration is not None
    assert (front.lux_calibration.exposure_topic, front.lux_calibration.gain_topic) == ('/front/exposure',
                                                                                        '/front/gain')
    fit = camera_calibration(front)
    assert fit is not None and fit.model == 'exposure_gain' and fit.error_pct < 15
    # A take at 300 lux, auto-exposed to 120: its brightness with exposure and gain give the light back.
    exposure, gain = auto_exposed(300.0, 120.0)
    seen = float(cv2.cvtColor(frame_with(photo, 120.0), cv2.COLOR_BGR2GRAY).mean())
    assert fit.lux(seen, exposure, gain) == pytest.approx(300.0, rel=0.15)
    # Brightness alone would say nothing here: every take looks alike.
    assert max(t['brightness'] for t in out['takes']) < 1.5 * min(t['brightness'] for t in out['takes'])
