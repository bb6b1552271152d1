"""People in the data, as a data lead checks it: a camera the profile marks `pii: true` does not leave the dataset
by `export frames`, `export lerobot` or `review push` unless someone says so (--allow-pii, audited) or every face
is blurred (--blur-faces); after the blur neither the detector ros_robodata ships nor an independent one (OpenCV's
Haar cascade, test/haar_cascade.py) finds a face where the real photos had one (test/data/faces/, public domain:
sources in its NOTICE.md); and what robodata writes into a dataset is not world-readable."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import av
import cv2
import numpy as np
import pytest
import yaml

from ros_robodata.bag.image import encode_image
from ros_robodata.bag.types import typestore
from ros_robodata.bag.writer import BagWriter
from ros_robodata.cli.main import main
from ros_robodata.dataset import Dataset, Episode
from ros_robodata.dataset.audit import current_user, verify_audit
from ros_robodata.export.face_blur import MODEL_PATH, FaceBlur
from ros_robodata.profile import load_profile
from test.haar_cascade import HaarCascade
from test.real_data import real_data

Box = tuple[int, int, int, int]

T0_NS = 1_700_000_000_000_000_000
FRAMES = 6  # per camera, at 5 Hz
JOINTS = ['joint1', 'joint2', 'joint3']
PROFILE: dict[str, Any] = {
    'robot': {'name': 'studio_arm', 'arm_joints': JOINTS},
    'topics': {
        'joint_states': {'topic': '/joint_states', 'type': 'sensor_msgs/msg/JointState', 'rate_hz': 50},
        'cameras': [
            # the room camera films the operator: personal data
            {'name': 'scene', 'topic': '/camera/scene/image_raw', 'type': 'sensor_msgs/msg/Image', 'rate_hz': 5,
             'pii': True},
            # the wrist camera is meant to film the gripper, but a person may still lean into it
            {'name': 'wrist', 'topic': '/camera/wrist/image_raw', 'type': 'sensor_msgs/msg/Image', 'rate_hz': 5},
        ],
    },
}
EPISODE = 'ep0'
HAAR_MIN = 48  # px: the Haar cascade's smallest face searched, half the smallest face in the photos (90 px)


def _photo(name: str) -> np.ndarray:
    """A vendored photo as 512x512 RGB (Grace Hopper's portrait, 512x600, cut at the bottom: her face is kept)."""
    bgr = cv2.imread(str(real_data(f'faces/{name}')), cv2.IMREAD_COLOR)
    assert bgr is not None, name
    return cv2.cvtColor(np.ascontiguousarray(bgr[:512, :512]), cv2.COLOR_BGR2RGB)


@pytest.fixture(scope='module')
def photos() -> dict[str, np.ndarray]:
    return {'scene': _photo('astronaut.png'), 'wrist': _photo('grace_hopper.jpg')}


@pytest.fixture(scope='module')
def haar() -> HaarCascade:
    return HaarCascade(real_data('faces/haarcascade_frontalface_default.xml'))


@pytest.fixture(scope='module')
def yunet() -> FaceBlur:
    return FaceBlur()


@pytest.fixture(scope='module')
def faces(photos: dict[str, np.ndarray], haar: HaarCascade, yunet: FaceBlur) -> dict[str, list[Box]]:
    """The faces in each camera's photo, as the shipped detector finds them."""
    return {name: yunet.detect(cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR)) for name, rgb in photos.items()}


def _header(ns: int, frame: str) -> Any:
    types = typestore().types
    return types['std_msgs/msg/Header'](stamp=types['builtin_interfaces/msg/Time'](sec=ns // 10**9,
                                                                                  nanosec=ns % 10**9),
                                        frame_id=frame)


@pytest.fixture(scope='module')
def profile_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp('profile') / 'studio.yaml'
    path.write_text(yaml.safe_dump(PROFILE, sort_keys=False))
    return path


@pytest.fixture(scope='module')
def dataset_template(tmp_path_factory: pytest.TempPathFactory, profile_path: Path,
                     photos: dict[str, np.ndarray]) -> Path:
    """A dataset of one 1.2 s episode: joint states at 50 Hz, both cameras at 5 Hz showing the photos."""
    types = typestore().types
    dataset = Dataset.create(tmp_path_factory.mktemp('pii') / 'ds', profile=load_profile(profile_path))
    with BagWriter(dataset.bag_dir(EPISODE)) as bag:
        bag.add_topic('/joint_states', 'sensor_msgs/msg/JointState')
        for camera in photos:
            bag.add_topic(f'/camera/{camera}/image_raw', 'sensor_msgs/msg/Image')
        for i in range(FRAMES * 10):
            ns = T0_NS + i * 20_000_000
            bag.write_message('/joint_states', ns, types['sensor_msgs/msg/JointState'](
                header=_header(ns, 'base_link'), name=JOINTS, position=np.array([0.01 * i, -0.5, 1.0]),
                velocity=np.zeros(3), effort=np.array([], dtype=np.float64)))
            if i % 10 == 0:
                for camera, rgb in photos.items():
                    bag.write_message(f'/camera/{camera}/image_raw', ns + 1, types['sensor_msgs/msg/Image'](
                        header=_header(ns, camera), **encode_image(rgb, 'rgb8')))
    dataset.add_episode(Episode(id=EPISODE, task='pick', status='complete', outcome='success',
                                start_ns=T0_NS, stop_ns=T0_NS + (FRAMES * 10 - 1) * 20_000_000))
    return dataset.root


@pytest.fixture
def dataset(dataset_template: Path, tmp_path: Path) -> Path:
    """A fresh copy per test: the audit of one test is not another's."""
    copy = tmp_path / 'ds'
    shutil.copytree(dataset_template, copy)
    return copy


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def audit_lines(dataset: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (dataset / 'audit.jsonl').read_text().splitlines()]


def overlaps(box: Box, others: list[Box]) -> bool:
    """`box` covers a quarter or more of one of `others` (a face found where a face was)."""
    x, y, w, h = box
    for ox, oy, ow, oh in others:
        inter = max(0, min(x + w, ox + ow) - max(x, ox)) * max(0, min(y + h, oy + oh) - max(y, oy))
        if inter >= 0.25 * ow * oh:
            return True
    return False


def exported_images(out: Path) -> Iterator[tuple[str, np.ndarray]]:
    """(camera, BGR image) for every image file the manifest of a frames export lists."""
    manifest = json.loads((out / 'manifest.json').read_text())
    for frame in manifest['frames']:
        for sensor, entry in frame['sensors'].items():
            image = cv2.imread(str(out / entry['file']), cv2.IMREAD_COLOR)
            assert image is not None, entry['file']
            yield sensor.removeprefix('camera_'), image


def assert_no_face(images: list[tuple[str, np.ndarray]], faces: dict[str, list[Box]], haar: HaarCascade,
                   yunet: FaceBlur) -> None:
    """The shipped detector finds no face anywhere in the images, and the Haar cascade (down to 48 px, half the
    smallest face in the photos) none where the photo's face was: it raises a false alarm now and then on something
    else (in a video frame, the space shuttle beside the astronaut's blurred head), which is no face to hide.
    Each distinct image is searched once."""
    seen: set[bytes] = set()
    for camera, image in images:
        digest = hashlib.sha256(image.tobytes()).digest()
        if digest in seen:
            continue
        seen.add(digest)
        assert yunet.detect(image) == [], camera
        assert [b for b in haar.detect(image, min_size=HAAR_MIN) if overlaps(b, faces[camera])] == [], camera


def video_frames(path: Path) -> list[np.ndarray]:
    with av.open(str(path)) as container:
        return [frame.to_ndarray(format='bgr24') for frame in container.decode(video=0)]


# -- the detector and the photos ----------------------------------------------------------------------


def test_the_detector_shipped_is_the_pinned_yunet_model_with_its_license() -> None:
    data = MODEL_PATH.read_bytes()
    assert hashlib.sha256(data).hexdigest() == '8f2383e4dd3cfbb4553ea8718107fc0423210dc964f9f4280604804ed2552fa4'
    assert len(data) < 1_000_000
    folder = MODEL_PATH.parent
    assert 'MIT License' in (folder / 'LICENSE').read_text() and 'Shiqi Yu' in (folder / 'LICENSE').read_text()
    assert '966be4cb6eefc2a4f586ed0581bf4bbaa2533070' in (folder / 'NOTICE').read_text()
    assert '"models/*"' in (Path(__file__).resolve().parents[1] / 'pyproject.toml').read_text()  # in the wheel


def test_both_detectors_find_the_face_in_each_photo(photos, faces, haar) -> None:
    """The precondition of every blur test below: the photos do show faces, to either detector."""
    for camera, rgb in photos.items():
        assert len(faces[camera]) >= 1, camera
        found = haar.detect(cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), min_size=HAAR_MIN)
        assert [b for b in found if overlaps(b, faces[camera])], (camera, found, faces[camera])


# -- refused without permission -----------------------------------------------------------------------


def test_a_pii_camera_is_not_exported_without_permission(dataset, tmp_path, capsys, monkeypatch) -> None:
    audit = (dataset / 'audit.jsonl').read_bytes()
    monkeypatch.setenv('LABEL_STUDIO_API_KEY', 'not-a-real-token')
    commands = {
        'frames': ['export', 'frames', dataset, '--out', tmp_path / 'frames'],
        'lerobot': ['export', 'lerobot', dataset, '--out', tmp_path / 'lerobot'],
        'review_media': ['review', 'push', dataset, '--label-studio', 'http://127.0.0.1:9', '--project', 'p',
                         '--media', tmp_path / 'media'],
    }
    for kind, argv in commands.items():
        code, _, err = run(capsys, *argv)
        assert code == 1, kind
        assert len(err.strip().splitlines()) == 1, err
        assert 'scene' in err and 'wrist' not in err.replace('--cameras wrist', ''), err
        assert '--allow-pii' in err and '--cameras wrist' in err and '--blur-faces' in err, err
        assert not (tmp_path / {'review_media': 'media'}.get(kind, kind)).exists(), kind
    assert (dataset / 'audit.jsonl').read_bytes() == audit
    assert not (dataset / 'review' / 'media').exists()


def test_leaving_the_pii_camera_out_exports_the_others_without_an_audit_line(dataset, tmp_path, capsys) -> None:
    audit = (dataset / 'audit.jsonl').read_bytes()
    out = tmp_path / 'frames'
    code, _, err = run(capsys, 'export', 'frames', dataset, '--out', out, '--cameras', 'wrist', '--tasks', 'none')
    assert code == 0, err
    assert {camera for camera, _ in exported_images(out)} == {'wrist'}
    assert not list(out.rglob('camera_scene'))
    assert (dataset / 'audit.jsonl').read_bytes() == audit


# -- --allow-pii ------------------------------------------------------------------------------------------


def test_allow_pii_exports_the_camera_as_recorded_and_audits_who_what_where(dataset, tmp_path, capsys,
                                                                            photos) -> None:
    out = tmp_path / 'frames'
    code, said, err = run(capsys, 'export', 'frames', dataset, '--out', out, '--allow-pii', '--format', 'png',
                          '--tasks', 'none')
    assert code == 0, err
    scene = [image for camera, image in exported_images(out) if camera == 'scene']
    assert len(scene) == FRAMES
    assert all(np.array_equal(cv2.cvtColor(image, cv2.COLOR_BGR2RGB), photos['scene']) for image in scene)
    last = audit_lines(dataset)[-1]
    assert last['action'] == 'allow_pii' and last['cameras'] == ['scene'] and last['export'] == 'frames'
    assert last['out'] == str(out.resolve()) and last['who'] == current_user() and last['episodes'] == [EPISODE]
    assert verify_audit(dataset / 'audit.jsonl').ok
    assert 'audit.jsonl' in said


def test_allow_pii_on_a_lerobot_export_is_audited_too(dataset, tmp_path, capsys) -> None:
    out = tmp_path / 'lerobot'
    code, _, err = run(capsys, 'export', 'lerobot', dataset, '--out', out, '--allow-pii')
    assert code == 0, err
    assert len(list((out / 'videos' / 'observation.images.scene').rglob('*.mp4'))) == 1
    last = audit_lines(dataset)[-1]
    assert (last['action'], last['cameras'], last['export'], last['out']) == ('allow_pii', ['scene'], 'lerobot',
                                                                              str(out.resolve()))


# -- --blur-faces -----------------------------------------------------------------------------------------


def test_blurred_frames_show_no_face_to_either_detector(dataset, tmp_path, capsys, photos, faces, haar,
                                                        yunet) -> None:
    out = tmp_path / 'frames'
    code, said, err = run(capsys, 'export', 'frames', dataset, '--out', out, '--blur-faces', '--tasks', 'none')
    assert code == 0, err
    images = list(exported_images(out))
    assert sorted(camera for camera, _ in images) == ['scene'] * FRAMES + ['wrist'] * FRAMES
    assert_no_face(images, faces, haar, yunet)
    for camera, image in images:
        # the rest of the picture is still the photo: only the faces (with a margin) were blurred
        original = cv2.cvtColor(photos[camera], cv2.COLOR_RGB2BGR)
        keep = np.ones(image.shape[:2], bool)
        for x, y, w, h in faces[camera]:
            keep[max(0, y - h * 3 // 5):y + h * 8 // 5, max(0, x - w * 3 // 5):x + w * 8 // 5] = False
        assert keep.mean() > 0.2, camera
        assert np.abs(image.astype(int) - original.astype(int))[keep].mean() < 3, camera
        face = faces[camera][0]
        crop = (slice(face[1], face[1] + face[3]), slice(face[0], face[0] + face[2]))
        assert np.abs(image[crop].astype(int) - original[crop].astype(int)).mean() > 10, camera  # and changed
    doc = json.loads((out / 'episodes' / EPISODE / 'frames.json').read_text())
    assert doc['faces_blurred'] >= 2 * FRAMES
    assert json.loads((out / 'manifest.json').read_text())['schedule']['blur_faces'].startswith('yunet')
    assert f'faces blurred: {doc["faces_blurred"]}' in said
    last = audit_lines(dataset)[-1]
    assert (last['action'], last['cameras'], last['export'], last['who']) == ('blur_faces', ['scene'], 'frames',
                                                                              current_user())


def test_blurred_lerobot_videos_show_no_face_to_either_detector(dataset, tmp_path, capsys, faces, haar,
                                                                yunet) -> None:
    out = tmp_path / 'lerobot'
    code, said, err = run(capsys, 'export', 'lerobot', dataset, '--out', out, '--blur-faces', '--crf', '10')
    assert code == 0, err
    assert 'faces blurred:' in said
    for camera in ('scene', 'wrist'):
        (video,) = (out / 'videos' / f'observation.images.{camera}').rglob('*.mp4')
        frames = video_frames(video)
        assert len(frames) >= FRAMES - 1  # the 5 Hz grid from the first to the last frame
        assert_no_face([(camera, image) for image in frames], faces, haar, yunet)
    info = json.loads((out / 'meta' / 'info.json').read_text())
    assert info['ros_robodata']['blur_faces'].startswith('yunet')
    assert audit_lines(dataset)[-1]['action'] == 'blur_faces'


def test_the_video_of_an_unblurred_export_still_shows_the_faces(dataset, tmp_path, capsys, faces, haar,
                                                                 yunet) -> None:
    """The control of the test above: the same export without --blur-faces keeps the faces for both detectors,
    so their absence there is the blur's doing, not the video's."""
    out = tmp_path / 'lerobot'
    assert run(capsys, 'export', 'lerobot', dataset, '--out', out, '--cameras', 'wrist', '--crf', '10')[0] == 0
    (video,) = (out / 'videos' / 'observation.images.wrist').rglob('*.mp4')
    image = video_frames(video)[0]
    assert [b for b in yunet.detect(image) if overlaps(b, faces['wrist'])]
    assert [b for b in haar.detect(image, min_size=HAAR_MIN) if overlaps(b, faces['wrist'])]


def test_review_push_media_are_blurred_and_audited(dataset, tmp_path, capsys, monkeypatch, faces, haar,
                                                   yunet) -> None:
    """What Label Studio would be sent: the timeline video and the frame images of `review push --blur-faces`. The
    server itself is replaced by a stand-in that accepts every task (test_review_label_studio.py runs a real one)."""
    from ros_robodata.review.label_studio import server_sync

    sent: list[dict[str, Any]] = []

    def accept(request: dict[str, Any], token: str) -> dict[str, Any]:
        sent.append(request)
        return {'project_id': len(sent), 'project_created': True, 'created': [t['key'] for t in request['tasks']],
                'updated': [], 'unchanged': [], 'task_ids': {t['key']: i for i, t in enumerate(request['tasks'])}}

    monkeypatch.setattr(server_sync, 'call', accept)
    monkeypatch.setenv('LABEL_STUDIO_API_KEY', 'stand-in')
    media = tmp_path / 'media'
    code, _, err = run(capsys, 'review', 'push', dataset, '--label-studio', 'http://127.0.0.1:9', '--project', 'p',
                       '--media', media, '--every', '0.2s', '--frames', '0.4s', '--blur-faces')
    assert code == 0, err
    assert len(sent) == 2  # the timeline project and the frames project
    (video,) = media.rglob('*.mp4')
    images = [(path.parent.name.removeprefix('camera_'), cv2.imread(str(path)))
              for path in sorted((media / 'frames').rglob('*.jpg'))]
    assert {camera for camera, _ in images} == {'scene', 'wrist'}
    assert_no_face([('scene', image) for image in video_frames(video)] + images, faces, haar, yunet)
    last = audit_lines(dataset)[-1]
    assert (last['action'], last['cameras'], last['export'], last['out']) == ('blur_faces', ['scene'],
                                                                              'review_media', str(media.resolve()))


# -- files a dataset is made of ----------------------------------------------------------------------------


@pytest.mark.parametrize('umask', [0o002, 0o077])
def test_a_dataset_robodata_writes_has_no_world_readable_file(tmp_path, capsys, write_demo_bag,
                                                              sim_cell_profile_path, umask) -> None:
    """Whatever the user's umask, robodata writes nothing others can read; a stricter umask of the user's own is
    kept (0o077: not even the group)."""
    source = tmp_path / 'rig' / 'bag'
    write_demo_bag(source)
    root = tmp_path / 'ds'
    before = os.umask(umask)
    try:
        assert run(capsys, 'init', root, '--profile', sim_cell_profile_path)[0] == 0
        code, _, err = run(capsys, 'import', source, '--dataset', root, '--task', 'pick')
        assert code == 0, err
    finally:
        os.umask(before)
    paths = [root, *root.rglob('*')]
    assert any(p.suffix == '.mcap' for p in paths) and (root / 'audit.jsonl').is_file()
    denied = stat.S_IRWXO | (stat.S_IRWXG if umask == 0o077 else stat.S_IWGRP)
    assert [str(p) for p in paths if p.lstat().st_mode & denied] == []
    assert os.umask(before) == before  # main() left the caller's umask as it found it
