"""Where one episode of a LeRobot folder is, for the analyses that read it in place (score, segment, report):
small and picklable, it travels to a scoring worker, which opens it there (lerobot_episode_source.open_episode).
Kept apart from the reader so that commands which never read a LeRobot folder do not load PyAV and pyarrow.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

JPEG_QUALITY = 90  # as `robodata import` encodes a video's frames by default (ImportOptions.jpeg_quality)


def episode_name(index: int) -> str:
    """How an episode of a LeRobot folder is named in findings and tables: by its LeRobot episode index."""
    return f'episode {index}'


@dataclass(frozen=True)
class LeRobotRef:
    """Where one episode of a LeRobot folder is (pickled to a scoring worker), and how its cameras are read.

    Args:
        root: the LeRobot dataset's folder.
        index: the episode's LeRobot episode_index.
        raw_images: cameras as raw Images (the profile reads image_raw), else JPEG CompressedImages.
        jpeg_quality: the JPEG quality the import uses.
        fps: the dataset's frame rate (info.json), to say a finding's time as a frame index.
    """

    root: Path
    index: int
    raw_images: bool = False
    jpeg_quality: int = JPEG_QUALITY
    fps: float = 0.0
