"""Pooling datasets of one robot: `robodata episodes copy|move|delete`, `robodata merge` (killed too)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from ros_robodata.cli.main import main
from ros_robodata.dataset import Dataset
from ros_robodata.dataset.audit import read_audit, verify_audit
from ros_robodata.dataset.verify import verify_dataset
from ros_robodata.profile import load_profile

MakeDataset = Callable[..., Dataset]


def _files(root: Path) -> dict[str, str]:
    """Every file of a dataset but the catalog's (SQLite may touch it on open), by path, with its sha256."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob('*'))
            if p.is_file() and not p.name.startswith('catalog.sqlite')}


def _audit(dataset: Dataset) -> list[dict[str, Any]]:
    return list(read_audit(dataset.audit_path))


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_copy_keeps_the_episode_whole_and_renames_a_taken_id(make_demo_dataset: MakeDataset, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    a = make_demo_dataset([{'episode_id': 'e1'}, {'episode_id': 'e2'}], name='a')
    b = make_demo_dataset(0, name='b')
    first, second = a.episode_ids()
    (a.episode_dir(first) / 'quality.json').write_text(json.dumps({'score': 0.75, 'catalog': {}}))
    a.rebuild_catalog()
    Path(b.episode_dir(first)).mkdir()  # the id is taken in b (a reservation of another writer)
    before = _files(a.root)

    code, out, err = _run(['episodes', 'copy', str(a.root), '--episode', first, second, '--into', str(b.root)], capsys)

    assert code == 0, err
    assert f'{first} -> {first}-2 (renamed: the id was taken)' in out
    b = Dataset.open(b.root)
    assert sorted(row.id for row in b.list()) == sorted([f'{first}-2', second])
    copied = b.episode(f'{first}-2')
    assert copied.copied_from[-1]['episode'] == first and copied.copied_from[-1]['dataset'] == 'a'
    assert copied.copied_from[-1]['path'] == str(a.root.resolve()) and copied.source == {}
    assert b.catalog.get(f'{first}-2').score == 0.75  # the sidecar re-indexed
    for name in ('metadata.yaml',):
        assert (b.bag_dir(f'{first}-2') / name).read_bytes() == (a.bag_dir(first) / name).read_bytes()
    assert verify_dataset(b, lambda ids: ids) == []  # checksums hold in the copy
    grown = _files(a.root)  # only the audit grew, and copies.jsonl says where the copies went (for retire)
    assert grown == {**before, 'audit.jsonl': grown['audit.jsonl'], 'copies.jsonl': grown['copies.jsonl']}
    pooled = [json.loads(line) for line in (a.root / 'copies.jsonl').read_text().splitlines()]
    assert {(c['kind'], c['episodes'][0], c['path']) for c in pooled} == {
        ('dataset', first, str(b.episode_dir(f'{first}-2').resolve())),
        ('dataset', second, str(b.episode_dir(second).resolve()))}
    assert [e['action'] for e in _audit(a)][-2:] == ['copy_out', 'copy_out']
    ins = [e for e in _audit(b) if e['action'] == 'copy_in']
    assert {(e['from_episode'], e['episode']) for e in ins} == {(first, f'{first}-2'), (second, second)}
    assert verify_audit(a.audit_path).ok and verify_audit(b.audit_path).ok
    assert not list(b.episodes_dir.glob('.*'))  # no staging left


def test_copy_with_link_shares_the_bag_files(make_demo_dataset: MakeDataset, capsys: pytest.CaptureFixture[str]
                                             ) -> None:
    a, b = make_demo_dataset(1, name='a'), make_demo_dataset(0, name='b')
    (episode_id,) = a.episode_ids()
    code, _, err = _run(['episodes', 'copy', str(a.root), '--episode', episode_id, '--into', str(b.root),
                         '--link', '--json'], capsys)
    assert code == 0, err
    for bag_file in a.bag_files(episode_id):
        assert os.path.samefile(bag_file, b.bag_dir(episode_id) / bag_file.name)
    assert not os.path.samefile(a.episode_dir(episode_id) / 'episode.yaml', b.episode_dir(episode_id) / 'episode.yaml')


def test_move_takes_the_episode_out_of_the_source(make_demo_dataset: MakeDataset, capsys: pytest.CaptureFixture[str]
                                                  ) -> None:
    a, b = make_demo_dataset(2, name='a'), make_demo_dataset(0, name='b')
    first, second = a.episode_ids()
    sums = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in a.bag_files(first)}

    code, _out, err = _run(['episodes', 'move', str(a.root), '--episode', first, '--into', str(b.root), '--why',
                           'belongs to b'], capsys)

    assert code == 0, err
    assert not a.episode_dir(first).exists() and a.catalog.get(first) is None
    assert a.episode_ids() == [second] and not list(a.episodes_dir.glob('.*moved-out'))
    assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in b.bag_files(first)} == sums
    assert b.catalog.get(first) is not None and b.episode(first).copied_from[-1]['how'] == 'move'
    out_line = [e for e in _audit(a) if e['action'] == 'move_out']
    in_line = [e for e in _audit(b) if e['action'] == 'move_in']
    assert out_line[0]['to_episode'] == first and out_line[0]['reason'] == 'belongs to b'
    assert in_line[0]['from_episode'] == first


def test_a_different_robot_is_refused_in_one_line_naming_both(make_demo_dataset: MakeDataset, tmp_path: Path,
                                                              sim_cell_profile_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    a = make_demo_dataset(1, name='a')
    other = yaml.safe_load(sim_cell_profile_path.read_text())
    other['robot'] = {**other.get('robot', {}), 'name': 'another_arm'}
    other_file = tmp_path / 'other.yaml'
    other_file.write_text(yaml.safe_dump(other))
    b = Dataset.create(tmp_path / 'b', profile=load_profile(other_file))
    before = _files(b.root)

    code, _, err = _run(['episodes', 'copy', str(a.root), '--episode', a.episode_ids()[0], '--into', str(b.root)],
                        capsys)

    assert code == 1
    assert len(err.strip().splitlines()) == 1
    assert 'pooling different embodiments is not supported yet here (`robodata merge` pools them' in err
    assert a.profile.sha256[:12] in err and b.profile.sha256[:12] in err
    assert _files(b.root) == before and b.episode_ids() == []


def test_released_episodes_are_not_moved_or_discarded_but_copied(make_demo_dataset: MakeDataset,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    a, b = make_demo_dataset(2, name='a'), make_demo_dataset(0, name='b')
    released, other = a.episode_ids()
    a.catalog.set_release([released], 'r1')

    code, _, err = _run(['episodes', 'move', str(a.root), '--episode', released, '--into', str(b.root)], capsys)
    assert code == 1 and 'release r1' in err and 'frozen' in err and len(err.strip().splitlines()) == 1
    assert a.episode_dir(released).is_dir() and b.episode_ids() == []

    code, _, err = _run(['episodes', 'delete', str(a.root), '--episode', released, other, '--why', 'blurry'], capsys)
    assert code == 3  # one done, one refused, said on stderr
    assert f'{released}: not discarded' in err
    assert a.episode(released).status == 'complete' and a.episode(other).status == 'discarded'

    code, _, err = _run(['episodes', 'copy', str(a.root), '--episode', released, '--into', str(b.root)], capsys)
    assert code == 0, err
    assert b.episode_ids() == [released]


def test_delete_is_a_recorded_reversible_discard(make_demo_dataset: MakeDataset, capsys: pytest.CaptureFixture[str]
                                                 ) -> None:
    a = make_demo_dataset(1, name='a')
    (episode_id,) = a.episode_ids()
    bag = _files(a.episode_dir(episode_id))

    code, _out, err = _run(['episodes', 'delete', str(a.root), '--episode', episode_id, '--why', 'camera off'],
                          capsys)

    assert code == 0, err
    assert a.catalog.get(episode_id).status == 'discarded'
    assert _files(a.episode_dir(episode_id)).keys() == bag.keys()  # nothing deleted
    line = _audit(a)[-1]
    assert (line['action'], line['old'], line['new'], line['reason']) == ('set_status', 'complete', 'discarded',
                                                                           'camera off')
    assert main(['set', str(a.episode_dir(episode_id)), '--status', 'complete']) == 0
    assert a.episode(episode_id).status == 'complete'
    with pytest.raises(SystemExit):  # --why is required
        main(['episodes', 'delete', str(a.root), '--episode', episode_id])


def test_merge_pools_every_episode_and_maps_clashing_ids(make_demo_dataset: MakeDataset, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    a = make_demo_dataset([{'episode_id': 'e1'}, {'episode_id': 'e2'}], name='a')
    b = make_demo_dataset([{'episode_id': 'e1'}, {'episode_id': 'e3', 'status': 'discarded'}], name='b')
    before_a, before_b = _files(a.root), _files(b.root)

    code, out, err = _run(['merge', str(a.root), str(b.root), '--into', str(tmp_path / 'c'), '--json'], capsys)

    assert code == 0, err
    c = Dataset.open(tmp_path / 'c')
    assert [row.id for row in c.list()] == ['e1', 'e1-2', 'e2']
    mapping = json.loads((c.root / 'merge.json').read_text())['episodes']
    assert {(m['dataset'], m['episode'], m['new_id']) for m in mapping} == {('a', 'e1', 'e1'), ('a', 'e2', 'e2'),
                                                                           ('b', 'e1', 'e1-2')}
    assert json.loads(out)['sources'][1]['left_out'] == ['e3']
    assert c.info['robot_profile']['sha256'] == a.profile.sha256
    assert [e['action'] for e in _audit(c)].count('copy_in') == 3 and _audit(c)[-1]['action'] == 'merge'
    for source, before in ((a, before_a), (b, before_b)):  # the sources only read, but for where the copies went
        now = _files(source.root)
        now.pop('copies.jsonl')
        assert now == before
    pooled = [json.loads(line) for line in (b.root / 'copies.jsonl').read_text().splitlines()]
    assert [(p['kind'], p['episodes'], p['path']) for p in pooled] == [
        ('dataset', ['e1'], str(c.episode_dir('e1-2').resolve()))]
    assert not list(tmp_path.glob('c.partial-*'))

    code, _, err = _run(['merge', str(a.root), str(b.root), '--into', str(tmp_path / 'd'), '--all'], capsys)
    assert code == 0, err
    assert 'e3' in Dataset.open(tmp_path / 'd').episode_ids()

    code, _, err = _run(['merge', str(a.root), '--into', str(tmp_path / 'c')], capsys)
    assert code == 1 and 'not an empty folder' in err


def test_merge_of_two_robots_keeps_both_profiles_and_copies_follow(make_demo_dataset: MakeDataset, tmp_path: Path,
                                                                   sim_cell_profile_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    a = make_demo_dataset(1, name='a')
    other = yaml.safe_load(sim_cell_profile_path.read_text())
    other['robot'] = {**other.get('robot', {}), 'name': 'another_arm'}
    (tmp_path / 'other.yaml').write_text(yaml.safe_dump(other))
    b = Dataset.create(tmp_path / 'b', profile=load_profile(tmp_path / 'other.yaml'))
    code, out, err = _run(['merge', str(a.root), str(b.root), '--into', str(tmp_path / 'c')], capsys)
    assert code == 0, err
    assert '2 embodiments: sim_cell_arm, another_arm' in out
    c = Dataset.open(tmp_path / 'c')
    listed = yaml.safe_load((c.root / 'dataset.yaml').read_text())['embodiments']
    assert [(e['name'], e['sha256']) for e in listed] == [('sim_cell_arm', a.profile.sha256),
                                                         ('another_arm', b.profile.sha256)]
    (copied,) = c.episode_ids()
    assert c.episode(copied).profile_sha256 == a.profile.sha256  # filled in by the copy: its profile found again
    # a dataset of several robots takes an episode of any of them; a merge of it keeps them all
    code, _, err = _run(['merge', str(c.root), '--into', str(tmp_path / 'd')], capsys)
    assert code == 0, err
    assert yaml.safe_load((tmp_path / 'd' / 'dataset.yaml').read_text())['embodiments'] == listed
    assert [e['action'] for e in _audit(c)].count('add_embodiments') == 1


def test_a_merge_killed_midway_leaves_the_sources_intact_and_no_half_dataset(make_demo_dataset: MakeDataset,
                                                                              tmp_path: Path) -> None:
    a = make_demo_dataset(6, name='a')
    b = make_demo_dataset(6, name='b')
    before_a, before_b = _files(a.root), _files(b.root)
    rows_a, rows_b = a.list(), b.list()
    rng = random.Random(35)
    outcomes = set()
    for attempt in range(6):
        into = tmp_path / f'c{attempt}'
        proc = subprocess.Popen([sys.executable, '-m', 'ros_robodata.cli.main', 'merge', str(a.root), str(b.root),
                                 '--into', str(into)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        partial = into.with_name(f'{into.name}.partial-{proc.pid}')
        while not partial.exists() and not into.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)  # the merge has started building: kill it somewhere along the way
        time.sleep(rng.uniform(0.0, 0.3) if attempt else 0.0)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if into.exists():
            c = Dataset.open(into)
            assert len(c.episode_ids()) == 12 and len(c.list()) == 12
            assert verify_dataset(c, lambda ids: ids) == []
            assert (into / 'merge.json').is_file()
            outcomes.add('whole')
        else:
            outcomes.add('absent')
        for source, before in ((a, before_a), (b, before_b)):  # as they were, but where the copies go (retire)
            now = _files(source.root)
            lines = now.pop('copies.jsonl', None)
            assert now == before
            if lines is not None:
                copies = [json.loads(line) for line in (source.root / 'copies.jsonl').read_text().splitlines()]
                assert all(c['kind'] == 'dataset' and Path(c['path']).parent.parent.name.startswith('c')
                           for c in copies)
        assert a.list() == rows_a and b.list() == rows_b
    # a later merge into the same place clears what a killed one left and finishes
    assert main(['merge', str(a.root), str(b.root), '--into', str(tmp_path / 'c0-again')]) == 0
    assert 'absent' in outcomes  # the kill landed midway at least once (else this test proves nothing)
    leftovers = list(tmp_path.glob('c*.partial-*'))
    for partial in leftovers:  # only of killed processes: the next merge into that place removes them
        assert not (tmp_path / partial.name.split('.partial-')[0]).exists()


def test_set_edits_every_episode_a_query_picks_each_with_its_audit_line(make_demo_dataset: MakeDataset,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    a = make_demo_dataset([{'operator': 'ana'}, {'operator': 'ana'}, {'operator': 'bo'}], name='a')
    ana = [row.id for row in a.list() if row.operator == 'ana']
    before = _files(a.root)

    code, out, err = _run(['set', str(a.root), '--where', 'operator = ana', '--task', 'stack_cubes', '--outcome',
                           'success', '--why', 'relabelled', '--dry-run'], capsys)
    assert code == 0, err
    assert '2 episode(s) would be set to task=stack_cubes outcome=success (dry run: nothing changed)' in out
    assert _files(a.root) == before

    code, out, err = _run(['set', str(a.root), '--where', 'operator = ana', '--task', 'stack_cubes', '--outcome',
                           'success', '--operator', 'ana_k', '--why', 'relabelled'], capsys)
    assert code == 0, err
    rows = {row.id: row for row in a.list()}
    assert all((rows[i].task, rows[i].outcome, rows[i].operator) == ('stack_cubes', 'success', 'ana_k') for i in ana)
    assert [row.task for row in rows.values() if row.id not in ana] == ['pick_cube']
    lines = [e for e in _audit(a) if e['action'] in ('set_task', 'set_outcome', 'set_operator')]
    assert sorted((e['episode'], e['action']) for e in lines) == sorted(
        (i, f'set_{f}') for i in ana for f in ('task', 'operator', 'outcome'))
    assert all(e['reason'] == 'relabelled' for e in lines)
    assert {e['old'] for e in lines if e['action'] == 'set_task'} == {'pick_cube'}

    code, _, err = _run(['set', str(a.root), '--task', 'x'], capsys)
    assert code == 1 and '--where' in err and len(err.strip().splitlines()) == 1
    code, _, err = _run(['set', str(a.root), '--where', 'operator = ana_k', '--task', ''], capsys)
    assert code == 1 and 'not empty' in err


def test_retiring_an_episode_retires_its_copies_in_other_datasets(make_demo_dataset: MakeDataset, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # Consent withdrawn where an episode was recorded must reach the copies pooled from it: one copied into another
    # dataset, one merged into a third. Each is retired there as that dataset's own episode (tombstone, audit).
    a = make_demo_dataset([{'episode_id': 'e1'}, {'episode_id': 'e2'}], name='a')
    b = make_demo_dataset(0, name='b')
    first, second = a.episode_ids()
    assert _run(['episodes', 'copy', str(a.root), '--episode', first, '--into', str(b.root)], capsys)[0] == 0
    merged = tmp_path / 'pool'
    assert _run(['merge', str(a.root), '--into', str(merged)], capsys)[0] == 0
    copies = [Dataset.open(b.root).episode_dir(first), Dataset.open(merged).episode_dir(first)]
    assert all(c.is_dir() for c in copies)

    code, out, err = _run(['retire', str(a.root), '--episode', first, '--why', 'consent withdrawn', '--json'], capsys)

    assert code == 0, err
    done = json.loads(out)['retired'][0]
    assert sorted(done['pooled']) == sorted(str(c.resolve()) for c in copies)
    assert not any(c.exists() for c in copies) and not a.episode_dir(first).exists()
    for root in (b.root, merged):
        there = Dataset.open(root)
        assert there.catalog.get(first).state == 'retired'
        retired = [e for e in _audit(there) if e['action'] == 'retire']
        assert [e['episode'] for e in retired] == [first] and first in retired[0]['why']
        assert verify_audit(there.audit_path).ok
    assert Dataset.open(merged).episode_dir(second).is_dir()  # the other episode's copy stays
    again = _run(['retire', str(a.root), '--episode', first, '--why', 'consent withdrawn'], capsys)
    assert again[0] != 0 or 'already retired' in again[1] + again[2]  # said, not done twice
