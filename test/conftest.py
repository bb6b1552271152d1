"""Shared fixtures for the test suite.

Demo datasets (used by test_dataset.py and test_cli.py): `sim_cell_profile_path`, `write_demo_bag`,
`record_demo_episode` and `make_demo_dataset` build real datasets with real rosbag2 bags in tmp_path.
`demo_run`: `robodata demo --episodes 2 --seed 0` on real DDS, once per test run (what `make demo` writes; the
tests that use it copy what they change).
LeRobot folders read in place (test_lerobot_in_place.py, test_report_in_place.py): `reachy_folder`, a copy of the
vendored Reachy 2 folder per test module, and `reachy_imported`, that copy imported into a dataset.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ros_robodata.bag.types import typestore
from ros_robodata.bag.writer import BagWriter
from ros_robodata.dataset import Dataset, Episode
from ros_robodata.profile import load_profile


def pytest_configure(config: pytest.Config) -> None:
    """The tests press Ctrl-C on the commands they start, as a user at a terminal does. A suite started in the
    background of a script (`make test &`, nohup) inherits SIGINT and SIGQUIT ignored, and every child would too:
    Python then installs no KeyboardInterrupt, and a command under test waits forever for a Ctrl-C it never gets.
    The suite runs as if in the foreground."""
    for sig in (signal.SIGINT, signal.SIGQUIT):
        if signal.getsignal(sig) is signal.SIG_IGN:
            signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL)

# -- demo datasets ---------------------------------------------------------------------------------

SIM_CELL_PROFILE = Path(__file__).resolve().parent.parent / 'config' / 'sim_cell.yaml'

DEMO_T0_NS = 1_700_000_000_000_000_000
DEMO_JOINT_PERIOD_NS = 2_000_000  # 500 Hz, as sim_cell.yaml expects for /joint_states
DEMO_JOINT_TOPIC = '/joint_states'
DEMO_JOINT_TYPE = 'sensor_msgs/msg/JointState'
DEMO_EVENT_TOPIC = '/robodata/events'
DEMO_EVENT_TYPE = 'ros_robodata/msg/SegmentEvent'


def _demo_header(ns: int, frame: str) -> Any:
    types = typestore().types
    stamp = types['builtin_interfaces/msg/Time'](sec=ns // 10**9, nanosec=ns % 10**9)
    return types['std_msgs/msg/Header'](stamp=stamp, frame_id=frame)


def _demo_joint_state(ns: int, i: int) -> Any:
    return typestore().types[DEMO_JOINT_TYPE](
        header=_demo_header(ns, 'base_link'),
        name=['joint1', 'joint2', 'joint3'],
        position=np.array([0.001 * i, -0.5, 1.25]),
        velocity=np.array([0.5, 0.0, 0.0]),
        effort=np.array([], dtype=np.float64),
    )


def _demo_segment_event(ns: int, kind: str) -> Any:
    return typestore().types[DEMO_EVENT_TYPE](
        header=_demo_header(ns, 'wrist'),
        episode_id='',
        kind=kind,
        confidence=0.8,
        evidence_signals=['gripper.position'],
        evidence_values=np.array([0.012]),
        evidence_thresholds=np.array([0.02]),
    )


def _write_demo_bag(bag_dir: Path, *, joint_messages: int = 50, events: int = 2, compression: str = 'zstd',
                    t0_ns: int = DEMO_T0_NS) -> dict[str, int]:
    """Record a short demonstration into `bag_dir`: JointState at 500 Hz and `events` SegmentEvents
    spread over it, written in receive-time order. Returns the message count per topic."""
    event_at = {(k + 1) * joint_messages // (events + 1): k for k in range(events)}
    kinds = ('grasp_start', 'grasp', 'release')
    with BagWriter(bag_dir, compression=compression) as writer:
        writer.add_topic(DEMO_JOINT_TOPIC, DEMO_JOINT_TYPE)
        writer.add_topic(DEMO_EVENT_TOPIC, DEMO_EVENT_TYPE)
        for i in range(joint_messages):
            t_ns = t0_ns + i * DEMO_JOINT_PERIOD_NS
            writer.write_message(DEMO_JOINT_TOPIC, t_ns, _demo_joint_state(t_ns, i))
            if i in event_at:
                writer.write_message(DEMO_EVENT_TOPIC, t_ns + 1, _demo_segment_event(t_ns, kinds[event_at[i] % 3]))
        return writer.counts


def _record_demo_episode(dataset: Dataset, *, task: str = 'pick_cube', operator: str = 'ana', mode: str = 'teleop',
                         outcome: str = 'unknown', status: str = 'complete', joint_messages: int = 50,
                         events: int = 2, checksums: bool = True, episode_id: str | None = None) -> Episode:
    """What a recorder leaves behind: a bag in the episode folder, episode.yaml, a catalog row and,
    once the bag is closed (status other than 'recording'), the bag files' sha256."""
    episode_id = episode_id or dataset.new_episode_id()
    counts = _write_demo_bag(dataset.bag_dir(episode_id), joint_messages=joint_messages, events=events)
    types = {DEMO_JOINT_TOPIC: DEMO_JOINT_TYPE, DEMO_EVENT_TOPIC: DEMO_EVENT_TYPE}
    episode = Episode(
        id=episode_id, task=task, operator=operator, mode=mode, robot='sim_cell_arm', outcome=outcome,
        status=status, start_ns=DEMO_T0_NS, stop_ns=DEMO_T0_NS + (joint_messages - 1) * DEMO_JOINT_PERIOD_NS,
        topics={topic: {'type': types[topic], 'count': count} for topic, count in counts.items()},
    )
    dataset.add_episode(episode, who='recorder')
    if checksums and status != 'recording':
        dataset.record_checksums(episode_id, who='recorder')
    return dataset.episode(episode_id)


@pytest.fixture
def sim_cell_profile_path() -> Path:
    """config/sim_cell.yaml, the profile that ships with ros_robodata."""
    return SIM_CELL_PROFILE


@pytest.fixture
def write_demo_bag() -> Callable[..., dict[str, int]]:
    """write_demo_bag(bag_dir, joint_messages=50, events=2, compression='zstd') -> counts per topic."""
    return _write_demo_bag


@pytest.fixture
def record_demo_episode() -> Callable[..., Episode]:
    """record_demo_episode(dataset, task=..., outcome=..., status=..., joint_messages=..., ...) -> Episode."""
    return _record_demo_episode


@pytest.fixture
def make_demo_dataset(tmp_path: Path) -> Callable[..., Dataset]:
    """make_demo_dataset(episodes=2, name='demo', path=None) -> a dataset (sim_cell profile snapshot)
    with `episodes` recorded episodes; `episodes` may instead be a list of record_demo_episode kwargs."""

    def make(episodes: int | list[dict[str, Any]] = 2, *, name: str = 'demo', path: Path | None = None) -> Dataset:
        dataset = Dataset.create(path or tmp_path / name, name=name, profile=load_profile(SIM_CELL_PROFILE))
        specs = [{} for _ in range(episodes)] if isinstance(episodes, int) else episodes
        for spec in specs:
            _record_demo_episode(dataset, **spec)
        return dataset

    return make


@pytest.fixture(scope='session')
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`robodata demo --episodes 2 --seed 0` run once: (the finished command, its --out folder)."""
    from test.ros_rig import new_domain, ros_env

    out = tmp_path_factory.mktemp('demo_run') / 'robodata_demo'
    run = subprocess.run([sys.executable, '-m', 'ros_robodata.cli.main', 'demo', '--episodes', '2', '--seed', '0',
                          '--out', str(out)], capture_output=True, text=True, timeout=600, env=ros_env(new_domain()))
    return run, out


@pytest.fixture(scope='module')
def reachy_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the vendored Reachy 2 LeRobot folder (real: 3 teleoperated episodes, v3.0), which the in-place
    tests read where it lies and check is left as it was."""
    copy = tmp_path_factory.mktemp('lerobot') / 'reachy2_apple_storage'
    shutil.copytree(Path(__file__).resolve().parent / 'data' / 'lerobot' / 'reachy2_apple_storage', copy)
    return copy


@pytest.fixture(scope='module')
def reachy_imported(reachy_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """That folder imported into a dataset (`robodata import`): what the in-place commands must agree with."""
    from ros_robodata.cli.main import main

    ds = tmp_path_factory.mktemp('imported') / 'ds'
    assert main(['import', str(reachy_folder), '--dataset', str(ds)]) == 0
    return ds
