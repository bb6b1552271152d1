"""Three embodiments in one dataset, as a team pools its own rig with two public robots before fine-tuning: our
simulated cell, a real Reachy 2 and a real Unitree G1 humanoid with dexterous hands (both vendored under test/data,
with their licences) merged into one dataset whose episodes each keep their own robot profile; the dataset tools, a
per-robot score, the pooled export and the report all work on it, each episode read with its own robot's topics."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ros_robodata.cli.main import main
from ros_robodata.dataset import Dataset
from ros_robodata.dataset.embodiments import embodiments, profile_of
from ros_robodata.dataset.episode import Episode
from ros_robodata.profile import Profile, load_profile
from ros_robodata.report import build
from ros_robodata.report.report_signals import EpisodeSignals, EpisodeSource
from ros_robodata.report.scores import ScoredEpisode
from ros_robodata.sim.to_bag import write_sim_episode

ROOT = Path(__file__).resolve().parent.parent
PROFILE = ROOT / 'config' / 'sim_cell.yaml'
REACHY = ROOT / 'test' / 'data' / 'lerobot' / 'reachy2_apple_storage'  # real Reachy 2, LeRobot v3.0, 3 episodes
G1 = ROOT / 'test' / 'data' / 'lerobot' / 'g1_inspire_3ep'  # real Unitree G1 + Inspire hands, LeRobot v2.1, 3 episodes
ROBOTS = {'sim_cell_arm': 2, 'reachy2': 3, 'Unitree_G1_Inspire': 3}


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope='module')
def three(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two simulated episodes of our cell (with cameras), the three real Reachy 2 episodes and the three real G1
    episodes, merged (as test_pooled_embodiments.py pools the first two: an id both hold is renamed)."""
    root = tmp_path_factory.mktemp('three')
    assert main(['import', str(REACHY), '--dataset', str(root / 'reachy')]) == 0
    assert main(['import', str(G1), '--dataset', str(root / 'g1')]) == 0
    reachy = Dataset.open(root / 'reachy')
    profile = load_profile(PROFILE)
    sim = Dataset.create(root / 'rig_a', profile=profile)
    for seed, episode_id in enumerate((reachy.episode_ids()[0], '20260101-120001')):
        write_sim_episode(sim.bag_dir(episode_id), profile, seed=seed, cameras=True, image_size=(96, 72),
                          max_duration_s=3.0)
        sim.add_episode(Episode(id=episode_id, task='pick_cube', status='complete', outcome='success'))
        sim.record_checksums(episode_id)
    assert main(['merge', str(sim.root), str(reachy.root), str(root / 'g1'), '--into', str(root / 'pool')]) == 0
    return root / 'pool'


@pytest.fixture(scope='module')
def scored(three: Path) -> Path:
    """The pool scored one robot at a time (`--where "robot = X"`), as a team scores one rig's episodes."""
    for robot in ROBOTS:
        assert main(['score', str(three), '--where', f'robot = {robot}']) == 0, robot
    return three


def test_every_episode_keeps_its_own_robot(three: Path) -> None:
    ds = Dataset.open(three)
    assert [e.name for e in embodiments(ds)] == list(ROBOTS)
    robots = [profile_of(ds, ds.episode(i)).robot.name for i in ds.episode_ids()]
    assert {r: robots.count(r) for r in ROBOTS} == ROBOTS and len(robots) == sum(ROBOTS.values())
    g1 = [i for i in ds.episode_ids() if ds.episode(i).robot == 'Unitree_G1_Inspire']
    humanoid, cell = (profile_of(ds, ds.episode(i)).topics.joint_states for i in (g1[0], ds.episode_ids()[0]))
    assert humanoid is not None and humanoid.topic == '/observation/state'  # as its import wrote it
    assert cell is not None and cell.topic != '/observation/state'
    assert all(ds.episode(i).copied_from[-1]['dataset'] == 'g1' for i in g1)


@pytest.mark.parametrize('command', ['info', 'verify'])
def test_the_dataset_tools_accept_three_robots(three: Path, command: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run([command, str(three)], capsys)
    assert code == 0, (out, err)


def test_score_runs_per_robot(scored: Path) -> None:
    ds = Dataset.open(scored)
    for episode_id in ds.episode_ids():
        quality = json.loads((ds.episode_dir(episode_id) / 'quality.json').read_text())
        assert isinstance(quality['score'], float), episode_id
        missing = {f['topic'] for f in quality['findings'] if f['check'] == 'completeness.missing_topic'}
        assert missing == ({'/lidar/points'} if ds.episode(episode_id).robot == 'sim_cell_arm' else set())


def test_a_pooled_export_is_one_dataset_per_robot(three: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / 'mix'
    code, _, err = _run(['export', 'lerobot', str(three), '--out', str(out), '--pool', '--outcomes',
                         'success,unknown', '--cameras', ''], capsys)
    assert code == 0, err
    mixture = json.loads((out / 'mixture.json').read_text())
    sources = {s['name']: s for s in mixture['sources']}
    assert sorted(sources) == sorted(ROBOTS) == sorted(p.name for p in out.iterdir() if p.is_dir())
    for name, source in sources.items():
        info = json.loads((out / source['path'] / 'meta' / 'info.json').read_text())
        assert info['robot_type'] == name and info['total_episodes'] == ROBOTS[name] == source['episodes']
    assert len(sources['Unitree_G1_Inspire']['state_names']) == 26 and len(sources['reachy2']['state_names']) == 19
    assert sum(s['weight'] for s in sources.values()) == pytest.approx(1.0)


def test_report_draws_each_episode_with_its_own_robot(scored: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    drawn: dict[str, tuple[str, bool]] = {}
    read = build.read_signals

    def spy(source: EpisodeSource, ep: ScoredEpisode, profile: Profile) -> EpisodeSignals:
        signals = read(source, ep, profile)
        drawn[ep.id] = (profile.robot.name, signals.joints is not None)
        return signals

    monkeypatch.setattr(build, 'read_signals', spy)
    page = tmp_path / 'pool.html'
    assert main(['report', str(scored), '--episodes', 'all', '--out', str(page)]) == 0
    ds = Dataset.open(scored)
    assert drawn == {i: (ds.episode(i).robot, True) for i in ds.episode_ids()}  # each its own arm, drawn
    text = page.read_text(encoding='utf-8')
    sections = re.findall(r'<section class="episode" id="ep-([^"]+)">', text)
    assert sorted(sections) == sorted(ds.episode_ids())
    assert 'could not read the bag' not in text
    robots = text[text.index('<h3>Robots</h3>'):].split('</table>')[0]
    counts = dict(re.findall(r'<tr><td>([^<]+)</td><td class="num">(\d+)</td>', robots))
    assert counts == {robot: str(n) for robot, n in ROBOTS.items()}
    summarized = json.loads((scored / 'quality_summary.json').read_text())['episodes']
    assert (f'counts {summarized} of the 8 episodes shown' in text) == (summarized < 8)


def test_report_with_a_profile_of_none_of_them_reads_all_with_it(scored: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    used: set[str] = set()
    read = build.read_signals

    def spy(source: EpisodeSource, ep: ScoredEpisode, profile: Profile) -> Any:
        used.add(profile.robot.name)
        return read(source, ep, profile)

    monkeypatch.setattr(build, 'read_signals', spy)
    other = tmp_path / 'other_arm.yaml'
    text = PROFILE.read_text().replace('name: sim_cell_arm', 'name: other_arm', 1)
    assert text != PROFILE.read_text()
    other.write_text(text)
    assert main(['report', str(scored), '--episodes', '2', '--out', str(tmp_path / 'p.html'), '--profile',
                 str(other)]) == 0
    assert used == {'other_arm'}
