"""The overlay node over real DDS (issue 17): replaying an episode's bag at real time, each event's markers come
within 50 ms (replay time) of the event; the annotated image has its box where annotations.json puts it; live,
it draws what /robodata/events and /robodata/quality say; unreadable sidecars are one warning each."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from ros_robodata.bag.reader import BagReader
from ros_robodata.events.offline import read_events_file
from ros_robodata.labeling.taxonomy import load_taxonomy
from ros_robodata.replay.draw import hex_to_bgr
from ros_robodata.signals import header_stamp_ns
from test.profiles import CONFIG
from test.ros_rig import PROFILE, Client, client, new_domain, ros_env, stop_process
from test.test_overlay import BOX_XYWH, EPISODE, WRIST, build_episode

EVENT_TEXT = 'robodata_overlay/event'


def _start_overlay(domain: int, log: Path, *params: str) -> subprocess.Popen:
    args = [sys.executable, '-m', 'ros_robodata.nodes.overlay_node', '--ros-args', '-p', f'profile:={PROFILE}']
    for param in params:
        args += ['-p', param]
    return subprocess.Popen(args, env=ros_env(domain), stdout=log.open('w'), stderr=subprocess.STDOUT)


def _ns(stamp: Any) -> int:
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def _texts(arrays: list[Any], ns: str) -> list[tuple[int, str]]:
    """(marker stamp, text) of every text marker in namespace `ns` that was added, in arrival order."""
    return [(_ns(m.header.stamp), m.text) for a in arrays for m in a.markers if m.ns == ns and m.action == m.ADD]


def _pixels(msg: Any) -> np.ndarray:
    assert msg.encoding == 'bgr8' and msg.step == msg.width * 3
    return np.frombuffer(bytes(msg.data), np.uint8).reshape(msg.height, msg.width, 3)


def _wait(c: Client, done: Any, node: subprocess.Popen, log: Path, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert node.poll() is None, log.read_text()
        assert time.monotonic() < deadline, f'{what} never came: ' + log.read_text()
        c.spin_for(0.05)


def test_replayed_events_get_markers_within_50_ms_and_the_box_is_drawn_on_its_frame(tmp_path: Path) -> None:
    from sensor_msgs.msg import Image, JointState
    from visualization_msgs.msg import MarkerArray

    built = build_episode(tmp_path)
    folder = built['episode_dir']
    events = read_events_file(folder / 'events.json')['events']
    quality = json.loads((folder / 'quality.json').read_text())
    box_stamp = built['box_stamp_ns']
    wrist = {}
    with BagReader(built['dataset'].bag_dir(EPISODE)) as reader:
        joints = [(header_stamp_ns(m.data), bytes(m.data)) for m in reader.messages(['/joint_states'])]
        for m in reader.messages([WRIST]):
            if header_stamp_ns(m.data) in (box_stamp, box_stamp - 1_000_000_000):
                wrist[header_stamp_ns(m.data)] = (bytes(m.data), reader.decode(m))
    first, last = min(e['t_ns'] for e in events), max(e['t_ns'] for e in events)
    window = [(s, d) for s, d in joints if first - 200_000_000 <= s <= last + 150_000_000]

    domain = new_domain()
    log = tmp_path / 'overlay.log'
    node = _start_overlay(domain, log, f'episode:={folder}')  # no `frames`: the COCO file's export is found
    try:
        with client(domain) as c:
            arrays: list[Any] = []
            headlines: list[tuple[int, str, int]] = []  # (marker stamp, text, replay time when it came in)
            replay = {'now': 0}  # the newest stamp sent
            images: list[Any] = []

            def on_markers(msg: Any) -> None:
                arrays.append(msg)
                headlines.extend((_ns(m.header.stamp), m.text, replay['now']) for m in msg.markers
                                 if m.ns == EVENT_TEXT and m.action == m.ADD)

            c.node.create_subscription(MarkerArray, '/robodata/overlay/markers', on_markers, 100)
            c.node.create_subscription(Image, '/robodata/overlay/wrist/image', images.append, 10)
            reliable = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
            joint_pub = c.node.create_publisher(JointState, '/joint_states', reliable)
            image_pub = c.node.create_publisher(Image, WRIST, reliable)
            c.wait_subscribed([joint_pub, image_pub], node, log, 'the overlay')
            start = time.monotonic()
            for stamp, data in window:  # at real time: each stamp when its moment comes
                ahead = (stamp - window[0][0]) / 1e9 - (time.monotonic() - start)
                while ahead > 0:
                    c.executor.spin_once(timeout_sec=min(ahead, 0.002))
                    ahead = (stamp - window[0][0]) / 1e9 - (time.monotonic() - start)
                joint_pub.publish(data)
                replay['now'] = stamp
                c.executor.spin_once(timeout_sec=0)
            c.spin_for(0.3)
            # A seek back into the blurred stretch: its finding shows at once.
            blur = next(f for f in quality['findings'] if f['check'] == 'image.blur')
            middle = (blur['ranges_ns'][0][0] + blur['ranges_ns'][0][1]) // 2
            joint_pub.publish(next(d for s, d in joints if s >= middle))
            _wait(c, lambda: f'warn: {blur["message"]}' in [t for _, t in _texts(arrays, 'robodata_overlay/findings')],
                  node, log, 'the blur finding')
            for stamp in sorted(wrist):
                image_pub.publish(wrist[stamp][0])
            _wait(c, lambda: len(images) >= 2, node, log, 'the annotated images')
    finally:
        assert stop_process(node) == 0, log.read_text()

    for event in events:
        shown = [(stamp, when) for stamp, text, when in headlines if event['kind'] + ' (' in text.split(' | ')[0]
                 and stamp >= event['t_ns']]
        assert shown, f'no marker for {event["kind"]}: {log.read_text()}'
        stamp, when = shown[0]
        assert stamp - event['t_ns'] <= 50_000_000, (event, stamp)  # the marker's own time: the crossing
        assert when - event['t_ns'] <= 50_000_000, (event, when)  # and it was here before the replay got further
        assert not [s for s, text, _ in headlines if event['kind'] + ' (' in text.split(' | ')[0] and s < event['t_ns']]
    assert any('reviewed success' in t for _, t in _texts(arrays, 'robodata_overlay/status'))
    assert any(t == 'label manipulation/grasp (dora)' for _, t in _texts(arrays, 'robodata_overlay/labels'))
    timeline = [m for a in arrays for m in a.markers if m.ns == 'robodata_overlay/timeline' and m.id == 2]
    assert timeline and len(timeline[-1].points) == 2 * len(events)  # a tick per event
    assert {m.header.frame_id for a in arrays for m in a.markers} == {'world'}

    by_stamp = {_ns(m.header.stamp): m for m in images}
    assert set(by_stamp) == set(wrist)
    taxonomy = load_taxonomy(CONFIG / 'taxonomy.yaml')
    cube = hex_to_bgr(taxonomy.get('object/cube').color)
    from ros_robodata.bag.image import decode_image

    boxed, source = _pixels(by_stamp[box_stamp]), decode_image(wrist[box_stamp][1], 'bgr')
    assert by_stamp[box_stamp].header.frame_id == wrist[box_stamp][1].header.frame_id
    x, y, w, h = (int(v) for v in BOX_XYWH)
    for px, py in ((x, y + h // 2), (x + w - 1, y + h // 2), (x + w // 2, y + h - 1)):
        assert tuple(boxed[py, px]) == cube, (px, py)
    assert tuple(boxed[y + h // 2, x - 1]) == tuple(source[y + h // 2, x - 1])
    plain = _pixels(by_stamp[box_stamp - 1_000_000_000])  # no label on this frame: republished, with the banner
    other = decode_image(wrist[box_stamp - 1_000_000_000][1], 'bgr')
    assert tuple(plain[y + h // 2, x]) == tuple(other[y + h // 2, x]) != cube
    assert plain[:12].astype(int).mean() < other[:12].astype(int).mean()


def test_live_it_draws_what_the_segmenter_and_the_quality_monitor_publish(tmp_path: Path) -> None:
    from sensor_msgs.msg import Image, JointState
    from visualization_msgs.msg import MarkerArray

    from ros_robodata.msg import EpisodeEvent, QualityStatus, SegmentEvent

    t0 = 1_800_000_000_000_000_000
    domain = new_domain()
    log = tmp_path / 'overlay.log'
    node = _start_overlay(domain, log)
    try:
        with client(domain) as c:
            arrays: list[Any] = []
            images: list[Any] = []
            c.node.create_subscription(MarkerArray, '/robodata/overlay/markers', arrays.append, 100)
            c.node.create_subscription(Image, '/robodata/overlay/scene/image', images.append, 10)
            latched = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                                 durability=DurabilityPolicy.TRANSIENT_LOCAL)
            episodes = c.node.create_publisher(EpisodeEvent, '/robodata/episode_events', latched)
            events = c.node.create_publisher(SegmentEvent, '/robodata/events', 100)
            quality = c.node.create_publisher(QualityStatus, '/robodata/quality', 50)
            joints = c.node.create_publisher(JointState, '/joint_states', 100)
            camera = c.node.create_publisher(Image, '/camera/scene/image_raw', 10)
            c.wait_subscribed([episodes, events, quality, joints, camera], node, log, 'the overlay')
            start = EpisodeEvent(event=EpisodeEvent.START, episode_id='live1', status='recording', outcome='unknown')
            start.data_start.sec = t0 // 10**9
            episodes.publish(start)
            c.spin_for(0.3)

            def stamped(msg: Any, ns: int) -> Any:
                msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(ns, 10**9)
                return msg

            joints.publish(stamped(JointState(name=['joint1'], position=[0.0]), t0 + 2_000_000_000))
            events.publish(stamped(SegmentEvent(episode_id='live1', kind='grasp', confidence=0.9),
                                   t0 + 1_990_000_000))
            quality.publish(stamped(QualityStatus(episode_id='live1', check='timing.rate', topic='/wrist/wrench',
                                                  level=QualityStatus.WARN, message='/wrist/wrench: 120 Hz of 500'),
                                    t0 + 2_000_000_000))
            frame = stamped(Image(height=120, width=160, encoding='mono8', step=160), t0 + 2_000_000_000)
            frame.data = bytes([128]) * (120 * 160)
            joints.publish(stamped(JointState(name=['joint1'], position=[0.0]), t0 + 2_010_000_000))
            camera.publish(frame)
            _wait(c, lambda: any(t.startswith('grasp (0.90)') for _, t in _texts(arrays, EVENT_TEXT))
                  and any('120 Hz of 500' in t for _, t in _texts(arrays, 'robodata_overlay/findings'))
                  and images, node, log, 'the live markers and image')
    finally:
        assert stop_process(node) == 0, log.read_text()
    assert any(t == 'episode live1: recording, outcome unknown' for _, t in _texts(arrays, 'robodata_overlay/status'))
    drawn = _pixels(images[0])
    assert (images[0].height, images[0].width, _ns(images[0].header.stamp)) == (120, 160, t0 + 2_000_000_000)
    assert (drawn[40:80] == 128).all()  # the grey picture between the bands, untouched
    assert drawn[:12].mean() < 128 and (drawn[:12].astype(int).min(axis=2) > 200).any()  # the banner's text
    assert drawn[-12:].mean() < 128  # the flags' band


def test_unreadable_sidecars_are_one_warning_each_and_the_overlay_keeps_running(tmp_path: Path) -> None:
    folder = tmp_path / 'ds' / 'episodes' / 'broken'
    folder.mkdir(parents=True)
    (folder / 'events.json').write_text('{"events": [{"kind": "grasp"}]}')  # no t_ns
    (folder / 'annotations.json').write_text('{"revisions": ')  # cut short (a missing one is no warning at all)
    domain = new_domain()
    log = tmp_path / 'overlay.log'
    node = _start_overlay(domain, log, f'episode:={folder}')
    try:
        deadline = time.monotonic() + 20
        while 'overlay (episode broken)' not in log.read_text():
            assert node.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        time.sleep(0.5)
        assert node.poll() is None, log.read_text()
    finally:
        assert stop_process(node) == 0, log.read_text()
    text = log.read_text()
    assert 'Traceback' not in text
    for name in ('episode.yaml', 'events.json', 'quality.json', 'annotations.json'):
        assert text.count(f'{folder / name}:') == 1, text
    assert f'{folder / "events.json"}: event 0 is not a mapping with a kind and an integer t_ns' in text
