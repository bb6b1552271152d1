"""The core as a Python user calls it: the front-door functions, the episodes they pick, the errors they raise
(each the one line the command would print), and the exit statuses the commands map them to."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from ros_robodata import (
    Dataset,
    DatasetError,
    Episode,
    ExportOptions,
    Filters,
    RobodataError,
    export_frames,
    score,
    segment,
    write_report,
)
from ros_robodata.cli.main import main
from ros_robodata.dataset.targets import as_target
from ros_robodata.profile import load_profile
from ros_robodata.sim.to_bag import write_sim_episode
from test.profiles import CONFIG, PROFILE


@pytest.fixture(scope='module')
def sim_bags(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two short simulated episodes as bags on their own."""
    folder = tmp_path_factory.mktemp('bags')
    profile = load_profile(PROFILE)
    for seed in (1, 2):
        write_sim_episode(folder / f'take_{seed}', profile, seed, max_duration_s=5.0)
    return folder


def make_dataset(root: Path, bags: Path, specs: list[dict[str, Any]]) -> Dataset:
    """A dataset whose episodes are copies of the simulated bags, with the given task/outcome/status."""
    import shutil

    dataset = Dataset.create(root, profile=load_profile(PROFILE))
    sources = sorted(bags.iterdir())
    for n, spec in enumerate(specs):
        episode_id = f'ep{n}'
        shutil.copytree(sources[n % len(sources)], dataset.bag_dir(episode_id))
        start = spec.pop('start_ns', 1_700_000_000_000_000_000 + n)
        dataset.add_episode(Episode(id=episode_id, status=spec.pop('status', 'complete'), start_ns=start, **spec))
        dataset.record_checksums(episode_id)
    return dataset


def test_every_analysis_picks_the_same_episodes(tmp_path: Path, sim_bags: Path) -> None:
    dataset = make_dataset(tmp_path / 'ds', sim_bags, [
        {'task': 'pick', 'outcome': 'success'}, {'task': 'pick', 'outcome': 'failure'},
        {'task': 'stack', 'outcome': 'success'}, {'task': 'pick', 'outcome': 'success', 'status': 'discarded'}])
    assert sorted(segment(dataset).results) == ['ep0', 'ep1', 'ep2']  # the discarded one is left out
    assert sorted(segment(dataset, filters=Filters(status='discarded')).results) == ['ep3']
    assert sorted(score(dataset, filters=Filters(task='pick')).scores) == ['ep0', 'ep1']
    assert sorted(score(dataset, filters=Filters(outcome='success')).scores) == ['ep0', 'ep2']
    frames = export_frames(dataset, tmp_path / 'frames', ExportOptions(), filters=Filters(task='stack'))
    assert frames.exported == [] and list(frames.failed) == ['ep2']  # these bags hold no camera
    assert 'the reference camera' in frames.failed['ep2']


def test_a_datasets_episodes_folder_is_the_dataset(tmp_path: Path, sim_bags: Path) -> None:
    """`robodata score DS/episodes` (tab completion stops there) works on DS, not on DS's bags as foreign ones."""
    dataset = make_dataset(tmp_path / 'ds', sim_bags, [{'task': 'pick'}, {'task': 'pick'}])
    target = as_target(tmp_path / 'ds' / 'episodes')
    assert target.kind == 'dataset' and target.dataset is not None and target.dataset.root == dataset.root
    assert sorted(score(tmp_path / 'ds' / 'episodes').scores) == ['ep0', 'ep1']


def test_since_keeps_what_started_after_a_moment_or_a_duration_ago(tmp_path: Path, sim_bags: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    now = time.time_ns()
    make_dataset(tmp_path / 'ds', sim_bags, [{'start_ns': now - 3 * 86_400 * 10**9}, {'start_ns': now - 3600 * 10**9}])
    assert main(['list', str(tmp_path / 'ds'), '--since', '24h', '--json']) == 0
    assert [row['id'] for row in json.loads(capsys.readouterr().out)] == ['ep1']
    day = time.strftime('%Y-%m-%d', time.gmtime(now / 1e9 - 2 * 86_400))
    assert main(['list', str(tmp_path / 'ds'), '--since', day, '--json']) == 0
    assert [row['id'] for row in json.loads(capsys.readouterr().out)] == ['ep1']
    assert main(['list', str(tmp_path / 'ds'), '--since', 'yesterday']) == 1
    assert main(['list', str(tmp_path / 'ds'), '--since', '1day']) == 1
    assert ("--since: '1day' is neither a duration back from now (24h, 7d, 30min) nor a time (2026-03-02, "
            '2026-03-02T10:15:00Z, or seconds since the epoch)') in capsys.readouterr().err


def test_bags_where_they_lie_are_named_after_their_folders(tmp_path: Path, sim_bags: Path) -> None:
    """Runs saved as run_a/bag.mcap, run_b/bag.mcap (and one rosbag2 folder named bag) are scored as run_a,
    run_b and day2: the names in the folder listing, not bag, bag-2, bag-3."""
    import shutil

    source = next(sim_bags.iterdir())
    mcap = next(source.glob('*.mcap'))
    for run_name in ('run_a', 'run_b'):
        (tmp_path / 'runs' / run_name).mkdir(parents=True)
        shutil.copy(mcap, tmp_path / 'runs' / run_name / 'bag.mcap')
    shutil.copytree(source, tmp_path / 'runs' / 'day2' / 'bag')
    (tmp_path / 'runs' / 'day2' / 'bag' / mcap.name).rename(tmp_path / 'runs' / 'day2' / 'bag' / 'bag_0.mcap')
    meta = tmp_path / 'runs' / 'day2' / 'bag' / 'metadata.yaml'
    meta.write_text(meta.read_text().replace(mcap.name, 'bag_0.mcap'))
    assert sorted(score(tmp_path / 'runs', profile=PROFILE).scores) == ['day2', 'run_a', 'run_b']
    assert list(score(tmp_path / 'runs' / 'run_a' / 'bag.mcap', profile=PROFILE).scores) == ['run_a']


def test_a_listing_says_what_it_left_out(tmp_path: Path, sim_bags: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_dataset(tmp_path / 'ds', sim_bags, [{}, {'status': 'discarded'}])
    assert main(['list', str(tmp_path / 'ds')]) == 0
    out = capsys.readouterr().out
    assert 'ep0' in out and 'ep1' not in out.split('\n1 discarded')[0]
    assert '1 discarded episode(s) not listed (--status discarded lists them)' in out


def test_bags_on_their_own_need_a_profile_and_have_no_labels(sim_bags: Path) -> None:
    bag = sim_bags / 'take_1'
    with pytest.raises(RobodataError, match=r'a bag, not an episode of a dataset: run `robodata import .*`, or pass '
                                            r'--profile to work on it alone$'):
        segment(bag)
    with pytest.raises(RobodataError, match=r'a folder of bags, not an episode of a dataset: .* work on them alone'):
        score(sim_bags)
    with pytest.raises(RobodataError, match='--task, --outcome and --status pick episodes of a dataset; a folder '
                                            'of bags has none'):
        score(sim_bags, profile=PROFILE, filters=Filters(task='pick'))
    run = segment(bag, profile=PROFILE)
    assert list(run.results) == ['take_1'] and run.results['take_1'].events
    assert sorted(p.name for p in bag.iterdir()) == ['metadata.yaml', 'take_1.mcap']  # nothing written


def test_wrong_arguments_raise_the_line_the_command_prints(tmp_path: Path, sim_bags: Path) -> None:
    dataset = make_dataset(tmp_path / 'ds', sim_bags, [{}])
    with pytest.raises(RobodataError, match='segmenting needs the gripper or the wrench: both were left out'):
        segment(dataset, use_gripper=False, use_wrench=False)
    with pytest.raises(RobodataError, match=r"^--outcome 'great' is not one of success, failure, recovery, unknown$"):
        Filters(outcome='great')
    with pytest.raises(RobodataError, match=r"--cameras: unknown camera 'thermal'; the profile has: wrist, scene"):
        export_frames(dataset, tmp_path / 'out', ExportOptions(cameras=('thermal',)))
    assert not (tmp_path / 'out').exists()  # checked before anything is written
    with pytest.raises(RobodataError, match=r'not scored yet \(no quality_summary.json\): run `robodata score'):
        write_report(dataset)
    with pytest.raises(RobodataError, match=r'dataset.yaml: a report is written to an .html file'):
        write_report(dataset, dataset.root / 'dataset.yaml')
    with pytest.raises(RobodataError, match=r'nothing to score: the dataset has no episodes yet$'):
        score(Dataset.create(tmp_path / 'empty', profile=load_profile(PROFILE)))
    with pytest.raises(DatasetError, match=r'dataset\.yaml holds no robot profile; pass --profile'):
        segment(Dataset.create(tmp_path / 'bare'))
    studio = Dataset.create(tmp_path / 'studio', profile=load_profile(CONFIG / 'capture_studio.yaml'))
    assert 'names no gripper or wrench topic' in segment(studio).nothing_to_do
    with pytest.raises(RobodataError, match='names no camera: nothing to export frames from'):
        export_frames(dataset, tmp_path / 'out', profile=_no_camera(tmp_path))


def test_a_filter_that_picks_nothing_is_named_with_what_the_dataset_holds(tmp_path: Path, sim_bags: Path) -> None:
    """The README's example run on a dataset of another task: the error names the filter, not an empty dataset."""
    dataset = make_dataset(tmp_path / 'ds', sim_bags, [
        {'task': 'pick_place_cube', 'outcome': 'success'}, {'task': 'stack', 'outcome': 'failure'}])
    with pytest.raises(RobodataError, match=r"nothing to score: no episode has task 'pick_cube' "
                                            r"\(here: pick_place_cube, stack\)$"):
        score(dataset, filters=Filters(task='pick_cube'))
    with pytest.raises(RobodataError, match=r"nothing to export: no episode has task 'stack' and outcome 'success' "
                                            r"together$"):
        export_frames(dataset, tmp_path / 'out', filters=Filters(task='stack', outcome='success'))
    with pytest.raises(RobodataError, match=r"no episode starts at or after 2030-01-01 00:00 UTC \(the latest "
                                            r"started 2023-11-14 22:13 UTC\)$"):
        score(dataset, filters=Filters(since_ns=1_893_456_000_000_000_000))
    assert not (tmp_path / 'out').exists()


def _no_camera(tmp_path: Path) -> Path:
    path = tmp_path / 'arm_only.yaml'
    path.write_text('robot: {name: arm}\ntopics:\n  joint_states: {topic: /joint_states, '
                    'type: sensor_msgs/msg/JointState}\n')
    return path


def test_a_corrupt_events_file_is_named_and_scoring_goes_on(tmp_path: Path, sim_bags: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    dataset = make_dataset(tmp_path / 'ds', sim_bags, [{'outcome': 'success'}, {'outcome': 'success'}])
    (dataset.episode_dir('ep0') / 'events.json').write_text('{"events": [{"kind": "grasp"}]}')  # no t_ns
    (dataset.episode_dir('ep1') / 'events.json').write_text('{not json')
    run = score(dataset)
    assert sorted(run.scores) == ['ep0', 'ep1'] and run.failed == {}
    for episode_id in ('ep0', 'ep1'):
        note = run.notes[episode_id][0]
        assert str(dataset.episode_dir(episode_id) / 'events.json') in note and 'success criteria not judged' in note
        assert run.scores[episode_id].success is None
    assert 'event 0 is not a mapping with a kind and an integer t_ns' in run.notes['ep0'][0]
    assert main(['score', str(dataset.root)]) == 0
    assert 'robodata score: ep1: note: ' in capsys.readouterr().err


def test_finished_with_failures_exits_3_and_bad_input_exits_1(tmp_path: Path, sim_bags: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    dataset = make_dataset(tmp_path / 'ds', sim_bags, [{}, {}])
    (mcap,) = dataset.bag_dir('ep1').glob('*.mcap')
    mcap.write_bytes(b'this is no longer a bag')
    assert main(['score', str(dataset.root)]) == 3
    err = capsys.readouterr().err
    (line,) = err.strip().splitlines()  # the one episode that failed, named with its cause; ep0 was scored
    assert line == f'robodata score: ep1: {mcap}: not an MCAP file (no MCAP magic at its start)', err
    assert (dataset.episode_dir('ep0') / 'quality.json').is_file() and mcap.read_bytes() == b'this is no longer a bag'
    assert main(['segment', str(dataset.root)]) == 3
    assert main(['score', str(dataset.episode_dir('ep1'))]) == 1  # the one episode named: bad input
    assert capsys.readouterr().err.splitlines()[-1].startswith('robodata score: error: ')


def test_import_then_segments_and_scores_as_the_commands_do(tmp_path: Path, sim_bags: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """`import --then segment,score`: the new episodes get events.json and quality.json, and the scores it reports
    are the catalog's, the same `robodata score` then writes for them."""
    code = main(['import', str(sim_bags), '--dataset', str(tmp_path / 'ds'), '--profile', str(PROFILE),
                 '--then', 'segment,score', '--json'])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    dataset = Dataset.open(tmp_path / 'ds')
    ids = sorted(dataset.episode_ids())
    assert sorted(out['then']['segment']) == ids and sorted(out['then']['score']) == ids
    for episode_id in ids:
        events = json.loads((dataset.episode_dir(episode_id) / 'events.json').read_text())
        assert out['then']['segment'][episode_id] == len(events['events'])
        assert (dataset.episode_dir(episode_id) / 'quality.json').is_file()
    assert {row.id: row.score for row in dataset.list()} == out['then']['score']
    assert main(['import', str(sim_bags), '--dataset', str(tmp_path / 'ds'), '--then', 'label']) == 1
    assert capsys.readouterr().err.strip() == ('robodata import: error: --then: unknown step(s) label (any of '
                                               'segment, score)')
