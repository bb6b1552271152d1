"""A gesture take's repetitions counted from motion around the participant (issue 36, part 4), on synthetic takes:
a real portrait (test/data/faces/astronaut.png, public domain) as the participant, a hand-sized blob swinging beside
them for 0.6 s at each repetition, with sensor noise on every frame, at regular and at irregular intervals."""

from __future__ import annotations

import math
from pathlib import Path

import cv2
import numpy as np
import pytest

from ros_robodata.bag.image import encode_image
from ros_robodata.bag.types import header, typestore
from ros_robodata.bag.writer import BagWriter
from ros_robodata.capture.coverage import coverage
from ros_robodata.capture.gesture_take import add_repetitions
from ros_robodata.capture.protocol import Repetition, load_protocol
from ros_robodata.capture.repetitions import (
    IRREGULAR_CV,
    count_repetitions,
    gesture_region,
    motion_energy,
    repetitions_entry,
)
from ros_robodata.capture.take_check import take_record
from ros_robodata.capture.take_record import read_take, write_take
from ros_robodata.dataset import Dataset, Episode
from ros_robodata.errors import DatasetError
from test.real_data import real_data

FPS = 15.0
T0_NS = 1_700_000_000_000_000_000
TOPIC = '/camera/front/image_raw'
SWING_S = 0.6


@pytest.fixture(scope='module')
def background() -> np.ndarray:
    """The participant: the portrait on a 480x360 frame, their face in its upper middle."""
    photo = cv2.imread(str(real_data('faces/astronaut.png')), cv2.IMREAD_COLOR)
    frame = np.full((360, 480, 3), 110, np.uint8)
    frame[40:240, 140:340] = cv2.resize(photo, (200, 200), interpolation=cv2.INTER_AREA)
    return frame


def take(background: np.ndarray, onsets: list[float], length_s: float, seed: int = 0) -> list[np.ndarray]:
    """Frames of a take: the blob (a hand) rests at the participant's side and swings out and back for SWING_S from
    each onset; every frame has noise of 3 grey levels."""
    rng = np.random.default_rng(seed)
    frames = []
    for i in range(round(length_s * FPS)):
        t = i / FPS
        phase = next(((t - o) / SWING_S for o in onsets if 0 <= t - o < SWING_S), None)
        lift = math.sin(math.pi * phase) if phase is not None else 0.0
        frame = background.copy()
        centre = (round(350 + 40 * lift), round(300 - 140 * lift))
        cv2.circle(frame, centre, 22, (60, 140, 220), -1)
        noisy = frame.astype(np.int16) + rng.normal(0, 3, frame.shape).astype(np.int16)
        frames.append(np.clip(noisy, 0, 255).astype(np.uint8))
    return frames


def test_regular_repetitions_are_counted_and_within_spec(background: np.ndarray) -> None:
    frames = take(background, [0.5, 2.5, 4.5, 6.5, 8.5], 10.0)
    region, note = gesture_region(frames[0])
    x, y, w, h = region
    assert note == '' and (w, h) != (480, 360)  # around the face found, not the whole frame
    assert x <= 350 - 22 and x + w >= 390 + 22 and y + h >= 300  # the hand's path is inside it
    found = count_repetitions(motion_energy(frames, region), FPS, region)
    assert found.count == 5
    assert found.intervals_s == pytest.approx((2.0, 2.0, 2.0, 2.0), abs=1 / FPS)
    assert found.cv is not None and found.cv < 0.05 and not found.irregular
    assert found.period_s == pytest.approx(2.0, abs=1 / FPS)
    record, shown = repetitions_entry(found, Repetition(5, 2.0))
    assert record == {'value': 5, 'verdict': 'within'}
    assert (shown['required'], shown['verdict'], 'why' in shown) == ('5 every 2 s', 'within', False)


def test_irregular_repetitions_are_flagged(background: np.ndarray) -> None:
    frames = take(background, [0.5, 1.7, 4.5, 5.6, 8.5], 10.0, seed=1)
    region, _ = gesture_region(frames[0])
    found = count_repetitions(motion_energy(frames, region), FPS, region)
    assert found.count == 5
    assert found.intervals_s == pytest.approx((1.2, 2.8, 1.1, 2.9), abs=1 / FPS)
    assert found.cv is not None and found.cv > IRREGULAR_CV and found.irregular
    record, shown = repetitions_entry(found, Repetition(5, 2.0))
    assert record == {'value': 5, 'verdict': 'outside'}
    assert shown['why'] == f'irregular: intervals vary by {found.cv:.2f} of their mean, over {IRREGULAR_CV}'


def test_too_few_repetitions_and_no_motion(background: np.ndarray) -> None:
    frames = take(background, [0.5, 2.5, 4.5], 6.0, seed=2)
    region, _ = gesture_region(frames[0])
    found = count_repetitions(motion_energy(frames, region), FPS, region)
    assert found.count == 3
    record, shown = repetitions_entry(found, Repetition(5, 2.0))
    assert record['verdict'] == 'outside' and shown['why'] == '3 repetitions, the protocol asks 5'
    still = count_repetitions(motion_energy([background] * 20, region), FPS, region)
    assert (still.count, still.notes) == (0, ('no motion in the region',))
    # Noise alone is not motion: frames of the resting participant with sensor noise.
    resting = take(background, [], 2.0, seed=3)
    assert count_repetitions(motion_energy(resting, region), FPS, region).count == 0


def test_a_recorded_gesture_take_gets_its_repetitions_in_its_record(background: np.ndarray, tmp_path: Path) -> None:
    shipped = Path(__file__).parents[1] / 'config' / 'protocols' / 'hri_gestures.yaml'  # 5 repetitions, 2 s apart
    path = tmp_path / 'gestures.yaml'  # without consent, so takes without a participant count
    path.write_text(shipped.read_text().replace('consent_required: true', 'consent_required: false'))
    protocol = load_protocol(path)
    intended = {'gesture': 'wave', 'distance': '3-6', 'illuminance': '100-4000'}
    dataset = Dataset.create(tmp_path / 'ds')
    types = typestore().types
    for name, onsets in (('regular', [0.5, 2.5, 4.5, 6.5, 8.5]), ('irregular', [0.5, 1.7, 4.5, 5.6, 8.5])):
        with BagWriter(dataset.bag_dir(name)) as bag:
            bag.add_topic(TOPIC, 'sensor_msgs/msg/Image')
            for i, frame in enumerate(take(background, onsets, 10.0)):
                ns = T0_NS + round(i * 1e9 / FPS)
                bag.write_message(TOPIC, ns, types['sensor_msgs/msg/Image'](
                    header=header(ns, 'front'), **encode_image(frame[:, :, ::-1], 'rgb8')))
        dataset.add_episode(Episode(id=name, task='gestures', status='complete', start_ns=T0_NS,
                                    stop_ns=T0_NS + 10 * 10**9, capture={'protocol': protocol.name, 'measured': {},
                                                                          'in_spec': True}))
        write_take(dataset.episode_dir(name), take_record(protocol, '', 1, intended, {}))
        add_repetitions(dataset, name, TOPIC, protocol)
    regular, irregular = (read_take(dataset.episode_dir(n)) for n in ('regular', 'irregular'))
    assert regular is not None and regular['measured']['repetitions'] == {'value': 5, 'verdict': 'within'}
    assert irregular is not None and irregular['measured']['repetitions'] == {'value': 5, 'verdict': 'outside'}
    shown = dataset.episode('irregular').capture
    assert shown['in_spec'] is False and shown['measured']['repetitions']['why'].startswith('irregular: ')
    assert dataset.episode('regular').capture['in_spec'] is True
    counted = [(c.captured, c.within_spec) for c in coverage(dataset, protocol).cells if c.captured]
    assert counted == [(2, 1)]
    with pytest.raises(DatasetError, match=r'no /camera/side/image_raw in its bag \(it has: /camera/front/image_raw\)'):
        add_repetitions(dataset, 'regular', '/camera/side/image_raw', protocol)
