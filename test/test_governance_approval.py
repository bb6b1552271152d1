"""`robodata approve`: episodes judged against a written policy, each decision with its reasons, who and why."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from ros_robodata.cli.main import main
from ros_robodata.dataset import Dataset
from ros_robodata.dataset.audit import read_audit

T0 = 1_700_000_000_000_000_000


def run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def scored(dataset: Dataset, episode_id: str, score: float, errors: int = 0, events: tuple[str, ...] = ()) -> None:
    """What `robodata score` and `robodata segment` leave: the catalog's score columns and an events.json."""
    dataset.catalog.set_scores(episode_id, score, {'errors': errors, 'warnings': 0,
                                                   'checks': ['timing.gap'] if errors else [], 'consistency': None,
                                                   'success_verdict': None, 'disagrees': None})
    doc = {'format': 'ros_robodata.events/1', 'episode_id': episode_id,
           'events': [{'kind': k, 't_ns': T0 + i} for i, k in enumerate(events)], 'timeline': []}
    (dataset.episode_dir(episode_id) / 'events.json').write_text(json.dumps(doc))


def policy_file(tmp_path: Path, **criteria: object) -> Path:
    path = tmp_path / 'policy.yaml'
    path.write_text(yaml.safe_dump({'name': 'training', **criteria}))
    return path


@pytest.fixture
def judged(make_demo_dataset: Callable[..., Dataset]) -> Dataset:
    """good: everything; low: score under the floor; failed: operator said failure; errors: an error finding;
    quiet: no release event; fresh: never scored."""
    ds = make_demo_dataset([{'episode_id': i, 'outcome': 'failure' if i == 'failed' else 'success'}
                            for i in ('good', 'low', 'failed', 'errors', 'quiet', 'fresh')])
    full = ('grasp_start', 'grasp', 'release')
    scored(ds, 'good', 0.93, events=full)
    scored(ds, 'low', 0.55, events=full)
    scored(ds, 'failed', 0.9, events=full)
    scored(ds, 'errors', 0.85, errors=2, events=full)
    scored(ds, 'quiet', 0.9, events=('grasp_start', 'grasp'))
    return ds


def test_approve_admits_what_the_policy_admits_and_rejects_the_rest_with_reasons(
        judged: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = policy_file(tmp_path, min_score=0.8, no_error_findings=True, outcomes=['success', 'recovery'],
                         required_events=['grasp', 'release'])
    code, out, err = run(capsys, 'approve', judged.root, '--policy', policy, '--who', 'lead', '--why', 'release 12',
                         '--json')
    assert code == 0, err
    doc = json.loads(out)
    verdicts = {d['episode']: d['verdict'] for d in doc['decisions']}
    assert verdicts == {'good': 'approved', 'low': 'rejected', 'failed': 'rejected', 'errors': 'rejected',
                        'quiet': 'rejected', 'fresh': 'rejected'}
    reasons = {d['episode']: d['reasons'] for d in doc['decisions']}
    assert reasons['good'] == []
    assert reasons['low'] == ['score 0.55 < 0.8']
    assert reasons['failed'] == ["operator's outcome failure (the policy admits success, recovery)"]
    assert reasons['errors'] == ['2 error finding(s) (timing.gap)']
    assert reasons['quiet'] == ['no release event']
    assert reasons['fresh'][0] == 'no score (run robodata score)'
    # the decision is the episode's status, its record in episode.yaml, the catalog's state and an audit line each
    assert {r.id: r.state for r in judged.list()} == verdicts
    good = judged.episode('good')
    assert good.status == 'approved' and good.decision['policy'] == 'training'
    assert good.decision['policy_sha256'] == __import__('hashlib').sha256(policy.read_bytes()).hexdigest()
    assert judged.episode('low').decision['reasons'] == ['score 0.55 < 0.8']
    lines = [e for e in read_audit(judged.audit_path) if e['action'] in ('approve', 'reject')]
    assert len(lines) == 6 and all(e['who'] == 'lead' and e['why'] == 'release 12' for e in lines)
    assert {e['episode'] for e in lines if e['action'] == 'approve'} == {'good'}
    code, out, _ = run(capsys, 'list', judged.root, '--json')
    assert {r['id']: r['state'] for r in json.loads(out)} == verdicts


def test_dry_run_changes_nothing_and_a_second_run_adds_no_audit_line(
        judged: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = policy_file(tmp_path, min_score=0.8)
    before = {p: p.read_bytes() for p in [*judged.root.rglob('*.yaml'), judged.audit_path]}
    code, out, _ = run(capsys, 'approve', judged.root, '--policy', policy, '--dry-run')
    assert code == 0
    assert 'would be approved' in out and 'dry run: nothing changed' in out
    assert {p: p.read_bytes() for p in before} == before
    assert {r.state for r in judged.list()} == {'scored', 'recorded'}
    assert run(capsys, 'approve', judged.root, '--policy', policy)[0] == 0
    audit = judged.audit_path.read_bytes()
    code, out, _ = run(capsys, 'approve', judged.root, '--policy', policy, '--json')
    assert {d['verdict'] for d in json.loads(out)['decisions']} == {'unchanged'}
    assert judged.audit_path.read_bytes() == audit


def test_reviewers_verdict_outranks_the_operators_label(
        judged: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    judged.catalog.set_reviewed_outcome('good', 'disputed')
    judged.catalog.set_reviewed_outcome('failed', 'success')  # the operator mislabelled it; reviewers caught it
    policy = policy_file(tmp_path, require_review=True, reviewed_outcomes=['success'], outcomes=['success'])
    _code, out, _ = run(capsys, 'approve', judged.root, '--policy', policy, '--json')
    reasons = {d['episode']: d['reasons'] for d in json.loads(out)['decisions']}
    assert reasons['failed'] == []
    assert reasons['good'] == ['reviewers said disputed (the policy admits success)']
    assert "not reviewed (the policy asks for a reviewers' verdict)" in reasons['low']


def test_recovery_share_rejects_the_surplus_the_same_way_every_run(
        make_demo_dataset: Callable[..., Dataset], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = make_demo_dataset([{'episode_id': f's{i}', 'outcome': 'success'} for i in range(6)]
                           + [{'episode_id': f'r{i}', 'outcome': 'recovery'} for i in range(4)])
    policy = policy_file(tmp_path, outcomes=['success', 'recovery'], recovery_share=[0.0, 0.25])
    _code, out, _ = run(capsys, 'approve', ds.root, '--policy', policy, '--dry-run', '--json')
    doc = json.loads(out)
    rejected = sorted(d['episode'] for d in doc['decisions'] if d['verdict'] == 'rejected')
    # 6 successes admit at most 2 recoveries for a 25% share (2 of 8)
    assert len(rejected) == 2 and all(r.startswith('r') for r in rejected)
    assert doc['warnings'] == ['recoveries were 4 of 10 admitted (40%), over the 25% wanted: 2 rejected']
    again = json.loads(run(capsys, 'approve', ds.root, '--policy', policy, '--dry-run', '--json')[1])
    assert sorted(d['episode'] for d in again['decisions'] if d['verdict'] == 'rejected') == rejected


def test_a_policy_with_mistakes_is_refused_one_line_each_and_nothing_changes(
        judged: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = policy_file(tmp_path, min_scroe=0.8, outcomes=['sucess'], recovery_share=[0.5, 0.2])
    audit = judged.audit_path.read_bytes()
    code, _out, err = run(capsys, 'approve', judged.root, '--policy', policy)
    assert code == 1
    assert len(err.strip().splitlines()) == 1, err
    assert f'{policy}: 3 mistakes: ' in err
    assert "'min_scroe' is not a policy key (did you mean 'min_score'?)" in err
    assert "outcomes: 'sucess' not among success, failure, recovery, unknown" in err
    assert 'recovery_share: expected [low, high] with 0 <= low <= high <= 1, got [0.5, 0.2]' in err
    assert judged.audit_path.read_bytes() == audit
    empty = policy_file(tmp_path, description='nothing asked')
    code, _, err = run(capsys, 'approve', judged.root, '--policy', empty)
    assert code == 1 and 'no criterion: it would approve every episode' in err


def test_the_shipped_policy_judges_the_demo_cell_episodes(
        demo_run: tuple[subprocess.CompletedProcess[str], Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The policy in config/policies on episodes recorded, segmented and scored by `robodata demo`: each verdict
    is what the episode's own quality.json and events.json say."""
    run_done, out_dir = demo_run
    assert run_done.returncode == 0, run_done.stderr
    ds_root = tmp_path / 'demo'
    shutil.copytree(out_dir / 'dataset', ds_root)
    policy = Path(__file__).resolve().parent.parent / 'config' / 'policies' / 'pick_place_training.yaml'
    code, out, err = run(capsys, 'approve', ds_root, '--policy', policy, '--json')
    assert code == 0, err
    decisions = json.loads(out)['decisions']
    assert decisions
    for d in decisions:
        folder = ds_root / 'episodes' / d['episode']
        quality = json.loads((folder / 'quality.json').read_text())
        kinds = {e['kind'] for e in json.loads((folder / 'events.json').read_text())['events']}
        ok = (quality['score'] >= 0.8 and quality['catalog']['errors'] == 0 and {'grasp', 'release'} <= kinds
              and quality['outcome'] in ('success', 'recovery'))
        assert (d['verdict'] == 'approved') == ok, d


def test_a_rig_without_a_gripper_or_wrench_is_told_why_no_event_can_be_required(
        tmp_path: Path, record_demo_episode: Callable[..., object], capsys: pytest.CaptureFixture[str]) -> None:
    from ros_robodata.profile import load_profile

    root = Path(__file__).resolve().parent.parent
    ds = Dataset.create(tmp_path / 'studio', profile=load_profile(root / 'config' / 'capture_studio.yaml'))
    record_demo_episode(ds, episode_id='take1', outcome='success')
    policy = policy_file(tmp_path, required_events=['grasp'])
    code, out, _ = run(capsys, 'approve', ds.root, '--policy', policy, '--json')
    (decision,) = json.loads(out)['decisions']
    assert code == 0 and decision['reasons'] == [
        'no events can be found: the robot profile names no gripper or wrench, and the policy requires grasp (add '
        'them to the profile, or drop required_events)']
