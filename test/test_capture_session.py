"""Capture at the rig (issue 36, part 2): the shot list, the take's conditions checked live, consent checked before
anything records, and a real session (`robodata session --protocol` driven through `robodata keys` on Fast DDS
loopback) whose take lands in episode.yaml and capture.json and counts in `robodata coverage`."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from ros_robodata.capture.consent_check import check_participant
from ros_robodata.capture.coverage import coverage
from ros_robodata.capture.protocol import Protocol, load_protocol
from ros_robodata.capture.shot_list import ShotList, empty_coverage
from ros_robodata.capture.take_check import DISTANCE, ILLUMINANCE, TakeCheck
from ros_robodata.capture.take_record import read_take
from ros_robodata.cli.main import main
from ros_robodata.dataset import Dataset
from ros_robodata.dataset.participants import PARTICIPANTS_FILE, add_participant, withdraw_participant
from ros_robodata.errors import RobodataError
from ros_robodata.profile import load_profile
from ros_robodata.record.keys_screen import TAKE_STATUS, WARN, KeysScreen, Request
from test.ros_rig import PROFILE, client, new_domain, ros_env, stop_process

STUDIO = {
    'name': 'studio',
    'factors': {
        'distance': {'unit': 'ft', 'bins': [[3, 6], [6, 10]]},
        'illuminance': {'unit': 'lux', 'bins': [[10, 100], [100, 1000]]},
        'expression': {'levels': ['neutral', 'smile']},
    },
    'takes_per_cell': 1,
    'participants': {'consent_required': True},
}


@pytest.fixture
def studio(tmp_path: Path) -> Protocol:
    path = tmp_path / 'studio.yaml'
    path.write_text(yaml.safe_dump(STUDIO, sort_keys=False), encoding='utf-8')
    return load_protocol(path)


def test_the_shot_list_shows_the_next_take_and_skips_and_changes_it(studio: Protocol) -> None:
    shots = ShotList(empty_coverage(studio, 'ds'))
    assert shots.line() == 'take 1/8: 3-6 ft, 10-100 lux, neutral'
    assert shots.skip() == 'skipped 3-6 ft, 10-100 lux, neutral'
    assert shots.line() == 'take 1/8: 3-6 ft, 10-100 lux, smile'
    assert shots.cycle('illuminance') == 'illuminance now 100-1000 lux'
    assert shots.line() == 'take 1/8: 3-6 ft, 100-1000 lux, smile (changed: illuminance)'
    assert shots.cycle('illuminance') == 'illuminance now 10-100 lux'  # after the last level, the first
    assert shots.current is not None and shots.current.intended == {
        'distance': '3-6', 'illuminance': '10-100', 'expression': 'smile'}
    with pytest.raises(RobodataError, match="protocol studio has no factor 'lux'; factors: distance, illuminance, "
                                            'expression'):
        shots.cycle('lux')
    shots.cycle('distance')
    assert shots.skip() == 'skipped 6-10 ft, 10-100 lux, smile'  # the changed take: its cell goes to the back
    assert shots.line() == 'take 1/8: 3-6 ft, 100-1000 lux, neutral'
    for _ in range(6):  # every other cell skipped once: the list starts over from the top
        shots.skip()
    assert shots.line() == 'take 1/8: 3-6 ft, 10-100 lux, neutral'


def test_a_reading_outside_the_intended_bin_is_flagged_and_the_take_says_where_it_fell(studio: Protocol) -> None:
    check = TakeCheck(studio)
    intended = {'distance': '3-6', 'illuminance': '100-1000', 'expression': 'smile'}
    assert check.measured_kinds() == [DISTANCE, ILLUMINANCE]
    check.add(DISTANCE, 1.5, '/range (sensor_msgs/Range)', now=10.0)  # 4.92 ft
    check.add(ILLUMINANCE, 50.0, '/illuminance (sensor_msgs/Illuminance)', now=10.0)
    assert [f.text for f in check.flags(intended, now=10.5)] == [
        'illuminance: intended 100-1000 lux, measured 50 lux']
    assert check.flags(intended, now=13.0) == []  # readings 3 s old say nothing about the take now
    check.start()
    for lux in (40.0, 50.0, 60.0):
        check.add(ILLUMINANCE, lux, '/illuminance (sensor_msgs/Illuminance)', now=20.0)
    check.add(DISTANCE, float('inf'), '/range (sensor_msgs/Range)', now=20.0)  # nothing in range: no reading
    record, shown = check.stop(intended)
    assert record == {'distance': {'value': None, 'verdict': 'not measured'},
                      'illuminance': {'value': 50.0, 'verdict': 'within'},
                      'expression': {'value': None, 'verdict': 'not measured'}}
    assert shown == {
        'distance': {'verdict': 'not measured', 'why': 'no distance reading while the take ran'},
        'illuminance': {'value': 50.0, 'unit': 'lux', 'level': '10-100', 'verdict': 'outside', 'readings': 3,
                        'source': '/illuminance (sensor_msgs/Illuminance)'},
        'expression': {'verdict': 'not measured', 'why': 'nothing at the rig measures expression'}}


def test_the_keys_screen_shows_the_take_and_sends_skip_and_change(studio: Protocol) -> None:
    screen = KeysScreen('/recorder', clock=lambda: 100.0)
    screen.set_ready(True)
    assert screen.press('n') is None
    assert screen.message == "key 'n': no shot list (run robodata session with --protocol)"
    screen.on_take('take 3/8: 3-6 ft, 10-100 lux, smile', ['distance', 'illuminance', 'expression'], False)
    lines = screen.render()
    assert 'take 3/8: 3-6 ft, 10-100 lux, smile' in lines
    assert 'take: space records it, n skips it, 1-3 change distance/illuminance/expression' in lines
    assert screen.press('n') == Request('take', command='skip')
    assert screen.press('2') == Request('take', command='cycle illuminance')
    assert screen.press('4') is None
    assert screen.message == "key '4' does nothing: the protocol has 3 factors"
    screen.on_diagnostics([(TAKE_STATUS, WARN, 'out of spec: illuminance: intended 10-100 lux, measured 900 lux')])
    assert '! WARN  take out of spec: illuminance: intended 10-100 lux, measured 900 lux' in screen.render()
    screen.on_diagnostics([(TAKE_STATUS, 0, 'within spec')])
    assert not screen.warning_lines()
    screen.on_take('REC e1: take 3/8: 3-6 ft, 10-100 lux, smile', ['distance', 'illuminance', 'expression'], True)
    assert screen.press('n') is None
    assert screen.message == 'the take is recording: its conditions change after it stops'


def test_consent_is_checked_before_a_session_records(tmp_path: Path, studio: Protocol,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    ds = tmp_path / 'ds'
    Dataset.create(ds, profile=load_profile(PROFILE))
    add_participant(ds, 'P-1', 'research use; faces shown to annotators')
    add_participant(ds, 'P-2', 'research use')
    withdraw_participant(ds, 'P-2')
    registry = yaml.safe_load((ds / PARTICIPANTS_FILE).read_text(encoding='utf-8'))
    registry['participants']['P-3'] = {'consent': 'research use', 'expires': '2025-01-31'}
    (ds / PARTICIPANTS_FILE).write_text(yaml.safe_dump(registry), encoding='utf-8')
    check_participant(ds, studio, 'P-1', today=datetime.date(2026, 1, 1))
    with pytest.raises(RobodataError, match=r'^participant P-3: consent expired on 2025-01-31'):
        check_participant(ds, studio, 'P-3', today=datetime.date(2026, 1, 1))
    session = ['session', '--profile', str(PROFILE), '--dataset', str(ds), '--protocol', str(studio.path)]
    cases = {
        'P-9': f'participant P-9 is not registered in {ds / PARTICIPANTS_FILE}: `robodata participant add {ds} P-9 '
               '--consent ...` first',
        'P-2': 'participant P-2 withdrew consent on ',
        '': f'protocol studio requires a participant with consent on record: pass --participant ID (registered '
            f'with `robodata participant add {ds} ID --consent ...`)',
    }
    for participant, message in cases.items():
        assert main([*session, '--participant', participant]) == 1
        err = capsys.readouterr().err
        assert err.startswith(f'robodata session: error: {message}') and err.count('\n') == 1, err
    assert not (ds / 'episodes').exists() or not any((ds / 'episodes').iterdir())


class _Output:
    """A process's stdout, read on a thread, searched for text as it comes."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.text = ''
        self._thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._thread.start()

    def _read(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.text += line

    def wait_for(self, text: str, spin: Any, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.text:
            assert time.monotonic() < deadline, f'never shown: {text!r}\n{self.text[-3000:]}'
            spin(0.1)


def test_a_session_to_a_protocol_records_the_take_flags_it_and_coverage_counts_it(tmp_path: Path,
                                                                                   studio: Protocol) -> None:
    import cv2
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus

    from ros_robodata.capture.take_conditions import FaceDetector, Intrinsics
    from test.real_data import real_data
    from test.studio_rig import StudioRig
    from test.test_take_conditions import render

    # A small camera-only rig: a 640x480 camera seeing the astronaut's face at 1.5 m (4.9 ft), a lux meter, a
    # rangefinder; their drivers in a process of their own, on the rig's DDS profile (test/studio_rig.py).
    k = [615.0, 0, 320, 0, 615.0, 240, 0, 0, 1]
    photo = cv2.imread(str(real_data('faces/astronaut.png')), cv2.IMREAD_COLOR)
    frame = render(photo, FaceDetector()(photo)[0], 1.5, Intrinsics.from_camera_info(k, 640, 480))

    ds = tmp_path / 'ds'
    Dataset.create(ds, profile=load_profile(PROFILE))
    add_participant(ds, 'P-1', 'research use')
    domain = new_domain()
    log = tmp_path / 'session.log'
    session = subprocess.Popen(
        [sys.executable, '-m', 'ros_robodata.cli.main', 'session', '--profile', str(PROFILE), '--dataset', str(ds),
         '--task', 'faces', '--protocol', str(studio.path), '--participant', 'P-1', '--no-segmenter', '--no-monitor',
         '--camera', '/camera/image_raw'],
        env=ros_env(domain), stdout=log.open('w'), stderr=subprocess.STDOUT, start_new_session=True)
    keys = subprocess.Popen([sys.executable, '-m', 'ros_robodata.cli.main', 'keys'], env=ros_env(domain),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    screen = _Output(keys)
    rig = StudioRig(domain, frame, k, tmp_path)

    def press(key: str) -> None:
        assert keys.stdin is not None
        keys.stdin.write(key)
        keys.stdin.flush()

    try:
        with client(domain) as c:
            warnings: list[str] = []
            c.node.create_subscription(DiagnosticArray, '/diagnostics', lambda msg: warnings.extend(
                s.message for s in msg.status if s.name == TAKE_STATUS and s.level == DiagnosticStatus.WARN), 10)
            rig.wait_subscribed(session, log, c.spin_for)
            screen.wait_for('take 1/8: 3-6 ft, 10-100 lux, neutral', c.spin_for)
            screen.wait_for('recorder /recorder ready', c.spin_for)
            press('n')
            screen.wait_for('take 1/8: 3-6 ft, 10-100 lux, smile', c.spin_for)
            press('2')
            screen.wait_for('take 1/8: 3-6 ft, 100-1000 lux, smile (changed: illuminance)', c.spin_for)
            press(' ')
            screen.wait_for('REC ', c.spin_for)
            flagged = 'out of spec: illuminance: intended 100-1000 lux, measured 50 lux'
            deadline = time.monotonic() + 20
            while flagged not in screen.text or not warnings:
                assert time.monotonic() < deadline, screen.text[-3000:]
                # a dim studio (the 10-100 lux bin, not the one meant), the participant at 4.9 ft, a frame
                rig.publish('lux 50', 'range 1.5', 'frame')
                c.spin_for(0.1)
            for _ in range(10):  # past the profile's shortest episode, and a few frames measured
                rig.publish('frame')
                c.spin_for(0.2)
            press(' ')
            screen.wait_for('saved in ', c.spin_for)
            stops = [e for e in c.events if e.event == e.STOP]
            assert len(stops) == 1
            episode_id = stops[0].episode_id
            screen.wait_for(f'take 1 saved in {episode_id}: out of spec (illuminance)', c.spin_for)
    finally:
        rig.close()
        if keys.stdin is not None:
            keys.stdin.close()  # end of input quits the keys
        keys.wait(20)
        assert stop_process(session) == 0, log.read_text()

    assert warnings[0] == flagged
    dataset = Dataset.open(ds)
    episode = dataset.episode(episode_id)
    assert episode.participant == 'P-1'
    capture = episode.capture
    assert capture['intended'] == {'distance': '3-6', 'illuminance': '100-1000', 'expression': 'smile'}
    assert (capture['protocol'], capture['participant'], capture['take'], capture['of'], capture['in_spec']) == (
        'studio', 'P-1', 1, 8, False)
    assert capture['measured']['illuminance'] == {
        'value': 50.0, 'unit': 'lux', 'level': '10-100', 'verdict': 'outside',
        'readings': capture['measured']['illuminance']['readings'], 'source': '/illuminance (sensor_msgs/Illuminance)'}
    # The distance from the rangefinder (1.5 m) and from the face in the camera's frames, in the protocol's ft.
    assert capture['measured']['distance']['verdict'] == 'within'
    assert capture['measured']['distance']['value'] == pytest.approx(4.921, rel=0.15)
    assert capture['measured']['distance']['source'] == '/camera/image_raw (faces), /range (sensor_msgs/Range)'
    assert capture['measured']['expression'] == {'verdict': 'not measured',
                                                 'why': 'nothing at the rig measures expression'}
    record = read_take(dataset.episode_dir(episode_id))
    assert record is not None and record['intended'] == capture['intended']
    # Coverage counts the take where it was measured: 10-100 lux, a cell of the protocol, within spec there.
    counted = {c.cell.key: (c.captured, c.within_spec) for c in coverage(dataset, studio).cells if c.captured}
    assert counted == {'distance=3-6 illuminance=10-100 expression=smile': (1, 1)}
    out = subprocess.run([sys.executable, '-m', 'ros_robodata.cli.main', 'coverage', str(ds), '--protocol',
                          str(studio.path), '--json'], capture_output=True, text=True, check=True).stdout
    assert json.loads(out)['takes']['within_spec'] == 1


def test_the_camera_gives_distance_and_orientation_and_says_why_not(studio: Protocol) -> None:
    import cv2

    from ros_robodata.capture.frame_measure import FrameMeasurer
    from ros_robodata.capture.take_check import ORIENTATION
    from ros_robodata.capture.take_conditions import FaceDetector, Intrinsics
    from test.real_data import real_data
    from test.test_take_conditions import render

    detector = FaceDetector()
    photo = cv2.imread(str(real_data('faces/astronaut.png')), cv2.IMREAD_COLOR)
    camera = Intrinsics.from_camera_info([922.5, 0, 640, 0, 922.5, 360, 0, 0, 1], 1280, 720)
    frame = render(photo, detector(photo)[0], 1.5, camera)
    measurer = FrameMeasurer('/camera/image_raw (faces)', detector=detector, clock=lambda: 5.0)
    assert measurer.measure(frame)[0].note == '/camera/image_raw (faces): no CameraInfo received yet'
    measurer.set_camera_info([922.5, 0, 640, 0, 922.5, 360, 0, 0, 1], 1280, 720)
    distance, facing, seen = measurer.measure(frame)
    assert (distance.kind, facing.kind, facing.value) == (DISTANCE, ORIENTATION, 'front')
    assert (seen.kind, seen.value) == ('camera', '1280x720')  # one frame offered: no rate yet
    assert distance.value == pytest.approx(1.5, rel=0.15)
    measurer.set_camera_info([0.0] * 9, 1280, 720)
    assert measurer.measure(frame)[0].note == ('/camera/image_raw (faces): camera intrinsics: K is all zeros: the '
                                               'camera is not calibrated')
    assert len(measurer.results()) == 5 and measurer.results() == []

    protocol = load_protocol('hri_expressions')
    check = TakeCheck(protocol, {DISTANCE: measurer.source, ORIENTATION: measurer.source})
    check.start()
    check.add(DISTANCE, float(distance.value), measurer.source, 5.0)  # 4.9 ft: the 3-6 bin
    check.add(ORIENTATION, 'front', measurer.source, 5.0)
    check.note(ORIENTATION, 'orientation not measured: face 9 px wide')
    intended = {'distance': '3-6', 'illuminance': '100-500', 'orientation': 'left', 'expression': 'smile'}
    assert [f.text for f in check.flags(intended, 5.5)] == ['orientation: intended left, measured front']
    _, shown = check.stop(intended)
    assert (shown['distance']['level'], shown['distance']['verdict']) == ('3-6', 'within')
    assert shown['orientation'] == {'value': 'front', 'level': 'front', 'verdict': 'outside', 'readings': 1,
                                    'source': '/camera/image_raw (faces)'}
    assert shown['illuminance'] == {'verdict': 'not measured', 'why': 'nothing at the rig measures illuminance'}


def test_a_take_stopped_keeps_the_frame_still_being_measured() -> None:
    # On a loaded rig computer a take stops while its last frame waits (the rate's pause) or is being measured,
    # and the readings of the one before may not have been taken yet: all of them are the take's.
    from types import SimpleNamespace

    import cv2

    from ros_robodata.capture.frame_measure import FrameMeasurer
    from ros_robodata.capture.take_check import ORIENTATION
    from ros_robodata.capture.take_conditions import FaceDetector, Intrinsics
    from test.real_data import real_data
    from test.test_take_conditions import render

    detector = FaceDetector()
    photo = cv2.imread(str(real_data('faces/astronaut.png')), cv2.IMREAD_COLOR)
    k = [922.5, 0, 640, 0, 922.5, 360, 0, 0, 1]
    frame = render(photo, detector(photo)[0], 1.5, Intrinsics.from_camera_info(k, 1280, 720))
    image = SimpleNamespace(height=720, width=1280, encoding='bgr8', step=1280 * 3, is_bigendian=0,
                            data=frame.tobytes())
    measurer = FrameMeasurer('/camera/image_raw (faces)', rate_hz=0.1, detector=detector)  # then 10 s of pause
    assert measurer.settle(0.1)  # no thread, nothing in hand
    measurer.set_camera_info(k, 1280, 720)
    measurer.start()
    try:
        measurer.offer(image)
        deadline = time.monotonic() + 20
        while measurer.measured < 1:
            assert time.monotonic() < deadline, 'the first frame was never measured'
            time.sleep(0.01)
        measurer.offer(image)  # waits for the end of the pause: 10 s
        began = time.monotonic()
        assert measurer.settle(5.0)
        assert measurer.measured == 2 and time.monotonic() - began < 5.0
    finally:
        measurer.close()
    protocol = load_protocol('hri_expressions')
    check = TakeCheck(protocol, {DISTANCE: measurer.source, ORIENTATION: measurer.source})
    check.start()
    assert measurer.drain_into(check) == 6  # distance, orientation and camera, of each frame
    _, shown = check.stop({'distance': '3-6', 'illuminance': '100-500', 'orientation': 'front', 'expression': 'smile'})
    assert (shown['distance']['readings'], shown['orientation']['readings']) == (2, 2)


def test_the_rig_names_what_measures_each_condition(studio: Protocol) -> None:
    from ros_robodata.capture.take_check import ORIENTATION, rig_sources

    assert rig_sources(studio, '/lux', '/range') == {ILLUMINANCE: '/lux (sensor_msgs/Illuminance)',
                                                     DISTANCE: '/range (sensor_msgs/Range)'}
    assert rig_sources(load_protocol('hri_expressions'), '/lux', '/range', '/cam/image_raw') == {
        ILLUMINANCE: '/lux (sensor_msgs/Illuminance)', DISTANCE: '/range (sensor_msgs/Range) or /cam/image_raw (faces)',
        ORIENTATION: '/cam/image_raw (faces)'}
