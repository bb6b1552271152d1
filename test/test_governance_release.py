"""Releases a model can name, and retirement that reaches every copy: what a data lead checks."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from ros_robodata.cli.main import main
from ros_robodata.dataset import Dataset
from ros_robodata.dataset.audit import read_audit


def run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *args: object) -> object:
    code, out, err = run(capsys, *args, '--json')
    assert code == 0, err
    return json.loads(out)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def approve_all(ds: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    policy = tmp_path / 'any.yaml'
    policy.write_text(yaml.safe_dump({'name': 'any', 'outcomes': ['success', 'recovery', 'failure', 'unknown']}))
    assert run(capsys, 'approve', ds.root, '--policy', policy)[0] == 0
    return policy


@pytest.fixture
def released(make_demo_dataset: Callable[..., Dataset], tmp_path: Path,
             capsys: pytest.CaptureFixture[str]) -> Dataset:
    ds = make_demo_dataset([{'episode_id': i, 'outcome': 'success'} for i in ('a', 'b', 'c')])
    approve_all(ds, tmp_path, capsys)
    assert run(capsys, 'release', 'create', ds.root, 'v1', '--why', 'first training set')[0] == 0
    return ds


def test_a_release_lists_every_file_with_its_hash_and_can_be_checked_without_robodata(
        released: Dataset, capsys: pytest.CaptureFixture[str]) -> None:
    folder = released.root / 'releases' / 'v1'
    manifest = json.loads((folder / 'manifest.json').read_text())
    assert sorted(manifest['episodes']) == ['a', 'b', 'c']
    for episode_id, entry in manifest['episodes'].items():
        on_disk = sorted(p.relative_to(released.episode_dir(episode_id)).as_posix()
                         for p in released.episode_dir(episode_id).rglob('*') if p.is_file())
        assert sorted(entry['files']) == on_disk
        for rel, f in entry['files'].items():
            path = released.episode_dir(episode_id) / rel
            assert f == {'sha256': sha(path), 'bytes': path.stat().st_size}
    assert manifest['profile_sha256'] == released.profile.sha256
    assert manifest['audit_head']['entries'] > 0 and len(manifest['audit_head']['sha256']) == 64
    # the manifest's own hash in sha256sum's format, and both files read-only
    check = subprocess.run(['sha256sum', '-c', 'manifest.sha256'], cwd=folder, capture_output=True, text=True)
    assert check.returncode == 0 and 'manifest.json: OK' in check.stdout
    assert not (folder / 'manifest.json').stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    assert {r.id: r.state for r in released.list()} == {'a': 'released', 'b': 'released', 'c': 'released'}
    listed = run_json(capsys, 'release', 'list', released.root)
    assert [(r['name'], r['episodes'], r['manifest_sha256']) for r in listed] == [
        ('v1', 3, (folder / 'manifest.sha256').read_text().split()[0])]
    # the release survives a catalog rebuild (its manifest is the truth)
    released.rebuild_catalog()
    assert {r.state for r in released.list()} == {'released'}
    code, _, err = run(capsys, 'release', 'create', released.root, 'v1')
    assert code == 1 and 'exists already' in err


def test_verify_finds_one_changed_byte_in_a_bag_and_one_changed_label(
        released: Dataset, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, 'release', 'verify', released.root, 'v1')[0] == 0
    bag = sorted(released.bag_dir('b').glob('*.mcap'))[0]
    data = bytearray(bag.read_bytes())
    data[len(data) // 2] ^= 0x01
    bag.write_bytes(bytes(data))
    (released.episode_dir('c') / 'annotations.json').write_text('{"labels": []}\n')  # a label added after release
    code, out, err = run(capsys, 'release', 'verify', released.root, 'v1', '--json')
    assert code == 1
    changes = {(c['episode'], c['file'], c['what']) for c in json.loads(out)['changes']}
    assert changes == {('b', f'bag/{bag.name}', 'changed'), ('c', 'annotations.json', 'added since the release')}
    assert 'release v1 does not match its manifest: 2 change(s)' in err


def test_an_edited_manifest_is_found(released: Dataset, capsys: pytest.CaptureFixture[str]) -> None:
    path = released.root / 'releases' / 'v1' / 'manifest.json'
    path.chmod(0o644)
    path.write_text(path.read_text().replace('"first training set"', '"second"'))
    code, out, _ = run(capsys, 'release', 'verify', released.root, 'v1', '--json')
    assert code == 1 and json.loads(out)['manifest_ok'] is False


def test_diff_names_added_removed_and_changed_episodes(
        released: Dataset, record_demo_episode: Callable[..., object], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    record_demo_episode(released, episode_id='d', outcome='success')
    approve_all(released, tmp_path, capsys)
    released.set_outcome('a', 'recovery', reason='relabelled')  # episode.yaml changes: a differs between releases
    assert run(capsys, 'release', 'create', released.root, 'v2', '--where', "id != 'c'")[0] == 0
    diff = run_json(capsys, 'release', 'diff', released.root, 'v1', 'v2')
    assert diff['added'] == ['d'] and diff['removed'] == ['c'] and diff['changed'] == {'a': ['episode.yaml']}


def test_nothing_approved_is_nothing_released(make_demo_dataset: Callable[..., Dataset],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    ds = make_demo_dataset(2)
    code, _, err = run(capsys, 'release', 'create', ds.root, 'v1')
    assert code == 1 and 'no approved episode among the 2 picked: run `robodata approve` first' in err
    assert not (ds.root / 'releases' / 'v1').exists()


def _files(*roots: Path) -> set[str]:
    return {str(p) for root in roots for p in root.rglob('*') if p.is_file()}


def test_withdrawing_a_participant_removes_every_copy_and_flags_the_release(
        demo_run: tuple[subprocess.CompletedProcess[str], Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    run_done, out_dir = demo_run
    assert run_done.returncode == 0, run_done.stderr
    shutil.copytree(out_dir / 'dataset', tmp_path / 'ds')
    ds = Dataset.open(tmp_path / 'ds')
    gone, kept = ds.episode_ids()[:2]
    approve_all(ds, tmp_path, capsys)
    assert run(capsys, 'release', 'create', ds.root, 'v1')[0] == 0
    assert run(capsys, 'export', 'frames', ds.root, '--out', tmp_path / 'frames', '--every', '1s')[0] == 0
    assert run(capsys, 'export', 'lerobot', ds.root, '--out', tmp_path / 'lerobot')[0] == 0
    assert run(capsys, 'participant', 'add', ds.root, 'P-0007', '--consent', 'research use')[0] == 0
    assert stat.S_IMODE((ds.root / 'participants.yaml').stat().st_mode) == 0o600
    assert run(capsys, 'set', ds.episode_dir(gone), '--participant', 'P-0007')[0] == 0
    before = _files(ds.root, tmp_path / 'frames', tmp_path / 'lerobot')
    assert any(f'/episodes/{gone}/' in f for f in before if f.startswith(str(tmp_path / 'frames')))

    plan = run_json(capsys, 'retire', ds.root, '--participant', 'P-0007', '--why', 'consent withdrawn', '--dry-run')
    assert [r['episode'] for r in plan['retired']] == [gone]
    assert _files(ds.root, tmp_path / 'frames', tmp_path / 'lerobot') == before  # a dry run deletes nothing

    code, out, err = run(capsys, 'retire', ds.root, '--participant', 'P-0007', '--why', 'consent withdrawn',
                         '--who', 'dpo')
    assert code == 0, err
    after = _files(ds.root, tmp_path / 'frames', tmp_path / 'lerobot')
    removed = before - after
    assert not ds.episode_dir(gone).exists()
    assert not any(f'/episodes/{gone}/' in f for f in after)  # no frame, bag or sidecar of it anywhere
    assert not (tmp_path / 'lerobot').exists()  # a LeRobot export cannot be cut per episode: deleted whole
    assert any(f.startswith(str(ds.episode_dir(gone))) for f in removed)
    assert ds.episode_dir(kept).is_dir() and (tmp_path / 'frames' / 'episodes' / kept).is_dir()
    stone = json.loads((ds.root / 'tombstones' / f'{gone}.json').read_text())
    assert stone['who'] == 'dpo' and stone['why'] == 'consent withdrawn' and stone['releases_affected'] == ['v1']
    assert all(len(h) == 64 for h in stone['files'].values())  # hashes, never the data
    assert {e['action'] for e in read_audit(ds.audit_path)} >= {'retire', 'withdraw_consent'}
    people = yaml.safe_load((ds.root / 'participants.yaml').read_text())['participants']
    assert people['P-0007']['withdrawn']
    # the release says which of its episodes were withdrawn, and when
    code, out, _ = run(capsys, 'release', 'verify', ds.root, 'v1', '--json')
    changes = json.loads(out)['changes']
    assert code == 1 and [(c['episode'], c['what']) for c in changes] == [(gone, 'withdrawn')]
    assert 'consent withdrawn' in changes[0]['detail'] and 'dpo' in changes[0]['detail']
    # the episode stays listed as retired, through a rebuild; verify does not call it lost
    ds.rebuild_catalog()
    assert {r.id: r.state for r in ds.list()}[gone] == 'retired'
    assert run(capsys, 'verify', ds.root)[0] == 0
    code, _, err = run(capsys, 'set', ds.episode_dir(kept), '--participant', 'P-0007')
    assert code == 1 and 'withdrew consent' in err


def test_retention_retires_only_unreleased_episodes_past_their_days(
        make_demo_dataset: Callable[..., Dataset], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = make_demo_dataset([{'episode_id': i, 'outcome': 'success'} for i in ('old', 'kept')])
    approve_all(ds, tmp_path, capsys)
    assert run(capsys, 'release', 'create', ds.root, 'v1', '--where', "id = 'kept'")[0] == 0
    code, _, err = run(capsys, 'retire', ds.root, '--expired', '--why', 'retention')
    assert code == 1 and 'no retention rule' in err
    info = yaml.safe_load((ds.root / 'dataset.yaml').read_text())
    (ds.root / 'dataset.yaml').write_text(yaml.safe_dump({**info, 'retention_days': 30}))
    plan = run_json(capsys, 'retire', ds.root, '--expired', '--why', 'retention', '--dry-run')
    assert [r['episode'] for r in plan['retired']] == ['old']  # the demo bags start in 2023; kept is released
    with pytest.raises(SystemExit) as stopped:  # a deletion without a reason is a wrong command line
        main(['retire', str(ds.root), '--episode', 'old'])
    assert stopped.value.code == 2 and 'the following arguments are required: --why' in capsys.readouterr().err
    assert os.path.isdir(ds.episode_dir('old'))


def test_the_release_is_described_in_croissant_that_mlcroissant_validates(
        make_demo_dataset: Callable[..., Dataset], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import mlcroissant

    ds = make_demo_dataset([{'episode_id': i, 'outcome': 'success', 'operator': 'ana'} for i in ('a', 'b')])
    consent = 'research use; faces to annotators'
    assert run(capsys, 'participant', 'add', ds.root, 'P-0001', '--consent', consent)[0] == 0
    assert run(capsys, 'set', ds.episode_dir('a'), '--participant', 'P-0001')[0] == 0
    approve_all(ds, tmp_path, capsys)
    assert run(capsys, 'release', 'create', ds.root, 'v1', '--why', 'pilot')[0] == 0
    folder = ds.root / 'releases' / 'v1'
    card = mlcroissant.Dataset(jsonld=str(folder / 'croissant.json')).metadata  # raises on an invalid document
    assert card.ctx.issues.errors == set()
    doc = json.loads((folder / 'croissant.json').read_text())
    assert doc['conformsTo'] == 'http://mlcommons.org/croissant/1.1'
    manifest_sha = (folder / 'manifest.sha256').read_text().split()[0]
    files = {f['@id']: f['sha256'] for f in doc['distribution']}
    assert files['manifest.json'] == manifest_sha
    manifest = json.loads((folder / 'manifest.json').read_text())
    for episode_id, entry in manifest['episodes'].items():
        for rel, f in entry['files'].items():
            assert files[f'episodes/{episode_id}/{rel}'] == f['sha256']
    assert 'teleoperation' in doc['rai:dataCollection'] and 'operators: ana' in doc['rai:dataCollection']
    assert 'P-0001: research use; faces to annotators' in doc['rai:personalSensitiveInformation']


def test_verify_finds_the_audit_history_of_the_release_rewritten(
        released: Dataset, capsys: pytest.CaptureFixture[str]) -> None:
    """The release recorded the audit chain's head: an entry written before it, edited later, is found."""
    lines = released.audit_path.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"recorder"', b'"someone"')
    released.audit_path.write_bytes(b''.join(lines))
    code, out, _ = run(capsys, 'release', 'verify', released.root, 'v1', '--json')
    changes = json.loads(out)['changes']
    assert code == 1 and [(c['episode'], c['file']) for c in changes] == [('(audit)', 'audit.jsonl')]
    assert 'line 2' in changes[0]['detail']


def test_a_bag_that_changed_since_it_was_recorded_is_not_released(
        make_demo_dataset: Callable[..., Dataset], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = make_demo_dataset([{'episode_id': i, 'outcome': 'success'} for i in ('a', 'b')])
    approve_all(ds, tmp_path, capsys)
    bag = sorted(ds.bag_dir('b').glob('*.mcap'))[0]
    data = bytearray(bag.read_bytes())
    data[-100] ^= 0xFF
    bag.write_bytes(bytes(data))
    code, _, err = run(capsys, 'release', 'create', ds.root, 'v1')
    assert code == 1 and f'no longer match the sha256 recorded when they were written (b/bag/{bag.name})' in err
    assert not (ds.root / 'releases').exists() or not any((ds.root / 'releases').iterdir())


def test_an_export_from_a_release_is_exactly_it_or_nothing(
        released: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, 'export', 'lerobot', released.root, '--release', 'v1', '--outcomes', 'success',
                       '--out', tmp_path / 'out')
    assert code == 1 and '--outcomes would leave some out' in err
    bag = sorted(released.bag_dir('a').glob('*.mcap'))[0]
    bag.write_bytes(bag.read_bytes()[:-1])
    code, _, err = run(capsys, 'export', 'lerobot', released.root, '--release', 'v1', '--out', tmp_path / 'out')
    assert code == 1 and 'the dataset no longer holds exactly this release (1 change(s), first: a/bag/' in err
    assert not (tmp_path / 'out').exists()
    code, _, err = run(capsys, 'export', 'lerobot', released.root, '--release', 'v9', '--out', tmp_path / 'out')
    assert code == 1 and 'no release v9 (releases: v1)' in err
