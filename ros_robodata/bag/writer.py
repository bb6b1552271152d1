"""Write one rosbag2 bag: MCAP with zstd-compressed chunks by default, sqlite3 on request.

rosbags does the format work. This adds what a recorder needs on top: topics added by name with
their QoS, raw CDR written as received, a flush that makes everything written so far survive a
SIGKILL, and a metadata.yaml that says which ROS distro the definitions come from.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import threading
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, cast

import yaml
from rosbags.interfaces import Connection, Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime
from rosbags.rosbag2 import Writer
from rosbags.rosbag2.enums import CompressionFormat, CompressionMode, StoragePlugin
from rosbags.rosbag2.errors import WriterError
from rosbags.rosbag2.storage_mcap import McapWriter
from rosbags.typesys.store import Typestore

from ros_robodata.bag.types import ROS_DISTRO, typestore

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd
from ros_robodata.errors import BagError
from ros_robodata.files import file_sha256, write_yaml

STORAGES = {'mcap': StoragePlugin.MCAP, 'sqlite3': StoragePlugin.SQLITE3}
ZSTD_LEVEL = 1
_INFINITE = QosTime(0x7FFFFFFF, 0xFFFFFFFF)


def qos_profile(*, reliable: bool = True, latched: bool = False, depth: int = 10) -> Qos:
    """The offered QoS a bag records for a topic, as rosbag2 stores it for `ros2 bag play`."""
    return Qos(
        history=QosHistory.KEEP_LAST,
        depth=depth,
        reliability=QosReliability.RELIABLE if reliable else QosReliability.BEST_EFFORT,
        durability=QosDurability.TRANSIENT_LOCAL if latched else QosDurability.VOLATILE,
        deadline=_INFINITE,
        lifespan=_INFINITE,
        liveliness=QosLiveliness.AUTOMATIC,
        liveliness_lease_duration=_INFINITE,
        avoid_ros_namespace_conventions=False,
    )


class BagWriter:
    """One bag directory, written once, that any rosbag2 tool can read; use as a context manager.

    Leaving the `with` block by an exception still closes the bag properly: what was recorded is
    kept, indexed and described in metadata.yaml.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        storage: str = 'mcap',
        compression: str = 'zstd',
        custom_data: Mapping[str, str] | None = None,
        compress_now: Callable[[], bool] | None = None,
    ) -> None:
        """Say how the bag will be written; nothing is created before open() (or entering the `with` block).

        Args:
            path: the bag folder to create; it must not exist yet.
            storage: 'mcap' (chunked, recoverable after a crash) or 'sqlite3'.
            compression: 'zstd' (each MCAP chunk compressed) or 'none'.
            custom_data: key/value text stored in metadata.yaml (the episode id, the task...).
            compress_now: asked at each chunk; False stores it uncompressed (a recorder behind catches up).

        Raises:
            BagError: an unknown storage or compression, or a folder already at `path`.
        """
        if storage not in STORAGES:
            msg = f'{path}: unknown storage {storage!r}; expected one of {sorted(STORAGES)}'
            raise BagError(msg)
        if compression not in {'zstd', 'none'}:
            msg = f"{path}: unknown compression {compression!r}; expected 'zstd' or 'none'"
            raise BagError(msg)
        self.path = Path(path)
        self.storage = storage
        try:
            self._writer = Writer(self.path, version=9, storage_plugin=STORAGES[storage])
        except WriterError as err:  # the folder is there already: a bag is never written over
            raise BagError(f'{path}: cannot create bag: {err}') from None
        # MCAP compresses whole chunks (what `ros2 bag record --storage-preset-profile` does);
        # sqlite3 has no chunks, and per-message compression makes bags few tools can read.
        if storage == 'mcap' and compression == 'zstd':
            self._writer.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
        for key, value in (custom_data or {}).items():
            self._writer.set_custom_data(key, str(value))
        self._topics: dict[str, Connection] = {}
        # Asked at each chunk: False stores that chunk uncompressed (MCAP allows it chunk by chunk), so a recorder
        # that fell behind catches up on half the CPU instead of losing messages.
        self._compress_now = compress_now
        self.chunks_compressed = self.chunks_uncompressed = 0
        self._hashed: _HashedFile | None = None
        self._open = False
        self._syncing: threading.Thread | None = None

    def open(self) -> BagWriter:
        """Create the bag folder and its storage file, so topics can be added and messages written.

        Raises:
            BagError: the bag folder cannot be created (made meanwhile by another process, no permission).
        """
        try:
            self._writer.open()
        except WriterError as err:
            raise BagError(f'{self.path}: cannot create bag: {err}') from None
        if self._writer.compression_mode == CompressionMode.STORAGE:
            # rosbags compresses chunks at zstd level 3; a rig's cameras outrun that on one core.
            # Level 1 is what rosbag2's `zstd_fast` preset records with.
            self._mcap().compressor = self._compress_chunk
        if self.storage == 'mcap':
            self._hashed = _HashedFile(self._writer.storage)
            _write_chunk_crcs(self._writer.storage, self._hashed)
        self._open = True
        return self

    @property
    def sha256(self) -> dict[str, str]:
        """After close: each file of the bag and its SHA-256. The MCAP file's is summed as it was written (reading
        a finished bag again to fingerprint it cost the writer a second pass over every byte at each episode's
        end); metadata.yaml, a few kB, is read. A sqlite3 bag's database is read once here.

        Raises:
            BagError: the bag is still open.
        """
        if self._open:
            raise BagError(f'{self.path}: checksums are known once the bag is closed')
        sums = {}
        for path in sorted(p for p in self.path.iterdir() if p.is_file()):
            if self._hashed is not None and path.name == self._hashed.name:
                sums[path.name] = self._hashed.hexdigest()
            else:
                sums[path.name] = file_sha256(path)
        return sums

    def _mcap(self) -> McapWriter:
        """The open MCAP storage, whose chunks this writer steers (rosbags types `Writer.storage` as its plugin
        protocol, or None when closed)."""
        return cast(McapWriter, self._writer.storage)

    def _compress_chunk(self, data: bytes) -> bytes:
        storage = self._mcap()
        if self._compress_now is not None and not self._compress_now():
            storage.compression = ''  # rosbags reads it right after this call, for this chunk's records
            self.chunks_uncompressed += 1
            return data
        storage.compression = 'zstd'
        self.chunks_compressed += 1
        return zstd.compress(data, level=ZSTD_LEVEL)

    def add_topic(self, topic: str, msgtype: str, *, qos: Qos | None = None, store: Typestore | None = None) -> None:
        """Declare a topic before its first message; its definition (embedded in the bag, so it reads anywhere)
        comes from `store`, by default ROS 2 Jazzy's and ros_robodata's types.

        Args:
            topic: the topic name, e.g. /joint_states.
            msgtype: its message type, e.g. sensor_msgs/msg/JointState.
            qos: the QoS it was offered with (replayed as recorded); None: reliable, volatile, depth 10.
            store: the type store holding `msgtype`'s definition.

        Raises:
            BagError: the topic was added already, or `store` does not know `msgtype`.
        """
        if topic in self._topics:
            msg = f'{self.path}: topic {topic} added twice'
            raise BagError(msg)
        store = store or typestore()
        if msgtype not in store.fielddefs:
            msg = f'{self.path}: unknown message type {msgtype!r} for {topic}: not a ROS 2 Jazzy or ros_robodata type'
            raise BagError(msg)
        self._topics[topic] = self._writer.add_connection(
            topic, msgtype, typestore=store, offered_qos_profiles=[qos or qos_profile()]
        )

    def has_topic(self, topic: str) -> bool:
        """Whether add_topic() declared `topic`, so a recorder adds a topic discovered late only once.

        Args:
            topic: the topic name.
        """
        return topic in self._topics

    def write(self, topic: str, t_ns: int, data: bytes | memoryview) -> None:
        """Write one message's CDR bytes, exactly as received, at receive time `t_ns` (never decoded, so every
        field stays as the driver sent it).

        Args:
            topic: a topic declared with add_topic().
            t_ns: the receive time, ns since the epoch (the bag's time axis).
            data: the serialized message.

        Raises:
            BagError: `topic` was not declared.
        """
        try:
            connection = self._topics[topic]
        except KeyError:
            raise BagError(f'{self.path}: write to undeclared topic {topic}') from None
        self._writer.write(connection, t_ns, data)

    def write_message(self, topic: str, t_ns: int, message: Any) -> None:
        """Serialize a rosbags message object and write it, for messages made here (a simulation, an import).

        Args:
            topic: a topic declared with add_topic().
            t_ns: the receive time, ns since the epoch.
            message: a rosbags message object of the topic's type.

        Raises:
            BagError: `topic` was not declared.
        """
        connection = self._topics.get(topic)
        if connection is None:
            raise BagError(f'{self.path}: write to undeclared topic {topic}')
        self._writer.write(connection, t_ns, typestore().serialize_cdr(message, connection.msgtype))

    @property
    def counts(self) -> dict[str, int]:
        """Messages written so far, per topic."""
        return {topic: self._writer.counts[conn.id] for topic, conn in self._topics.items()}

    def flush(self) -> None:
        """Push everything written so far to disk, so a SIGKILL or power loss keeps it.

        For MCAP this closes the pending chunk (a chunk is the unit a reader can recover); for
        sqlite3 each write is already committed by rosbags.
        """
        storage = self._writer.storage
        if storage is None:
            return
        if self.storage == 'mcap':
            mcap = self._mcap()
            if mcap.chunk.bio.tell():
                mcap.close_chunk()
            mcap.bio.flush()  # now in the OS: survives the process being killed
            self._sync_in_background(mcap.bio.fileno())

    def _sync_in_background(self, fd: int) -> None:
        """fsync (survives power loss) off the writing thread: it can take long on a busy disk, and the
        recorder must keep writing meanwhile. One at a time; a flush during a running sync skips it."""
        if self._syncing is not None and self._syncing.is_alive():
            return
        self._syncing = threading.Thread(target=_fsync_quietly, args=(fd,), name='bag-fsync', daemon=True)
        self._syncing.start()

    def close(self) -> None:
        """Finish the file (index, summary) and write metadata.yaml, so the bag is whole and indexed.

        Raises:
            RobodataError: metadata.yaml cannot be written (disk full, no permission).
        """
        if not self._open:
            return
        self._open = False
        if self._syncing is not None:
            self._syncing.join()
        self._writer.close()
        _stamp_distro(self.path / 'metadata.yaml')

    def abort(self) -> None:
        """Give up on a bag whose storage failed: release the file. What was flushed stays readable
        (and `robodata repair` makes it whole); nothing more is written."""
        self._open = False
        self._writer.abort()

    def __enter__(self) -> BagWriter:
        return self.open()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


# In an MCAP Chunk record, the CRC32 of its uncompressed records follows the opcode (1 byte), the record length
# (8) and message start time, end time and uncompressed size (8 each).
_CHUNK_CRC_AT = 1 + 8 + 24


class _HashedFile:
    """The MCAP file under rosbags' writer, summed (SHA-256) as its bytes go out. rosbags only appends; a chunk's
    records are held back while it is closed so that its CRC can be filled in before they are written and summed."""

    def __init__(self, storage: Any) -> None:
        self._file = storage.bio
        self.name = Path(self._file.name).name
        self._file.flush()
        self._sha = hashlib.sha256(Path(self._file.name).read_bytes()[:self._file.tell()])  # magic and header
        self._held: bytearray | None = None
        storage.bio = self

    def write(self, data: bytes | bytearray | memoryview) -> int:
        if self._held is not None:
            self._held += data
            return len(data)
        self._sha.update(data)
        written: int = self._file.write(data)
        return written

    def tell(self) -> int:
        position: int = self._file.tell()
        return position + (len(self._held) if self._held is not None else 0)

    def hold(self) -> None:
        self._held = bytearray()

    def let_go(self, patch_at: int, patch: bytes) -> None:
        """Write what was held, with `patch` over its bytes at `patch_at`."""
        held, self._held = self._held, None
        assert held is not None
        held[patch_at:patch_at + len(patch)] = patch
        self.write(held)

    def hexdigest(self) -> str:
        return self._sha.hexdigest()

    def flush(self) -> None:
        self._file.flush()

    def fileno(self) -> int:
        return int(self._file.fileno())

    def close(self) -> None:
        self._file.close()


def _write_chunk_crcs(storage: Any, hashed: _HashedFile) -> None:
    """rosbags writes every chunk's CRC as 0 ("not computed"), so a flipped byte inside a chunk goes unseen by
    every reader; rosbag2's MCAP writer computes it. Wrap the storage's close_chunk to fill the CRC in before the
    chunk is written: readers (rosbags, mcap, ours) then check it and find the damage."""
    close_chunk = storage.close_chunk

    def close_chunk_with_crc() -> None:
        crc = zlib.crc32(storage.chunk.bio.getbuffer())
        hashed.hold()
        try:
            close_chunk()
        finally:
            hashed.let_go(_CHUNK_CRC_AT, crc.to_bytes(4, 'little'))

    storage.close_chunk = close_chunk_with_crc



def _fsync_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):  # a failing disk shows up in the next write, where it is handled
        os.fsync(fd)


# libyaml's parser where PyYAML was built with it: a split writes many small bags, and the pure-Python one costs
# ~10 ms a metadata.yaml.
_LOADER = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)


def _stamp_distro(metadata_path: Path) -> None:
    """Name the ROS distro whose definitions the bag embeds, as rosbag2 does ('jazzy')."""
    data = yaml.load(metadata_path.read_text(encoding='utf-8'), Loader=_LOADER)  # a safe loader (C or Python)
    data['rosbag2_bagfile_information']['ros_distro'] = ROS_DISTRO
    write_metadata(metadata_path, data)


def write_metadata(path: Path, data: dict[str, Any]) -> None:
    """Write metadata.yaml atomically: a crash leaves the old file or the new one, never half."""
    write_yaml(path, data)
