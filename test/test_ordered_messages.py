"""A LeRobot episode read in place hands its streams to the checks as arrays (BagReader.ordered_messages), not a
message at a time: the findings must be the ones a live monitor gives fed each message in turn, however the
messages fall into chunks."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ros_robodata.bag.reader import BagReader
from ros_robodata.dataset.lerobot_episode_source import in_place_episodes, open_episode
from ros_robodata.profile import JOINT_STATE, load_profile
from ros_robodata.quality import batch_pass
from ros_robodata.quality.scoring import score_bag

ROOT = Path(__file__).resolve().parent.parent
REACHY = ROOT / 'test' / 'data' / 'lerobot' / 'reachy2_apple_storage'  # real: 3 teleoperated episodes, v3.0
REACHY_PROFILE = ROOT / 'bench' / 'profiles' / 'reachy2_apple_storage.yaml'


@pytest.fixture(scope='module')
def faulty(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real folder with faults planted in episode 0's state (so the comparison has findings to compare): a
    joint NaN for 3 frames, one joint off by 0.5 rad for a frame, and the state frozen for 3 s while the action
    moves."""
    copy = tmp_path_factory.mktemp('faulty') / 'reachy2'
    shutil.copytree(REACHY, copy)
    path = copy / 'data' / 'chunk-000' / 'file-000.parquet'
    table = pq.read_table(path)
    state = np.array(table.column('observation.state').to_pylist(), dtype=np.float32)
    state[60:63, 3] = np.nan
    state[120, 1] += 0.5
    state[150:240] = state[150]
    column = pa.array(list(state), type=table.schema.field('observation.state').type)
    pq.write_table(table.set_column(table.schema.get_field_index('observation.state'), 'observation.state', column),
                   path)
    return copy


def _findings(report: object) -> list[tuple[str, str, str, str]]:
    return sorted((f.check, f.severity, f.topic, f.message) for f in report.findings)  # type: ignore[attr-defined]


@pytest.mark.parametrize('chunk', [batch_pass.CHUNK, 97])
def test_arrays_in_place_give_what_a_message_at_a_time_gives(chunk: int, faulty: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    profile = load_profile(REACHY_PROFILE)
    monkeypatch.setattr(batch_pass, 'CHUNK', chunk)  # 97: every episode crosses many chunk boundaries
    episodes = in_place_episodes(faulty, profile)
    assert len(episodes) == 3
    checks = set()
    for _, ref in episodes:
        with open_episode(ref, images=False) as reader:
            ordered = reader.ordered_messages()
            assert ordered is not None and len(ordered.times) == reader.message_count
        batched = score_bag(faulty, profile, images=False, lerobot=ref)
        streamed = score_bag(faulty, profile, images=False, lerobot=ref, batch=False)
        assert _findings(batched.report) == _findings(streamed.report)
        checks |= {f[0] for f in _findings(batched.report)}
        assert batched.report.metrics == streamed.report.metrics
        assert batched.report.metrics['topics']['/observation/state']['count'] == len(ordered.times) // 2
        assert batched.report.metrics['smoothness_ldlj'] is not None  # the joints' motion was judged
    assert {'motion.nan', 'motion.stuck_joint'} <= checks, checks  # the planted faults were found both ways


def test_the_time_origin_from_the_readers_arrays_is_the_one_its_messages_give() -> None:
    # An episode in place answers its first stamps from its rows (nothing decoded); read as a bag reads, message by
    # message, the origin must be the same.
    from ros_robodata.bag.time_origin import time_origin

    profile = load_profile(REACHY_PROFILE)
    topics = [spec.topic for _, spec in profile.all_topics()]
    for _, ref in in_place_episodes(REACHY, profile):
        with open_episode(ref, images=False) as reader:
            joints = [t for t in topics if t in reader.topics and reader.topics[t].msgtype == JOINT_STATE]
            assert len(joints) == 2 and reader.first_stamps(joints)
            fast = time_origin(reader, joints)
            assert fast is not None and fast == time_origin(cast(BagReader, _MessagesOnly(reader)), joints)
            assert reader.first_stamps([*joints, '/camera/front/image_raw']) is None  # a camera: read it


class _MessagesOnly:
    """A reader seen only through messages() and decode(), as a bag is read."""

    def __init__(self, reader: BagReader) -> None:
        self._reader = reader

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reader, name)

    def first_stamps(self, topics: object) -> None:
        return None


def test_the_stamped_types_known_without_a_typestore_are_stamped_in_jazzy() -> None:
    from ros_robodata.bag.types import typestore
    from ros_robodata.signals.cdr import STAMPED_TYPES, starts_with_header

    store = typestore()
    assert all(t in store.fielddefs and starts_with_header(t, store) for t in STAMPED_TYPES)
