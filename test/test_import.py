"""`robodata import`: bags written by other tools, long logs cut into episodes, videos, watched folders.

Sources are written by tools other than ours where possible (mcap_ros2's writer, plain SQL, rosbag2 itself
in the vendored real bags, rosbags' ROS 1 converter on a real arm's log), and every count is checked with an
independent reader.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
import yaml

from ros_robodata.bag.reader import BagReader
from ros_robodata.bag.writer import BagWriter
from ros_robodata.cli.main import main
from ros_robodata.dataset import Dataset
from ros_robodata.dataset.importers import ImportOptions, import_recording
from ros_robodata.dataset.sources import content_id, find_recordings
from ros_robodata.dataset.staging import import_lock
from ros_robodata.dataset.watch import Watcher
from test.processes import signal_state
from test.real_data import real_data
from test.rig_logs import (
    LOG_TOPICS,
    T0_NS,
    bag_counts,
    write_mcap_ros2,
    write_shift_log,
    write_sqlite3_by_hand,
)

CONFIG = Path(__file__).resolve().parent.parent / 'config'
LOG_PROFILE = """
robot: {name: shift_arm, arm_joints: [shoulder, elbow, wrist]}
topics:
  joint_states: {topic: /joint_states, type: sensor_msgs/msg/JointState, rate_hz: 50}
  extra:
    - {topic: /status, type: std_msgs/msg/String}
    - {topic: /robot_description, type: std_msgs/msg/String, latched: true}
"""


def run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def episodes_of(root: Path) -> list[str]:
    return Dataset.open(root).episode_ids()


def episode_yaml(root: Path, episode_id: str) -> dict[str, Any]:
    return yaml.safe_load((root / 'episodes' / episode_id / 'episode.yaml').read_text())


def no_leftovers(root: Path) -> bool:
    """Nothing half-made: no staging folder, no folder without episode.yaml."""
    folders = [p for p in (root / 'episodes').iterdir() if p.is_dir()] if (root / 'episodes').is_dir() else []
    return all(not p.name.startswith('.') and (p / 'episode.yaml').is_file() for p in folders)


@pytest.fixture(scope='module')
def shift_log(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return write_shift_log(tmp_path_factory.mktemp('logs') / 'shift_2025_06_15')


@pytest.fixture
def log_profile(tmp_path: Path) -> Path:
    path = tmp_path / 'shift_arm.yaml'
    path.write_text(LOG_PROFILE)
    return path


# -- bags written by other tools ----------------------------------------------------------------------------


def test_a_bare_mcap_from_mcap_ros2_becomes_an_episode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A bag file written by the Foxglove stack's writer, with a custom type only its schema defines."""
    source = tmp_path / 'arm_log.mcap'
    written = write_mcap_ros2(source)
    code, out, err = run(capsys, 'import', source, '--dataset', tmp_path / 'ds', '--task', 'wipe')
    assert (code, err) == (0, '')
    assert f'{source} -> episode arm_log: {sum(written.values())} messages' in out
    bag = tmp_path / 'ds' / 'episodes' / 'arm_log' / 'bag'
    assert bag_counts(bag) == written  # what an independent reader finds in the episode
    assert (bag / 'metadata.yaml').is_file() and (bag / 'arm_log.mcap').read_bytes() == source.read_bytes()
    episode = episode_yaml(tmp_path / 'ds', 'arm_log')
    assert episode['task'] == 'wipe' and episode['status'] == 'complete' and episode['mode'] == 'unknown'
    assert {t: v['count'] for t, v in episode['topics'].items()} == written
    assert episode['topics']['/acme/widget']['type'] == 'acme_msgs/msg/Widget'
    assert episode['stamp_start_ns'] == T0_NS and episode['start_ns'] == T0_NS + 1_000_000  # header vs receive
    assert 'mcap-ros2-support' in episode['source']['written_by']
    assert episode['source']['content_id'] == content_id([source])
    with BagReader(bag) as reader:  # the custom type decodes from the definition the bag carries
        message = next(reader.read(['/acme/widget']))[1]
        assert (message.id, message.label) == (0, 'w0')
    assert run(capsys, 'verify', tmp_path / 'ds')[0] == 0
    audit = [json.loads(line) for line in (tmp_path / 'ds' / 'audit.jsonl').read_text().splitlines()]
    assert [a['action'] for a in audit][-1] == 'import_episode' and audit[-1]['source'] == str(source.resolve())


def test_a_hand_built_sqlite3_bag_without_metadata(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A folder holding one .db3 named as rosbag2 names it and no metadata.yaml (a recorder that was killed, or an
    old tool): the episode's bag gets the metadata rosbag2 would have written, and every message."""
    folder = tmp_path / 'rig_2019'
    folder.mkdir()
    written = write_sqlite3_by_hand(folder / 'rig_2019_0.db3')
    code, _out, err = run(capsys, 'import', folder, '--dataset', tmp_path / 'ds')
    assert (code, err) == (0, '')
    bag = tmp_path / 'ds' / 'episodes' / 'rig_2019' / 'bag'
    assert bag_counts(bag) == written
    metadata = yaml.safe_load((bag / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
    assert metadata['storage_identifier'] == 'sqlite3' and metadata['message_count'] == sum(written.values())
    episode = episode_yaml(tmp_path / 'ds', 'rig_2019')
    assert episode['topics']['/joint_states']['rate_hz'] == pytest.approx(100.0, rel=1e-3)
    assert episode['loss']['total_lost'] == 0


@pytest.mark.parametrize('name', ['mcap/talker', 'sqlite3/talker', 'mcap/multiple_files', 'mcap/convert_b'])
def test_real_rosbag2_bags_import_whole(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    """Bags written by rosbag2 itself (ros2 bag record, libmcap, the mcap CLI), metadata versions 4 and 5, a bag
    split over three files without metadata.yaml, custom test_msgs types: every message arrives."""
    source = tmp_path / 'in' / name.replace('/', '_')
    shutil.copytree(real_data(f'rosbag2/{name}'), source)
    if name.endswith('multiple_files'):  # rosbag2 names a bag's parts after its folder
        source = source.rename(source.parent / 'multiple_files')
    expected = bag_counts(source)
    code, out, err = run(capsys, 'import', source, '--dataset', tmp_path / 'ds')
    assert (code, err) == (0, ''), out
    (episode_id,) = episodes_of(tmp_path / 'ds')
    bag = tmp_path / 'ds' / 'episodes' / episode_id / 'bag'
    assert bag_counts(bag) == expected and sum(expected.values()) > 0
    with BagReader(bag) as reader:
        assert reader.complete and reader.message_count == sum(expected.values())
        for message in reader.messages():
            reader.decode(message)  # every message decodes, custom types included
    assert run(capsys, 'verify', tmp_path / 'ds')[0] == 0


@pytest.fixture(scope='module')
def real_arm_bag(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real WidowX-200's 106 s log (ROS 1), converted to a ROS 2 MCAP bag by rosbags' converter."""
    from rosbags.convert import convert

    out = tmp_path_factory.mktemp('interbotix') / 'waist_diagnostics'
    convert([real_data('interbotix/waist_diagnostics.bag')], out, dst_storage='mcap', dst_version=9,
            compress=None, compress_mode='file', default_typestore=None, typestore=None, exclude_topics=[],
            include_topics=[], exclude_msgtypes=[], include_msgtypes=[])
    return out


def test_a_real_arm_log_imports_with_its_rates_and_stamps(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         real_arm_bag: Path) -> None:
    profile = tmp_path / 'wx200.yaml'
    profile.write_text('robot: {name: wx200}\ntopics:\n  joint_states: {topic: /wx200/joint_states, '
                       'type: sensor_msgs/msg/JointState, rate_hz: 100}\n')
    code, out, err = run(capsys, 'import', real_arm_bag, '--dataset', tmp_path / 'ds', '--profile', profile,
                         '--mode', 'autonomous')
    assert (code, err) == (0, ''), out
    episode = episode_yaml(tmp_path / 'ds', 'waist_diagnostics')
    joints = episode['topics']['/wx200/joint_states']
    assert joints['count'] == 10_598 and joints['rate_hz'] == pytest.approx(100, rel=0.02)
    assert episode['mode'] == 'autonomous' and episode['robot'] == 'wx200'
    assert 106 < (episode['stamp_stop_ns'] - episode['stamp_start_ns']) / 1e9 < 107
    assert episode['topics']['/wx200/commands/joint_single']['type'] == 'interbotix_xs_sdk/msg/JointSingleCommand'


WX200_PROFILE = ('robot: {name: wx200}\ntopics:\n  joint_states: {topic: /wx200/joint_states, '
                 'type: sensor_msgs/msg/JointState, rate_hz: 100}\n')


def test_a_ros1_bag_imports_with_one_command_and_scores_like_its_converted_copy(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], real_arm_bag: Path) -> None:
    """The WidowX log as it was recorded (ROS 1), given to `robodata import` directly: one episode, named after
    the file, the same messages and the same score as the copy rosbags' converter made by hand."""
    profile = tmp_path / 'wx200.yaml'
    profile.write_text(WX200_PROFILE)
    source = tmp_path / 'logs' / 'waist_diagnostics.bag'
    source.parent.mkdir()
    shutil.copy(real_data('interbotix/waist_diagnostics.bag'), source)
    code, out, err = run(capsys, 'import', source, '--dataset', tmp_path / 'ds', '--profile', profile)
    assert (code, err) == (0, ''), out
    assert f'{source} -> episode waist_diagnostics: ' in out
    episode = episode_yaml(tmp_path / 'ds', 'waist_diagnostics')
    assert episode['source']['kind'] == 'rosbag1' and episode['source']['method'] == 'convert'
    assert 'a ROS 1 bag, converted to rosbag2 (MCAP) by rosbags on import' in episode['notes']
    assert bag_counts(tmp_path / 'ds' / 'episodes' / 'waist_diagnostics' / 'bag') == bag_counts(real_arm_bag)
    assert source.is_file() and [p.name for p in (tmp_path / 'ds').iterdir() if p.name.startswith('.')] == []
    code, out, _ = run(capsys, 'import', source, '--dataset', tmp_path / 'ds')
    assert code == 0 and 'already imported as waist_diagnostics: skipped' in out
    code, imported_score, _ = run(capsys, 'score', tmp_path / 'ds', '--json')
    assert code == 0
    assert run(capsys, 'import', real_arm_bag, '--dataset', tmp_path / 'by_hand', '--profile', profile)[0] == 0
    code, converted_score, _ = run(capsys, 'score', tmp_path / 'by_hand', '--json')
    assert code == 0
    mine = json.loads(imported_score)['episodes']['waist_diagnostics']
    theirs = json.loads(converted_score)['episodes']['waist_diagnostics']
    assert (mine['score'], mine['reasons']) == (theirs['score'], theirs['reasons'])
    # The log drops single samples all along (episode.yaml counts hundreds of gaps): said as such, not as one gap.
    gaps = episode_yaml(tmp_path / 'ds', 'waist_diagnostics')['loss']['topics']['/wx200/joint_states']['gaps']
    (said,) = [r for r in mine['reasons'] if '/wx200/joint_states' in r and 'missing' in r]
    assert gaps > 100 and (f'in {gaps} gaps spread over' in said or 'single missing samples' in said), said
    code, _, err = run(capsys, 'score', source, '--profile', profile)
    assert code != 0 and 'a ROS 1 bag, not a rosbag2 bag: run `robodata import' in err


def test_an_import_that_matches_nothing_leaves_no_dataset_behind(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 real_arm_bag: Path) -> None:
    """A first try with the wrong profile fails and creates nothing, so the retry with the right one works."""
    wrong = tmp_path / 'wrong.yaml'
    wrong.write_text(WX200_PROFILE.replace('/wx200/joint_states', '/joint_states'))
    code, out, err = run(capsys, 'import', real_arm_bag, '--dataset', tmp_path / 'ds', '--profile', wrong)
    assert code != 0 and "none of the profile's topics" in err
    assert f'nothing imported: {tmp_path / "ds"} was not created' in out
    assert not (tmp_path / 'ds').exists()
    right = tmp_path / 'right.yaml'
    right.write_text(WX200_PROFILE)
    code, out, err = run(capsys, 'import', real_arm_bag, '--dataset', tmp_path / 'ds', '--profile', right)
    assert (code, err) == (0, ''), out


def test_a_truncated_bag_is_imported_up_to_the_damage(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     shift_log: Any) -> None:
    source = tmp_path / 'cut.mcap'
    shutil.copy(next(shift_log.path.glob('*.mcap')), source)
    with source.open('r+b') as f:
        f.truncate(int(source.stat().st_size * 0.5))
    code, out, err = run(capsys, 'import', source, '--dataset', tmp_path / 'ds')
    assert (code, err) == (0, '')
    assert '[incomplete]' in out
    episode = episode_yaml(tmp_path / 'ds', 'cut')
    assert episode['status'] == 'incomplete' and 'damaged or truncated' in episode['notes']
    bag = tmp_path / 'ds' / 'episodes' / 'cut' / 'bag'
    recovered = bag_counts(bag)
    assert 0 < sum(recovered.values()) < sum(shift_log.counts.values())
    assert (bag / 'damaged' / 'cut.mcap').read_bytes() == source.read_bytes()  # the damaged original, untouched
    with BagReader(bag) as reader:
        assert reader.complete
    assert run(capsys, 'verify', tmp_path / 'ds')[0] == 0


# -- long logs -----------------------------------------------------------------------------------------------


def windows_add_up(root: Path, log: Any) -> list[dict[str, Any]]:
    """Each episode holds every message of its window, on every topic that is not latched; returns the windows."""
    windows = []
    for episode_id in episodes_of(root):
        episode = episode_yaml(root, episode_id)
        window = episode['source']['window']
        counts = bag_counts(root / 'episodes' / episode_id / 'bag')
        for topic in ('/joint_states', '/status', '/demo_active', '/operator_note'):
            assert counts.get(topic, 0) == log.within(topic, window['start_ns'], window['end_ns']), (episode_id, topic)
        assert counts['/robot_description'] == 1  # the latched URDF, repeated at the top of every episode
        windows.append({**window, 'id': episode_id, 'episode': episode})
    return windows


def test_a_log_split_on_gap_gives_one_episode_per_demonstration(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                shift_log: Any, log_profile: Path) -> None:
    code, out, err = run(capsys, 'import', shift_log.path, '--dataset', tmp_path / 'ds', '--profile', log_profile,
                         '--split-on-gap', '2s', '--task', 'pick_cube')
    assert (code, err) == (0, ''), out
    windows = windows_add_up(tmp_path / 'ds', shift_log)
    assert len(windows) == len(shift_log.demos)
    for window, demo in zip(windows, shift_log.demos, strict=True):
        start, end = (window['start_ns'] - T0_NS) / 1e9, (window['end_ns'] - T0_NS) / 1e9
        assert demo.start_s - 1.5 < start < demo.start_s and demo.end_s < end < demo.end_s + 1.5
        assert window['episode']['task'] == 'pick_cube' and window['episode']['status'] == 'complete'
    assert [w['id'] for w in windows] == [f'shift_2025_06_15-{i:02d}' for i in range(1, 9)]


def test_a_log_split_on_our_episode_events(tmp_path: Path, capsys: pytest.CaptureFixture[str], shift_log: Any) -> None:
    """The recorder's own START/STOP/OUTCOME/DISCARD events in a log recorded by something else: one episode per
    kept demonstration, with its task, operator, mode and outcome; the discarded one is left out."""
    code, out, err = run(capsys, 'import', shift_log.path, '--dataset', tmp_path / 'ds',
                         '--split-on-topic', '/robodata/episode_events')
    assert (code, err) == (0, ''), out
    windows = windows_add_up(tmp_path / 'ds', shift_log)
    kept = [d for d in shift_log.demos if not d.discarded]
    assert len(windows) == len(kept)
    for window, demo in zip(windows, kept, strict=True):
        episode = window['episode']
        assert (episode['task'], episode['outcome'], episode['operator'], episode['mode']) == (
            demo.task, demo.outcome, 'ana', 'teleop')
        assert abs((window['start_ns'] - T0_NS) / 1e9 - (demo.start_s - 1)) < 0.01


@pytest.mark.parametrize('topic', ['/demo_active', '/operator_note'])
def test_a_log_split_on_bool_and_string_markers(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                shift_log: Any, topic: str) -> None:
    code, out, err = run(capsys, 'import', shift_log.path, '--dataset', tmp_path / 'ds', '--split-on-topic', topic)
    assert (code, err) == (0, ''), out
    windows = windows_add_up(tmp_path / 'ds', shift_log)
    assert len(windows) == len(shift_log.demos)
    if topic == '/operator_note':  # the note that opened the episode is kept with it
        assert [w['episode']['notes'].splitlines()[-1] for w in windows] == [
            f'marker: {d.task}' for d in shift_log.demos]


def test_a_log_split_by_a_ranges_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], shift_log: Any) -> None:
    ranges = tmp_path / 'ranges.csv'
    absolute = time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(T0_NS / 1e9 + 400)) + 'Z'
    ranges.write_text(f'start,end,task,outcome\n10,45,pick_cube,success\n# a comment\n50.5,100,stack,failure\n'
                      f'{absolute},{T0_NS + 470 * 10**9},wipe,\n')
    code, out, err = run(capsys, 'import', shift_log.path, '--dataset', tmp_path / 'ds', '--ranges', ranges)
    assert (code, err) == (0, ''), out
    windows = windows_add_up(tmp_path / 'ds', shift_log)
    assert [(w['episode']['task'], w['episode']['outcome']) for w in windows] == [
        ('pick_cube', 'success'), ('stack', 'failure'), ('wipe', 'unknown')]
    assert [round((w['end_ns'] - w['start_ns']) / 1e9, 3) for w in windows] == [35.0, 49.5, 70.0]


def test_a_log_split_every_minute_holds_every_message_once(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           shift_log: Any) -> None:
    code, out, err = run(capsys, 'import', shift_log.path, '--dataset', tmp_path / 'ds', '--split-every', '60s')
    assert (code, err) == (0, ''), out
    windows = windows_add_up(tmp_path / 'ds', shift_log)
    assert len(windows) == 10
    total = {t: 0 for t in LOG_TOPICS}
    for w in windows:
        for topic, count in bag_counts(tmp_path / 'ds' / 'episodes' / w['id'] / 'bag').items():
            total[topic] += count
    assert total['/joint_states'] == shift_log.counts['/joint_states']  # nothing lost between windows


def test_a_bad_ranges_file_names_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], shift_log: Any) -> None:
    ranges = tmp_path / 'ranges.csv'
    ranges.write_text('10,45\n60,50,stack\n')
    code, _, err = run(capsys, 'import', shift_log.path, '--dataset', tmp_path / 'ds', '--ranges', ranges)
    assert code == 1 and f'{ranges}:2: the range ends (50) before it starts (60)' in err
    assert len(err.splitlines()) == 1 and not (tmp_path / 'ds').exists()  # an import that fails creates nothing


def test_an_interrupted_split_is_finished_by_running_it_again(tmp_path: Path, shift_log: Any,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the third episode is being committed: two episodes are whole, nothing else looks complete;
    the same import again makes the rest, and a third run adds nothing."""
    import ros_robodata.dataset.importers.import_split as importer
    from ros_robodata.dataset.split import SplitSpec

    dataset = Dataset.create(tmp_path / 'ds')
    (recording,) = find_recordings([shift_log.path])
    options = ImportOptions(split=SplitSpec('every', 60.0))
    real_commit = importer.commit_episode
    calls = []

    def commit_then_interrupt(*args: Any) -> None:
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        real_commit(*args)

    monkeypatch.setattr(importer, 'commit_episode', commit_then_interrupt)
    with pytest.raises(KeyboardInterrupt), import_lock(dataset):
        import_recording(dataset, recording, options)
    assert len(dataset.episode_ids()) == 2 and no_leftovers(dataset.root)
    monkeypatch.setattr(importer, 'commit_episode', real_commit)
    with import_lock(dataset):
        result = import_recording(dataset, recording, options)
    assert len(result.episodes) == 8 and len(result.existing) == 2
    assert len(dataset.episode_ids()) == 10 and no_leftovers(dataset.root)
    with import_lock(dataset):
        assert import_recording(dataset, recording, options).episodes == []


def test_a_killed_import_leaves_nothing_that_looks_complete(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            shift_log: Any) -> None:
    """What SIGKILL leaves (a staging folder with half a bag, an empty reserved folder) is not an episode; the next
    import clears it and makes the episode whole."""
    source = tmp_path / 'cell_log.mcap'
    write_mcap_ros2(source)
    root = tmp_path / 'ds'
    Dataset.create(root)
    staging = root / 'episodes' / '.cell_log.importing' / 'bag'
    staging.mkdir(parents=True)
    (staging / 'cell_log.mcap').write_bytes(source.read_bytes()[:1000])
    (root / 'episodes' / 'cell_log').mkdir()
    assert run(capsys, 'list', root, '--json')[1].strip() == '[]'
    assert run(capsys, 'import', source, '--dataset', root)[0] == 0
    assert episodes_of(root) == ['cell_log'] and no_leftovers(root)
    assert bag_counts(root / 'episodes' / 'cell_log' / 'bag') == bag_counts(source)
    # killed after the rename, before the catalog row: the episode is whole, and the next import lists it
    Dataset.open(root).catalog.delete('cell_log')
    write_mcap_ros2(tmp_path / 'next.mcap', messages=20)
    assert run(capsys, 'import', tmp_path / 'next.mcap', '--dataset', root)[0] == 0
    assert [row.id for row in Dataset.open(root).list()] == ['cell_log', 'next']


# -- videos --------------------------------------------------------------------------------------------------


def write_video_with_dark_stretch(path: Path, frames: int = 150, dark: tuple[int, int] = (60, 90)) -> None:
    """An MP4 written by OpenCV at 30 fps: a textured, moving scene whose frames dark[0]..dark[1] are near black
    (a hand over the lens, lights out)."""
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*'mp4v'), 30.0, (320, 240))
    rng = np.random.default_rng(3)
    base = rng.integers(40, 215, (240, 320, 3), dtype=np.uint8)
    for i in range(frames):
        frame = np.roll(base, 2 * i, axis=1)
        if dark[0] <= i < dark[1]:
            frame = (frame // 20).astype(np.uint8)
        writer.write(frame)
    writer.release()


def test_a_video_with_a_dark_stretch_is_imported_and_scored(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    video = tmp_path / 'kitchen_tidy.mp4'
    write_video_with_dark_stretch(video)
    start = '2026-03-02T10:15:00Z'
    code, out, err = run(capsys, 'import', video, '--dataset', tmp_path / 'ds', '--profile',
                         CONFIG / 'phone_video.yaml', '--start', start, '--task', 'tidy')
    assert (code, err) == (0, ''), out
    episode = episode_yaml(tmp_path / 'ds', 'kitchen_tidy')
    assert episode['mode'] == 'human' and episode['source']['video']['clock'] == 'start'
    assert episode['start_ns'] == 1772446500 * 10**9
    assert episode['topics']['/camera/phone/image_raw/compressed']['count'] == 150
    code, out, err = run(capsys, 'score', tmp_path / 'ds', '--json')
    assert code == 0, err
    findings = json.loads(out)['episodes']['kitchen_tidy']['findings']
    dark = [f for f in findings if f['check'] == 'image.dark']
    assert len(dark) == 1
    (first, last), = dark[0]['ranges_s']
    assert abs(first - 2.0) <= 0.1 and abs(last - 3.0) <= 0.15  # frames 60..89 at 30 fps
    assert not any(f['check'].startswith('motion.') for f in findings)
    assert 'no joint_states in the profile' in err  # said once, for the whole run


def test_segmenting_a_rig_without_a_gripper_says_there_is_nothing_to_do(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    video = tmp_path / 'clip.mp4'
    write_video_with_dark_stretch(video, frames=30, dark=(0, 0))
    assert run(capsys, 'import', video, '--dataset', tmp_path / 'ds', '--profile', CONFIG / 'phone_video.yaml')[0] == 0
    code, out, err = run(capsys, 'segment', tmp_path / 'ds')
    assert (code, err) == (0, '') and out.startswith('nothing to segment: the profile')
    assert 'names no gripper or wrench topic' in out
    assert not (tmp_path / 'ds' / 'episodes' / 'clip' / 'events.json').exists()


def test_a_real_gopro_video_keeps_its_clock_and_tags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    video = tmp_path / 'max-heromode.mp4'
    shutil.copy(real_data('gopro/max-heromode.mp4'), video)
    code, out, err = run(capsys, 'import', video, '--dataset', tmp_path / 'ds', '--profile',
                         CONFIG / 'phone_video.yaml')
    assert (code, err) == (0, ''), out
    episode = episode_yaml(tmp_path / 'ds', 'max-heromode')
    source = episode['source']['video']
    assert source['clock'] == 'creation_time' and source['metadata']['location'].startswith('+33.1268-117.3273')
    assert episode['start_ns'] == source['creation_time_ns'] == 1_574_091_932 * 10**9
    assert episode['topics']['/camera/phone/image_raw/compressed']['count'] == 315
    assert video.exists()  # copy: the source stays


# -- rigs without an arm --------------------------------------------------------------------------------------


def write_vehicle_bag(path: Path, scans: int = 6) -> None:
    """A car's bag: a 15 Hz front camera (real photos) and the real Velodyne scan at 10 Hz, no joint states."""
    from ros_robodata.bag.image import encode_image
    from ros_robodata.bag.pointcloud import encode_pointcloud, pointfield_list
    from ros_robodata.bag.types import typestore
    from test.real_data import read_photos
    from test.rig_logs import header
    from test.test_pointcloud import read_binary_pcd

    types = typestore().types
    points, _ = read_binary_pcd(real_data('velodyne_scan.pcd'))
    cloud = encode_pointcloud(points)
    cloud['fields'] = pointfield_list(cloud['fields'], types['sensor_msgs/msg/PointField'])
    photos = read_photos(width=320)
    with BagWriter(path) as writer:
        writer.add_topic('/camera/front/image_raw', 'sensor_msgs/msg/Image')
        writer.add_topic('/velodyne_points', 'sensor_msgs/msg/PointCloud2')
        frames = [(T0_NS + i * 66_666_667, 'camera') for i in range(scans * 3 // 2)]
        sweeps = [(T0_NS + i * 100_000_000, 'lidar') for i in range(scans)]
        for t, kind in sorted(frames + sweeps):
            if kind == 'camera':
                image = types['sensor_msgs/msg/Image'](header=header(t, 'camera'),
                                                       **encode_image(photos[len(t.__str__()) % 4], 'rgb8'))
                writer.write_message('/camera/front/image_raw', t + 5_000_000, image)
            else:
                msg = types['sensor_msgs/msg/PointCloud2'](header=header(t, 'velodyne'), **cloud)
                writer.write_message('/velodyne_points', t + 20_000_000, msg)


def test_a_vehicle_bag_exports_frames_with_no_word_of_joint_states(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    bag = tmp_path / 'drive_0001'
    write_vehicle_bag(bag)
    code, out, err = run(capsys, 'export', 'frames', bag, '--profile', CONFIG / 'vehicle.yaml', '--out',
                         tmp_path / 'frames', '--lidar', '--tolerance', '60ms', '--tasks', 'none')
    assert (code, err) == (0, ''), out
    manifest = json.loads((tmp_path / 'frames' / 'manifest.json').read_text())
    assert len(manifest['frames']) == 9 and all(f['joint_state'] is None for f in manifest['frames'])
    assert all('lidar_roof' in f['sensors'] for f in manifest['frames'])
    assert 'joint_state' not in out.replace('no joint_states in the profile: frames carry no joint state', '')
    assert out.count('joint_states') == 1  # said once, not per frame
    assert 'no partner' not in out


# -- bad input -------------------------------------------------------------------------------------------------


def test_a_topic_typed_unlike_the_profile_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / 'imu_log.mcap'
    write_mcap_ros2(source, custom=False)
    profile = tmp_path / 'p.yaml'
    profile.write_text('robot: {name: x}\ntopics:\n  joint_states: {topic: /arm/joint_states, '
                       'type: sensor_msgs/msg/JointState}\n  wrench: {topic: /acme/widget, '
                       'type: geometry_msgs/msg/WrenchStamped}\n')
    write_mcap_ros2(source.with_name('w.mcap'))
    code, _out, err = run(capsys, 'import', source.with_name('w.mcap'), '--dataset', tmp_path / 'ds', '--profile',
                         profile)
    assert code == 1 and len(err.splitlines()) == 1
    assert '/acme/widget is acme_msgs/msg/Widget here, but the profile' in err and 'another rig' in err
    assert not (tmp_path / 'ds').exists()  # an import that fails creates nothing


def test_an_unreadable_video_is_one_line_and_nothing_imported(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    video = tmp_path / 'upload_17.mp4'
    video.write_bytes(b'this is not a video at all' * 100)
    code, _, err = run(capsys, 'import', video, '--dataset', tmp_path / 'ds', '--profile',
                       CONFIG / 'phone_video.yaml')
    assert code == 1 and len(err.splitlines()) == 1 and 'upload_17.mp4: not a readable video' in err
    assert not (tmp_path / 'ds').exists()  # an import that fails creates nothing


def test_the_same_content_twice_names_the_episode_it_is(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / 'monday.mcap'
    write_mcap_ros2(source)
    assert run(capsys, 'import', source, '--dataset', tmp_path / 'ds')[0] == 0
    renamed = tmp_path / 'elsewhere' / 'copy_of_monday.mcap'
    renamed.parent.mkdir()
    shutil.copy(source, renamed)
    code, out, _err = run(capsys, 'import', renamed, '--dataset', tmp_path / 'ds')
    assert code == 0 and f'{renamed}: already imported as monday: skipped' in out
    assert episodes_of(tmp_path / 'ds') == ['monday']


def test_a_folder_holding_the_dataset_does_not_import_the_dataset_into_itself(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_mcap_ros2(tmp_path / 'tuesday.mcap')
    assert run(capsys, 'import', tmp_path, '--dataset', tmp_path / 'ds')[0] == 0
    code, out, err = run(capsys, 'import', tmp_path, '--dataset', tmp_path / 'ds')
    assert code == 0 and 'tuesday.mcap: already imported as tuesday' in out
    assert 'inside the dataset itself: skipped' in err and episodes_of(tmp_path / 'ds') == ['tuesday']


def test_a_file_name_is_made_a_safe_episode_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / 'Bäckerei run #3 (final).mcap'
    write_mcap_ros2(source)
    hostile = tmp_path / '...mcap'
    write_mcap_ros2(hostile, messages=50)
    code, out, err = run(capsys, 'import', source, '--dataset', tmp_path / 'ds')
    assert code == 0 and 'episode Backerei_run_3_final:' in out
    code, out, err = run(capsys, 'import', hostile, '--dataset', tmp_path / 'ds')
    assert code == 1 and len(err.splitlines()) == 1
    assert "'..': nothing in this name is usable as an episode id; give one with --id" in err
    assert episodes_of(tmp_path / 'ds') == ['Backerei_run_3_final'] and no_leftovers(tmp_path / 'ds')
    assert run(capsys, 'import', hostile, '--dataset', tmp_path / 'ds', '--id', 'dots')[0] == 0


# -- link and move --------------------------------------------------------------------------------------------


def test_link_reads_nothing_but_the_index_and_verify_sees_the_source_change(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], shift_log: Any) -> None:
    source = tmp_path / 'fleet' / 'robot7'
    shutil.copytree(shift_log.path, source)
    code, out, err = run(capsys, 'import', source, '--dataset', tmp_path / 'ds', '--link')
    assert (code, err) == (0, ''), out
    bag = tmp_path / 'ds' / 'episodes' / 'robot7' / 'bag'
    (mcap,) = bag.glob('*.mcap')
    assert mcap.is_symlink() and mcap.resolve() == next(source.glob('*.mcap')).resolve()
    episode = episode_yaml(tmp_path / 'ds', 'robot7')
    assert episode['topics']['/joint_states']['count'] == shift_log.counts['/joint_states']
    assert 'not measured' in episode['loss']['note']
    assert run(capsys, 'verify', tmp_path / 'ds')[0] == 0
    with next(source.glob('*.mcap')).open('r+b') as f:  # someone rewrites the source in place
        f.seek(1 << 20)
        f.write(b'\0' * 64)
    code, out, _ = run(capsys, 'verify', tmp_path / 'ds')
    assert code == 1 and 'changed since it was imported' in out


def test_move_removes_the_source_once_the_episode_is_whole(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / 'inbox' / 'take_1.mcap'
    source.parent.mkdir()
    written = write_mcap_ros2(source)
    assert run(capsys, 'import', source, '--dataset', tmp_path / 'ds', '--move')[0] == 0
    assert not source.exists()
    assert bag_counts(tmp_path / 'ds' / 'episodes' / 'take_1' / 'bag') == written
    assert run(capsys, 'verify', tmp_path / 'ds')[0] == 0


# -- watching a folder -----------------------------------------------------------------------------------------


def write_slowly(folder: Path, pieces: int = 5, pause_s: float = 0.3) -> int:
    """A bag written as a recorder writes it: chunks flushed over `pieces` x `pause_s`, metadata.yaml at the end."""
    from test.rig_logs import joint_state

    count = 0
    with BagWriter(folder) as writer:
        writer.add_topic('/joint_states', 'sensor_msgs/msg/JointState')
        for piece in range(pieces):
            for i in range(200):
                t = T0_NS + (piece * 200 + i) * 10_000_000
                writer.write_message('/joint_states', t, joint_state(t, [0.001 * i, 0.0, 0.0]))
                count += 1
            writer.flush()
            time.sleep(pause_s)
    return count


def test_watch_imports_a_bag_once_it_is_complete_and_only_once(tmp_path: Path) -> None:
    inbox = tmp_path / 'inbox'
    inbox.mkdir()
    dataset = Dataset.create(tmp_path / 'ds')
    imported: list[Any] = []
    watcher = Watcher(inbox, dataset, ImportOptions(), settle_s=1.0, on_imported=imported.append)
    counts: list[int] = []
    writer = threading.Thread(target=lambda: counts.append(write_slowly(inbox / 'shift_a')))
    writer.start()
    seen_while_writing = []
    while writer.is_alive():
        watcher.poll()
        seen_while_writing.append(len(dataset.episode_ids()))
        time.sleep(0.1)
    writer.join()
    for _ in range(4):
        watcher.poll()
        time.sleep(0.2)
    assert set(seen_while_writing) == {0}  # never taken while it was being written
    assert [r.episodes for r in imported] == [['shift_a']]
    assert bag_counts(dataset.bag_dir('shift_a')) == {'/joint_states': counts[0]}
    restarted = Watcher(inbox, Dataset.open(tmp_path / 'ds'), ImportOptions(), settle_s=0.0)
    restarted.poll()
    assert restarted.poll() == [] and dataset.episode_ids() == ['shift_a']  # remembered: not even read again
    shutil.rmtree(tmp_path / 'ds' / '.watch')  # without its memory, the content id still tells
    forgetful = Watcher(inbox, Dataset.open(tmp_path / 'ds'), ImportOptions(), settle_s=0.0)
    forgetful.poll()
    results = forgetful.poll()
    assert [r.existing for r in results] == [['shift_a']] and dataset.episode_ids() == ['shift_a']


def test_watch_takes_a_bare_mcap_once_its_size_settled(tmp_path: Path) -> None:
    inbox = tmp_path / 'inbox'
    inbox.mkdir()
    dataset = Dataset.create(tmp_path / 'ds')
    watcher = Watcher(inbox, dataset, ImportOptions(), settle_s=0.5)
    part = inbox / 'upload.mcap'
    write_mcap_ros2(tmp_path / 'whole.mcap')
    data = (tmp_path / 'whole.mcap').read_bytes()
    part.write_bytes(data[: len(data) // 2])
    assert watcher.poll() == [] and watcher.poll() == []
    time.sleep(0.6)
    part.write_bytes(data)  # the rest arrived: it changed, so the wait starts again
    assert watcher.poll() == []
    time.sleep(0.6)
    watcher.poll()
    assert dataset.episode_ids() == ['upload'] and bag_counts(dataset.bag_dir('upload')) == bag_counts(part)


def test_watch_from_the_command_line_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    inbox = tmp_path / 'inbox'
    inbox.mkdir()
    process = subprocess.Popen(
        [sys.executable, '-m', 'ros_robodata.cli.main', 'import', '--watch', str(inbox), '--dataset',
         str(tmp_path / 'ds'), '--interval', '200ms', '--settle', '500ms'],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        write_mcap_ros2(inbox / 'first.mcap')
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (tmp_path / 'ds' / 'episodes' / 'first' / 'episode.yaml').exists():
            time.sleep(0.1)
        time.sleep(0.5)
        process.send_signal(signal.SIGINT)
        try:
            out, err = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            raise AssertionError(f'no exit 30 s after Ctrl-C: {signal_state(process.pid)}') from None
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert 'Traceback' not in err and 'inbox/first.mcap -> episode first' in out
    assert 'stopped watching' in out and '1 episode(s) imported' in out
    assert no_leftovers(tmp_path / 'ds')


# -- one way to name inputs ------------------------------------------------------------------------------------


def test_commands_say_what_a_bag_is_and_what_to_do(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bag = tmp_path / 'old_rig_bag'
    write_slowly(bag, pieces=1, pause_s=0)
    for command in (['score', bag], ['segment', bag], ['report', bag], ['export', 'frames', bag, '--out', 'x']):
        code, _, err = run(capsys, *command)
        assert code == 1 and len(err.splitlines()) == 1
        assert f'{bag}: a bag, not an episode of a dataset: run `robodata import {bag} --dataset D`, or pass ' \
               '--profile to work on it alone' in err
    folder = tmp_path / 'bags'
    folder.mkdir()
    shutil.copytree(bag, folder / 'one')
    shutil.copytree(bag, folder / 'two')
    code, _, err = run(capsys, 'score', folder)
    assert code == 1 and 'a folder of bags, not an episode of a dataset' in err and 'work on them alone' in err


def test_score_a_folder_of_bags_with_a_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               shift_log: Any, log_profile: Path) -> None:
    folder = tmp_path / 'bags'
    for name in ('a', 'b'):
        shutil.copytree(shift_log.path, folder / name)
    before = sorted(p.name for p in folder.rglob('*'))
    code, out, err = run(capsys, 'score', folder, '--profile', log_profile, '--json')
    assert code == 0, err
    data = json.loads(out)
    assert sorted(data['episodes']) == ['a', 'b'] and data['failed'] == {}
    assert sorted(p.name for p in folder.rglob('*')) == before  # nothing written beside the bags


def test_catalog_rebuild_and_repair_say_what_they_skipped_and_did(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / 'ds'
    source = tmp_path / 'a.mcap'
    write_mcap_ros2(source)
    assert run(capsys, 'import', source, '--dataset', root)[0] == 0
    by_hand = root / 'episodes' / 'copied_by_hand' / 'bag'
    shutil.copytree(root / 'episodes' / 'a' / 'bag', by_hand)
    (root / 'episodes' / 'stopped').mkdir()
    code, out, _ = run(capsys, 'catalog', 'rebuild', root)
    assert code == 0 and 'catalog rebuilt: 1 episode(s), 2 folder(s) skipped' in out
    assert 'episodes/copied_by_hand: no episode.yaml (a bag copied in by hand?)' in out
    code, out, _ = run(capsys, 'repair', root)
    assert code == 0
    assert 'copied_by_hand: registered as an episode (220 messages, outcome unknown' in out
    assert 'stopped: empty folder (a recording or an import that was stopped): removed' in out
    assert 'a: whole, nothing to do' in out and '3 episode folder(s) checked' in out
    assert episodes_of(root) == ['a', 'copied_by_hand'] and run(capsys, 'verify', root)[0] == 0
    code, out, _ = run(capsys, 'repair', root)
    assert '2 episode folder(s) checked: 0 repaired, 0 not repairable, 2 whole' in out



def test_a_log_from_an_earlier_ros_robodata_splits_on_its_episode_events(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """EpisodeEvent gained data_start; a log recorded before carries the old definition, which its bytes follow."""
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    old_text = '\n'.join(line for line in (CONFIG.parent / 'msg' / 'EpisodeEvent.msg').read_text().splitlines()
                         if 'data_start' not in line)
    store = get_typestore(Stores.ROS2_JAZZY)
    store.register(get_types_from_msg(old_text, 'ros_robodata/msg/EpisodeEvent'))
    types = store.types
    event = types['ros_robodata/msg/EpisodeEvent']
    log = tmp_path / 'old_log'
    t0 = 1_700_000_000_000_000_000
    bag = BagWriter(log).open()
    bag.add_topic('/robodata/episode_events', 'ros_robodata/msg/EpisodeEvent', store=store)
    bag.add_topic('/joint_states', 'sensor_msgs/msg/JointState')
    for i in range(150):
        sec, nsec = divmod(t0 + i * 20_000_000, 1_000_000_000)
        msg = types['sensor_msgs/msg/JointState'](
            header=types['std_msgs/msg/Header'](stamp=types['builtin_interfaces/msg/Time'](sec=sec, nanosec=nsec),
                                                frame_id=''),
            name=['shoulder', 'elbow', 'wrist'], position=np.array([0.01 * i, 0.0, 0.0]), velocity=np.array([]),
            effort=np.array([]))
        bag.write('/joint_states', t0 + i * 20_000_000, store.serialize_cdr(msg, 'sensor_msgs/msg/JointState'))
    for t, kind, status in ((t0 + 500_000_000, event.START, 'recording'), (t0 + 2_500_000_000, event.STOP,
                                                                            'complete')):
        sec, nsec = divmod(t, 1_000_000_000)
        msg = event(header=types['std_msgs/msg/Header'](stamp=types['builtin_interfaces/msg/Time'](sec=sec,
                                                                                                  nanosec=nsec),
                                                        frame_id=''),
                    event=kind, episode_id='r1', task='pick', operator_name='ana', mode='teleop', outcome='unknown',
                    status=status)
        bag.write('/robodata/episode_events', t, store.serialize_cdr(msg, 'ros_robodata/msg/EpisodeEvent'))
    bag.close()
    profile = tmp_path / 'shift.yaml'
    profile.write_text(LOG_PROFILE)
    code, out, err = run(capsys, 'import', log, '--dataset', tmp_path / 'ds', '--profile', profile,
                         '--split-on-topic', '/robodata/episode_events')
    assert (code, err) == (0, ''), out
    data = Dataset.open(tmp_path / 'ds')
    (episode_id,) = data.episode_ids()
    assert (data.episode(episode_id).task, data.episode(episode_id).operator) == ('pick', 'ana')
