"""Our interfaces as ROS sees them: built by colcon, the same types in bags, exchanged over real DDS."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from ros_robodata.bag.types import typestore

ROOT = Path(__file__).resolve().parents[1]
MESSAGES = sorted(p.stem for p in (ROOT / 'msg').glob('*.msg'))


def installed_share() -> Path:
    for prefix in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep):
        share = Path(prefix) / 'share' / 'ros_robodata'
        if (share / 'msg').is_dir():
            return share
    raise AssertionError('ros_robodata is not colcon-built on AMENT_PREFIX_PATH: run `make setup`')


@pytest.mark.parametrize('name', MESSAGES)
def test_bag_type_hash_equals_the_one_rosidl_generated(name):
    """Bags embed our definitions through rosbags; ROS tools check them against rosidl's hash."""
    generated = json.loads((installed_share() / 'msg' / f'{name}.json').read_text())
    rosidl_hash = generated['type_hashes'][0]['hash_string']
    assert typestore().hash_rihs01(f'ros_robodata/msg/{name}') == rosidl_hash


def test_generated_python_types_have_the_documented_constants():
    from ros_robodata.msg import EpisodeEvent, QualityStatus, SegmentEvent

    assert (EpisodeEvent.START, EpisodeEvent.STOP, EpisodeEvent.OUTCOME, EpisodeEvent.DISCARD) == (0, 1, 2, 3)
    assert (QualityStatus.OK, QualityStatus.WARN, QualityStatus.ERROR, QualityStatus.STALE) == (0, 1, 2, 3)
    kinds = {SegmentEvent.GRASP_START, SegmentEvent.CONTACT, SegmentEvent.CONTACT_LOST, SegmentEvent.GRASP,
             SegmentEvent.GRASP_FAILED, SegmentEvent.LIFT, SegmentEvent.RELEASE}
    assert kinds == {'grasp_start', 'contact', 'contact_lost', 'grasp', 'grasp_failed', 'lift', 'release'}


def test_two_processes_exchange_a_segment_event_over_dds():
    env = {**os.environ, 'ROS_DOMAIN_ID': str(random.randint(1, 100)), 'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST'}
    peer = str(Path(__file__).parent / 'peers' / 'segment_event_peer.py')
    listener = subprocess.Popen([sys.executable, peer, 'listen', '30'], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    talker = subprocess.Popen([sys.executable, peer, 'talk', '30'], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    try:
        out, err = listener.communicate(timeout=60)
    finally:
        talker.kill()
        talker.wait()
    assert listener.returncode == 0, f'listener got nothing: {err}'
    got = json.loads(out)
    assert got['kind'] == 'grasp' and got['episode_id'] == 'ep-dds' and got['frame_id'] == 'wrist'
    assert got['confidence'] == pytest.approx(0.875) and got['sec'] == 42
    assert got['evidence_signals'] == ['gripper.position', 'wrench.force_norm']
    assert got['evidence_values'] == [0.012, 6.5] and got['evidence_thresholds'] == [0.02, 3.0]
