"""One episode of a LeRobot folder read in place, as the bag `robodata import` would make of it, held in memory.

`robodata score`, `segment` and `report` on a LeRobot folder read each episode's rows from its parquet file (and,
for the camera checks, its video) into the very messages its imported bag would hold: the same topics, header
stamps, arrival times and CDR bytes. The checks and the segmenter then read them through the bag reader's
interface, so they are the same code on a bag and on a LeRobot folder, and find the same. Nothing is written
into the folder (it may be read-only). The joint states are laid out with numpy from one serialized message per
topic (their layout is fixed by the joint names), not serialized a message at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from functools import cache
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar, overload

import numpy as np
from rosbags.typesys.store import Typestore

from ros_robodata.bag.reader import BagMessage, BagReader, JointRows, OrderedMessages, TopicInfo
from ros_robodata.bag.types import header, typestore
from ros_robodata.dataset import lerobot_layout as layout
from ros_robodata.dataset.episode import Episode
from ros_robodata.dataset.importers.import_lerobot import (
    ACTION_TOPIC,
    STATE_TOPIC,
    LeRobotSource,
    camera_messages,
    camera_name,
    camera_topic,
    check_profile,
    clock,
    start_of,
)
from ros_robodata.dataset.lerobot_ref import LeRobotRef
from ros_robodata.errors import RobodataError
from ros_robodata.profile import COMPRESSED_IMAGE, IMAGE, JOINT_STATE, Profile
from ros_robodata.vocabulary import OUTCOMES

_T = TypeVar('_T')
_SOURCES: dict[Path, LeRobotSource] = {}  # per process: a folder's info, tasks and episode table, read once


def lerobot_source(root: Path) -> LeRobotSource:
    """The LeRobot dataset at `root`, opened once per process (a scoring worker reads many of its episodes).

    Raises:
        RobodataError: not a LeRobot dataset of a version the import reads.
    """
    key = root.resolve()
    if key not in _SOURCES:
        _SOURCES.clear()  # one folder at a time: a later one replaces it
        _SOURCES[key] = LeRobotSource(root)
    return _SOURCES[key]


def open_episode(ref: LeRobotRef, images: bool = True) -> BagReader:
    """The episode's messages in memory, read as a bag is; `images` False leaves the camera pixels out (their
    stamps stay).

    Raises:
        RobodataError: the folder or the episode cannot be read.
    """
    return LeRobotEpisodeReader(ref, images)


def raw_images_in(profile: Profile) -> bool:
    """Whether the profile reads the cameras as raw Images (an import with --raw-images wrote it)."""
    return any(spec.type == IMAGE for _, spec in profile.all_topics())


def _well_formed(root: Path, read: Callable[[], _T]) -> _T:
    """`read()`, with what a malformed dataset raises said as one RobodataError naming the folder (as the import
    says it)."""
    try:
        return read()
    except (KeyError, IndexError, TypeError, ValueError) as err:
        raise RobodataError(f'{root}: not a well-formed LeRobot dataset: {type(err).__name__}: {err}') from None


def lerobot_profile(root: Path) -> Profile:
    """The robot profile `robodata import` writes for the LeRobot dataset at `root` (topics, rates, cameras).

    Raises:
        RobodataError: not a LeRobot dataset the import reads.
    """
    return _well_formed(root, lambda: lerobot_source(root).profile(raw=False))


def check_lerobot_profile(root: Path, profile: Profile) -> None:
    """The profile must read the topics the import writes for `root`, with the same types (as the import checks).

    Raises:
        RobodataError: it reads none of them, or one as another type.
    """
    source = _well_formed(root, lambda: lerobot_source(root))
    check_profile(profile, source.profile(raw_images_in(profile)), root)


def in_place_episodes(root: Path, profile: Profile | None = None) -> list[tuple[Episode, LeRobotRef]]:
    """Every episode the LeRobot dataset at `root` holds rows of, by index: what its import would record (task,
    outcome, source) and where to read it. Only the index, frame, time and task columns are read here.

    Raises:
        RobodataError: not a LeRobot dataset the import reads, or one whose files are malformed.
    """
    source = _well_formed(root, lambda: lerobot_source(root))
    chosen = profile or source.profile(raw=False)
    raw = raw_images_in(chosen)
    out = []
    for index, task in _well_formed(root, source.episode_tasks).items():
        meta = source.meta.get(index, {})
        outcome = meta.get('outcome')
        record = Episode(id=f'episode_{index}', task=task, robot=chosen.robot.name,
                         outcome=outcome if isinstance(outcome, str) and outcome in OUTCOMES else 'unknown',
                         profile_sha256=chosen.sha256,
                         source={'path': str(root.resolve()), 'kind': 'lerobot', 'method': 'in place',
                                 'lerobot': {'episode_index': index, 'codebase_version': source.version,
                                             'fps': source.fps}})
        out.append((record, LeRobotRef(root.absolute(), index, raw, fps=source.fps)))
    return out


@cache
def _layout(names: tuple[str, ...], width: int) -> tuple[np.ndarray, int, int, int]:
    """A sensor_msgs/JointState of these names serialized once with marker values, and where its stamp's seconds,
    nanoseconds and positions sit: every row of the topic is a copy with its values written there."""
    store = typestore()
    empty = np.array([], dtype=np.float64)
    marks = np.pi * (1.0 + np.arange(width, dtype=np.float64))
    marker_sec, marker_nsec = 0x5A17C0DE, 0x0BADBEEF
    msg = store.types[JOINT_STATE](header=header(marker_sec * 10**9 + marker_nsec), name=list(names), position=marks,
                                   velocity=empty, effort=empty)
    template = np.frombuffer(bytes(store.serialize_cdr(msg, JOINT_STATE)), dtype=np.uint8)
    raw = template.tobytes()
    sec_at = raw.find(np.array([marker_sec], '<i4').tobytes())
    nsec_at = raw.find(np.array([marker_nsec], '<u4').tobytes())
    pos_at = raw.find(marks.astype('<f8').tobytes()) if width else len(raw)
    if min(sec_at, nsec_at, pos_at) < 0:
        raise RobodataError('cannot lay out sensor_msgs/JointState: its serialized form is not as expected')
    return template, sec_at, nsec_at, pos_at


def _joint_states(names: list[str], stamps: np.ndarray, positions: np.ndarray) -> list[bytes]:
    """Each row's sensor_msgs/JointState CDR bytes, as serializing it would give: copies of one message serialized
    with marker values, the stamps and positions written at the markers' offsets."""
    n, width = positions.shape
    template, sec_at, nsec_at, pos_at = _layout(tuple(names), width)
    rows = np.tile(template, (n, 1))
    rows[:, sec_at:sec_at + 4] = (stamps // 10**9).astype('<i4').view(np.uint8).reshape(n, 4)
    rows[:, nsec_at:nsec_at + 4] = (stamps % 10**9).astype('<u4').view(np.uint8).reshape(n, 4)
    if width:
        rows[:, pos_at:pos_at + 8 * width] = np.ascontiguousarray(positions, '<f8').view(np.uint8).reshape(n, -1)
    flat, size = rows.tobytes(), len(template)
    return [flat[i * size:(i + 1) * size] for i in range(n)]


class _JointStates(Sequence[bytes]):
    """A JointState topic's CDR bytes, made when first asked for: the checks read its rows as arrays
    (OrderedMessages.joints), so scoring in place never serializes them; segment and the bag-like readers do."""

    def __init__(self, names: list[str], stamps: np.ndarray, positions: np.ndarray) -> None:
        self.names, self.stamps, self.positions = names, stamps, positions
        self._bytes: list[bytes] | None = None
        self._asked = False  # one message was asked for already

    def rows(self) -> JointRows:
        """What the bytes decode to: the names, the stamps as the header holds them (seconds as int32, nanoseconds
        as uint32), the positions as float64."""
        sec = (self.stamps // 10**9).astype('<i4').astype(np.int64)
        nsec = (self.stamps % 10**9).astype('<u4').astype(np.int64)
        return tuple(self.names), sec * 10**9 + nsec, np.ascontiguousarray(self.positions, '<f8')

    def __len__(self) -> int:
        return len(self.stamps)

    @overload
    def __getitem__(self, i: int) -> bytes: ...

    @overload
    def __getitem__(self, i: slice) -> list[bytes]: ...

    def __getitem__(self, i: int | slice) -> bytes | list[bytes]:
        if self._bytes is not None:
            return self._bytes[i]
        if isinstance(i, int) and not self._asked:  # one message (the first, for the time origin): that one alone
            self._asked = True
            if not -len(self) <= i < len(self):
                raise IndexError(i)
            row = slice(i, i + 1) if i != -1 else slice(-1, None)
            return _joint_states(self.names, self.stamps[row], self.positions[row])[0]
        self._bytes = _joint_states(self.names, self.stamps, self.positions)  # read through: all at once
        return self._bytes[i]


class LeRobotEpisodeReader(BagReader):
    """One LeRobot episode's messages as its imported bag holds them, read through the BagReader interface
    (topics, messages in time order, decode) without a bag: what the checks and the segmenter read."""

    def __init__(self, ref: LeRobotRef, images: bool = True) -> None:
        self.ref = ref
        self.path = ref.root
        self.notes: list[str] = []
        self.metadata = {'in_memory': True}  # complete: nothing of it is damaged
        self.files = []
        self._sources = []
        self._typestore = None  # loaded when something decodes (~0.1 s): scoring in place never does
        self.images = images
        self.source = lerobot_source(ref.root)
        try:
            self.episode = next(self.source.episodes(only=ref.index))
        except StopIteration:
            raise RobodataError(f'{ref.root}: episode {ref.index}: no rows in its data files') from None
        except (KeyError, IndexError, TypeError, ValueError) as err:
            raise RobodataError(f'{ref.root}: not a well-formed LeRobot dataset: {type(err).__name__}: {err}') from None
        self.stamps, arrivals = clock(self.source, self.episode, start_of(self.episode))
        source, episode = self.source, self.episode
        # per topic: (type, arrival times, CDR bytes); cameras are read when first asked for
        self._held: dict[str, tuple[str, np.ndarray, Sequence[Any]]] = {}
        self._joints: dict[str, JointRows] = {}
        columns = [(STATE_TOPIC, source.state_key, episode.state)]
        if episode.action is not None:
            columns.append((ACTION_TOPIC, source.action_key or layout.ACTION, episode.action))
        for topic, key, values in columns:
            serialized = _JointStates(source.names(key, values.shape[1]), self.stamps, values)
            self._held[topic] = (JOINT_STATE, arrivals, serialized)
            self._joints[topic] = serialized.rows()
        self._cameras = {camera_topic(camera_name(key), ref.raw_images): key for key in source.video_keys
                         if key in episode.videos}
        self.missing = {key: len(self.stamps) for key in source.video_keys if key not in episode.videos}

    @property
    def topics(self) -> dict[str, TopicInfo]:
        found = {topic: TopicInfo(topic, msgtype, len(datas)) for topic, (msgtype, _, datas) in self._held.items()}
        kind = IMAGE if self.ref.raw_images else COMPRESSED_IMAGE
        for topic in self._cameras:  # counted once read; a video whose frames are not read yet counts its rows
            found[topic] = TopicInfo(topic, kind, len(self._held[topic][2]) if topic in self._held
                                     else len(self.stamps))
        return dict(sorted(found.items()))

    @property
    def message_count(self) -> int:
        return sum(info.count for info in self.topics.values())

    @property
    def start_ns(self) -> int | None:
        starts = [int(t[0]) for _, t, _ in self._held.values() if len(t)]
        return min(starts) if starts else None

    @property
    def end_ns(self) -> int | None:
        ends = [int(t[-1]) for _, t, _ in self._held.values() if len(t)]
        return max(ends) if ends else None

    @property
    def size_bytes(self) -> int:
        return 0

    @property
    def damaged_files(self) -> list[Path]:
        return []

    @property
    def complete(self) -> bool:
        return True

    @property
    def typestore(self) -> Typestore:
        if self._typestore is None:
            self._typestore = typestore()
        return self._typestore

    def first_stamps(self, topics: Collection[str]) -> dict[str, tuple[int, int]] | None:
        """From the joint states' rows; None when a topic asked about is another (a camera: read it)."""
        if any(topic not in self._joints for topic in topics):
            return None
        out = {}
        arrivals = {topic: self._held[topic][1] for topic in topics}
        for topic in topics:
            times = arrivals[topic]
            if len(times):  # messages() orders by arrival, then by place within the topic
                first = int(np.lexsort((np.arange(len(times)), times))[0])
                out[topic] = (int(times[first]), int(self._joints[topic][1][first]))
        return out

    def _camera(self, topic: str) -> None:
        """Read the camera's video into messages, as the import writes them (pixels left out without images)."""
        store = self.typestore
        key = self._cameras[topic]
        kind = IMAGE if self.ref.raw_images else COMPRESSED_IMAGE
        times, datas = [], []
        for stamp, msg in camera_messages(self.source, self.episode, key, self.stamps, self.ref.raw_images,
                                          self.ref.jpeg_quality, pixels=self.images):
            times.append(stamp)
            datas.append(store.serialize_cdr(msg, kind))
        self._held[topic] = (kind, np.array(times, dtype=np.int64), datas)
        if len(times) < len(self.stamps):
            self.missing[key] = len(self.stamps) - len(times)

    def messages(self, topics: Collection[str] | None = None, start_ns: int | None = None,
                 stop_ns: int | None = None) -> Iterator[BagMessage]:
        """The messages of `topics` (all if None) in time order; at one time, in the order the import writes them
        (state, action, then each camera), as the bag gives them back.

        Raises:
            RobodataError: a topic the episode does not have.
        """
        ordered = self._ordered(topics, start_ns, stop_ns)
        if ordered is None:
            return
        held = [(topic, msgtype, datas) for (topic, msgtype), datas in zip(ordered.topics, ordered.datas, strict=True)]
        for i, k, t in zip(ordered.within.tolist(), ordered.which.tolist(), ordered.times.tolist(), strict=True):
            topic, msgtype, datas = held[k]
            yield BagMessage(topic, msgtype, t, datas[i])

    def ordered_messages(self) -> OrderedMessages | None:
        """Every message as arrays, in messages()' order: the checks take them without an object a message."""
        return self._ordered(None, None, None)

    def _ordered(self, topics: Collection[str] | None, start_ns: int | None, stop_ns: int | None
                 ) -> OrderedMessages | None:
        have = set(self._held) | set(self._cameras)
        wanted = have if topics is None else set(topics)
        if unknown := wanted - have:
            raise RobodataError(f'{self.path}: episode {self.ref.index}: no topic {", ".join(sorted(unknown))} (it '
                                f'has: {", ".join(sorted(have))})')
        for topic in self._cameras:
            if topic in wanted and topic not in self._held:
                self._camera(topic)
        order = [t for t in self._held if t in wanted]
        if not order:
            return None
        times = np.concatenate([self._held[t][1] for t in order])
        which = np.concatenate([np.full(len(self._held[t][1]), k, dtype=np.int64) for k, t in enumerate(order)])
        within = np.concatenate([np.arange(len(self._held[t][1])) for t in order])
        keep = np.ones(len(times), dtype=bool)
        if start_ns is not None:
            keep &= times >= start_ns
        if stop_ns is not None:
            keep &= times < stop_ns
        picked = np.flatnonzero(keep)
        picked = picked[np.lexsort((within[picked], which[picked], times[picked]))]
        return OrderedMessages([(t, self._held[t][0]) for t in order], times[picked].astype(np.int64),
                               which[picked], within[picked], [self._held[t][2] for t in order],
                               joints=[self._joints.get(t) for t in order])

    def decode(self, message: BagMessage) -> Any:
        return self.typestore.deserialize_cdr(bytes(message.data), message.msgtype)

    def close(self) -> None:
        self._held.clear()

    def __enter__(self) -> LeRobotEpisodeReader:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
