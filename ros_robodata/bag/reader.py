"""Read rosbag2 bags, ours or anyone's, streaming, and whatever of a damaged bag is readable.

A normal bag (a directory with metadata.yaml, or a bare .mcap / .db3 file) is read with rosbags,
chunk by chunk, never whole. A bag directory whose metadata.yaml is missing (a recorder that was
killed) is read from its storage files directly. An MCAP file cut short (no footer, a partial
last chunk) is scanned record by record up to the damage. Each such detour is written into
`notes`, so the caller can tell the user what was read and how.

Why one module: the reader, its two kinds of sources (indexed by rosbags, scanned after damage) and the typestore
built from what the bag embeds are one behaviour for the caller: read what is there, say how.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import IO, Any, cast

import numpy as np
from mcap.records import Channel, Chunk, Message, Schema
from mcap.stream_reader import StreamReader, breakup_chunk
from rosbags.interfaces import MessageDefinitionFormat, Qos, QosDurability
from rosbags.serde import SerdeError
from rosbags.typesys import Stores, get_types_from_idl, get_types_from_msg, get_typestore
from rosbags.typesys.store import Typestore

from ros_robodata.bag.types import own_message_definitions
from ros_robodata.errors import BagError
from ros_robodata.files import read_yaml
from ros_robodata.vocabulary import BAG_SUFFIXES

STORAGE_SUFFIXES = BAG_SUFFIXES
MCAP_MAGIC = b'\x89MCAP0\r\n'


@dataclass(frozen=True)
class TopicInfo:
    """One topic of a bag."""

    name: str
    msgtype: str
    count: int
    serialization_format: str = 'cdr'
    latched: bool = False
    msgdef: str | None = None  # the definition the bag embeds ('' for a message without fields); None: none
    qos: tuple[Qos, ...] = ()


@dataclass(frozen=True)
class BagMessage:
    """One message as stored: CDR bytes at the bag's (receive) time."""

    topic: str
    msgtype: str
    t_ns: int
    data: bytes | memoryview


JointRows = tuple[tuple[str, ...], np.ndarray, np.ndarray]  # JointState messages: names, stamps (ns), positions


@dataclass(frozen=True)
class OrderedMessages:
    """A reader's messages given as arrays instead of one object each: `times[k]` is the k-th message's receive
    time in the bag's order, `which[k]` its topic (an index into `topics`), `within[k]` its place in that topic's
    `datas`. What a reader that holds whole streams in memory (a LeRobot episode in place) hands over at once."""

    topics: list[tuple[str, str]]  # (topic, msgtype)
    times: np.ndarray
    which: np.ndarray
    within: np.ndarray
    datas: Sequence[Sequence[bytes]]
    # Per topic, what its sensor_msgs/JointState bytes decode to, where the reader holds it as arrays already:
    # (joint names, header stamps in ns, positions n x joints), in `datas` order; None for other topics. The checks
    # read these instead of parsing the bytes back (which the reader then need not make).
    joints: Sequence[JointRows | None] | None = None


class BagReader:
    """A recorded bag read in time order, whole or up to its damage (a truncated MCAP from a crashed recorder);
    use as a context manager.
    """

    def __init__(self, path: str | Path) -> None:
        """Open every storage file of the bag and read its metadata; messages are read only when asked for.

        Args:
            path: a bag folder (with or without metadata.yaml), or one .mcap or .db3 file.

        Raises:
            BagError: nothing at `path` is readable as a bag (missing, not a bag, a listed file absent, a storage
                file that cannot be opened and is not a damaged MCAP).
        """
        self.path = Path(path)
        self.notes: list[str] = []
        self.metadata: dict[str, Any] | None = None
        self.files = _storage_files(self.path)
        self.storage = STORAGE_SUFFIXES[self.files[0].suffix]
        self._sources: list[_Source] = []
        for file in self.files:
            self._sources.append(self._open_source(file))
        if self.path.is_dir() and (self.path / 'metadata.yaml').is_file():
            self.metadata = _read_metadata(self.path / 'metadata.yaml')
        elif self.path.is_dir():
            names = ', '.join(f.name for f in self.files)
            self.notes.append(f'no metadata.yaml in {self.path}: read {names} directly')
        self._typestore: Typestore | None = None

    def _open_source(self, file: Path) -> _Source:
        try:
            return _RosbagsSource(file)
        except Exception as err:  # whatever the storage library raises on a damaged file (lengths past its end:
            # MemoryError, OverflowError; bad bytes: ReaderError, struct.error, ValueError ...): read up to the damage
            if file.suffix != '.mcap':
                raise BagError(f'{file}: not a readable {self.storage} bag: {err}') from None
            with file.open('rb') as f:
                if f.read(len(MCAP_MAGIC)) != MCAP_MAGIC:
                    raise BagError(f'{file}: not an MCAP file (no MCAP magic at its start)') from None
            source = _ScannedMcap(file)
            bad = f', skipping {len(source.bad_chunks)} unreadable chunk(s)' if source.bad_chunks else ''
            if source.orphans:
                bad += f' and {source.orphans} message(s) whose channel record was lost'
            self.notes.append(
                f'{file.name} is damaged or truncated ({_reason(err)}){bad}; recovered {source.message_count} '
                f'message(s) up to byte {source.readable_bytes:,} of {file.stat().st_size:,}'
            )
            return source

    # -- what the bag holds ------------------------------------------------------------------

    @property
    def topics(self) -> dict[str, TopicInfo]:
        """Every topic in the bag (type, message count, QoS, embedded definition), by name, sorted."""
        merged: dict[str, TopicInfo] = {}
        for source in self._sources:
            for info in source.topics.values():
                if info.name in merged:
                    old = merged[info.name]
                    info = replace(old, count=old.count + info.count)
                merged[info.name] = info
        return dict(sorted(merged.items()))

    @property
    def message_count(self) -> int:
        """How many messages the bag holds (as found so far in a damaged file)."""
        return sum(source.message_count for source in self._sources)

    @property
    def start_ns(self) -> int | None:
        """Receive time of the first message; None for a bag without messages."""
        starts = [s.start_ns for s in self._sources if s.message_count]
        return min(starts) if starts else None

    @property
    def end_ns(self) -> int | None:
        """Time of the last message (inclusive)."""
        ends = [s.end_ns for s in self._sources if s.message_count]
        return max(ends) if ends else None

    @property
    def duration_ns(self) -> int:
        """From the first message to the last; 0 for a bag without messages."""
        if self.start_ns is None or self.end_ns is None:
            return 0
        return self.end_ns - self.start_ns

    @property
    def size_bytes(self) -> int:
        """The storage files' size on disk."""
        return sum(f.stat().st_size for f in self.files)

    @property
    def damaged_files(self) -> list[Path]:
        """Storage files that could only be read up to damage (truncation, a bad chunk), as found so far (a chunk
        whose checksum fails is found when its messages are read)."""
        return [s.file for s in self._sources if isinstance(s, _ScannedMcap) or s.damage]

    @property
    def complete(self) -> bool:
        """True when the bag has its metadata and every storage file is intact."""
        return self.metadata is not None and not self.damaged_files

    # -- messages ----------------------------------------------------------------------------

    def ordered_messages(self) -> OrderedMessages | None:
        """Every message as arrays (OrderedMessages) where the reader holds its streams in memory already; None for
        a bag, which is read a chunk at a time by messages()."""
        return None

    def first_stamps(self, topics: Collection[str]) -> dict[str, tuple[int, int]] | None:
        """Per topic, the receive time and header stamp (ns) of its first message in messages()' order, where the
        reader holds them as arrays already (no message decoded); None for a bag: read its messages.

        Args:
            topics: the topics asked about (each with messages).
        """
        return None

    def messages(
        self,
        topics: Collection[str] | None = None,
        start_ns: int | None = None,
        stop_ns: int | None = None,
    ) -> Iterator[BagMessage]:
        """Stored messages of `topics` (all if None) with start_ns <= t < stop_ns, in time order.

        Split bags are read file after file (rosbag2 splits in time order). Memory stays bounded
        by one chunk whatever the bag's length.

        Args:
            topics: the topics to read, e.g. the arm's joint states and a camera; None reads every topic.
            start_ns: the first receive time wanted (inclusive); None: from the start of the recording.
            stop_ns: the receive time to stop at (exclusive); None: to the end of the recording.

        Raises:
            BagError: a topic in `topics` is not in the bag.
        """
        wanted = None if topics is None else set(topics)
        if wanted is not None and (unknown := wanted - set(self.topics)):
            have = ', '.join(self.topics) or 'none'
            msg = f'{self.path}: no topic {", ".join(sorted(unknown))} in this bag (it has: {have})'
            raise BagError(msg)
        for source in self._sources:
            yield from source.messages(wanted, start_ns, stop_ns)
            if source.damage and source.damage not in self.notes:
                self.notes.append(source.damage)

    @property
    def typestore(self) -> Typestore:
        """ROS 2 Jazzy and ros_robodata types, plus every definition the bag embeds."""
        if self._typestore is None:
            self._typestore = _typestore_for(self.topics.values(), self.notes)
        return self._typestore

    def decode(self, message: BagMessage) -> Any:
        """Deserialize one message (a JointState, an Image...) from its stored CDR bytes, with the definitions
        the bag embeds.

        Args:
            message: a message from messages() of this bag.

        Raises:
            BagError: the type has no definition, or the bytes do not decode as it (the topic and time named).
        """
        store = self.typestore
        if message.msgtype not in store.fielddefs:
            msg = (f'{self.path}: cannot decode {message.topic}: unknown message type {message.msgtype!r} '
                   '(no definition in the bag, not a ROS 2 Jazzy or ros_robodata type)')
            raise BagError(msg)
        try:
            return store.deserialize_cdr(message.data, message.msgtype)
        except SerdeError as err:
            if 'size mismatch' not in str(err):
                msg = f'{self.path}: cannot decode {message.topic} at t={message.t_ns}: {err}'
                raise BagError(msg) from None
        except Exception as err:  # rosbags raises plain struct/index errors on some bad bytes
            msg = f'{self.path}: cannot decode {message.topic} at t={message.t_ns}: {type(err).__name__}: {err}'
            raise BagError(msg) from None
        return self._decode_ignoring_trailing_bytes(message)

    def _decode_ignoring_trailing_bytes(self, message: BagMessage) -> Any:
        """Bags written from rclpy.serialization.serialize_message() (a common rosbag2_py pattern)
        carry stray bytes after the message; the message itself is whole, so read it and say so."""
        data = bytes(message.data)
        if data[:2] not in (b'\x00\x00', b'\x00\x01'):
            raise BagError(f'{self.path}: cannot decode {message.topic}: unsupported CDR encapsulation')
        msgdef = self.typestore.get_msgdef(message.msgtype)
        func = msgdef.deserialize_cdr_le if data[1] else msgdef.deserialize_cdr_be
        try:
            decoded, _ = func(data[4:], 0, msgdef.cls, self.typestore)
        except Exception as err:
            msg = f'{self.path}: cannot decode {message.topic} at t={message.t_ns}: {type(err).__name__}: {err}'
            raise BagError(msg) from None
        note = f'{message.topic}: messages carry stray bytes after their end (ignored)'
        if note not in self.notes:
            self.notes.append(note)
        return decoded

    def read(
        self,
        topics: Collection[str] | None = None,
        start_ns: int | None = None,
        stop_ns: int | None = None,
    ) -> Iterator[tuple[BagMessage, Any]]:
        """Like messages(), each paired with its decoded message object, for code that needs the fields.

        Args:
            topics: the topics to read; None reads every topic.
            start_ns: the first receive time wanted (inclusive); None: from the start of the recording.
            stop_ns: the receive time to stop at (exclusive); None: to the end of the recording.

        Raises:
            BagError: a topic in `topics` is not in the bag, or a message cannot be decoded.
        """
        for message in self.messages(topics, start_ns, stop_ns):
            yield message, self.decode(message)

    def close(self) -> None:
        """Release the bag's storage files (the `with` block does it on leaving)."""
        for source in self._sources:
            source.close()
        self._sources = []

    def __enter__(self) -> BagReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _storage_files(path: Path) -> list[Path]:
    if not path.exists():
        raise BagError(f'{path}: no such bag (file or directory)')
    if path.is_file():
        if path.suffix not in STORAGE_SUFFIXES:
            raise BagError(f'{path}: not a bag: expected a directory, a .mcap or a .db3 file')
        return [path]
    metadata = path / 'metadata.yaml'
    if metadata.is_file():
        listed = _read_metadata(metadata)['rosbag2_bagfile_information'].get('relative_file_paths') or []
        if not isinstance(listed, list) or not all(isinstance(name, str) and name.strip() for name in listed):
            raise BagError(f'{metadata}: relative_file_paths: expected a list of file names, got {listed!r:.80}')
        files = [path / Path(name).name for name in listed]
        if missing := [f'{f.name:.80}' for f in files if not _is_file(f)]:
            raise BagError(f'{path}: metadata.yaml lists {", ".join(missing)}, which is missing')
        if files:
            return files
    files = sorted(p for p in path.iterdir() if p.suffix in STORAGE_SUFFIXES and p.is_file())
    if not files:
        raise BagError(f'{path}: not a bag: no metadata.yaml and no .mcap or .db3 file in it')
    if len({f.suffix for f in files}) > 1:
        raise BagError(f'{path}: both .mcap and .db3 files and no metadata.yaml to say which is the bag')
    return files


def _is_file(path: Path) -> bool:
    """Path.is_file, and False for a name the file system refuses (longer than 255 bytes, say)."""
    try:
        return path.is_file()
    except OSError:
        return False


def _read_metadata(path: Path) -> dict[str, Any]:
    data = read_yaml(path, BagError)
    if not isinstance(data, dict) or not isinstance(data.get('rosbag2_bagfile_information'), dict):
        raise BagError(f'{path}: not rosbag2 metadata (no rosbag2_bagfile_information)')
    return data


class _Source:
    """One storage file's topics and messages."""

    file: Path
    topics: dict[str, TopicInfo]
    message_count: int
    start_ns: int
    end_ns: int
    damage = ''  # what stopped reading its messages short, once that happened

    def messages(self, wanted: set[str] | None, start_ns: int | None, stop_ns: int | None) -> Iterator[BagMessage]:
        raise NotImplementedError

    def close(self) -> None:
        """Release the file."""


class _RosbagsSource(_Source):
    """A storage file read by rosbags with its index (the normal case)."""

    def __init__(self, file: Path) -> None:
        from rosbags.rosbag2 import Reader  # start-up time: its writer and storage plugins load with it

        self.file = file
        self._reader = Reader(file)
        self._reader.open()
        self.topics = {}
        for conn in self._reader.connections:
            ext = conn.ext
            qos = getattr(ext, 'offered_qos_profiles', []) or []
            latched = any(q.durability == QosDurability.TRANSIENT_LOCAL for q in qos)
            count = conn.msgcount + (self.topics[conn.topic].count if conn.topic in self.topics else 0)
            self.topics[conn.topic] = TopicInfo(
                conn.topic, conn.msgtype, count, getattr(ext, 'serialization_format', 'cdr'), latched,
                _definition(conn.msgdef), tuple(qos),
            )
        self.message_count = self._reader.message_count
        self.start_ns = self._reader.start_time
        self.end_ns = self._reader.end_time - 1 if self.message_count else 0

    def messages(self, wanted: set[str] | None, start_ns: int | None, stop_ns: int | None) -> Iterator[BagMessage]:
        """The messages in time order, up to the first damage the index did not show (a chunk whose checksum or
        compression fails, a record cut short): there reading stops, and `damage` says where."""
        conns = [c for c in self._reader.connections if wanted is None or c.topic in wanted]
        if not conns:
            return
        last = None
        self._at_last = 0
        try:
            if self.file.suffix == '.mcap' and len(conns) < len(self._reader.connections):
                # Every MCAP chunk holds every topic, and rosbags' per-topic index walk is slower than decompressing
                # the chunks in order and skipping what is not wanted (measured: ~0.5 s against ~0.4 s a bag).
                wanted_ids = {c.id for c in conns}
                for conn, t_ns, data in self._reader.messages(start=start_ns, stop=stop_ns):
                    if conn.id in wanted_ids:
                        self._at_last = self._at_last + 1 if t_ns == last else 1
                        last = t_ns
                        yield BagMessage(conn.topic, conn.msgtype, t_ns, data)
                return
            odd = 0  # sqlite3 rows whose stamp is not an integer or whose data is not bytes (SQLite keeps any type)
            untyped = self.file.suffix != '.mcap'
            for conn, t_ns, data in self._reader.messages(connections=conns, start=start_ns, stop=stop_ns):
                if untyped and (type(t_ns) is not int or not 0 <= t_ns < 2**63
                                or not isinstance(data, (bytes, memoryview))):
                    odd += 1
                    self.damage = (f'{self.file.name} is damaged: {odd} message row(s) whose timestamp is not a time '
                                   '(text, a fraction, negative) or whose data is not bytes were left out')
                    continue
                self._at_last = self._at_last + 1 if t_ns == last else 1
                last = t_ns
                yield BagMessage(conn.topic, conn.msgtype, t_ns, data)
        except Exception as err:  # whatever the storage library raises on damaged bytes
            where = f'after t={last}' if last is not None else 'from the start'
            if self.file.suffix != '.mcap':
                self.damage = (f'{self.file.name} is damaged: no message {where} could be read ({_reason(err)}); '
                               'run `robodata repair`')
                return
            # Read on past the damage record by record: a chunk whose checksum or compression fails is skipped,
            # the chunks after it are kept.
            rest = _ScannedMcap(self.file)
            skipped = ', '.join(f'the one ending at byte {offset:,}' for offset in rest.bad_chunks) or 'none'
            self.damage = (f'{self.file.name} is damaged ({_reason(err)}): the messages of its unreadable chunks '
                           f'({skipped}) are lost, the rest was read'
                           + ('' if rest.complete else f' up to byte {rest.readable_bytes:,}')
                           + '; run `robodata repair`')
            again = self._at_last  # messages at the last stamp already given
            for message in rest.messages(wanted, start_ns, stop_ns):
                if last is not None and message.t_ns < last:
                    continue
                if last is not None and message.t_ns == last and again:
                    again -= 1
                    continue
                yield message

    def close(self) -> None:
        if self._reader.is_open:
            self._reader.close()


class _ScannedMcap(_Source):
    """An MCAP file without a usable footer or index, or with a damaged chunk, read record by record: a chunk
    that fails its checksum or decompression is skipped (`bad_chunks`, byte offsets), and reading stops where a
    record itself is broken (`complete` False: a truncated file)."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self.bad_chunks: list[int] = []
        self.complete = False
        self.topics = {}
        self.message_count = 0
        self.start_ns = 2**63 - 1
        self.end_ns = 0
        self.readable_bytes = 0
        counts: dict[str, int] = {}
        self.orphans = 0  # messages whose channel record was lost to the damage: no topic to put them in
        for record, offset in self._records():
            if isinstance(record, Message):
                if record.channel_id not in self._channels:
                    self.orphans += 1
                    continue
                topic = self._channels[record.channel_id][0]
                counts[topic] = counts.get(topic, 0) + 1
                self.message_count += 1
                self.start_ns = min(self.start_ns, record.log_time)
                self.end_ns = max(self.end_ns, record.log_time)
            self.readable_bytes = offset
        for topic, (msgtype, encoding, latched, msgdef) in self._topic_meta.items():
            self.topics[topic] = TopicInfo(topic, msgtype, counts.get(topic, 0), encoding, latched, msgdef)

    def _records(self) -> Iterator[tuple[Any, int]]:
        """Yield (record, bytes read so far) for every intact record; stop at the damage."""
        self._schemas: dict[int, Schema] = {}
        self._channels: dict[int, tuple[str, str]] = {}
        self._topic_meta: dict[str, tuple[str, str, bool, str | None]] = {}
        with self.file.open('rb') as f:
            # Reads capped at what the file holds: a record whose length field claims 80 TB is damage, not a
            # reason to allocate 80 TB.
            bounded = cast(IO[bytes], _Bounded(f, self.file.stat().st_size))  # the file, its reads capped
            reader = StreamReader(bounded, emit_chunks=True, validate_crcs=False)
            self.bad_chunks = []
            try:
                for record in reader.records:
                    offset = f.tell()
                    if isinstance(record, Chunk):
                        try:
                            inner = _chunk_records(record)
                        except Exception:  # its checksum or compression fails: its messages are lost, not the rest
                            self.bad_chunks.append(offset)
                            continue
                    else:
                        inner = [record]
                    for item in inner:
                        self._note(item)
                        yield item, offset
                self.complete = True
            except Exception:  # whatever bad bytes make the parser raise is where the damage is
                return  # everything before it was yielded

    def _note(self, record: Any) -> None:
        if isinstance(record, Schema):
            self._schemas[record.id] = record
        elif isinstance(record, Channel):
            schema = self._schemas.get(record.schema_id)
            msgtype = schema.name if schema else '__schemaless__'
            msgdef = schema.data.decode('utf-8', 'replace') if schema and schema.encoding == 'ros2msg' else None
            qos = record.metadata.get('offered_qos_profiles', '')
            self._channels[record.id] = (record.topic, msgtype)
            self._topic_meta[record.topic] = (msgtype, record.message_encoding, 'transient_local' in qos, msgdef)

    def messages(self, wanted: set[str] | None, start_ns: int | None, stop_ns: int | None) -> Iterator[BagMessage]:
        for record, _ in self._records():
            if not isinstance(record, Message) or record.channel_id not in self._channels:
                continue
            topic, msgtype = self._channels[record.channel_id]
            if wanted is not None and topic not in wanted:
                continue
            if (start_ns is not None and record.log_time < start_ns) or (
                stop_ns is not None and record.log_time >= stop_ns
            ):
                continue
            yield BagMessage(topic, msgtype, record.log_time, record.data)


def _reason(err: BaseException) -> str:
    """An exception on one short line, its type when it says nothing more."""
    if isinstance(err, (MemoryError, OverflowError)):  # a length field read from bad bytes, not a lack of memory
        return 'a length in it claims more than the file holds'
    text = ' '.join(str(err).split())[:200]
    return f'{type(err).__name__}: {text}' if text else type(err).__name__


class _Bounded:
    """A binary file whose reads never ask for more than is left in it."""

    def __init__(self, f: Any, size: int) -> None:
        self._f, self._size = f, size

    def read(self, n: int = -1) -> bytes:
        left = max(0, self._size - self._f.tell())
        data: bytes = self._f.read(left if n is None or n < 0 else min(n, left))
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)


def _definition(msgdef: Any) -> str | None:
    """The text of an embedded definition; '' is a real one (a message without fields, like test_msgs/Empty)."""
    if msgdef is None or msgdef.format == MessageDefinitionFormat.NONE:
        return None
    return str(msgdef.data)


def _chunk_records(chunk: Chunk) -> list[Any]:
    return breakup_chunk(chunk, validate_crc=True)


def _typestore_for(topics: Collection[TopicInfo], notes: list[str]) -> Typestore:
    store = get_typestore(Stores.ROS2_JAZZY)
    own: dict[str, Any] = {}
    # Our own messages as the bag wrote them: a bag from an earlier ros_robodata embeds the definition its bytes
    # follow (EpisodeEvent before data_start), which the current one would misread.
    embedded = {info.msgtype: info.msgdef for info in topics
                if info.msgdef and not info.msgdef.startswith('=' * 80 + '\nIDL: ')}
    for name, text in own_message_definitions().items():
        try:
            own.update(get_types_from_msg(embedded.get(name) or text, name))
        except Exception:  # an unreadable embedded definition: ours
            own.update(get_types_from_msg(text, name))
    store.register(own)
    for info in topics:
        if info.msgtype in store.fielddefs or info.msgdef is None:
            continue
        try:
            if info.msgdef.startswith('=' * 80 + '\nIDL: '):
                types = get_types_from_idl(info.msgdef)
            else:
                types = get_types_from_msg(info.msgdef, info.msgtype)
            store.register({k: v for k, v in types.items() if k not in store.fielddefs})
        except Exception as err:  # a malformed embedded definition must not hide the other topics
            notes.append(f'definition of {info.msgtype} in the bag is unreadable: {err}')
    return store
