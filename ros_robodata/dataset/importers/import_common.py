"""What every importer shares: the options of `robodata import`, what one recording gave, the episode id a
recording's name becomes, the check of its topics against the profile, and the provenance an episode keeps."""

from __future__ import annotations

import re
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcap.reader import make_reader

from ros_robodata.bag.reader import TopicInfo
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.episode import check_episode_id
from ros_robodata.dataset.sources import Recording, head_of
from ros_robodata.dataset.split import SplitSpec
from ros_robodata.errors import RobodataError
from ros_robodata.profile import Profile
from ros_robodata.version import __version__
from ros_robodata.vocabulary import MODES, OUTCOMES

METHODS = ('copy', 'link', 'move')


@dataclass(frozen=True)
class ImportOptions:
    """How recordings become episodes; every field has the meaning of the `robodata import` option.

    Args:
        task: the task of the new episodes, e.g. pick_cube.
        operator: who demonstrated; '' when not known.
        mode: how the episodes were made, one of MODES.
        outcome: the outcome of the new episodes, one of OUTCOMES.
        method: 'copy' the bag files in, 'link' to them where they are, or 'move' them in.
        split: cut a long log into several episodes by this rule; None: each recording is one episode.
        episode_id: the id of the one recording imported whole; None: from its file or folder name.
        video_start_ns: a video's absolute start; None: its creation time, else the file's time.
        jpeg_quality: the JPEG quality (1..100) of a video's frames.
        camera: the profile camera a video becomes; None: the profile's only CompressedImage camera.
        raw_images: a LeRobot dataset's video frames as sensor_msgs/Image instead of JPEG CompressedImages.
    """

    task: str = ''
    operator: str = ''
    mode: str = 'unknown'
    outcome: str = 'unknown'
    method: str = 'copy'  # copy | link | move
    split: SplitSpec | None = None
    episode_id: str | None = None  # only for one recording imported whole
    video_start_ns: int | None = None  # a video's absolute start; None: its creation time, else the file's
    jpeg_quality: int = 90
    camera: str | None = None  # the profile camera a video becomes; None: the profile's only CompressedImage one
    raw_images: bool = False  # a LeRobot dataset's videos as sensor_msgs/Image instead of JPEG CompressedImages

    def check(self) -> None:
        """Refuse options that contradict each other or the vocabulary, before any recording is touched.

        Raises:
            DatasetError: `episode_id` is not a valid episode id.
            RobodataError: an unknown method, mode or outcome, a JPEG quality outside 1..100, a split with
                'move', or an id with a split.
        """
        if self.method not in METHODS:
            raise RobodataError(f'method {self.method!r} is not one of {", ".join(METHODS)}')
        if self.mode not in MODES:
            raise RobodataError(f'--mode: {self.mode!r} is not one of {", ".join(MODES)}')
        if self.outcome not in OUTCOMES:
            raise RobodataError(f'--outcome: {self.outcome!r} is not one of {", ".join(OUTCOMES)}')
        if not 1 <= self.jpeg_quality <= 100:
            raise RobodataError(f'--jpeg-quality must be 1..100, got {self.jpeg_quality}')
        if self.split is not None and self.method == 'move':
            raise RobodataError('--move with a split would delete the messages outside the episodes\' windows: use '
                                '--copy (the default) and remove the log yourself once you are content')
        if self.episode_id is not None:
            check_episode_id(self.episode_id)
            if self.split is not None:
                raise RobodataError('--id names one episode; a split makes several (their ids come from the '
                                    'recording name)')


@dataclass
class Imported:
    """What one recording gave: the new episodes, the ones it already had in the dataset, and notes."""

    recording: Recording
    dataset: Dataset
    episodes: list[str] = field(default_factory=list)
    existing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {'source': str(self.recording.path), 'kind': self.recording.kind, 'episodes': self.episodes,
                'already_imported_as': self.existing, 'notes': self.notes}


def episode_id_for(name: str) -> str:
    """An episode id from a recording's file or folder name: letters, digits, '_', '-', '.' (other characters
    become '_', accents lose their marks), at most 100 characters; RobodataError when nothing usable is left."""
    ascii_name = unicodedata.normalize('NFKD', name).encode('ascii', 'ignore').decode('ascii')
    text = re.sub(r'[^A-Za-z0-9_.-]+', '_', ascii_name)
    text = re.sub(r'\.{2,}', '.', text).lstrip('._-')[:100].rstrip('._-')
    if not text:
        raise RobodataError(f'{name!r}: nothing in this name is usable as an episode id; give one with --id')
    return check_episode_id(text)


# -- checks against the profile ------------------------------------------------------------------------------


def check_topics(where: Path, topics: dict[str, TopicInfo], profile: Profile | None) -> list[str]:
    """RobodataError when a topic of the profile has another type in the recording (it would be read wrongly
    by every later step); returns a note naming the profile's topics the recording does not have."""
    if profile is None:
        return []
    missing = []
    for role, spec in profile.all_topics():
        info = topics.get(spec.topic)
        if info is None:
            missing.append(spec.topic)
        elif info.msgtype != spec.type:
            raise RobodataError(f'{where}: {spec.topic} is {info.msgtype} here, but the profile ({profile.source}) '
                                f'says {spec.type} for {role}: is this recording from another rig?')
    if len(missing) == len(profile.all_topics()):
        raise RobodataError(f'{where}: none of the profile\'s topics ({", ".join(missing)}) is in this recording '
                            f'(it has: {", ".join(topics) or "none"}): is it from another rig? Import it into a '
                            'dataset made with its own profile')
    return [f'not in this recording: {", ".join(missing)}'] if missing else []


def source_record(recording: Recording, options: ImportOptions, cid: str, **extra: Any) -> dict[str, Any]:
    method = 'convert' if recording.origin is not None else options.method  # the bag here is a conversion
    recording = recording.source
    head = head_of(recording.files[0]) if recording.files else None
    return {'path': str(recording.path.resolve()), 'kind': recording.kind, 'method': method,
            'content_id': cid, 'size_bytes': recording.size_bytes, 'files': [f.name for f in recording.files],
            **({'head_bytes': head[0], 'head_sha256': head[1]} if head else {}),
            'imported': time.strftime('%Y-%m-%dT%H:%M:%S%z'), 'imported_by': f'ros_robodata {__version__}',
            **_writer_of(recording), **extra}


def _writer_of(recording: Recording) -> dict[str, Any]:
    """Which library wrote an MCAP bag (its header says, e.g. 'rosbag2_storage_mcap' or 'mcap-ros2-support')."""
    first = recording.files[0]
    if first.suffix != '.mcap':
        return {}
    try:
        with first.open('rb') as f:
            header = make_reader(f).get_header()
        return {'written_by': header.library} if header.library else {}
    except Exception:  # a damaged file still imports; the writer is only provenance
        return {}
