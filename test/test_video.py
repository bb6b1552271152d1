"""video_to_bag and probe_video against real video files, written here by OpenCV and PyAV.

Each file is what a phone or a webcam tool would hand us: OpenCV's MP4 (moov at the end, no creation
time), an H.264 MP4 with a creation time, GPS tag and a rotation, MKV/AVI/MP4 cut short, and files
that are no video at all. The bags are read back with the mcap library and its ROS 2 decoder, not
with what wrote them, and the JPEGs are compared pixel by pixel with the frames that went in.
"""

from __future__ import annotations

import calendar
import itertools
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import cv2
import numpy as np
import pytest
import yaml
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory

from ros_robodata.bag.image import decode_image
from ros_robodata.bag.reader import BagReader
from ros_robodata.bag.video import DEFAULT_TOPIC, probe_video, video_to_bag
from ros_robodata.errors import RobodataError
from ros_robodata.vocabulary import VIDEO_SUFFIXES

W, H, FPS, N = 160, 120, 30, 60
PERIOD_NS = 1_000_000_000 // FPS
CREATION = '2024-05-06T07:08:09.000000Z'  # MP4 stores whole seconds
CREATION_NS = calendar.timegm((2024, 5, 6, 7, 8, 9, 0, 0, 0)) * 1_000_000_000


def pattern(i: int) -> np.ndarray:
    """Frame i as BGR: a gradient that tells every orientation apart, and a bright block moving right."""
    y, x = np.mgrid[0:H, 0:W]
    img = np.zeros((H, W, 3), np.uint8)
    img[..., 0] = x * 255 // W
    img[..., 1] = y * 255 // H
    img[..., 2] = 60
    img[30:80, (2 * i) % W : (2 * i) % W + 30] = 255
    return img


@dataclass(frozen=True)
class Frame:
    """One message of the bag as a user would inspect it."""

    log_ns: int
    stamp_ns: int
    frame_id: str
    format: str
    image: np.ndarray  # BGR


def read_bag(bag_dir: Path, topic: str = DEFAULT_TOPIC) -> list[Frame]:
    """Every message of `topic`, decoded by mcap_ros2 from the definition embedded in the bag."""
    files = sorted(bag_dir.glob('*.mcap'))
    assert len(files) == 1, f'expected one .mcap in {bag_dir}: {sorted(p.name for p in bag_dir.iterdir())}'
    frames = []
    with files[0].open('rb') as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for schema, channel, message, msg in reader.iter_decoded_messages():
            assert (channel.topic, schema.name) == (topic, 'sensor_msgs/msg/CompressedImage')
            image = cv2.imdecode(np.frombuffer(bytes(msg.data), np.uint8), cv2.IMREAD_COLOR)
            assert image is not None, 'a JPEG in the bag does not decode'
            stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
            frames.append(Frame(message.log_time, stamp, msg.header.frame_id, msg.format, image))
    return frames


def mad(a: np.ndarray, b: np.ndarray) -> float:
    """Mean absolute difference of two images, in grey levels."""
    assert a.shape == b.shape
    return float(np.mean(np.abs(a.astype(np.int16) - b.astype(np.int16))))


def leftovers(folder: Path, *keep: Path) -> list[str]:
    """Names in `folder` other than `keep`, hidden ones included: a temp folder left behind shows up."""
    return sorted(p.name for p in folder.iterdir() if p not in keep)


def write_opencv(path: Path, fourcc: str, n: int = N) -> Path:
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*fourcc), float(FPS), (W, H))
    assert writer.isOpened(), f'OpenCV cannot write {path.suffix} with {fourcc}'
    for i in range(n):
        writer.write(pattern(i))
    writer.release()
    return path


def write_pyav(
    path: Path,
    *,
    codec: str = 'libx264',
    n: int = N,
    metadata: dict[str, str] | None = None,
    rotation: tuple[int, bool] | None = None,
    options: dict[str, str] | None = None,
    pts: Callable[[int], int] | None = None,
    time_base: Fraction | None = None,
    mux_pts: Callable[[int], int] | None = None,
) -> Path:
    """Encode pattern() frames with PyAV; `rotation` = (counter-clockwise degrees, hflip) in the display matrix."""
    with av.open(str(path), 'w', options=options or {}) as container:
        container.metadata.update(metadata or {})
        stream = container.add_stream(codec, rate=FPS, options={'crf': '12'} if codec == 'libx264' else {})
        stream.width, stream.height, stream.pix_fmt = W, H, 'yuv420p'
        if time_base is not None:
            stream.codec_context.time_base = time_base
        if rotation is not None:
            stream.set_display_rotation(rotation[0], hflip=rotation[1])
        for i in range(n):
            frame = av.VideoFrame.from_ndarray(pattern(i), format='bgr24')
            if pts is not None:
                frame.pts, frame.time_base = pts(i), time_base
            for packet in stream.encode(frame):
                if mux_pts is not None:
                    packet.pts = packet.dts = mux_pts(packet.pts)
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def truncate(src: Path, dst: Path, fraction: float) -> Path:
    data = src.read_bytes()
    dst.write_bytes(data[: int(len(data) * fraction)])
    return dst


@pytest.fixture(scope='module')
def opencv_mp4(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """60 frames of 160x120 at 30 fps, MPEG-4 part 2 in MP4 (moov atom at the end), as OpenCV writes them."""
    return write_opencv(tmp_path_factory.mktemp('src') / 'webcam.mp4', 'mp4v')


@pytest.fixture(scope='module')
def phone_mp4(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An H.264 MP4 like a phone's: creation time, GPS and make tags, held rotated (90° ccw display matrix)."""
    return write_pyav(
        tmp_path_factory.mktemp('src') / 'phone.mp4',
        metadata={'creation_time': CREATION, 'location': '+48.8584+002.2945/', 'make': 'Apple', 'model': 'iPhone 15'},
        rotation=(90, False),
        # movflags: keep the make/model tags MP4 has no standard atom for, and write moov up front as phones do.
        options={'movflags': 'use_metadata_tags+faststart'},
    )


# -- a plain video ---------------------------------------------------------------------------------


def test_opencv_mp4_becomes_one_upright_jpeg_per_frame_stamped_at_the_video_rate(opencv_mp4, tmp_path):
    info = probe_video(opencv_mp4)
    assert (info.container, info.codec, info.width, info.height, info.rotation_deg) == (
        'mov,mp4,m4a,3gp,3g2,mj2', 'mpeg4', W, H, 0)
    assert (info.fps, info.frames, info.duration_s, info.creation_time_ns) == (30.0, N, 2.0, None)
    assert info.metadata['encoder'].startswith('Lavf')  # OpenCV writes through FFmpeg; no creation time

    reported: list[int] = []
    bag = video_to_bag(opencv_mp4, tmp_path / 'episode', progress=reported.append)

    frames = read_bag(tmp_path / 'episode')
    with av.open(str(opencv_mp4)) as container:
        decoded = sum(1 for _ in container.decode(video=0))
    assert len(frames) == bag.frames == decoded == N
    assert bag.skipped_frames == 0
    assert reported == [30, 60]
    # No creation time in the file: the clock is the file's mtime minus the duration, and the user is told.
    assert bag.clock == 'file_mtime'
    assert bag.start_ns == opencv_mp4.stat().st_mtime_ns - 2 * 1_000_000_000
    assert any('modification time' in note for note in bag.notes)

    stamps = [f.stamp_ns for f in frames]
    assert stamps == [f.log_ns for f in frames], 'header stamp and bag time must agree'
    assert (stamps[0], stamps[-1]) == (bag.start_ns, bag.stop_ns)
    assert all(abs(b - a - PERIOD_NS) <= 1 for a, b in itertools.pairwise(stamps))
    assert {f.format for f in frames} == {'jpeg'} and {f.frame_id for f in frames} == {'camera'}
    for i, frame in enumerate(frames):
        assert frame.image.shape == (H, W, 3)
        assert mad(frame.image, pattern(i)) < 4, f'frame {i} does not look like the source frame'
        # ... and like its own source frame, not a neighbour: the block moved 10 px in 5 frames.
        assert mad(frame.image, pattern(i)) < mad(frame.image, pattern(i + 5)) - 2

    metadata = yaml.safe_load((tmp_path / 'episode' / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
    assert metadata['message_count'] == N
    assert metadata['custom_data']['robodata.source_video'] == 'webcam.mp4'
    assert leftovers(tmp_path, tmp_path / 'episode') == []


def test_start_ns_sets_the_first_stamp(opencv_mp4, tmp_path):
    start = 1_700_000_000_123_456_789
    bag = video_to_bag(opencv_mp4, tmp_path / 'bag', start_ns=start, topic='/wrist/image/compressed', frame_id='wrist')
    frames = read_bag(tmp_path / 'bag', '/wrist/image/compressed')
    assert bag.clock == 'start' and not bag.notes
    assert frames[0].stamp_ns == frames[0].log_ns == bag.start_ns == start
    assert frames[-1].stamp_ns == bag.stop_ns == start + round((N - 1) * 1e9 / FPS)
    assert {f.frame_id for f in frames} == {'wrist'}


def test_sqlite3_bag_reads_back_with_robodatas_own_reader(opencv_mp4, tmp_path):
    video_to_bag(opencv_mp4, tmp_path / 'bag', storage='sqlite3', compression='none', jpeg_quality=50)
    with BagReader(tmp_path / 'bag') as reader:
        assert reader.complete and reader.message_count == N
        images = [decode_image(msg, 'bgr') for _, msg in reader.read()]
    assert mad(images[10], pattern(10)) < 6


# -- what a phone video carries --------------------------------------------------------------------


def test_phone_video_starts_at_its_creation_time_and_is_turned_upright(phone_mp4, tmp_path):
    info = probe_video(phone_mp4)
    # The display matrix turns the picture 90° counter-clockwise, i.e. 270° clockwise; width and height swap.
    assert (info.rotation_deg, info.width, info.height, info.codec) == (270, H, W, 'h264')
    assert info.creation_time_ns == CREATION_NS
    assert info.metadata['location'] == '+48.8584+002.2945/'
    assert (info.metadata['make'], info.metadata['model']) == ('Apple', 'iPhone 15')
    assert info.metadata['stream.handler_name'] == 'VideoHandler'
    assert json.loads(json.dumps(info.to_dict()))['path'] == str(phone_mp4)

    bag = video_to_bag(phone_mp4, tmp_path / 'bag')
    frames = read_bag(tmp_path / 'bag')
    assert bag.clock == 'creation_time'
    assert frames[0].stamp_ns == bag.start_ns == CREATION_NS
    assert len(frames) == N
    for i, frame in enumerate(frames):
        assert frame.image.shape == (W, H, 3)
        upright = np.rot90(pattern(i), k=1)  # as a player shows it: 90° counter-clockwise
        assert mad(frame.image, upright) < 4
        assert mad(frame.image, upright) < mad(frame.image, np.rot90(pattern(i), k=-1)) - 20
    assert any('270° clockwise' in note for note in bag.notes)


@pytest.mark.parametrize(
    ('rotation', 'rotation_deg', 'upright'),
    [
        ((-90, False), 90, lambda a: np.rot90(a, k=-1)),  # a phone held upright (iPhone portrait)
        ((180, False), 180, lambda a: np.rot90(a, k=2)),  # held upside down
        ((0, True), 0, lambda a: a[:, ::-1]),  # a mirrored front camera
    ],
    ids=['portrait', 'upside_down', 'mirrored'],
)
def test_every_orientation_a_phone_writes_comes_out_as_a_player_shows_it(tmp_path, rotation, rotation_deg, upright):
    video = write_pyav(tmp_path / 'clip.mov', n=5, rotation=rotation)
    info = probe_video(video)
    assert info.rotation_deg == rotation_deg
    bag = video_to_bag(video, tmp_path / 'bag', start_ns=0)
    frames = read_bag(tmp_path / 'bag')
    assert len(frames) == bag.frames == 5
    for i, frame in enumerate(frames):
        assert mad(frame.image, upright(pattern(i))) < 4
    if rotation[1]:
        assert any('mirrored' in note for note in bag.notes)


def test_variable_frame_rate_stamps_follow_the_recorded_times(tmp_path):
    """Phones drop to a lower rate in the dark: stamps must follow each frame's time, not index / fps."""
    times_ms = [0, 33, 67, 100, 200, 300, 333, 367, 500, 533]
    video = write_pyav(tmp_path / 'vfr.mkv', n=len(times_ms), time_base=Fraction(1, 1000), pts=times_ms.__getitem__)
    bag = video_to_bag(video, tmp_path / 'bag', start_ns=5_000_000_000)
    stamps = [f.stamp_ns for f in read_bag(tmp_path / 'bag')]
    assert stamps == [5_000_000_000 + t * 1_000_000 for t in times_ms]
    assert bag.skipped_frames == 0


def test_repeated_timestamps_still_give_strictly_increasing_stamps(tmp_path):
    # Packet 5 carries packet 4's time: an MKV accepts that, as some screen and action-camera tools write it.
    video = write_pyav(
        tmp_path / 'dup.mkv', codec='mpeg4', n=10, time_base=Fraction(1, FPS), pts=int,
        mux_pts=lambda pts: 4 if pts == 5 else pts,
    )
    bag = video_to_bag(video, tmp_path / 'bag', start_ns=0)
    frames = read_bag(tmp_path / 'bag')
    stamps = [f.stamp_ns for f in frames]
    assert len(frames) == 10
    assert all(b > a for a, b in itertools.pairwise(stamps))
    assert stamps[5] == stamps[4] + 1
    assert stamps == [f.log_ns for f in frames]
    assert any(note.startswith('1 frame with a timestamp not after') for note in bag.notes)


def test_frames_without_timestamps_are_spaced_one_frame_period_apart(tmp_path):
    # A raw H.264 stream (what some dashcams and drones dump) has no container, hence no timestamps.
    raw = tmp_path / 'dashcam.h264'
    with av.open(str(raw), 'w', format='h264') as container:
        stream = container.add_stream('libx264', rate=FPS)
        stream.width, stream.height, stream.pix_fmt = W, H, 'yuv420p'
        for i in range(10):
            for packet in stream.encode(av.VideoFrame.from_ndarray(pattern(i), format='bgr24')):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    bag = video_to_bag(raw, tmp_path / 'bag', start_ns=0)
    stamps = [f.stamp_ns for f in read_bag(tmp_path / 'bag')]
    assert bag.info.fps  # FFmpeg's estimate for a raw stream
    assert len(stamps) == 10 and stamps[0] == 0
    assert all(abs(b - a - 1e9 / bag.info.fps) <= 1 for a, b in itertools.pairwise(stamps))
    assert any(note.startswith('10 frames without a timestamp') for note in bag.notes)


# -- damaged and wrong input -----------------------------------------------------------------------


def _unreadable_files(folder: Path, opencv_mp4: Path) -> dict[str, Path]:
    rng = np.random.default_rng(7)
    files = {
        'random_bytes': folder / 'noise.mp4',
        'text_renamed': folder / 'notes.mp4',
        'empty': folder / 'empty.mov',
        'missing': folder / 'gone.mp4',
        'half_an_mp4': folder / 'half.mp4',
        'a_photo': folder / 'photo.mp4',
        'audio_only': folder / 'voice.m4a',
    }
    files['random_bytes'].write_bytes(rng.integers(0, 256, 100_000, dtype=np.uint8).tobytes())
    files['text_renamed'].write_text('demo 3: pick the red cube\n' * 200)
    files['empty'].write_bytes(b'')
    truncate(opencv_mp4, files['half_an_mp4'], 0.5)  # moov atom at the end: cut off
    files['a_photo'].write_bytes(cv2.imencode('.png', pattern(0))[1].tobytes())
    with av.open(str(files['audio_only']), 'w', format='mp4') as container:
        stream = container.add_stream('aac', rate=16000)
        for _ in range(10):
            frame = av.AudioFrame.from_ndarray(np.zeros((1, 1024), np.float32), format='fltp', layout='mono')
            frame.sample_rate = 16000
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return files


@pytest.mark.parametrize(
    ('kind', 'why'),
    [
        ('random_bytes', 'Invalid data'),
        ('text_renamed', 'Invalid data'),
        ('empty', 'empty file'),
        ('missing', 'file not found'),
        ('half_an_mp4', 'moov atom not found'),
        ('a_photo', 'still image'),
        ('audio_only', 'no video stream'),
    ],
)
def test_a_file_that_is_no_readable_video_is_one_clear_error_and_no_bag(opencv_mp4, tmp_path, kind, why):
    src = tmp_path / 'src'
    src.mkdir()
    path = _unreadable_files(src, opencv_mp4)[kind]
    out = tmp_path / 'out'
    out.mkdir()
    for call in (lambda: probe_video(path), lambda: video_to_bag(path, out / 'bag')):
        with pytest.raises(RobodataError) as caught:
            call()
        message = str(caught.value)
        assert message.startswith(f'{path}: not a readable video: ')
        assert why in message
        assert '\n' not in message
    assert leftovers(out) == []


@pytest.mark.parametrize(
    ('name', 'make'),
    [
        ('webcam.mkv', lambda p: write_opencv(p, 'mp4v')),
        ('webcam.avi', lambda p: write_opencv(p, 'MJPG')),
        ('phone.mp4', lambda p: write_pyav(p, options={'movflags': 'faststart'})),  # moov up front: readable
    ],
)
def test_a_damaged_tail_keeps_every_frame_before_the_damage(tmp_path, name, make):
    source = make(tmp_path / name)
    cut = truncate(source, tmp_path / f'cut{source.suffix}', 0.8)
    bag = video_to_bag(cut, tmp_path / 'bag', start_ns=0)

    frames = read_bag(tmp_path / 'bag')
    assert 0 < len(frames) == bag.frames < N
    assert bag.skipped_frames > 0 or any('truncated' in note for note in bag.notes)
    if bag.info.frames is not None:  # AVI and MP4 say how many frames there were: the rest is counted
        assert bag.frames + bag.skipped_frames == N
    stamps = [f.stamp_ns for f in frames]
    assert all(b > a for a, b in itertools.pairwise(stamps))
    for i, frame in enumerate(frames):
        assert mad(frame.image, pattern(i)) < 6, f'frame {i} before the damage is not intact'


def test_an_existing_bag_dir_is_left_untouched(opencv_mp4, tmp_path):
    bag_dir = tmp_path / 'bag'
    bag_dir.mkdir()
    (bag_dir / 'labels.yaml').write_text('outcome: success\n')
    with pytest.raises(RobodataError, match='already exists'):
        video_to_bag(opencv_mp4, bag_dir)
    assert leftovers(bag_dir) == ['labels.yaml']
    assert (bag_dir / 'labels.yaml').read_text() == 'outcome: success\n'
    assert leftovers(tmp_path, bag_dir) == []


@pytest.mark.parametrize(
    'options', [{'jpeg_quality': 0}, {'jpeg_quality': 101}, {'storage': 'rosbag1'}, {'start_ns': -1}]
)
def test_bad_options_fail_before_anything_is_written(opencv_mp4, tmp_path, options):
    with pytest.raises(RobodataError):
        video_to_bag(opencv_mp4, tmp_path / 'bag', **options)
    assert leftovers(tmp_path) == []


def test_ctrl_c_mid_conversion_leaves_no_bag_and_no_temporary_folder(opencv_mp4, tmp_path):
    def interrupt(frames: int) -> None:
        assert frames == 30
        assert any(p.name.startswith('.bag.') for p in tmp_path.iterdir()), 'frames go to a hidden folder'
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        video_to_bag(opencv_mp4, tmp_path / 'bag', progress=interrupt)
    assert leftovers(tmp_path) == []


def test_the_bag_dir_gets_its_parents_and_the_result_is_plain_data(opencv_mp4, tmp_path):
    bag_dir = tmp_path / 'dataset' / 'episodes' / 'ep_0001' / 'bag'
    bag = video_to_bag(opencv_mp4, bag_dir, compression='none')
    assert (bag_dir / 'metadata.yaml').is_file()
    assert leftovers(bag_dir.parent, bag_dir) == []
    data = json.loads(json.dumps(bag.to_dict()))
    assert data['frames'] == N and data['info']['frames'] == N and data['clock'] == 'file_mtime'


def test_video_suffixes_cover_what_phones_and_cameras_write():
    assert VIDEO_SUFFIXES == ('.mp4', '.mov', '.m4v', '.mkv', '.avi', '.webm')
    assert all(s == s.lower() and s.startswith('.') for s in VIDEO_SUFFIXES)
    assert os.path.splitext('IMG_0042.MOV')[1].lower() in VIDEO_SUFFIXES
