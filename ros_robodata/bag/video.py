"""Turn a video file (a phone or handheld capture) into a rosbag2 bag of JPEG CompressedImages.

Crowdsourced demonstrations arrive as videos, but every robodata tool (labeling, segmenting, scoring,
export) reads bags. This module makes a video into a bag a labeler cannot tell from a recorded camera:
one sensor_msgs/msg/CompressedImage per frame, upright, stamped in absolute time.

Why it is built the way it is:

- PyAV, not cv2.VideoCapture, reads the container: it gives each frame's exact presentation time
  (phones record at a variable frame rate, so ``index / fps`` drifts), the container's creation time,
  tags such as make, model and GPS, and the display matrix that says how the phone was held.
  OpenCV only JPEG-encodes.
- Stamps are ``t0 + (pts - first_pts) * time_base`` in integer nanoseconds, used both as header.stamp
  and as the bag's log time, so replay and header-based tools agree. ``t0`` is the caller's
  ``start_ns``, else the container's creation_time, else the file's mtime minus the duration (a guess,
  said so in the notes). Stamps strictly increase, as readers and the quality checks expect.
- Frames are turned upright exactly as FFmpeg's player (``-autorotate``) would, from the display matrix
  of the decoded frames, including the mirrored variants.
- Damage is expected (a phone that died mid-recording): what decodes is written, what does not is
  counted and noted. Only a file where nothing decodes is an error.
- The bag is written into a hidden sibling folder and renamed into place at the end, so a crash,
  an error or Ctrl-C never leaves a half-written bag that looks complete.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import cv2
from av.video.reformatter import VideoReformatter

from ros_robodata.bag.types import typestore
from ros_robodata.bag.video_read import (
    VideoInfo,
    _display_matrix,
    _Frames,
    _info,
    _open,
    _Orientation,
    _orientation,
    _orientation_notes,
    _unreadable,
    _video_stream,
)
from ros_robodata.bag.writer import STORAGES, BagWriter
from ros_robodata.errors import RobodataError

DEFAULT_TOPIC = '/camera/image_raw/compressed'
MSGTYPE = 'sensor_msgs/msg/CompressedImage'
PROGRESS_EVERY = 30

_NS = 1_000_000_000
# How many packets probe_video reads looking for a first decodable frame before calling a file unreadable.
_PROBE_PACKETS = 300
# A video whose last frame ends this much (or 3 frame periods) before its declared duration was cut short.
_TRUNCATION_SLACK_S = 0.2
_FALLBACK_PERIOD_NS = _NS // 30
# Transfer characteristics of HDR video (SMPTE ST 2084 / PQ and ARIB STD-B67 / HLG).
_HDR_TRC = {16: 'PQ', 18: 'HLG'}


@dataclass(frozen=True)
class VideoBag:
    """What video_to_bag wrote, and what the user should know about it."""

    info: VideoInfo
    frames: int  # frames written
    start_ns: int  # first stamp written
    stop_ns: int  # last stamp written
    clock: str  # where the absolute time came from: 'creation_time' | 'start' | 'file_mtime'
    skipped_frames: int  # frames of the video not in the bag (undecodable, or declared but cut off)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain types only, ready for JSON or YAML."""
        data = asdict(self)
        data['info'] = self.info.to_dict()
        return data


def probe_video(path: str | Path) -> VideoInfo:
    """Read a video's container and first frame; RobodataError if it is not a readable video.

    The first frame is decoded, not just the header read: it is the only place the display matrix
    (rotation) is exposed, and it proves the file holds at least one picture we can convert.
    """
    path = Path(path)
    with _open(path) as container:
        stream = _video_stream(container, path)
        frames = _Frames(container, stream, max_packets=_PROBE_PACKETS)
        first = next(iter(frames), None)
        if first is None:
            why = frames.stop_reason or 'no frame could be decoded'
            raise _unreadable(path, why)
        orientation = _orientation(_display_matrix(first))
        return _info(path, container, stream, first, orientation)


def video_to_bag(
    path: str | Path,
    bag_dir: str | Path,
    *,
    topic: str = DEFAULT_TOPIC,
    frame_id: str = 'camera',
    start_ns: int | None = None,
    jpeg_quality: int = 90,
    storage: str = 'mcap',
    compression: str = 'zstd',
    progress: Callable[[int], None] | None = None,
) -> VideoBag:
    """Write every decodable frame of the video at `path` as a JPEG CompressedImage into a new bag `bag_dir`.

    `start_ns` sets the absolute time of the first frame (clock 'start'); without it the container's
    creation_time is used, else the file's mtime minus the duration. `progress(frames_so_far)` is
    called every PROGRESS_EVERY frames and once at the end. Frames are decoded, encoded and written
    one at a time, so memory stays bounded however long the video is.

    `bag_dir` must not exist. Nothing appears there until the bag is complete: it is written into a
    hidden sibling folder that is removed on any error or KeyboardInterrupt.
    """
    path, bag_dir = Path(path), Path(bag_dir)
    _check_options(bag_dir, start_ns=start_ns, jpeg_quality=jpeg_quality, storage=storage, compression=compression)
    if bag_dir.exists() or bag_dir.is_symlink():
        raise RobodataError(f'{bag_dir}: already exists; not overwriting it with a bag of {path.name}')
    info = probe_video(path)
    t0, clock, notes = _clock(info, start_ns)
    bag_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f'.{bag_dir.name}.', suffix='.partial', dir=bag_dir.parent))
    try:
        # The bag is created under its final name inside the staging folder: rosbag2 names its
        # storage file after the folder, and metadata.yaml refers to it by that name.
        staged = staging / bag_dir.name
        result = _convert(
            info,
            staged,
            t0=t0,
            clock=clock,
            notes=notes,
            topic=topic,
            frame_id=frame_id,
            jpeg_quality=jpeg_quality,
            storage=storage,
            compression=compression,
            progress=progress,
        )
        if bag_dir.exists() or bag_dir.is_symlink():
            raise RobodataError(f'{bag_dir}: appeared while converting {path.name}; not overwriting it')
        os.rename(staged, bag_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    with contextlib.suppress(OSError):
        staging.rmdir()
    return result


# -- conversion ------------------------------------------------------------------------------------


def _check_options(
    bag_dir: Path, *, start_ns: int | None, jpeg_quality: int, storage: str, compression: str
) -> None:
    """Reject bad arguments before anything is read or created."""
    if isinstance(jpeg_quality, bool) or not isinstance(jpeg_quality, int) or not 1 <= jpeg_quality <= 100:
        raise RobodataError(f'{bag_dir}: jpeg_quality must be an integer 1..100, got {jpeg_quality!r}')
    if start_ns is not None and (isinstance(start_ns, bool) or not isinstance(start_ns, int) or start_ns < 0):
        raise RobodataError(f'{bag_dir}: start_ns must be a non-negative integer (ns since the epoch), got {start_ns}')
    if storage not in STORAGES:
        raise RobodataError(f'{bag_dir}: unknown storage {storage!r}; expected one of {sorted(STORAGES)}')
    if compression not in ('zstd', 'none'):
        raise RobodataError(f"{bag_dir}: unknown compression {compression!r}; expected 'zstd' or 'none'")


def _clock(info: VideoInfo, start_ns: int | None) -> tuple[int, str, list[str]]:
    """The absolute time of the first frame, where it came from, and a note when it is a guess."""
    if start_ns is not None:
        return start_ns, 'start', []
    if info.creation_time_ns is not None:
        return info.creation_time_ns, 'creation_time', []
    mtime_ns = info.path.stat().st_mtime_ns
    if info.duration_s is None:
        note = 'no creation_time and no duration in the container: stamps start at the file modification time'
        return mtime_ns, 'file_mtime', [note]
    t0 = max(0, mtime_ns - round(info.duration_s * _NS))
    note = (
        'no creation_time in the container: stamps start at the file modification time minus the duration '
        f'({info.duration_s:.3f} s), a guess; pass start_ns for the true time'
    )
    return t0, 'file_mtime', [note]


def _convert(
    info: VideoInfo,
    bag_path: Path,
    *,
    t0: int,
    clock: str,
    notes: list[str],
    topic: str,
    frame_id: str,
    jpeg_quality: int,
    storage: str,
    compression: str,
    progress: Callable[[int], None] | None,
) -> VideoBag:
    types = typestore().types
    compressed_image, header, time = (
        types[MSGTYPE],
        types['std_msgs/msg/Header'],
        types['builtin_interfaces/msg/Time'],
    )
    params = [cv2.IMWRITE_JPEG_QUALITY, jpeg_quality]
    custom = {'robodata.source_video': info.path.name, 'robodata.video_clock': clock}
    written = 0
    first_ns = last_ns = t0
    orientation: _Orientation | None = None
    hdr: str | None = None
    with _open(info.path) as container, BagWriter(
        bag_path, storage=storage, compression=compression, custom_data=custom
    ) as writer:
        writer.add_topic(topic, MSGTYPE)
        stream = _video_stream(container, info.path)
        stream.thread_type = 'AUTO'  # frame + slice threads: decoding is most of the cost
        time_base = stream.time_base or Fraction(1, _NS)
        period_ns = round(_NS / info.fps) if info.fps else _FALLBACK_PERIOD_NS
        stamper = _Stamper(t0, time_base, period_ns)
        reformatter = VideoReformatter()  # one swscale context for the whole video, not one per frame
        frames = _Frames(container, stream)
        for frame in frames:
            if orientation is None:
                orientation = _orientation(_display_matrix(frame))
                hdr = _HDR_TRC.get(int(frame.color_trc))
            stamp = stamper.stamp(frame.pts)
            bgr = reformatter.reformat(frame, format='bgr24', src_color_range=frame.color_range or None).to_ndarray()
            ok, jpeg = cv2.imencode('.jpg', orientation.apply(bgr), params)
            if not ok:
                raise RobodataError(f'{info.path}: OpenCV could not JPEG-encode frame {written}')
            message = compressed_image(
                header=header(stamp=time(sec=stamp // _NS, nanosec=stamp % _NS), frame_id=frame_id),
                format='jpeg',
                data=jpeg.reshape(-1),
            )
            writer.write_message(topic, stamp, message)
            if written == 0:
                first_ns = stamp
            last_ns = stamp
            written += 1
            if progress is not None and written % PROGRESS_EVERY == 0:
                progress(written)
    if written == 0:
        raise _unreadable(info.path, frames.stop_reason or 'no frame could be decoded')
    if progress is not None and written % PROGRESS_EVERY:
        progress(written)
    skipped = frames.undecodable
    notes = [*notes, *_orientation_notes(orientation)]
    if hdr:
        notes.append(f'{hdr} HDR video converted to 8-bit without tone mapping: colours may look flat')
    if stamper.bumped:
        notes.append(f'{_n_frames(stamper.bumped)} with a timestamp not after the previous one, each moved 1 ns later')
    if stamper.missing_pts:
        notes.append(f'{_n_frames(stamper.missing_pts)} without a timestamp, stamped 1/fps after the previous one')
    if frames.undecodable:
        notes.append(f'{_n_frames(frames.undecodable)} damaged beyond decoding, skipped')
    damaged = bool(frames.undecodable or frames.stop_reason)
    if frames.stop_reason:
        notes.append(f'reading stopped early after {written} frames: {frames.stop_reason}')
    cut_off = _cut_off(info, written, frames.undecodable, last_ns - first_ns, period_ns, damaged)
    if cut_off:
        count, note = cut_off
        skipped += count
        notes.append(note)
    return VideoBag(
        info=info,
        frames=written,
        start_ns=first_ns,
        stop_ns=last_ns,
        clock=clock,
        skipped_frames=skipped,
        notes=notes,
    )


def _n_frames(count: int) -> str:
    return f'{count} frame' if count == 1 else f'{count} frames'


def _cut_off(
    info: VideoInfo, written: int, undecodable: int, span_ns: int, period_ns: int, damaged: bool
) -> tuple[int, str] | None:
    """Frames the container promised that never came: (count added to skipped, note), or None.

    A declared frame count is exact, but a sound file may declare a frame or two that never displays
    (edit lists), so missing frames count as skipped only when the read showed damage. Without a
    count (MKV, WebM), a video ending well before its declared duration is only noted, as an estimate.
    """
    if info.frames is not None:
        missing = info.frames - written - undecodable
        if missing <= 0:
            return None
        if damaged:
            return missing, f'the container declares {info.frames} frames; the last {missing} are cut off (truncated)'
        return 0, f'the container declares {info.frames} frames but {written} were decoded'
    if info.duration_s is None:
        return None
    seen_s = (span_ns + period_ns) / _NS
    if seen_s >= info.duration_s - max(_TRUNCATION_SLACK_S, 3 * period_ns / _NS):
        return None
    estimate = f', about {round((info.duration_s - seen_s) * info.fps)} frames' if info.fps else ''
    return 0, f'the video ends at {seen_s:.2f} s of its declared {info.duration_s:.2f} s{estimate} missing (truncated?)'


class _Stamper:
    """Absolute, strictly increasing nanosecond stamps from frame pts."""

    def __init__(self, t0: int, time_base: Fraction, period_ns: int) -> None:
        self.t0 = t0
        self.time_base = time_base
        self.period_ns = period_ns
        self.first_pts: int | None = None
        self.anchor_ns = t0
        self.last_ns: int | None = None
        self.bumped = 0
        self.missing_pts = 0

    def stamp(self, pts: int | None) -> int:
        if pts is None:
            self.missing_pts += 1
            candidate = self.t0 if self.last_ns is None else self.last_ns + self.period_ns
        else:
            if self.first_pts is None:
                # Frames before the first one with a pts (rare) were spaced by 1/fps; continue from them.
                self.first_pts = pts
                self.anchor_ns = self.t0 if self.last_ns is None else self.last_ns + self.period_ns
            ticks = (pts - self.first_pts) * self.time_base.numerator * _NS
            candidate = self.anchor_ns + _round_div(ticks, self.time_base.denominator)
        if self.last_ns is not None and candidate <= self.last_ns:
            self.bumped += 1
            candidate = self.last_ns + 1
        self.last_ns = candidate
        return candidate


def _round_div(numerator: int, denominator: int) -> int:
    """numerator / denominator rounded half up, in exact integer arithmetic (no float drift over hours)."""
    return (2 * numerator + denominator) // (2 * denominator)


