"""Reading a video container with PyAV: opening it (with FFmpeg's reason when it cannot be), its metadata and
timeline, its frames one at a time past damage, and the display matrix that says how the phone was held."""

from __future__ import annotations

import calendar
import contextlib
import datetime
import math
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

import av
import av.logging
import cv2
import numpy as np
from av.container import InputContainer
from av.sidedata.sidedata import SideDataContainer
from av.sidedata.sidedata import Type as SideDataType
from av.video.stream import VideoStream

from ros_robodata.errors import RobodataError

_NS = 1_000_000_000
# FFmpeg's log level is process-wide; opening files from several threads must not interleave
# the raise-then-restore below.
_LOG_LOCK = threading.Lock()


@dataclass(frozen=True)
class VideoInfo:
    """What a video file is, read from its container and first frame, before converting anything."""

    path: Path
    container: str  # FFmpeg's demuxer name, e.g. 'mov,mp4,m4a,3gp,3g2,mj2'
    codec: str  # e.g. 'h264'
    width: int  # as displayed, i.e. after rotation
    height: int
    rotation_deg: int  # 0/90/180/270: how far a player turns the stored picture clockwise (then mirrors it, rarely)
    fps: float | None  # average frame rate
    frames: int | None  # from the container if it says
    duration_s: float | None
    creation_time_ns: int | None  # the container's creation_time tag (UTC), None if absent or unparsable
    metadata: dict[str, str] = field(default_factory=dict)  # container tags; video stream tags as 'stream.KEY'

    def to_dict(self) -> dict[str, Any]:
        """Plain types only (path as str), ready for JSON or YAML."""
        data = asdict(self)
        data['path'] = str(self.path)
        return data


@contextlib.contextmanager
def _open(path: Path) -> Iterator[InputContainer]:
    """Open a video, turning every way that can fail into one RobodataError line naming the file."""
    if not path.exists():
        raise _unreadable(path, 'file not found')
    if not path.is_file():
        raise _unreadable(path, 'not a file')
    if path.stat().st_size == 0:
        raise _unreadable(path, 'empty file')
    # PyAV silences FFmpeg's log, which also strips the reason from errors ("moov atom not found"):
    # capture the log while the header is parsed, so the user learns why.
    with _LOG_LOCK:
        previous = av.logging.get_level()
        av.logging.set_level(max(previous or 0, av.logging.ERROR))
        try:
            with av.logging.Capture():
                container = av.open(str(path), metadata_errors='replace')
        except (av.error.FFmpegError, OSError, UnicodeError, ValueError) as err:
            raise _unreadable(path, _why(err)) from None
        finally:
            av.logging.set_level(previous)
    try:
        if not isinstance(container, InputContainer):  # pragma: no cover - av.open(path) reads
            raise _unreadable(path, 'not opened for reading')
        name = container.format.name
        if name.endswith('_pipe') or name in ('image2', 'image2pipe'):
            raise _unreadable(path, f'a still image ({name}), not a video')
        yield container
    finally:
        container.close()


def _video_stream(container: InputContainer, path: Path) -> VideoStream:
    """The recording's video stream: not cover art or a thumbnail; the default one if there are several."""
    candidates = [
        s
        for s in container.streams.video
        if not s.disposition & (av.stream.Disposition.attached_pic | av.stream.Disposition.timed_thumbnails)
    ]
    if not candidates:
        kinds: list[str] = sorted({s.type for s in container.streams}) or ['none']
        raise _unreadable(path, f'no video stream (streams: {", ".join(kinds)})')
    stream = next((s for s in candidates if s.disposition & av.stream.Disposition.default), candidates[0])
    if stream.codec_context is None:
        raise _unreadable(path, f'no decoder for its video codec {stream.codec.name if stream.codec else "?"}')
    return stream


class _Frames:
    """Decoded frames of one stream in presentation order; damage is counted, never raised.

    A damaged tail shows up three ways: a packet FFmpeg marks corrupt (cut mid-packet), a packet the
    decoder rejects, or the demuxer failing to read on. The first two are counted as `undecodable`,
    the last ends the reading with `stop_reason`; the decoder is flushed in every case so frames it
    still holds (B-frames, frame threads) are not lost.
    """

    def __init__(self, container: InputContainer, stream: VideoStream, max_packets: int | None = None) -> None:
        self.container = container
        self.stream = stream
        self.max_packets = max_packets
        self.undecodable = 0
        self.stop_reason: str | None = None

    def __iter__(self) -> Iterator[av.VideoFrame]:
        packets = 0
        try:
            for packet in self.container.demux(self.stream):
                # Empty packets are PyAV's end-of-stream marker (or an AVI's dropped frame); decoding
                # one would put the decoder into its end state, so the flush below is the only one.
                if packet.size == 0:
                    continue
                if packet.is_corrupt:
                    self.undecodable += 1
                    continue
                yield from self._decode(packet)
                packets += 1
                if self.max_packets is not None and packets >= self.max_packets:
                    self.stop_reason = f'no frame decoded from the first {packets} packets'
                    return
        except (av.error.FFmpegError, OSError) as err:
            self.stop_reason = _why(err)
        yield from self._decode(None)

    def _decode(self, packet: av.Packet | None) -> Iterator[av.VideoFrame]:
        try:
            frames = self.stream.decode(packet)
        except av.error.EOFError:
            return
        except av.error.FFmpegError:
            self.undecodable += 1
            return
        for frame in frames:
            if frame.is_corrupt:
                self.undecodable += 1
                continue
            yield frame


def _info(
    path: Path, container: InputContainer, stream: VideoStream, first: av.VideoFrame, orientation: _Orientation
) -> VideoInfo:
    width = stream.codec_context.width or first.width
    height = stream.codec_context.height or first.height
    if orientation.rotation_deg in (90, 270):
        width, height = height, width
    fps = float(stream.average_rate) if stream.average_rate else None
    # The video stream's own duration first: the container's is the longest stream's (often the audio).
    if stream.duration and stream.time_base:
        duration_s: float | None = float(stream.duration * stream.time_base)
    elif (tagged := _parse_duration(stream.metadata.get('DURATION', ''))) is not None:  # Matroska/WebM
        duration_s = tagged
    elif container.duration:
        duration_s = container.duration / av.time_base
    else:
        duration_s = None
    metadata = {str(k): str(v) for k, v in container.metadata.items()}
    metadata.update({f'stream.{k}': str(v) for k, v in stream.metadata.items()})
    creation = container.metadata.get('creation_time') or stream.metadata.get('creation_time')
    return VideoInfo(
        path=path,
        container=container.format.name,
        codec=stream.codec_context.name,
        width=int(width),
        height=int(height),
        rotation_deg=orientation.rotation_deg,
        fps=fps,
        frames=stream.frames or None,
        duration_s=duration_s,
        creation_time_ns=_parse_creation_time(creation) if creation else None,
        metadata=metadata,
    )


_DURATION = re.compile(r'(\d+):(\d{2}):(\d{2}(?:\.\d+)?)')


def _parse_duration(text: str) -> float | None:
    """Seconds of a Matroska DURATION tag such as '00:01:02.033000000'."""
    match = _DURATION.fullmatch(text.strip())
    if not match:
        return None
    hours, minutes, seconds = match.groups()
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


_ISO_TIME = re.compile(
    r'(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?\s*(Z|UTC|[+-]\d{2}(?::?\d{2})?)?',
    re.IGNORECASE,
)


def _parse_creation_time(text: str) -> int | None:
    """Nanoseconds since the epoch of an ISO-8601 creation_time tag (UTC unless it names an offset).

    FFmpeg writes e.g. '2024-05-06T07:08:09.000000Z'. None for anything else, and for times at or
    before 1970: cameras with an unset clock write the epoch (or 1904, MP4's zero), not a real time.
    """
    match = _ISO_TIME.fullmatch(text.strip())
    if not match:
        return None
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction, zone = match.group(7) or '', (match.group(8) or 'Z').upper()
    try:
        datetime.datetime(year, month, day, hour, minute, second)  # timegm alone accepts 31 February
        seconds = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))
    except (ValueError, OverflowError):
        return None
    if zone not in ('Z', 'UTC'):
        sign = -1 if zone[0] == '-' else 1
        digits = zone[1:].replace(':', '')
        offset_s = int(digits[:2]) * 3600 + (int(digits[2:4]) * 60 if len(digits) > 2 else 0)
        seconds -= sign * offset_s
    ns = seconds * _NS + int((fraction + '000000000')[:9])
    return ns if ns > 0 else None


# -- orientation -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Orientation:
    """How to turn a stored picture upright: clockwise degrees and the pixel operations that do it."""

    rotation_deg: int = 0
    steps: tuple[str, ...] = ()
    mirrored: bool = False
    ignored_deg: float | None = None  # a rotation that is not a multiple of 90 degrees, left as stored

    def apply(self, image: np.ndarray) -> np.ndarray:
        for step in self.steps:
            image = _STEPS[step](image)
        return image


_STEPS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    'cw': lambda a: cv2.rotate(a, cv2.ROTATE_90_CLOCKWISE),
    'ccw': lambda a: cv2.rotate(a, cv2.ROTATE_90_COUNTERCLOCKWISE),
    '180': lambda a: cv2.rotate(a, cv2.ROTATE_180),
    'hflip': lambda a: cv2.flip(a, 1),
    'vflip': lambda a: cv2.flip(a, 0),
    'transpose': cv2.transpose,  # = rotate 90 ccw and flip vertically
    'antitranspose': lambda a: cv2.flip(cv2.transpose(a), -1),  # = rotate 90 cw and flip vertically
}


def _display_matrix(frame: av.VideoFrame) -> tuple[int, ...] | None:
    """The frame's 3x3 display matrix (FFmpeg's 16.16/2.30 fixed point, row-major), if it has one.

    PyAV exposes only the rounded angle (VideoFrame.rotation); flips need the matrix itself.
    """
    # PyAV's stub says Frame.side_data is one SideData; it is the container of them
    for side_data in cast(SideDataContainer, frame.side_data):
        if side_data.type == SideDataType.DISPLAYMATRIX:
            values = np.frombuffer(bytes(side_data), dtype=np.int32)
            if values.size == 9:
                return tuple(int(v) for v in values)
    return None


def _orientation(matrix: Sequence[int] | None) -> _Orientation:
    """What FFmpeg's player does with a display matrix (fftools' autorotate), as pixel operations.

    Each of the eight orientations is reported as a clockwise turn, mirrored left-right after it
    when `mirrored` (transpose = 90 + mirror, vflip = 180 + mirror), so width and height swap
    exactly when rotation_deg is 90 or 270.
    """
    if matrix is None:
        return _Orientation()
    scale0, scale1 = math.hypot(matrix[0], matrix[3]), math.hypot(matrix[1], matrix[4])
    if scale0 == 0 or scale1 == 0:
        return _Orientation()
    # av_display_rotation_get gives the counter-clockwise angle; a player turns clockwise by theta.
    theta = float(round(math.degrees(math.atan2(matrix[1] / scale1, matrix[0] / scale0))))
    theta -= 360 * math.floor(theta / 360 + 0.9 / 360)
    if abs(theta - 90) < 1:
        return _Orientation(90, ('transpose',), True) if matrix[3] > 0 else _Orientation(90, ('cw',))
    if abs(theta - 180) < 1:
        hflip, vflip = matrix[0] < 0, matrix[4] < 0
        if hflip and vflip:
            return _Orientation(180, ('180',))
        if hflip:
            return _Orientation(0, ('hflip',), True)
        return _Orientation(180, ('vflip',), True) if vflip else _Orientation(180, ())
    if abs(theta - 270) < 1:
        return _Orientation(270, ('antitranspose',), True) if matrix[3] < 0 else _Orientation(270, ('ccw',))
    if abs(theta) < 1:
        return _Orientation(180, ('vflip',), True) if matrix[4] < 0 else _Orientation()
    return _Orientation(ignored_deg=theta)


def _orientation_notes(orientation: _Orientation | None) -> list[str]:
    if orientation is None:
        return []
    if orientation.ignored_deg is not None:
        return [f'the container asks for a {orientation.ignored_deg:.0f}° rotation; frames are left as stored']
    notes = []
    if orientation.rotation_deg:
        notes.append(f"frames turned {orientation.rotation_deg}° clockwise upright, as the container's rotation asks")
    if orientation.mirrored:
        notes.append("frames mirrored, as the container's display matrix asks")
    return notes


# -- errors ----------------------------------------------------------------------------------------


def _why(err: BaseException) -> str:
    """FFmpeg's reason in one line: its error string and, when captured, the log line that explains it."""
    if isinstance(err, av.error.FFmpegError):
        why = err.strerror or type(err).__name__
        log = getattr(err, 'log', None)
        if log and len(log) == 3 and log[2]:
            why = f'{why} ({log[1]}: {log[2].strip()})' if log[1] else f'{why} ({log[2].strip()})'
        if 'moov atom not found' in why:
            why += ': not an MP4/MOV, or one cut off before its index was written (recording not finished)'
        return why
    if isinstance(err, OSError):
        return err.strerror or str(err)
    return str(err) or type(err).__name__


def _unreadable(path: Path, why: str) -> RobodataError:
    return RobodataError(f'{path}: not a readable video: {" ".join(why.split())}')
