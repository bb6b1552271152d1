"""Make a bag whole again after a crash, losing nothing that is on disk.

- Storage intact, metadata.yaml missing (sqlite3 after SIGKILL, a copy that lost it): write
  metadata.yaml from the storage, as `ros2 bag reindex` does.
- An MCAP file cut short (SIGKILL, power loss, full disk) or with a chunk whose checksum fails (every
  message is read to find one): copy every message up to the damage into a new, complete MCAP and move
  the damaged original into `damaged/` inside the bag, untouched.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ros_robodata.bag.reader import BagReader
from ros_robodata.bag.types import ROS_DISTRO
from ros_robodata.bag.writer import BagWriter, qos_profile, write_metadata
from ros_robodata.errors import BagError
from ros_robodata.files import free_bytes, mib

DAMAGED_DIR = 'damaged'


@dataclass
class RepairReport:
    """What repair did; `changed` is False when the bag was already whole."""

    path: Path
    actions: list[str] = field(default_factory=list)
    message_count: int = 0
    topics: dict[str, int] = field(default_factory=dict)
    start_ns: int | None = None
    end_ns: int | None = None

    @property
    def changed(self) -> bool:
        return bool(self.actions)


def repair_bag(path: str | Path) -> RepairReport:
    """Repair the bag directory at `path` in place; BagError when nothing in it is readable."""
    path = Path(path)
    if not path.is_dir():
        raise BagError(f'{path}: repair needs a bag directory')
    with BagReader(path) as reader:
        if not reader.damaged_files:
            for _ in reader.messages():  # damage the index does not show (a chunk whose checksum fails)
                pass
        if reader.damaged_files:
            report = _rewrite(reader, path)
        elif reader.metadata is None:
            report = RepairReport(path)
            write_metadata(path / 'metadata.yaml', _metadata(reader))
            report.actions.append(f'wrote metadata.yaml ({len(reader.topics)} topics, {reader.message_count} messages)')
        else:
            report = RepairReport(path)
    with BagReader(path) as reader:
        if not reader.complete:
            raise BagError(f'{path}: still not whole after repair: {"; ".join(reader.notes)}')
        report.message_count = reader.message_count
        report.topics = {name: info.count for name, info in reader.topics.items()}
        report.start_ns, report.end_ns = reader.start_ns, reader.end_ns
    return report


def _rewrite(reader: BagReader, path: Path) -> RepairReport:
    """The readable messages into a new bag beside the damaged one, then swapped in. The space it needs is checked
    first (at most the damaged files' size: what is readable of them, rewritten); a write that fails anyway (the
    disk filled meanwhile, a read-only mount) removes the half-written copy and changes nothing."""
    work = path.parent / f'.{path.name}.repairing'
    if work.exists():
        shutil.rmtree(work)  # a previous repair that died; the originals are still in place
    need = sum(f.stat().st_size for f in reader.files if f.exists()) + REPAIR_MARGIN_BYTES
    free = free_bytes(path)
    if free is not None and free < need:
        raise BagError(f'{path}: repair writes a new bag beside the damaged one and needs about {mib(need)} free on '
                       f'that disk; {mib(free)} is free. Free some space (or copy the episode to a disk with room) '
                       'and run it again; nothing was changed')
    try:
        return _rewrite_into(reader, path, work)
    except OSError as err:
        shutil.rmtree(work, ignore_errors=True)
        raise BagError(f'{path}: repair could not write the new bag ({err.strerror or err}; '
                       f'{mib(free_bytes(path))} free now); nothing was changed') from None


REPAIR_MARGIN_BYTES = 1 << 20  # metadata.yaml, the MCAP summary and index


def _rewrite_into(reader: BagReader, path: Path, work: Path) -> RepairReport:
    report = RepairReport(path)
    work.mkdir()
    staged = work / path.name
    store = reader.typestore
    copied = 0
    with BagWriter(staged, storage='mcap') as writer:
        for info in reader.topics.values():
            if info.msgtype in store.fielddefs:
                writer.add_topic(info.name, info.msgtype, qos=qos_profile(latched=info.latched), store=store)
            else:
                report.actions.append(f'dropped {info.name}: type {info.msgtype} has no definition to write with')
        for message in reader.messages():
            if writer.has_topic(message.topic):
                writer.write(message.topic, message.t_ns, message.data)
                copied += 1
    keep = path / DAMAGED_DIR
    keep.mkdir(exist_ok=True)
    for file in [*reader.files, path / 'metadata.yaml']:
        if file.exists():
            file.rename(keep / file.name)
    for file in staged.iterdir():
        file.rename(path / file.name)
    shutil.rmtree(work)
    names = ', '.join(f.name for f in reader.files)
    report.actions.append(
        f'recovered {copied} message(s) from damaged {names} into a complete bag; '
        f'the damaged original is kept in {DAMAGED_DIR}/'
    )
    return report


def _metadata(reader: BagReader) -> dict[str, Any]:
    """rosbag2 (version 9) metadata for a bag whose storage files are intact."""
    from rosbags.rosbag2.metadata import dump_qos_v9  # start-up time: loads all of rosbags.rosbag2

    start = reader.start_ns or 0
    duration = reader.duration_ns
    store = reader.typestore
    topics = []
    for info in reader.topics.values():
        digest = store.hash_rihs01(info.msgtype) if info.msgtype in store.fielddefs else ''
        topics.append({
            'topic_metadata': {
                'name': info.name,
                'type': info.msgtype,
                'serialization_format': info.serialization_format,
                'offered_qos_profiles': dump_qos_v9(list(info.qos) or [qos_profile(latched=info.latched)]),
                'type_description_hash': digest,
            },
            'message_count': info.count,
        })
    return {
        'rosbag2_bagfile_information': {
            'version': 9,
            'storage_identifier': reader.storage,
            'relative_file_paths': [f.name for f in reader.files],
            'duration': {'nanoseconds': duration},
            'starting_time': {'nanoseconds_since_epoch': start},
            'message_count': reader.message_count,
            'topics_with_message_count': topics,
            'compression_format': '',
            'compression_mode': '',
            'files': [
                {
                    'path': f.name,
                    'starting_time': {'nanoseconds_since_epoch': start},
                    'duration': {'nanoseconds': duration},
                    'message_count': reader.message_count,
                }
                for f in reader.files[:1]
            ],
            'custom_data': None,
            'ros_distro': ROS_DISTRO,
        },
    }
