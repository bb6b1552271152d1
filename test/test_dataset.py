"""The dataset on disk: dataset.yaml, the WAL catalog, the audit log, episodes and their integrity."""

from __future__ import annotations

import calendar
import json
import os
import re
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
import yaml

from ros_robodata.dataset import Dataset, Episode, is_dataset
from ros_robodata.dataset.audit import read_audit
from ros_robodata.dataset.catalog import SCHEMA_VERSION
from ros_robodata.dataset.verify import verify_dataset
from ros_robodata.errors import DatasetError
from ros_robodata.profile import load_profile, profile_from_dict
from ros_robodata.version import __version__


def audit_lines(dataset: Dataset) -> list[dict]:
    return [json.loads(line) for line in dataset.audit_path.read_text(encoding='utf-8').splitlines()]


def episode_yaml(dataset: Dataset, episode_id: str) -> dict:
    return yaml.safe_load((dataset.episode_dir(episode_id) / 'episode.yaml').read_text(encoding='utf-8'))


def only_mcap(dataset: Dataset, episode_id: str) -> Path:
    (mcap,) = dataset.bag_dir(episode_id).glob('*.mcap')
    return mcap


# -- creating and opening ------------------------------------------------------------------------


def test_create_writes_dataset_yaml_with_profile_snapshot(tmp_path, sim_cell_profile_path):
    profile = load_profile(sim_cell_profile_path)
    Dataset.create(tmp_path / 'ds', name='pick_demos', profile=profile)

    info = yaml.safe_load((tmp_path / 'ds' / 'dataset.yaml').read_text(encoding='utf-8'))
    assert info['schema_version'] == SCHEMA_VERSION
    assert info['name'] == 'pick_demos'
    assert info['created_by'] == f'ros_robodata {__version__}'
    time.strptime(info['created'], '%Y-%m-%dT%H:%M:%S%z')
    snapshot = info['robot_profile']
    assert snapshot['sha256'] == profile.sha256
    assert Path(snapshot['source']).name == 'sim_cell.yaml'
    assert snapshot['content']['robot']['name'] == 'sim_cell_arm'
    # The snapshot is the whole profile: it reads back into the very same profile.
    assert profile_from_dict(snapshot['content']).sha256 == profile.sha256

    assert (tmp_path / 'ds' / 'episodes').is_dir()
    assert [e['action'] for e in read_audit(tmp_path / 'ds' / 'audit.jsonl')] == ['create_dataset']
    reopened = Dataset.open(tmp_path / 'ds')
    assert reopened.name == 'pick_demos'
    assert reopened.list() == []
    assert reopened.info['robot_profile']['sha256'] == profile.sha256


def test_create_makes_a_wal_catalog(tmp_path):
    Dataset.create(tmp_path / 'ds')
    catalog = tmp_path / 'ds' / 'catalog.sqlite'
    conn = sqlite3.connect(catalog)
    try:
        assert conn.execute('PRAGMA journal_mode').fetchone()[0] == 'wal'
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    finally:
        conn.close()


def test_create_without_profile_or_name(tmp_path):
    dataset = Dataset.create(tmp_path / 'bench_2024')
    info = yaml.safe_load((tmp_path / 'bench_2024' / 'dataset.yaml').read_text(encoding='utf-8'))
    assert info['name'] == 'bench_2024' == dataset.name
    assert info['robot_profile'] is None


def test_create_in_an_existing_empty_folder(tmp_path):
    (tmp_path / 'ds').mkdir()
    Dataset.create(tmp_path / 'ds')
    assert is_dataset(tmp_path / 'ds')


def test_create_refuses_an_existing_dataset(tmp_path):
    Dataset.create(tmp_path / 'ds', name='first')
    before = (tmp_path / 'ds' / 'dataset.yaml').read_bytes()
    with pytest.raises(DatasetError, match='exists'):
        Dataset.create(tmp_path / 'ds', name='second')
    assert (tmp_path / 'ds' / 'dataset.yaml').read_bytes() == before


def test_create_refuses_a_non_empty_folder(tmp_path):
    (tmp_path / 'ds').mkdir()
    (tmp_path / 'ds' / 'notes.txt').write_text('mine', encoding='utf-8')
    with pytest.raises(DatasetError, match='not empty'):
        Dataset.create(tmp_path / 'ds')
    assert sorted(p.name for p in (tmp_path / 'ds').iterdir()) == ['notes.txt']


def test_create_refuses_a_file(tmp_path):
    (tmp_path / 'ds').write_text('a file', encoding='utf-8')
    with pytest.raises(DatasetError, match='not a folder'):
        Dataset.create(tmp_path / 'ds')
    assert (tmp_path / 'ds').read_text(encoding='utf-8') == 'a file'


def test_open_a_non_dataset(tmp_path, write_demo_bag):
    (tmp_path / 'empty').mkdir()
    write_demo_bag(tmp_path / 'a_bag')
    for path in (tmp_path / 'empty', tmp_path / 'a_bag', tmp_path / 'absent'):
        with pytest.raises(DatasetError, match='not a dataset'):
            Dataset.open(path)


@pytest.mark.parametrize(
    ('text', 'match'),
    [
        ('name: [unclosed\n', 'unreadable'),
        ('just text\n', 'no schema_version'),
        ('name: x\n', 'no schema_version'),
        ('schema_version: one\n', 'schema_version must be an integer'),
        (f'schema_version: {SCHEMA_VERSION + 1}\n', 'newer'),
    ],
)
def test_open_a_bad_dataset_yaml_is_one_line(tmp_path, text, match):
    Dataset.create(tmp_path / 'ds')
    (tmp_path / 'ds' / 'dataset.yaml').write_text(text, encoding='utf-8')
    with pytest.raises(DatasetError, match=match) as caught:
        Dataset.open(tmp_path / 'ds')
    assert '\n' not in str(caught.value)
    assert 'dataset.yaml' in str(caught.value)


def test_open_a_corrupt_catalog(tmp_path):
    Dataset.create(tmp_path / 'ds')
    (tmp_path / 'ds' / 'catalog.sqlite').write_bytes(b'this is not sqlite' * 100)
    with pytest.raises(DatasetError, match='catalog'):
        Dataset.open(tmp_path / 'ds')


# -- episodes ------------------------------------------------------------------------------------


def test_new_episode_id_is_unique_within_one_second(tmp_path):
    dataset = Dataset.create(tmp_path / 'ds')
    now = calendar.timegm((2024, 5, 17, 12, 30, 45)) + 0.1
    first = dataset.new_episode_id(now)
    second = dataset.new_episode_id(now)
    third = dataset.new_episode_id(now + 0.5)
    assert [first, second, third] == ['20240517-123045', '20240517-123045-2', '20240517-123045-3']
    assert dataset.new_episode_id(now + 1) == '20240517-123046'
    for episode_id in (first, second, third):
        assert dataset.episode_dir(episode_id).is_dir()  # reserved for its recorder


def test_new_episode_id_back_to_back(tmp_path):
    dataset = Dataset.create(tmp_path / 'ds')
    ids = [dataset.new_episode_id() for _ in range(5)]
    assert len(set(ids)) == 5


def test_add_and_read_an_episode(tmp_path, record_demo_episode):
    dataset = Dataset.create(tmp_path / 'ds')
    episode = record_demo_episode(dataset, task='stack', operator='bo', mode='kinesthetic', outcome='success',
                                  joint_messages=101)
    assert dataset.episode_ids() == [episode.id]
    on_disk = episode_yaml(dataset, episode.id)
    assert on_disk['task'] == 'stack'
    assert on_disk['mode'] == 'kinesthetic'
    assert on_disk['topics']['/joint_states'] == {'type': 'sensor_msgs/msg/JointState', 'count': 101}
    assert set(on_disk['bag_sha256']) == {p.name for p in dataset.bag_files(episode.id)}

    (row,) = dataset.list()
    assert (row.id, row.task, row.operator, row.mode, row.outcome, row.status) == (
        episode.id, 'stack', 'bo', 'kinesthetic', 'success', 'complete')
    assert row.duration_s == pytest.approx(0.2)
    assert row.message_count == 101 + 2
    assert row.size_bytes == sum(p.stat().st_size for p in dataset.bag_files(episode.id))
    assert row.bag_sha256 == on_disk['bag_sha256']
    actions = [(e['action'], e['episode']) for e in audit_lines(dataset)]
    assert ('create_episode', episode.id) in actions


def test_add_an_episode_twice_is_refused(tmp_path, record_demo_episode):
    dataset = Dataset.create(tmp_path / 'ds')
    episode = record_demo_episode(dataset, outcome='success')
    with pytest.raises(DatasetError, match='exists'):
        dataset.add_episode(Episode(id=episode.id, task='other'))
    assert dataset.episode(episode.id).task == 'pick_cube'
    assert dataset.episode(episode.id).outcome == 'success'


def test_list_filters(make_demo_dataset):
    dataset = make_demo_dataset([
        {'task': 'pick_cube', 'outcome': 'success'},
        {'task': 'pick_cube', 'outcome': 'failure'},
        {'task': 'stack', 'outcome': 'success', 'status': 'interrupted'},
        {'task': 'stack', 'status': 'recording'},
    ])
    rows = dataset.list()
    assert len(rows) == 4
    assert [r.id for r in rows] == sorted(r.id for r in rows) == dataset.episode_ids()
    assert [r.task for r in dataset.list(task='stack')] == ['stack', 'stack']
    assert [r.outcome for r in dataset.list(outcome='success')] == ['success', 'success']
    assert [(r.task, r.status) for r in dataset.list(status='interrupted')] == [('stack', 'interrupted')]
    assert [r.outcome for r in dataset.list(task='pick_cube', outcome='failure')] == ['failure']
    assert dataset.list(task='pour') == []
    assert dataset.list(task='stack', outcome='failure') == []


# -- changing an outcome or a status: episode.yaml, catalog and audit ------------------------------


def test_set_outcome_updates_yaml_catalog_and_audit(make_demo_dataset):
    dataset = make_demo_dataset(2)
    changed, untouched = dataset.episode_ids()
    dataset.set_outcome(changed, 'success', who='reviewer_kim', reason='cube lifted 8 cm')

    assert episode_yaml(dataset, changed)['outcome'] == 'success'
    assert dataset.catalog.get(changed).outcome == 'success'
    assert Dataset.open(dataset.root).episode(changed).outcome == 'success'
    assert dataset.catalog.get(untouched).outcome == 'unknown'
    last = audit_lines(dataset)[-1]
    assert last['action'] == 'set_outcome'
    assert last['episode'] == changed
    assert (last['who'], last['old'], last['new'], last['reason']) == ('reviewer_kim', 'unknown', 'success',
                                                                       'cube lifted 8 cm')
    assert abs(last['time_ns'] - time.time_ns()) < 60 * 10**9


def test_set_status_updates_yaml_catalog_and_audit(make_demo_dataset):
    dataset = make_demo_dataset(1)
    (episode_id,) = dataset.episode_ids()
    lines_before = audit_lines(dataset)
    dataset.set_status(episode_id, 'rejected', who='kim', reason='camera blurred')
    dataset.set_status(episode_id, 'approved', who='lee', reason='blur only in the first second')

    assert episode_yaml(dataset, episode_id)['status'] == 'approved'
    assert dataset.catalog.get(episode_id).status == 'approved'
    lines = audit_lines(dataset)
    assert lines[: len(lines_before)] == lines_before  # append-only
    new = lines[len(lines_before):]
    assert [(e['action'], e['who'], e['old'], e['new'], e['reason']) for e in new] == [
        ('set_status', 'kim', 'complete', 'rejected', 'camera blurred'),
        ('set_status', 'lee', 'rejected', 'approved', 'blur only in the first second'),
    ]


def test_set_without_who_records_the_login_name(make_demo_dataset):
    dataset = make_demo_dataset(1)
    (episode_id,) = dataset.episode_ids()
    dataset.set_outcome(episode_id, 'failure')
    assert audit_lines(dataset)[-1]['who']


@pytest.mark.parametrize(('method', 'value'), [('set_outcome', 'great'), ('set_outcome', 'Success'),
                                               ('set_status', 'done'), ('set_status', '')])
def test_invalid_outcome_or_status_changes_nothing(make_demo_dataset, method, value):
    dataset = make_demo_dataset(1)
    (episode_id,) = dataset.episode_ids()
    yaml_before = (dataset.episode_dir(episode_id) / 'episode.yaml').read_bytes()
    audit_before = dataset.audit_path.read_bytes()
    with pytest.raises(DatasetError, match='is not one of'):
        getattr(dataset, method)(episode_id, value, who='kim', reason='typo')
    assert (dataset.episode_dir(episode_id) / 'episode.yaml').read_bytes() == yaml_before
    assert dataset.audit_path.read_bytes() == audit_before
    row = dataset.catalog.get(episode_id)
    assert (row.outcome, row.status) == ('unknown', 'complete')


def test_set_on_a_missing_episode(make_demo_dataset):
    dataset = make_demo_dataset(1)
    with pytest.raises(DatasetError, match='no episode'):
        dataset.set_outcome('20990101-000000', 'success')


BAD_IDS = ['../x', '../../etc', '/abs', '/tmp/x', 'a/b', '..', '.', '', '.hidden', '-rf', 'a..b', 'ep 1', 'ep\n',
           'x' * 200]


@pytest.mark.parametrize('bad_id', BAD_IDS)
def test_invalid_episode_ids_are_rejected(tmp_path, bad_id):
    dataset = Dataset.create(tmp_path / 'ds')
    (tmp_path / 'x').mkdir()  # what '../x' would point at
    with pytest.raises(DatasetError, match='invalid episode id'):
        dataset.episode_dir(bad_id)
    with pytest.raises(DatasetError, match='invalid episode id'):
        dataset.set_outcome(bad_id, 'success')
    with pytest.raises(DatasetError, match='invalid episode id'):
        dataset.set_status(bad_id, 'approved')
    with pytest.raises(DatasetError, match='invalid episode id'):
        Episode(id=bad_id)
    assert sorted(p.name for p in tmp_path.iterdir()) == ['ds', 'x']
    assert list((tmp_path / 'x').iterdir()) == []
    assert list(dataset.episodes_dir.iterdir()) == []
    assert [e['action'] for e in audit_lines(dataset)] == ['create_dataset']


def test_an_episode_yaml_with_an_invalid_id_is_refused(make_demo_dataset):
    dataset = make_demo_dataset(1)
    (episode_id,) = dataset.episode_ids()
    path = dataset.episode_dir(episode_id) / 'episode.yaml'
    data = yaml.safe_load(path.read_text(encoding='utf-8'))
    data['id'] = '../elsewhere'
    path.write_text(yaml.safe_dump(data), encoding='utf-8')
    with pytest.raises(DatasetError, match='invalid episode id'):
        dataset.episode(episode_id)


@pytest.mark.parametrize('good_id', ['20240517-123045', '20240517-123045-2', 'ep_1.retry', 'A9'])
def test_valid_episode_ids(tmp_path, good_id):
    dataset = Dataset.create(tmp_path / 'ds')
    assert dataset.episode_dir(good_id) == tmp_path / 'ds' / 'episodes' / good_id


# -- integrity: checksums, verify, catalog rebuild ------------------------------------------------


def test_verify_a_clean_dataset(make_demo_dataset):
    dataset = make_demo_dataset([{'outcome': 'success'}, {'status': 'approved'}, {'status': 'recording'}])
    assert verify_dataset(dataset) == []
    assert verify_dataset(Dataset.open(dataset.root)) == []


def test_record_checksums(make_demo_dataset):
    dataset = make_demo_dataset([{'checksums': False}])
    (episode_id,) = dataset.episode_ids()
    assert [str(p) for p in verify_dataset(dataset)] == [f'{episode_id}: no checksums recorded for its bag']
    episode = dataset.record_checksums(episode_id, who='kim')
    names = {p.name for p in dataset.bag_files(episode_id)}
    assert set(episode.bag_sha256) == names
    assert any(n.endswith('.mcap') for n in names) and 'metadata.yaml' in names
    assert episode_yaml(dataset, episode_id)['bag_sha256'] == episode.bag_sha256
    assert dataset.catalog.get(episode_id).bag_sha256 == episode.bag_sha256
    last = audit_lines(dataset)[-1]
    assert (last['action'], last['episode'], last['who'], last['files']) == (
        'record_checksums', episode_id, 'kim', sorted(names))
    assert verify_dataset(dataset) == []


def _flip_a_bag_byte(dataset: Dataset, episode_id: str) -> None:
    mcap = only_mcap(dataset, episode_id)
    data = bytearray(mcap.read_bytes())
    data[len(data) // 2] ^= 0x01
    mcap.write_bytes(bytes(data))


def _delete_the_mcap(dataset: Dataset, episode_id: str) -> None:
    only_mcap(dataset, episode_id).unlink()


def _add_a_file(dataset: Dataset, episode_id: str) -> None:
    (dataset.bag_dir(episode_id) / 'extra_0.mcap').write_bytes(b'\x89MCAP0\r\n')


def _drop_the_catalog_row(dataset: Dataset, episode_id: str) -> None:
    dataset.catalog.delete(episode_id)


def _delete_the_folder(dataset: Dataset, episode_id: str) -> None:
    shutil.rmtree(dataset.episode_dir(episode_id))


def _edit_episode_yaml_by_hand(dataset: Dataset, episode_id: str) -> None:
    path = dataset.episode_dir(episode_id) / 'episode.yaml'
    data = yaml.safe_load(path.read_text(encoding='utf-8'))
    data['outcome'] = 'failure'
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding='utf-8')


def _break_episode_yaml(dataset: Dataset, episode_id: str) -> None:
    (dataset.episode_dir(episode_id) / 'episode.yaml').write_text('id: [oops\n', encoding='utf-8')


DAMAGES = [
    (_flip_a_bag_byte, r'\.mcap changed since it was recorded \(sha256 mismatch\)'),
    (_delete_the_mcap, r'bag file .*\.mcap is missing'),
    (_add_a_file, 'bag file extra_0.mcap is not in the recorded checksums'),
    (_drop_the_catalog_row, 'not in the catalog'),
    (_delete_the_folder, 'in the catalog but its folder or episode.yaml is missing'),
    (_edit_episode_yaml_by_hand, 'catalog says success/complete, episode.yaml says failure/complete'),
    (_break_episode_yaml, 'episode.yaml: unreadable'),
]


@pytest.mark.parametrize(('damage', 'expected'), DAMAGES, ids=[d.__name__.lstrip('_') for d, _ in DAMAGES])
def test_verify_reports_each_problem(make_demo_dataset, damage, expected):
    dataset = make_demo_dataset([{'outcome': 'success'}, {'outcome': 'success'}, {'outcome': 'success'}])
    damaged = dataset.episode_ids()[1]
    assert verify_dataset(dataset) == []
    damage(dataset, damaged)
    problems = verify_dataset(dataset)
    assert len(problems) == 1, problems
    assert problems[0].episode == damaged
    assert re.search(expected, problems[0].what), problems[0].what
    assert str(problems[0]).startswith(f'{damaged}: ')


def test_verify_reports_a_bag_with_no_files(make_demo_dataset):
    dataset = make_demo_dataset(1)
    (episode_id,) = dataset.episode_ids()
    shutil.rmtree(dataset.bag_dir(episode_id))
    assert [str(p) for p in verify_dataset(dataset)] == [f'{episode_id}: no bag']


def test_rebuild_catalog_restores_a_deleted_catalog(make_demo_dataset):
    dataset = make_demo_dataset([{'task': 'stack', 'outcome': 'success'}, {'status': 'interrupted'}, {}])
    dataset.set_outcome(dataset.episode_ids()[2], 'recovery', who='kim')
    before = [r.to_dict() for r in dataset.list()]
    dataset.catalog.path.unlink()

    dataset.catalog.create()
    assert dataset.list() == []
    assert dataset.rebuild_catalog() == 3
    assert [r.to_dict() for r in dataset.list()] == before
    assert verify_dataset(dataset) == []


def test_rebuild_catalog_audits_an_unreadable_annotations_file_and_goes_on(make_demo_dataset):
    """A hand-broken annotations.json leaves that episode's reviewed outcome empty and is named in the audit; the
    rebuild lists every episode (it raised TypeError from inside its own audit call)."""
    dataset = make_demo_dataset([{'outcome': 'success'}, {}])
    broken = dataset.episode_dir(dataset.episode_ids()[0]) / 'annotations.json'
    broken.write_text('{"revisions": [', encoding='utf-8')
    dataset.catalog.path.unlink()
    dataset.catalog.create()

    assert dataset.rebuild_catalog() == 2
    assert [r.id for r in dataset.list()] == dataset.episode_ids()
    audited = [e for e in read_audit(dataset.audit_path) if e['action'] == 'unreadable_annotations_file']
    assert [(e['episode'], e['file']) for e in audited] == [(dataset.episode_ids()[0], str(broken))]


def test_open_recreates_a_deleted_catalog(make_demo_dataset):
    dataset = make_demo_dataset([{'outcome': 'success'}, {'outcome': 'failure', 'status': 'rejected'}])
    before = [r.to_dict() for r in dataset.list()]
    for leftover in dataset.root.glob('catalog.sqlite*'):
        leftover.unlink()

    reopened = Dataset.open(dataset.root)
    assert [r.to_dict() for r in reopened.list()] == before
    assert verify_dataset(reopened) == []
    conn = sqlite3.connect(reopened.catalog.path)
    try:
        assert conn.execute('PRAGMA journal_mode').fetchone()[0] == 'wal'
    finally:
        conn.close()


def test_rebuild_catalog_drops_rows_without_a_folder(make_demo_dataset):
    dataset = make_demo_dataset(3)
    gone = dataset.episode_ids()[0]
    shutil.rmtree(dataset.episode_dir(gone))
    assert dataset.rebuild_catalog() == 2
    assert [r.id for r in dataset.list()] == dataset.episode_ids()
    assert gone not in [r.id for r in dataset.list()]
    assert verify_dataset(dataset) == []


def test_audit_log_is_one_json_object_per_line(make_demo_dataset):
    dataset = make_demo_dataset(2)
    first, second = dataset.episode_ids()
    dataset.set_outcome(first, 'success', who='a', reason='line one\nline two')
    dataset.set_status(second, 'discarded', who='b', reason='dropped the cube')
    raw = dataset.audit_path.read_text(encoding='utf-8').splitlines()
    entries = [json.loads(line) for line in raw]
    assert all(isinstance(e, dict) and {'time', 'time_ns', 'who', 'action', 'episode'} <= set(e) for e in entries)
    assert entries[-2]['reason'] == 'line one\nline two'
    assert [e['time_ns'] for e in entries] == sorted(e['time_ns'] for e in entries)
    assert os.path.getsize(dataset.audit_path) == sum(len(line.encode('utf-8')) + 1 for line in raw)


def test_a_dataset_is_not_made_inside_another(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ros_robodata.cli.main import main

    outer = Dataset.create(tmp_path / 'outer')
    listing = sorted(p.relative_to(outer.root) for p in outer.root.rglob('*'))
    assert main(['init', str(outer.root / 'episodes' / 'inner')]) == 1
    err = capsys.readouterr().err
    assert f'inside the dataset {outer.root.resolve()}: make a dataset beside it, not in it' in err
    assert sorted(p.relative_to(outer.root) for p in outer.root.rglob('*')) == listing
    assert main(['init', str(tmp_path / 'beside')]) == 0
