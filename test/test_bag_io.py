"""Bags we write are standard rosbag2; bags others write are read by us, damaged ones as far as possible."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
import yaml
from mcap.reader import make_reader
from mcap_ros2._dynamic import serialize_dynamic
from mcap_ros2.decoder import DecoderFactory
from mcap_ros2.writer import Writer as McapRos2Writer

from ros_robodata.bag.reader import BagReader
from ros_robodata.bag.types import typestore
from ros_robodata.bag.writer import BagWriter, qos_profile
from ros_robodata.errors import BagError

TS = typestore()
T = TS.types


def stamp(ns: int):
    return T['builtin_interfaces/msg/Time'](sec=ns // 10**9, nanosec=ns % 10**9)


def header(ns: int, frame: str = 'base'):
    return T['std_msgs/msg/Header'](stamp=stamp(ns), frame_id=frame)


def joint_state(ns: int, i: int):
    return T['sensor_msgs/msg/JointState'](
        header=header(ns), name=['joint1', 'joint2', 'joint3'],
        position=np.array([0.1 * i, -0.2, np.pi]), velocity=np.array([1.0, 2.0, 3.0]), effort=np.array([], dtype=float),
    )


def wrench(ns: int, i: int):
    v3 = T['geometry_msgs/msg/Vector3']
    return T['geometry_msgs/msg/WrenchStamped'](
        header=header(ns, 'wrist'),
        wrench=T['geometry_msgs/msg/Wrench'](force=v3(x=float(i), y=-1.5, z=9.81), torque=v3(x=0.0, y=0.25, z=-0.5)),
    )


def segment_event(ns: int, i: int):
    return T['ros_robodata/msg/SegmentEvent'](
        header=header(ns, 'wrist'), episode_id='ep-1', kind='grasp', confidence=0.75,
        evidence_signals=['gripper.position', 'wrench.force_norm'],
        evidence_values=np.array([0.012, 4.5 + i]), evidence_thresholds=np.array([0.02, 3.0]),
    )


def episode_event(ns: int, i: int):
    return T['ros_robodata/msg/EpisodeEvent'](
        header=header(ns), event=1, episode_id='ep-1', task='pick_cube', operator_name='ana', mode='kinesthetic',
        outcome='recovery', status='complete', data_start=header(ns - 2_000_000_000).stamp,
    )


def quality_status(ns: int, i: int):
    return T['ros_robodata/msg/QualityStatus'](
        header=header(ns), episode_id='ep-1', check='blur', topic='/camera/wrist/image_raw', level=1,
        value=12.5, threshold=40.0, message='wrist camera blurred',
    )


def image(ns: int, i: int):
    pixels = (np.arange(4 * 6 * 3) + i).astype(np.uint8)
    return T['sensor_msgs/msg/Image'](header=header(ns, 'cam'), height=4, width=6, encoding='rgb8', is_bigendian=0,
                                      step=18, data=pixels)


MAKERS = {
    '/joint_states': ('sensor_msgs/msg/JointState', joint_state),
    '/wrist/wrench': ('geometry_msgs/msg/WrenchStamped', wrench),
    '/camera/wrist/image_raw': ('sensor_msgs/msg/Image', image),
    '/robodata/events': ('ros_robodata/msg/SegmentEvent', segment_event),
    '/robodata/episode_events': ('ros_robodata/msg/EpisodeEvent', episode_event),
    '/robodata/quality': ('ros_robodata/msg/QualityStatus', quality_status),
}


def write_rig_bag(path: Path, n: int = 20, storage: str = 'mcap') -> dict[str, list]:
    """Every kind of message we record, n of each at 100 Hz; returns what was written per topic."""
    written: dict[str, list] = {topic: [] for topic in MAKERS}
    with BagWriter(path, storage=storage, custom_data={'episode_id': 'ep-1'}) as bag:
        for topic, (msgtype, _) in MAKERS.items():
            bag.add_topic(topic, msgtype)
        bag.add_topic('/tf_static', 'tf2_msgs/msg/TFMessage', qos=qos_profile(latched=True))
        bag.write_message('/tf_static', 1_000_000_000, T['tf2_msgs/msg/TFMessage'](transforms=[]))
        for i in range(n):
            ns = 1_000_000_000 + (i + 1) * 10_000_000
            for topic, (_, make) in MAKERS.items():
                msg = make(ns, i)
                bag.write_message(topic, ns, msg)
                written[topic].append(msg)
    return written


def plain(value):
    """A rosbags or mcap_ros2 message as plain Python data, for field-by-field comparison."""
    if isinstance(value, np.ndarray):
        return [plain(v) for v in value.tolist()]
    if isinstance(value, (bytes, bytearray)):
        return list(value)
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, float):
        return round(value, 6)
    if hasattr(value, '__slots__') or hasattr(value, '__dataclass_fields__') or hasattr(value, '__dict__'):
        names = getattr(value, '__dataclass_fields__', None) or getattr(value, '__slots__', None) or vars(value)
        return {k: plain(getattr(value, k)) for k in names if not k.startswith('_') and k.lower() != k.upper() and
                not k.isupper()}
    return value


def test_independent_mcap_reader_decodes_every_field_of_our_bag(tmp_path):
    written = write_rig_bag(tmp_path / 'bag')
    files = list((tmp_path / 'bag').glob('*.mcap'))
    assert len(files) == 1
    got: dict[str, list] = {}
    with files[0].open('rb') as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for schema, channel, _message, decoded in reader.iter_decoded_messages():
            assert schema.encoding == 'ros2msg'
            got.setdefault(channel.topic, []).append(decoded)
    assert set(got) == {*MAKERS, '/tf_static'}
    for topic, messages in written.items():
        assert len(got[topic]) == len(messages), topic
        for ours, theirs in zip(messages, got[topic], strict=True):
            assert plain(theirs) == plain(ours), topic
    # spot checks a user would look at in Foxglove
    event = got['/robodata/events'][3]
    assert event.kind == 'grasp' and event.evidence_signals == ['gripper.position', 'wrench.force_norm']
    assert event.evidence_values[1] == pytest.approx(7.5)
    assert got['/robodata/episode_events'][0].operator_name == 'ana'


def test_metadata_yaml_has_the_fields_rosbag2_writes(tmp_path):
    write_rig_bag(tmp_path / 'bag', n=5)
    info = yaml.safe_load((tmp_path / 'bag' / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
    for key in ('version', 'storage_identifier', 'duration', 'starting_time', 'message_count',
                'topics_with_message_count', 'relative_file_paths', 'files', 'ros_distro'):
        assert key in info, key
    assert info['version'] == 9 and info['storage_identifier'] == 'mcap' and info['ros_distro'] == 'jazzy'
    assert info['message_count'] == 5 * len(MAKERS) + 1
    assert info['starting_time']['nanoseconds_since_epoch'] == 1_000_000_000
    assert info['duration']['nanoseconds'] == 50_000_000
    topics = {t['topic_metadata']['name']: t for t in info['topics_with_message_count']}
    assert topics['/joint_states']['message_count'] == 5
    assert topics['/joint_states']['topic_metadata']['type'] == 'sensor_msgs/msg/JointState'
    assert topics['/joint_states']['topic_metadata']['serialization_format'] == 'cdr'
    assert topics['/tf_static']['topic_metadata']['offered_qos_profiles'][0]['durability'] == 'transient_local'
    assert topics['/robodata/events']['topic_metadata']['type_description_hash'].startswith('RIHS01_')
    assert info['files'][0]['path'] == info['relative_file_paths'][0]
    assert info['files'][0]['message_count'] == info['message_count']
    assert info['custom_data'] == {'episode_id': 'ep-1'}


@pytest.mark.parametrize('storage', ['mcap', 'sqlite3'])
def test_read_back_by_topic_and_time_window(tmp_path, storage):
    written = write_rig_bag(tmp_path / 'bag', n=20, storage=storage)
    with BagReader(tmp_path / 'bag') as bag:
        assert bag.storage == storage and bag.complete and not bag.notes
        assert bag.topics['/wrist/wrench'].count == 20
        assert bag.topics['/tf_static'].latched
        assert bag.message_count == 20 * len(MAKERS) + 1
        # messages 5..9 (t = 1.06 s .. 1.10 s), wrench only
        window = list(bag.read(['/wrist/wrench'], start_ns=1_060_000_000, stop_ns=1_110_000_000))
        assert [m.t_ns for m, _ in window] == [1_060_000_000 + k * 10_000_000 for k in range(5)]
        assert [w.wrench.force.x for _, w in window] == [5.0, 6.0, 7.0, 8.0, 9.0]
        assert plain(window[0][1]) == plain(written['/wrist/wrench'][5])
        times = [m.t_ns for m in bag.messages()]
        assert times == sorted(times)
        with pytest.raises(BagError, match='no topic /nope'):
            list(bag.messages(['/nope']))


def test_a_bag_written_by_mcap_ros2_is_read_including_a_type_we_do_not_know(tmp_path):
    path = tmp_path / 'other.mcap'
    joint_def = TS.generate_msgdef('sensor_msgs/msg/JointState', ros_version=2)[0]
    gripper_def = 'float64 width\nbool grasped\nstring object_name\n'
    with path.open('wb') as f:
        writer = McapRos2Writer(f)
        js = writer.register_msgdef('sensor_msgs/msg/JointState', joint_def)
        gs = writer.register_msgdef('acme_msgs/msg/GripperStatus', gripper_def)
        for i in range(10):
            t = 2_000_000_000 + i * 1_000_000
            writer.write_message('/joint_states', js, {
                'header': {'stamp': {'sec': 2, 'nanosec': i * 1_000_000}, 'frame_id': 'base'},
                'name': ['a', 'b'], 'position': [float(i), -float(i)], 'velocity': [], 'effort': [],
            }, log_time=t, publish_time=t)
            writer.write_message('/gripper/status', gs, {'width': 0.01 * i, 'grasped': i > 5, 'object_name': 'cube'},
                                 log_time=t, publish_time=t)
        writer.finish()
    with BagReader(path) as bag:
        assert {k: (v.msgtype, v.count) for k, v in bag.topics.items()} == {
            '/gripper/status': ('acme_msgs/msg/GripperStatus', 10), '/joint_states': ('sensor_msgs/msg/JointState', 10),
        }
        decoded = [(m.topic, msg) for m, msg in bag.read()]
    joints = [msg for topic, msg in decoded if topic == '/joint_states']
    grips = [msg for topic, msg in decoded if topic == '/gripper/status']
    assert [list(j.position) for j in joints][3] == [3.0, -3.0]
    assert [g.grasped for g in grips] == [False] * 6 + [True] * 4
    assert grips[4].width == pytest.approx(0.04) and grips[4].object_name == 'cube'


def _sqlite3_bag_by_hand(path: Path, payloads: list[bytes]) -> None:
    """A rosbag2 sqlite3 bag laid out as rosbag2 (Jazzy) writes it, made with the stdlib only."""
    path.mkdir()
    db = sqlite3.connect(path / 'handmade_0.db3')
    db.executescript("""
        CREATE TABLE schema(schema_version INTEGER PRIMARY KEY, ros_distro TEXT NOT NULL);
        CREATE TABLE metadata(id INTEGER PRIMARY KEY, metadata_version INTEGER NOT NULL, metadata TEXT NOT NULL);
        CREATE TABLE topics(id INTEGER PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL,
                            serialization_format TEXT NOT NULL, offered_qos_profiles TEXT NOT NULL,
                            type_description_hash TEXT NOT NULL);
        CREATE TABLE messages(id INTEGER PRIMARY KEY, topic_id INTEGER NOT NULL, timestamp INTEGER NOT NULL,
                              data BLOB NOT NULL);
        CREATE TABLE message_definitions(id INTEGER PRIMARY KEY, topic_type TEXT NOT NULL, encoding TEXT NOT NULL,
                                         encoded_message_definition TEXT NOT NULL, type_description_hash TEXT NOT NULL);
        INSERT INTO schema VALUES (4, 'jazzy');
        INSERT INTO topics VALUES (1, '/wrist/wrench', 'geometry_msgs/msg/WrenchStamped', 'cdr', '', '');
    """)
    for i, data in enumerate(payloads):
        t_ns = 3_000_000_000 + i * 2_000_000
        db.execute('INSERT INTO messages (topic_id, timestamp, data) VALUES (1, ?, ?)', (t_ns, data))
    db.commit()
    db.close()
    metadata = {'rosbag2_bagfile_information': {
        'version': 5, 'storage_identifier': 'sqlite3', 'relative_file_paths': ['handmade_0.db3'],
        'duration': {'nanoseconds': (len(payloads) - 1) * 2_000_000},
        'starting_time': {'nanoseconds_since_epoch': 3_000_000_000}, 'message_count': len(payloads),
        'topics_with_message_count': [{'topic_metadata': {
            'name': '/wrist/wrench', 'type': 'geometry_msgs/msg/WrenchStamped', 'serialization_format': 'cdr',
            'offered_qos_profiles': ''}, 'message_count': len(payloads)}],
        'compression_format': '', 'compression_mode': '',
        'files': [{'path': 'handmade_0.db3', 'starting_time': {'nanoseconds_since_epoch': 3_000_000_000},
                   'duration': {'nanoseconds': 0}, 'message_count': len(payloads)}],
    }}
    (path / 'metadata.yaml').write_text(yaml.safe_dump(metadata))


def test_a_sqlite3_bag_made_without_rosbags_is_read(tmp_path):
    definition = TS.generate_msgdef('geometry_msgs/msg/WrenchStamped', ros_version=2)[0]
    encode = serialize_dynamic('geometry_msgs/msg/WrenchStamped', definition)['geometry_msgs/msg/WrenchStamped']
    payloads = [bytes(encode({
        'header': {'stamp': {'sec': 3, 'nanosec': i}, 'frame_id': 'ft_sensor'},
        'wrench': {'force': {'x': 0.5 * i, 'y': 0.0, 'z': -9.81}, 'torque': {'x': 0.0, 'y': 0.0, 'z': 0.1}},
    })) for i in range(8)]
    _sqlite3_bag_by_hand(tmp_path / 'bag', payloads)
    with BagReader(tmp_path / 'bag') as bag:
        assert bag.storage == 'sqlite3'
        assert bag.topics['/wrist/wrench'].count == 8
        forces = [(m.t_ns, w.wrench.force.x, w.header.frame_id) for m, w in bag.read()]
    assert forces[5] == (3_010_000_000, 2.5, 'ft_sensor')
    assert len(forces) == 8


def _wrench_payloads(count: int) -> list[bytes]:
    definition = TS.generate_msgdef('geometry_msgs/msg/WrenchStamped', ros_version=2)[0]
    encode = serialize_dynamic('geometry_msgs/msg/WrenchStamped', definition)['geometry_msgs/msg/WrenchStamped']
    return [bytes(encode({
        'header': {'stamp': {'sec': 3, 'nanosec': i}, 'frame_id': 'ft_sensor'},
        'wrench': {'force': {'x': 0.5 * i, 'y': 0.0, 'z': -9.81}, 'torque': {'x': 0.0, 'y': 0.0, 'z': 0.1}},
    })) for i in range(count)]


@pytest.mark.parametrize('change', [
    "UPDATE messages SET timestamp = 'abc' WHERE id = 3",  # SQLite keeps any type in any column
    'UPDATE messages SET timestamp = 1.5e300 WHERE id = 3',
    "UPDATE messages SET timestamp = x'0102' WHERE id = 3",
    'UPDATE messages SET timestamp = -5 WHERE id = 3',
    "UPDATE messages SET data = 'hello' WHERE id = 3",
])
def test_a_sqlite3_row_of_the_wrong_type_is_left_out_and_said(tmp_path, capsys, change):
    from ros_robodata.cli.main import main

    _sqlite3_bag_by_hand(tmp_path / 'bag', _wrench_payloads(8))
    db = sqlite3.connect(tmp_path / 'bag' / 'handmade_0.db3')
    db.execute(change)
    db.commit()
    db.close()
    before = (tmp_path / 'bag' / 'handmade_0.db3').read_bytes()
    with BagReader(tmp_path / 'bag') as bag:
        stamps = [m.t_ns for m in bag.messages()]
        assert not bag.complete
    assert len(stamps) == 7 and all(isinstance(t, int) for t in stamps)
    assert 'left out' in ' '.join(bag.notes)
    code = main(['score', str(tmp_path / 'bag'), '--profile', 'sim_cell.yaml', '--json'])
    err = capsys.readouterr().err
    assert code == 0
    assert '1 message row(s) whose timestamp is not a time' in err
    assert (tmp_path / 'bag' / 'handmade_0.db3').read_bytes() == before



def test_messages_with_stray_trailing_bytes_from_rclpy_serialize_are_read(tmp_path):
    """Bags written from rclpy.serialization.serialize_message() (a common rosbag2_py pattern) carry bytes after
    the message; the CDR before them is what rosbags writes, so it is built here without rclpy."""
    from ros_robodata.bag.types import typestore

    store = typestore()
    types = store.types
    payloads = []
    for i in range(4):
        msg = types['geometry_msgs/msg/WrenchStamped'](
            header=types['std_msgs/msg/Header'](stamp=types['builtin_interfaces/msg/Time'](sec=0, nanosec=0),
                                                frame_id='ft'),
            wrench=types['geometry_msgs/msg/Wrench'](force=types['geometry_msgs/msg/Vector3'](float(i), 0.0, 0.0),
                                                     torque=types['geometry_msgs/msg/Vector3'](0.0, 0.0, 0.0)))
        cdr = bytes(store.serialize_cdr(msg, 'geometry_msgs/msg/WrenchStamped'))
        payloads.append(cdr + b'\x00\x17\x2a\x99\x05')  # what such bags carry
    _sqlite3_bag_by_hand(tmp_path / 'bag', payloads)
    with BagReader(tmp_path / 'bag') as bag:
        assert [w.wrench.force.x for _, w in bag.read()] == [0.0, 1.0, 2.0, 3.0]
        assert any('stray bytes' in note for note in bag.notes)


def test_truncated_mcap_is_read_up_to_the_damage(tmp_path):
    write_rig_bag(tmp_path / 'bag', n=3000)
    mcap_file = next((tmp_path / 'bag').glob('*.mcap'))
    data = mcap_file.read_bytes()
    cut = tmp_path / 'cut'
    cut.mkdir()
    (cut / mcap_file.name).write_bytes(data[: int(len(data) * 0.6)])
    with BagReader(cut) as bag:
        assert not bag.complete
        assert bag.damaged_files == [cut / mcap_file.name]
        assert any('truncated' in n for n in bag.notes) and any('no metadata.yaml' in n for n in bag.notes)
        recovered = bag.topics['/joint_states'].count
        assert 0 < recovered < 3000
        # everything counted is decodable and in order
        msgs = [(m.t_ns, js) for m, js in bag.read(['/joint_states'])]
    assert len(msgs) == recovered
    assert [round(js.position[0] / 0.1) for _, js in msgs] == list(range(recovered))


def test_bag_directory_without_metadata_is_read_directly(tmp_path):
    write_rig_bag(tmp_path / 'bag', n=7)
    (tmp_path / 'bag' / 'metadata.yaml').unlink()
    with BagReader(tmp_path / 'bag') as bag:
        assert bag.topics['/robodata/events'].count == 7
        assert any('no metadata.yaml' in n and 'directly' in n for n in bag.notes)
        assert not bag.complete


def test_unknown_type_without_definition_is_one_clear_error_and_the_rest_still_reads(tmp_path):
    path = tmp_path / 'x.mcap'
    with path.open('wb') as f:
        writer = McapRos2Writer(f)
        js = writer.register_msgdef('sensor_msgs/msg/JointState',
                                    TS.generate_msgdef('sensor_msgs/msg/JointState', ros_version=2)[0])
        mystery = writer.register_msgdef('vendor_msgs/msg/Mystery', '')
        for i in range(3):
            writer.write_message('/joint_states', js, {'name': ['a'], 'position': [1.0], 'velocity': [], 'effort': []},
                                 log_time=i, publish_time=i)
        writer.finish()
        del mystery
    with BagReader(path) as bag:
        assert bag.topics['/joint_states'].count == 3
    # a topic of a type nobody can decode: the container lists it, decoding names it
    from ros_robodata.bag.reader import BagMessage

    with BagReader(path) as bag, pytest.raises(BagError, match=r"unknown message type 'vendor_msgs/msg/Mystery'"):
        bag.decode(BagMessage('/mystery', 'vendor_msgs/msg/Mystery', 0, b'\x00\x01\x00\x00'))


@pytest.mark.parametrize(('make', 'says'), [
    ('missing', 'no such bag'), ('not_a_bag_file', 'not a bag'), ('empty_dir', 'no .mcap or .db3'),
    ('garbage_mcap', 'not an MCAP file'), ('metadata_lists_missing_file', 'which is missing'),
])
def test_not_a_bag_is_one_line_bag_error(tmp_path, make, says):
    target = tmp_path / 'x'
    if make == 'not_a_bag_file':
        target = tmp_path / 'notes.txt'
        target.write_text('hello')
    elif make == 'empty_dir':
        target.mkdir()
    elif make == 'garbage_mcap':
        target = tmp_path / 'x.mcap'
        target.write_bytes(b'this is not mcap at all' * 10)
    elif make == 'metadata_lists_missing_file':
        write_rig_bag(target, n=2)
        next(target.glob('*.mcap')).unlink()
    with pytest.raises(BagError) as err:
        BagReader(target)
    message = str(err.value)
    assert says in message and str(target) in message and '\n' not in message


def test_chunks_stored_uncompressed_while_behind_read_everywhere(tmp_path):
    """A recorder behind on a busy computer stores chunks uncompressed until it catches up: one bag then holds
    zstd and plain chunks, which every reader (ours, rosbags', the independent mcap library) reads whole."""
    from mcap.records import Chunk
    from mcap.stream_reader import StreamReader

    calls = [0]

    def compress_now() -> bool:  # every other chunk, as a writer falling behind and catching up would
        calls[0] += 1
        return calls[0] % 2 == 1

    path = tmp_path / 'bag'
    with BagWriter(path, compress_now=compress_now) as bag:
        bag.add_topic('/chatter', 'std_msgs/msg/String')
        for i in range(40):
            bag.write_message('/chatter', 1_000_000_000 + i, T['std_msgs/msg/String'](data=f'message {i} ' * 50))
            if i % 10 == 9:
                bag.flush()  # a chunk every 10 messages
    assert bag.chunks_compressed >= 2 and bag.chunks_uncompressed >= 2
    mcap_file = next(path.glob('*.mcap'))
    with mcap_file.open('rb') as f:
        kinds = [r.compression for r in StreamReader(f, emit_chunks=True).records if isinstance(r, Chunk)]
    assert set(kinds) == {'zstd', ''}
    with mcap_file.open('rb') as f:
        theirs = [m.data for _s, _c, _raw, m in make_reader(f, decoder_factories=[DecoderFactory()])
                  .iter_decoded_messages()]
    with BagReader(path) as reader:
        ours = [m.data for _, m in reader.read(['/chatter'])]
    assert ours == theirs == [f'message {i} ' * 50 for i in range(40)]


@pytest.mark.parametrize('storage', ['mcap', 'sqlite3'])
def test_the_sums_a_bag_takes_while_written_are_the_sums_of_its_files(tmp_path, storage):
    """The recorder fingerprints an episode's bag from what its writer summed on the way (no second read of the
    bag at the episode's end); those sums must be the files' own, chunk CRCs filled in and flushes included."""
    import hashlib

    path = tmp_path / 'bag'
    with BagWriter(path, storage=storage) as bag:
        bag.add_topic('/joint_states', 'sensor_msgs/msg/JointState')
        for i in range(300):
            bag.write_message('/joint_states', 1_000_000_000 + i * 2_000_000, joint_state(i * 2_000_000, i))
            if i % 70 == 69:
                bag.flush()
        with pytest.raises(BagError, match='closed'):
            _ = bag.sha256
    files = sorted(p for p in path.iterdir() if p.is_file())
    assert bag.sha256 == {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in files}
    assert len(files) == 2
    with BagReader(path) as reader:  # the CRCs held back while each chunk was summed are in place and right
        assert len(list(reader.read(['/joint_states']))) == 300


def test_a_bag_is_never_written_over(tmp_path: Path) -> None:
    """A folder already there (an earlier episode's bag) is one BagError naming it, and stays as it was."""
    bag = tmp_path / 'bag'
    bag.mkdir()
    (bag / 'keep.mcap').write_bytes(b'recorded')
    with pytest.raises(BagError, match=rf'^{bag}: cannot create bag: .*exists already'):
        BagWriter(bag)
    assert [p.name for p in bag.iterdir()] == ['keep.mcap'] and (bag / 'keep.mcap').read_bytes() == b'recorded'
