"""How a LeRobot export is written (`robodata export lerobot`'s options), checked before anything is: its own
module, because the exporter, the meta writer and the file writer all read it."""

from __future__ import annotations

from dataclasses import dataclass, field

from ros_robodata.dataset import lerobot_layout as layout
from ros_robodata.errors import RobodataError
from ros_robodata.export.lerobot.lerobot_video import CODECS
from ros_robodata.export.lerobot.policy import Policy

__all__ = ['LeRobotOptions']


@dataclass(frozen=True)
class LeRobotOptions:
    """How a LeRobot training set is written (frame rate, cameras, action, video encoding, file sizes); the
    policy says which episodes and frames go in.

    Args:
        policy: which episodes go in, cut how, into which splits.
        fps: the frame rate of the time grid; None: the first exported camera's rate_hz, else 30.
        cameras: the profile cameras exported as videos; None: every camera of the profile.
        action_topic: the action's topic; '': the profile's actions topic when numeric; None: the next state.
        codec: the video codec, one of CODECS.
        crf: video quality, 0..63, lower is better.
        gop: frames between key frames (2, as LeRobot encodes: random access for training).
        data_file_mb: a data parquet file is closed past this size, between episodes.
        video_file_mb: a camera's MP4 is closed past this size, between episodes.
        allow_pii: export cameras the profile marks `pii: true` as recorded (audited in the dataset).
        blur_faces: blur every face found in every camera's frames (and so export pii cameras too; audited).
        release: (name, manifest sha256) of the release the episodes are exactly (`--release`), written into
            info.json and the dataset card so a model trained on the export names the exact data; None: no release.
    """

    policy: Policy = field(default_factory=Policy)
    fps: int | None = None  # None: the first exported camera's rate_hz, else 30
    cameras: tuple[str, ...] | None = None  # None: every camera of the profile
    action_topic: str | None = ''  # '': the profile's actions topic when numeric; None: the next state
    codec: str = 'h264'
    crf: int = 23
    gop: int = 2  # a key frame every 2 frames, as LeRobot encodes: random access for training
    data_file_mb: float = layout.DATA_FILE_MB
    video_file_mb: float = layout.VIDEO_FILE_MB
    allow_pii: bool = False  # pii cameras exported as recorded
    blur_faces: bool = False  # every face in every camera blurred
    release: tuple[str, str] | None = None  # (name, manifest sha256) of the release exported

    def check(self) -> None:
        """Refuse options out of range before anything is written.

        Raises:
            RobodataError: the policy's check fails, or the fps, codec, crf, gop or a file size is out of range.
        """
        self.policy.check()
        if self.fps is not None and not 1 <= self.fps <= 1000:
            raise RobodataError(f'--fps must be 1..1000, got {self.fps}')
        if self.codec not in CODECS:
            raise RobodataError(f'--codec: {self.codec!r} is not one of {", ".join(CODECS)}')
        if not 0 <= self.crf <= 63:
            raise RobodataError(f'--crf must be 0..63, got {self.crf}')
        if self.gop < 1:
            raise RobodataError(f'--gop must be at least 1, got {self.gop}')
        if not (self.data_file_mb > 0 and self.video_file_mb > 0):
            raise RobodataError('--data-file-mb and --video-file-mb must be above 0')
