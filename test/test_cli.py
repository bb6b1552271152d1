"""The `robodata` command: what a user sees on real bags, episodes and datasets, and how it fails."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from mcap.reader import make_reader

from ros_robodata.cli.main import main
from ros_robodata.dataset import Dataset
from ros_robodata.dataset.audit import read_audit
from ros_robodata.dataset.verify import verify_dataset
from ros_robodata.profile import load_profile


def _commands() -> list[str]:
    """Every subcommand the parser has, so a new command is covered by the help tests without editing them."""
    from ros_robodata.cli.main import build_parser

    (sub,) = [a for a in build_parser()._actions if a.dest == 'command']
    return sorted(sub.choices)


COMMANDS = _commands()
T0_NS = 1_700_000_000_000_000_000  # where the demo bags start (conftest)
PERIOD_NS = 2_000_000  # their JointState period


def run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    """`robodata ARGS` in this process: (exit code, stdout, stderr)."""
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *args: object) -> object:
    code, out, err = run(capsys, *args, '--json')
    assert code == 0, err
    return json.loads(out)


def run_process(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`robodata ARGS` as a user runs it: a separate process."""
    return subprocess.run(
        [sys.executable, '-m', 'ros_robodata.cli.main', *(str(a) for a in args)],
        capture_output=True, text=True, cwd=cwd, timeout=300, check=False,
    )


def tree(root: Path) -> dict[str, bytes]:
    """Every file under root and its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob('*')) if p.is_file()}


def truncate(file: Path, fraction: float) -> None:
    size = file.stat().st_size
    with file.open('r+b') as f:
        f.truncate(int(size * fraction))


def only_mcap(folder: Path) -> Path:
    (mcap,) = folder.glob('*.mcap')
    return mcap


# -- help ------------------------------------------------------------------------------------------


@pytest.mark.parametrize('command', COMMANDS)
def test_help_for_every_subcommand(capsys, command):
    with pytest.raises(SystemExit) as done:
        main([command, '--help'])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f'usage: robodata {command}')
    assert 'options:' in out


def test_top_level_help_lists_every_subcommand(tmp_path):
    result = run_process('--help', cwd=tmp_path)
    assert result.returncode == 0
    listed = {line.split()[0] for line in result.stdout.splitlines() if line.startswith('    ') and line.split()}
    assert set(COMMANDS) <= listed
    version = run_process('--version', cwd=tmp_path)
    assert version.returncode == 0
    assert version.stdout.startswith('ros_robodata ')


# -- the error contract: one line on stderr, non-zero exit, no traceback ----------------------------


@dataclass
class Case:
    command: str
    build: Callable[[Path, Callable[..., Dataset], Callable[..., dict[str, int]]], list[object]]
    says: str  # what the error line must mention


def _broken_profile(tmp: Path) -> Path:
    path = tmp / 'broken_profile.yaml'
    path.write_text('robot:\n  name: arm\ntopics:\n  joint_states: {topic: /joint_states, type: [oops\n',
                    encoding='utf-8')
    return path


def _truncated_mcap(tmp: Path, write_demo_bag: Callable[..., dict[str, int]]) -> Path:
    write_demo_bag(tmp / 'whole', joint_messages=2000)
    cut = tmp / 'cut.mcap'
    shutil.copy(only_mcap(tmp / 'whole'), cut)
    truncate(cut, 0.6)
    return cut


def _episode(dataset: Dataset) -> Path:
    return dataset.episode_dir(dataset.episode_ids()[0])


def _stray_episode(tmp: Path, make: Callable[..., Dataset]) -> Path:
    copy = tmp / 'copied_episode'
    shutil.copytree(_episode(make(1)), copy)
    return copy


def _broken_dataset_yaml(tmp: Path, make: Callable[..., Dataset]) -> Path:
    dataset = make(1)
    (dataset.root / 'dataset.yaml').write_text('name: [unclosed\nschema_version: 1\n', encoding='utf-8')
    return dataset.root


def _corrupt_catalog(tmp: Path, make: Callable[..., Dataset]) -> Path:
    dataset = make(1)
    dataset.catalog.path.write_bytes(b'definitely not sqlite ' * 200)
    return dataset.root


def _a_file(tmp: Path, name: str) -> Path:
    (tmp / name).write_text('hello', encoding='utf-8')
    return tmp / name


def _a_dir(tmp: Path, *files: str) -> Path:
    (tmp / 'folder').mkdir()
    for name in files:
        (tmp / 'folder' / name).write_text('hello', encoding='utf-8')
    return tmp / 'folder'


ERROR_CASES = {
    'info_missing_path': Case('info', lambda t, m, w: ['info', t / 'nope'], 'nope: no such file or directory'),
    'verify_missing_path': Case('verify', lambda t, m, w: ['verify', t / 'nope'], 'nope: no such file'),
    'set_missing_path': Case('set', lambda t, m, w: ['set', t / 'nope', '--outcome', 'success'], 'nope'),
    'profile_broken_yaml': Case('profile', lambda t, m, w: ['profile', _broken_profile(t)], 'broken_profile.yaml'),
    'profile_missing': Case('profile', lambda t, m, w: ['profile', t / 'absent.yaml'], 'absent.yaml'),
    'init_with_broken_profile': Case(
        'init', lambda t, m, w: ['init', t / 'new_ds', '--profile', _broken_profile(t)], 'broken_profile.yaml'),
    'info_dir_not_a_bag': Case('info', lambda t, m, w: ['info', _a_dir(t)], 'not a dataset, an episode or a bag'),
    'info_dir_with_text_files': Case('info', lambda t, m, w: ['info', _a_dir(t, 'readme.txt')],
                                     'not a dataset, an episode or a bag'),
    'info_text_file': Case('info', lambda t, m, w: ['info', _a_file(t, 'notes.txt')],
                           'notes.txt: not a dataset, an episode or a bag'),
    'repair_truncated_mcap_file': Case('repair', lambda t, m, w: ['repair', _truncated_mcap(t, w)], 'cut.mcap'),
    'list_truncated_mcap_file': Case('list', lambda t, m, w: ['list', _truncated_mcap(t, w)], 'not a dataset'),
    'set_on_a_dataset': Case('set', lambda t, m, w: ['set', m(1).root, '--outcome', 'success'],
                             'a dataset, not an episode'),
    'set_on_a_bag': Case('set', lambda t, m, w: ['set', _episode(m(1)) / 'bag', '--outcome', 'success'],
                         'the bag of episode'),
    'set_on_a_plain_dir': Case('set', lambda t, m, w: ['set', _a_dir(t), '--status', 'approved'],
                               'not a dataset, an episode or a bag'),
    'set_on_an_episode_outside_a_dataset': Case(
        'set', lambda t, m, w: ['set', _stray_episode(t, m), '--outcome', 'success'], 'not inside a dataset'),
    'set_with_nothing_to_change': Case('set', lambda t, m, w: ['set', _episode(m(1))], 'nothing to change'),
    'init_over_a_dataset': Case('init', lambda t, m, w: ['init', m(1).root], 'a dataset exists here already'),
    'init_over_a_file': Case('init', lambda t, m, w: ['init', _a_file(t, 'ds')], 'not a folder'),
    'init_over_a_full_folder': Case('init', lambda t, m, w: ['init', _a_dir(t, 'x.txt')], 'not empty'),
    'info_broken_dataset_yaml': Case('info', lambda t, m, w: ['info', _broken_dataset_yaml(t, m)], 'dataset.yaml'),
    'list_corrupt_catalog': Case('list', lambda t, m, w: ['list', _corrupt_catalog(t, m)], 'catalog.sqlite'),
    'catalog_rebuild_on_a_bag': Case(
        'catalog', lambda t, m, w: ['catalog', 'rebuild', _episode(m(1)) / 'bag'], 'not a dataset'),
    # the node commands name themselves too (issue 21: they said `robodata: error:`), before any node starts
    'record_with_broken_profile': Case(
        'record', lambda t, m, w: ['record', '--profile', _broken_profile(t), '--dataset', t / 'ds'],
        'broken_profile.yaml'),
    'session_with_broken_profile': Case(
        'session', lambda t, m, w: ['session', '--profile', _broken_profile(t), '--dataset', t / 'ds'],
        'broken_profile.yaml'),
    'monitor_with_broken_profile': Case(
        'monitor', lambda t, m, w: ['monitor', '--profile', _broken_profile(t)], 'broken_profile.yaml'),
    'export_live_with_broken_profile': Case(
        'export live', lambda t, m, w: ['export', 'live', '--profile', _broken_profile(t), '--out', t / 'frames'],
        'broken_profile.yaml'),
}


@pytest.mark.parametrize('case', list(ERROR_CASES.values()), ids=list(ERROR_CASES))
def test_bad_input_gives_one_error_line(tmp_path, make_demo_dataset, write_demo_bag, case):
    args = case.build(tmp_path, make_demo_dataset, write_demo_bag)
    before = tree(tmp_path)
    result = run_process(*args, cwd=tmp_path)
    assert result.returncode != 0
    assert 'Traceback' not in result.stderr + result.stdout
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f'robodata {case.command}: error: ')
    assert case.says in lines[0]
    assert tree(tmp_path) == before  # a failed command leaves nothing behind


def test_verify_reads_a_bag_on_its_own_and_names_its_damage(tmp_path, write_demo_bag):
    """A bag outside any dataset has no recorded checksums: verify reads every message instead, and a cut-off
    file is a finding (exit 1), not a usage error."""
    whole = tmp_path / 'intact'
    write_demo_bag(whole)
    result = run_process('verify', whole, cwd=tmp_path)
    assert result.returncode == 0 and '1 bag(s) checked, 0 problem(s)' in result.stdout
    result = run_process('verify', _truncated_mcap(tmp_path, write_demo_bag), cwd=tmp_path)
    assert result.returncode == 1 and 'Traceback' not in result.stderr
    assert 'FAIL' in result.stdout and 'cut.mcap is damaged or truncated' in result.stdout
    assert '1 bag(s) checked, 1 problem(s)' in result.stdout
    # the verdict on stderr too, in one line, where a script looks for why it failed
    assert result.stderr.strip().splitlines() == ['robodata verify: error: 1 problem(s) in 1 of 1 checked (listed '
                                                  'on stdout)']


def test_init_with_a_broken_profile_creates_nothing(tmp_path, capsys):
    code, _, err = run(capsys, 'init', tmp_path / 'new_ds', '--profile', _broken_profile(tmp_path))
    assert code == 1
    assert err.startswith('robodata init: error: ')
    assert not (tmp_path / 'new_ds').exists()


# -- info ------------------------------------------------------------------------------------------


def test_info_json_on_a_bag(tmp_path, capsys, write_demo_bag):
    counts = write_demo_bag(tmp_path / 'bag', joint_messages=501, events=2)
    data = run_json(capsys, 'info', tmp_path / 'bag')
    assert data['kind'] == 'bag'
    assert data['storage'] == 'mcap'
    assert data['complete'] is True
    assert data['notes'] == []
    assert data['ros_distro'] == 'jazzy'
    topics = {t['topic']: t for t in data['topics']}
    assert {name: (t['type'], t['count']) for name, t in topics.items()} == {
        '/joint_states': ('sensor_msgs/msg/JointState', counts['/joint_states']),
        '/robodata/events': ('ros_robodata/msg/SegmentEvent', counts['/robodata/events']),
    }
    assert counts == {'/joint_states': 501, '/robodata/events': 2}
    assert data['message_count'] == 503
    assert data['start_ns'] == T0_NS
    assert data['duration_s'] == pytest.approx(1.0, abs=1e-6)
    assert topics['/joint_states']['rate_hz'] == pytest.approx(501, rel=1e-3)
    assert topics['/robodata/events']['rate_hz'] == pytest.approx(2, rel=1e-3)
    assert data['size_bytes'] == only_mcap(tmp_path / 'bag').stat().st_size


def test_info_text_on_a_bag(tmp_path, capsys, write_demo_bag):
    write_demo_bag(tmp_path / 'bag', joint_messages=501, events=2)
    code, out, err = run(capsys, 'info', tmp_path / 'bag')
    assert (code, err) == (0, '')
    assert 'duration 1.000 s' in out
    assert 'messages 503' in out
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith('/')}
    assert rows == {'/joint_states': ['sensor_msgs/msg/JointState', '501', '501.0'],
                    '/robodata/events': ['ros_robodata/msg/SegmentEvent', '2', '2.0']}


def test_info_json_on_an_episode(capsys, make_demo_dataset):
    dataset = make_demo_dataset([{'task': 'stack', 'operator': 'bo', 'outcome': 'recovery', 'joint_messages': 251}])
    (episode_id,) = dataset.episode_ids()
    data = run_json(capsys, 'info', dataset.episode_dir(episode_id))
    assert data['kind'] == 'episode'
    assert (data['id'], data['task'], data['operator'], data['outcome'], data['status']) == (
        episode_id, 'stack', 'bo', 'recovery', 'complete')
    assert data['duration_s'] == pytest.approx(0.5)
    assert {t['topic']: t['count'] for t in data['bag']['topics']} == {'/joint_states': 251, '/robodata/events': 2}
    assert data['bag']['size_bytes'] == only_mcap(dataset.bag_dir(episode_id)).stat().st_size
    assert data['bag']['duration_s'] == pytest.approx(0.5, abs=1e-6)


def test_info_text_on_an_episode(capsys, make_demo_dataset):
    dataset = make_demo_dataset([{'task': 'stack', 'outcome': 'failure'}])
    (episode_id,) = dataset.episode_ids()
    code, out, _ = run(capsys, 'info', dataset.episode_dir(episode_id))
    assert code == 0
    assert f'Episode {episode_id}' in out
    assert 'task=stack' in out and 'outcome=failure' in out and 'status=complete' in out
    assert '/joint_states' in out


def test_info_json_on_a_dataset(capsys, make_demo_dataset):
    dataset = make_demo_dataset([
        {'task': 'pick_cube', 'outcome': 'success', 'joint_messages': 101},
        {'task': 'pick_cube', 'outcome': 'failure', 'joint_messages': 51},
        {'task': 'stack', 'outcome': 'success', 'status': 'approved', 'joint_messages': 201},
    ])
    data = run_json(capsys, 'info', dataset.root)
    assert data['kind'] == 'dataset'
    assert data['name'] == 'demo'
    assert data['robot'] == 'sim_cell_arm'
    assert data['episodes'] == 3
    assert data['outcomes'] == {'success': 2, 'failure': 1}
    assert data['statuses'] == {'complete': 2, 'approved': 1}
    assert data['tasks'] == {'pick_cube': 2, 'stack': 1}
    assert data['duration_s'] == pytest.approx(0.2 + 0.1 + 0.4)
    assert data['message_count'] == 101 + 51 + 201 + 3 * 2
    bag_bytes = sum(p.stat().st_size for i in dataset.episode_ids() for p in dataset.bag_files(i))
    assert data['size_bytes'] == bag_bytes
    assert [e['id'] for e in data['episode_list']] == dataset.episode_ids()


def test_info_text_on_a_dataset(capsys, make_demo_dataset):
    dataset = make_demo_dataset([{'outcome': 'success'}, {'outcome': 'success'}])
    code, out, _ = run(capsys, 'info', dataset.root)
    assert code == 0
    assert 'Dataset demo' in out and 'robot=sim_cell_arm' in out
    assert '2 episodes' in out
    assert 'outcomes: success 2' in out
    for episode_id in dataset.episode_ids():
        assert episode_id in out
    header = next(line for line in out.splitlines() if line.lstrip().startswith('episode'))
    assert header.split() == ['episode', 'task', 'operator', 'mode', 'outcome', 'status', 'reviewed', 'duration',
                              's', 'messages', 'score']  # as `robodata list` has them
    scored = dataset.episode_ids()[0]
    dataset.catalog.set_scores(scored, 0.9, {})
    out = run(capsys, 'info', dataset.root)[1]
    assert next(line for line in out.splitlines() if line.startswith(scored)).split()[-1] == '0.90'
    assert run_json(capsys, 'info', dataset.root)['episode_list'][0]['score'] == 0.9


def test_info_on_a_bag_without_metadata_yaml(tmp_path, capsys, write_demo_bag):
    write_demo_bag(tmp_path / 'bag', joint_messages=300, events=1)
    whole = run_json(capsys, 'info', tmp_path / 'bag')
    (tmp_path / 'bag' / 'metadata.yaml').unlink()

    data = run_json(capsys, 'info', tmp_path / 'bag')
    assert data['topics'] == whole['topics']
    assert data['message_count'] == 301
    assert data['complete'] is False
    mcap_name = only_mcap(tmp_path / 'bag').name
    assert any('no metadata.yaml' in note and f'read {mcap_name} directly' in note for note in data['notes'])

    code, out, _ = run(capsys, 'info', tmp_path / 'bag')
    assert code == 0
    assert 'no metadata.yaml' in out
    assert '/joint_states' in out and '/robodata/events' in out


@pytest.fixture
def truncated_bag(tmp_path, write_demo_bag):
    """A bag cut to 60 % of its MCAP file, as a crash or a full disk leaves it (20k messages, several chunks)."""
    counts = write_demo_bag(tmp_path / 'bag', joint_messages=20_000, events=3)
    truncate(only_mcap(tmp_path / 'bag'), 0.6)
    return tmp_path / 'bag', counts


def test_info_on_a_truncated_mcap(capsys, truncated_bag):
    bag, written = truncated_bag
    data = run_json(capsys, 'info', bag)
    readable = {t['topic']: t['count'] for t in data['topics']}
    assert set(readable) == set(written)  # every channel was declared before the damage
    assert 0 < readable['/joint_states'] < written['/joint_states']
    assert data['message_count'] == sum(readable.values())
    assert data['complete'] is False
    # What was read is the start of the recording, without gaps.
    assert data['start_ns'] == T0_NS
    assert data['end_ns'] - data['start_ns'] in range((readable['/joint_states'] - 1) * PERIOD_NS,
                                                      readable['/joint_states'] * PERIOD_NS)
    (note,) = [n for n in data['notes'] if 'truncated' in n]
    assert f'recovered {data["message_count"]} message(s)' in note

    code, out, _ = run(capsys, 'info', bag)
    assert code == 0
    assert 'truncated' in out and f'messages {data["message_count"]}' in out


def test_info_on_a_truncated_mcap_file(capsys, truncated_bag):
    bag, _ = truncated_bag
    from_dir = run_json(capsys, 'info', bag)
    from_file = run_json(capsys, 'info', only_mcap(bag))
    assert from_file['topics'] == from_dir['topics']
    assert from_file['message_count'] == from_dir['message_count'] > 0


# -- repair ----------------------------------------------------------------------------------------


@pytest.mark.parametrize('metadata', ['kept', 'lost'])
def test_repair_a_truncated_recording_episode(capsys, make_demo_dataset, record_demo_episode, metadata):
    dataset = make_demo_dataset(0)
    episode = record_demo_episode(dataset, status='recording', joint_messages=20_000, events=3)
    episode_dir = dataset.episode_dir(episode.id)
    bag = dataset.bag_dir(episode.id)
    mcap = only_mcap(bag)
    truncate(mcap, 0.6)
    if metadata == 'lost':
        (bag / 'metadata.yaml').unlink()
    damaged_bytes = mcap.read_bytes()
    readable = run_json(capsys, 'info', bag)
    readable_counts = {t['topic']: t['count'] for t in readable['topics']}
    assert 0 < readable['message_count'] < 20_003

    code, out, err = run(capsys, 'repair', episode_dir)
    assert (code, err) == (0, '')
    assert f'recovered {readable["message_count"]} message(s)' in out
    assert 'recording -> incomplete' in out

    after = run_json(capsys, 'info', episode_dir)
    assert after['status'] == 'incomplete'
    assert after['bag']['complete'] is True
    assert after['bag']['notes'] == []
    assert {t['topic']: t['count'] for t in after['bag']['topics']} == readable_counts
    assert after['bag']['message_count'] == readable['message_count']
    assert after['bag']['start_ns'] == readable['start_ns']
    assert after['bag']['end_ns'] == readable['end_ns']
    assert {name: t['count'] for name, t in after['topics'].items()} == readable_counts
    assert (bag / 'damaged' / mcap.name).read_bytes() == damaged_bytes
    assert (bag / 'damaged' / 'metadata.yaml').exists() == (metadata == 'kept')

    # The new bag is a complete MCAP for any reader, not only ours.
    with only_mcap(bag).open('rb') as f:
        summary = make_reader(f).get_summary()
    assert summary is not None and summary.statistics.message_count == readable['message_count']
    assert yaml.safe_load((bag / 'metadata.yaml').read_text())['rosbag2_bagfile_information']['message_count'] == (
        readable['message_count'])

    (row,) = run_json(capsys, 'list', dataset.root)
    assert (row['status'], row['message_count']) == ('incomplete', readable['message_count'])
    assert run(capsys, 'verify', episode_dir)[0] == 0
    assert run(capsys, 'verify', dataset.root)[0] == 0
    last = list(read_audit(dataset.audit_path))[-1]
    assert (last['action'], last['episode']) == ('repair', episode.id)

    # Repaired is whole: a second repair changes nothing.
    before = tree(dataset.root)
    code, out, _ = run(capsys, 'repair', episode_dir)
    assert code == 0 and 'whole, nothing to do' in out
    assert tree(dataset.root) == before


def test_repair_of_an_approved_episode_whose_bag_got_damaged_marks_it_incomplete(capsys, make_demo_dataset):
    """A reviewer approved it, then its bag lost data (a bad copy): training must not trust it blindly."""
    dataset = make_demo_dataset([{'status': 'approved'}])
    (episode_id,) = dataset.episode_ids()
    assert run(capsys, 'verify', dataset.root)[0] == 0
    truncate(only_mcap(dataset.bag_dir(episode_id)), 0.7)
    assert run(capsys, 'verify', dataset.root)[0] == 1
    code, out, _ = run(capsys, 'repair', dataset.episode_dir(episode_id))
    assert code == 0 and 'approved -> incomplete (its bag was damaged)' in out
    assert dataset.episode(episode_id).status == 'incomplete'


def test_catalog_rebuild_recovers_from_a_corrupt_catalog(capsys, make_demo_dataset):
    dataset = make_demo_dataset(2)
    catalog = dataset.root / 'catalog.sqlite'
    for side in ('catalog.sqlite-wal', 'catalog.sqlite-shm'):
        (dataset.root / side).unlink(missing_ok=True)
    catalog.write_bytes(b'garbage, not sqlite' * 100)
    code, _, err = run(capsys, 'list', dataset.root)
    assert code == 1 and 'robodata catalog rebuild' in err
    assert run(capsys, 'catalog', 'rebuild', dataset.root)[0] == 0
    assert [row['id'] for row in run_json(capsys, 'list', dataset.root)] == dataset.episode_ids()
    kept = list(dataset.root.glob('catalog.sqlite.corrupt-*'))
    assert len(kept) == 1 and kept[0].read_bytes().startswith(b'garbage')


def test_repair_a_whole_episode_or_dataset_changes_nothing(capsys, make_demo_dataset):
    dataset = make_demo_dataset([{'outcome': 'success'}, {'status': 'approved'}])
    before = tree(dataset.root)
    first = dataset.episode_dir(dataset.episode_ids()[0])

    code, out, err = run(capsys, 'repair', first)
    assert (code, err) == (0, '')
    assert out.splitlines() == [f'{first.name}: whole, nothing to do',
                                '1 episode folder(s) checked: 0 repaired, 0 not repairable, 1 whole']
    results = run_json(capsys, 'repair', dataset.root)
    assert [(r['episode'], r['actions'], r['messages']) for r in results] == [
        (episode_id, [], 52) for episode_id in dataset.episode_ids()]
    assert tree(dataset.root) == before


def test_repair_a_bag_directory_without_metadata(tmp_path, capsys, write_demo_bag):
    write_demo_bag(tmp_path / 'bag', joint_messages=120, events=1)
    mcap_bytes = only_mcap(tmp_path / 'bag').read_bytes()
    (tmp_path / 'bag' / 'metadata.yaml').unlink()

    (result,) = run_json(capsys, 'repair', tmp_path / 'bag')
    assert result['messages'] == 121
    assert any('wrote metadata.yaml' in action for action in result['actions'])
    data = run_json(capsys, 'info', tmp_path / 'bag')
    assert data['complete'] is True and data['notes'] == []
    assert data['message_count'] == 121
    assert only_mcap(tmp_path / 'bag').read_bytes() == mcap_bytes  # the recording itself is never rewritten


# -- verify ----------------------------------------------------------------------------------------


def test_verify_clean_then_a_flipped_byte(tmp_path, capsys, make_demo_dataset):
    dataset = make_demo_dataset(2)
    damaged, intact = dataset.episode_ids()

    code, out, _ = run(capsys, 'verify', dataset.root)
    assert code == 0
    assert out.strip().splitlines()[-1] == '2 episode(s) checked, 0 problem(s)'
    assert run_json(capsys, 'verify', dataset.root) == {'checked': 2, 'ok': True, 'problems': []}

    mcap = only_mcap(dataset.bag_dir(damaged))
    data = bytearray(mcap.read_bytes())
    data[len(data) // 3] ^= 0x40
    mcap.write_bytes(bytes(data))

    code, out, _ = run(capsys, 'verify', dataset.root)
    assert code == 1
    fails = [line for line in out.splitlines() if line.startswith('FAIL')]
    assert fails == [f'FAIL {damaged}: bag file {mcap.name} changed since it was recorded (sha256 mismatch)']
    assert out.strip().splitlines()[-1] == '2 episode(s) checked, 1 problem(s)'

    code, out, _ = run(capsys, 'verify', dataset.root, '--json')
    assert code == 1
    report = json.loads(out)
    assert report['ok'] is False and report['checked'] == 2
    assert report['problems'] == [{'episode': damaged, 'problem': f'bag file {mcap.name} changed since it was '
                                                                  'recorded (sha256 mismatch)'}]

    assert run(capsys, 'verify', dataset.episode_dir(damaged))[0] == 1
    code, out, _ = run(capsys, 'verify', dataset.episode_dir(intact), '--json')
    assert code == 0
    assert json.loads(out) == {'checked': 1, 'ok': True, 'problems': []}

    process = run_process('verify', dataset.root, cwd=tmp_path)
    assert process.returncode == 1
    assert damaged in process.stdout and 'sha256 mismatch' in process.stdout


def test_verify_reports_catalog_drift(capsys, make_demo_dataset):
    dataset = make_demo_dataset(2)
    missing_row, _ = dataset.episode_ids()
    dataset.catalog.delete(missing_row)
    code, out, _ = run(capsys, 'verify', dataset.root, '--json')
    assert code == 1
    assert json.loads(out)['problems'] == [
        {'episode': missing_row, 'problem': 'not in the catalog (run `robodata catalog rebuild`)'}]


# -- set, list, init, catalog ------------------------------------------------------------------------


def test_set_outcome_with_a_reason(capsys, make_demo_dataset):
    dataset = make_demo_dataset(2)
    target, other = dataset.episode_ids()
    code, out, err = run(capsys, 'set', dataset.episode_dir(target), '--outcome', 'success',
                         '--reason', 'cube in the bin', '--who', 'kim')
    assert (code, err) == (0, '')
    assert out.strip() == f'{target}: outcome=success status=complete'

    episode = yaml.safe_load((dataset.episode_dir(target) / 'episode.yaml').read_text(encoding='utf-8'))
    assert episode['outcome'] == 'success'
    rows = {r['id']: r for r in run_json(capsys, 'list', dataset.root)}
    assert (rows[target]['outcome'], rows[other]['outcome']) == ('success', 'unknown')
    last = list(read_audit(dataset.audit_path))[-1]
    assert (last['action'], last['episode'], last['who'], last['old'], last['new'], last['reason']) == (
        'set_outcome', target, 'kim', 'unknown', 'success', 'cube in the bin')


def test_set_outcome_and_status_at_once(capsys, make_demo_dataset):
    dataset = make_demo_dataset(1)
    (episode_id,) = dataset.episode_ids()
    entries_before = len(list(read_audit(dataset.audit_path)))
    code, out, _ = run(capsys, 'set', dataset.episode_dir(episode_id), '--outcome', 'failure', '--status',
                       'rejected', '--reason', 'dropped it')
    assert code == 0
    assert 'outcome=failure status=rejected' in out
    new = list(read_audit(dataset.audit_path))[entries_before:]
    assert [(e['action'], e['old'], e['new'], e['reason']) for e in new] == [
        ('set_outcome', 'unknown', 'failure', 'dropped it'), ('set_status', 'complete', 'rejected', 'dropped it')]
    assert all(e['who'] for e in new)
    assert verify_dataset(Dataset.open(dataset.root)) == []


def test_set_rejects_an_unknown_outcome(tmp_path, make_demo_dataset):
    dataset = make_demo_dataset(1)
    episode_dir = dataset.episode_dir(dataset.episode_ids()[0])
    before = tree(dataset.root)
    result = run_process('set', episode_dir, '--outcome', 'great', cwd=tmp_path)
    assert result.returncode != 0
    assert 'Traceback' not in result.stderr
    assert "invalid choice: 'great'" in result.stderr
    assert tree(dataset.root) == before


def test_list(capsys, make_demo_dataset):
    dataset = make_demo_dataset([
        {'task': 'pick_cube', 'operator': 'ana', 'outcome': 'success'},
        {'task': 'stack', 'operator': 'bo', 'outcome': 'failure'},
        {'task': 'stack', 'operator': 'bo', 'outcome': 'success', 'status': 'approved'},
    ])
    first, second, third = dataset.episode_ids()
    rows = run_json(capsys, 'list', dataset.root)
    assert [(r['id'], r['task'], r['operator'], r['outcome'], r['status']) for r in rows] == [
        (first, 'pick_cube', 'ana', 'success', 'complete'),
        (second, 'stack', 'bo', 'failure', 'complete'),
        (third, 'stack', 'bo', 'success', 'approved'),
    ]
    assert [r['id'] for r in run_json(capsys, 'list', dataset.root, '--task', 'stack')] == [second, third]
    assert [r['id'] for r in run_json(capsys, 'list', dataset.root, '--outcome', 'success')] == [first, third]
    assert [r['id'] for r in run_json(capsys, 'list', dataset.root, '--status', 'approved')] == [third]
    assert run_json(capsys, 'list', dataset.root, '--task', 'pour') == []

    code, out, _ = run(capsys, 'list', dataset.root, '--task', 'stack')
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0].split()[:6] == ['episode', 'task', 'operator', 'mode', 'outcome', 'status']
    assert [line.split()[:6] for line in lines[1:]] == [
        [second, 'stack', 'bo', 'teleop', 'failure', 'complete'],
        [third, 'stack', 'bo', 'teleop', 'success', 'approved'],
    ]


def test_init_with_a_profile(tmp_path, capsys, sim_cell_profile_path):
    code, out, _ = run(capsys, 'init', tmp_path / 'ds', '--profile', sim_cell_profile_path, '--name', 'cell_a')
    assert code == 0
    assert out.startswith('created dataset cell_a at ')
    info = yaml.safe_load((tmp_path / 'ds' / 'dataset.yaml').read_text(encoding='utf-8'))
    assert info['robot_profile']['sha256'] == load_profile(sim_cell_profile_path).sha256
    data = run_json(capsys, 'info', tmp_path / 'ds')
    assert (data['name'], data['robot'], data['episodes']) == ('cell_a', 'sim_cell_arm', 0)
    assert run(capsys, 'verify', tmp_path / 'ds')[0] == 0


def test_catalog_rebuild(capsys, make_demo_dataset):
    dataset = make_demo_dataset([{'outcome': 'success'}, {'status': 'interrupted'}, {'task': 'stack'}])
    before = run_json(capsys, 'list', dataset.root)
    dropped = dataset.episode_ids()[1]
    dataset.catalog.delete(dropped)
    assert [r['id'] for r in run_json(capsys, 'list', dataset.root)] == [r['id'] for r in before if r['id'] != dropped]

    code, out, _ = run(capsys, 'catalog', 'rebuild', dataset.root)
    assert code == 0
    assert out.strip() == 'catalog rebuilt: 3 episode(s)'
    assert run_json(capsys, 'list', dataset.root) == before


def test_catalog_rebuild_after_the_catalog_was_deleted(capsys, make_demo_dataset):
    dataset = make_demo_dataset([{'outcome': 'success'}, {'outcome': 'failure'}])
    before = run_json(capsys, 'list', dataset.root)
    for file in dataset.root.glob('catalog.sqlite*'):
        file.unlink()
    code, out, _ = run(capsys, 'catalog', 'rebuild', dataset.root)
    assert code == 0
    assert out.strip() == 'catalog rebuilt: 2 episode(s)'
    assert run_json(capsys, 'list', dataset.root) == before
    assert run(capsys, 'verify', dataset.root)[0] == 0


# -- profile ---------------------------------------------------------------------------------------


def test_profile_lists_its_topics(capsys, sim_cell_profile_path):
    profile = load_profile(sim_cell_profile_path)
    code, out, err = run(capsys, 'profile', sim_cell_profile_path)
    assert (code, err) == (0, '')
    assert out.startswith(f'sim_cell_arm ({sim_cell_profile_path}) ok, sha256 {profile.sha256[:12]}')
    rows = {line.split()[1]: line.split() for line in out.splitlines()[2:] if line.strip()}
    declared = profile.all_topics()
    assert len(declared) == 9
    assert set(rows) == {spec.topic for _, spec in declared}
    for role, spec in declared:
        assert rows[spec.topic][0] == role
        assert rows[spec.topic][2] == spec.type
    assert rows['/robot_description'][-1] == 'latched'
    assert rows['/joint_states'][3] == '500'


def test_a_shipped_profile_is_found_by_its_name_outside_the_clone(tmp_path, capsys, monkeypatch,
                                                                  sim_cell_profile_path):
    """`--profile config/sim_cell.yaml`, as the README writes it, from a folder that has no config/: the shipped
    profile, as `robodata sim` finds it; a file of that name here wins."""
    monkeypatch.chdir(tmp_path)
    for name in ('config/sim_cell.yaml', 'sim_cell.yaml'):
        code, out, err = run(capsys, 'profile', name)
        assert (code, err) == (0, '') and out.startswith(f'sim_cell_arm ({sim_cell_profile_path}) ok'), out
    (tmp_path / 'config').mkdir()
    (tmp_path / 'config' / 'sim_cell.yaml').write_text('robot: {name: my_arm}\ntopics:\n  joint_states: '
                                                       '{topic: /js, type: sensor_msgs/msg/JointState}\n')
    assert run(capsys, 'profile', 'config/sim_cell.yaml')[1].startswith('my_arm (config/sim_cell.yaml) ok')
    code, _, err = run(capsys, 'profile', 'config/no_such_arm.yaml')
    assert code == 1 and 'config/no_such_arm.yaml' in err


def test_the_help_says_what_the_commands_do(capsys):
    with pytest.raises(SystemExit):
        main(['score', '--help'])
    assert 'they decode every frame of every camera' in ' '.join(capsys.readouterr().out.split())
    with pytest.raises(SystemExit):
        main(['--help'])
    top = ' '.join(capsys.readouterr().out.split())
    assert 'export episodes for other tools: frames for labeling, a LeRobot training set' in top


def test_a_misspelled_option_is_named_by_its_command(capsys):
    with pytest.raises(SystemExit) as stop:
        main(['score', 'somewhere', '--workrs', '2'])
    err = capsys.readouterr().err
    assert stop.value.code == 2
    assert err.splitlines()[0].startswith('usage: robodata score ')
    assert err.splitlines()[-1] == 'robodata score: error: unrecognized arguments: --workrs 2'
    with pytest.raises(SystemExit):
        main(['export', 'frames', 'somewhere', '--out', 'x', '--evry', '1s'])
    assert capsys.readouterr().err.splitlines()[-1].startswith('robodata export frames: error: unrecognized')


def test_profile_json(capsys, sim_cell_profile_path):
    data = run_json(capsys, 'profile', sim_cell_profile_path)
    assert data['robot']['name'] == 'sim_cell_arm'
    assert data['sha256'] == load_profile(sim_cell_profile_path).sha256
    assert data['topics']['joint_states']['topic'] == '/joint_states'
    assert [c['name'] for c in data['topics']['cameras']] == ['wrist', 'scene']
