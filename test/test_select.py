"""`robodata select` as a data engineer uses it on a scored dataset whose truth is known: the mislabelled episode
comes first with the reason said, unusable ones are filtered out with theirs, the queue is stored (queue.json, the
catalog, the audit, the report) and the same inputs give the same bytes; bad input is one line and keeps the queue
that was there."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from ros_robodata import Dataset, score, segment, select_for_review
from ros_robodata.cli.main import main
from ros_robodata.dataset.annotations import add_labels
from ros_robodata.dataset.audit import read_audit
from ros_robodata.dataset.label import VERDICT, Label, Source
from ros_robodata.profile import load_profile
from ros_robodata.review import agreement, current_labels, write_disagreements
from ros_robodata.selection.rank import pick, standardized
from ros_robodata.selection.signals import Signal
from ros_robodata.sim.faults import Fault
from ros_robodata.sim.scripted_episodes import add_sim_episode, without_sensors
from test.profiles import PROFILE

MISLABELLED = 'ep03'  # the physics says success; the operator pressed failure
BROKEN = 'ep06'  # NaN joint positions: unusable for training


@pytest.fixture(scope='module')
def scored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Seven simulated episodes (seed i: success, except a failure at 2 and a recovery at 4), one mislabelled, one
    with NaN joints; segmented and scored as `robodata segment` and `robodata score` would."""
    root = tmp_path_factory.mktemp('select') / 'ds'
    dataset = Dataset.create(root, profile=without_sensors(load_profile(PROFILE)))
    for seed in range(7):
        name = f'ep{seed:02d}'
        faults = [Fault('joint_states', 'nan', 2.0, 2.3)] if name == BROKEN else []
        add_sim_episode(dataset, name, seed, label='failure' if name == MISLABELLED else None, faults=faults,
                        max_duration_s=14.0)
    segment(dataset)
    score(dataset)
    return root


@pytest.fixture
def dataset(scored: Path, tmp_path: Path) -> Path:
    copy = tmp_path / 'ds'
    shutil.copytree(scored, copy)
    return copy


def _select(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, dict | None, str]:
    code = main(['select', *map(str, args), '--json'])
    out, err = capsys.readouterr()
    return code, json.loads(out) if code == 0 else None, err


def test_the_mislabelled_episode_heads_the_queue_with_its_reason(dataset, capsys):
    code, queue, _ = _select(capsys, dataset, '--budget', '3')
    assert code == 0
    assert [p['rank'] for p in queue['queue']] == [1, 2, 3]
    first = queue['queue'][0]
    assert first['episode_id'] == MISLABELLED
    assert first['signals']['label_disagrees'] == {
        'value': 1.0, 'weight': 3.0, 'contribution': 3.0, 'why': first['signals']['label_disagrees']['why']}
    assert 'the operator labelled failure' in first['reasons'][0]
    # every pick's priority is the sum of its signals' contributions: explainable
    for entry in queue['queue']:
        assert entry['priority'] == pytest.approx(sum(s['contribution'] for s in entry['signals'].values()), abs=1e-3)
    assert BROKEN not in [p['episode_id'] for p in queue['queue']]
    assert queue['excluded'] == [{'episode_id': BROKEN, 'reason': queue['excluded'][0]['reason']}]
    assert queue['excluded'][0]['reason'].startswith('unusable: motion.nan')


def test_the_queue_is_stored_in_the_dataset_catalog_audit_and_report(dataset, capsys):
    assert main(['select', str(dataset), '--budget', '2', '--who', 'ana']) == 0
    out = capsys.readouterr().out
    assert f'1. {MISLABELLED}' in out and f'filtered out: {BROKEN}: unusable' in out
    stored = json.loads((dataset / 'review' / 'queue.json').read_text())
    picked = [p['episode_id'] for p in stored['queue']]
    assert len(picked) == 2 and picked[0] == MISLABELLED
    rows = {row.id: row for row in Dataset.open(dataset).catalog.query()}
    assert rows[MISLABELLED].review_rank == 1 and 'operator labelled failure' in rows[MISLABELLED].review_reason
    assert rows[picked[1]].review_rank == 2
    assert rows[BROKEN].review_rank is None and rows[BROKEN].review_excluded.startswith('unusable')
    assert main(['list', str(dataset)]) == 0
    listed = {line.split()[0]: line.split()[-1] for line in capsys.readouterr().out.splitlines()[1:] if line.strip()}
    assert listed[MISLABELLED] == '#1' and listed[BROKEN] == '-'
    last = list(read_audit(dataset / 'audit.jsonl'))[-1]
    assert (last['action'], last['who'], last['picked']) == ('select_review', 'ana', picked)
    # the index is rebuilt from queue.json, like the scores from quality.json
    (dataset / 'catalog.sqlite').unlink()
    rebuilt = {row.id: row for row in Dataset.open(dataset).catalog.query()}
    assert rebuilt[MISLABELLED].review_rank == 1 and rebuilt[BROKEN].review_excluded.startswith('unusable')
    assert main(['report', str(dataset), '--episodes', '0']) == 0
    page = (dataset / 'report.html').read_text()
    section = page[page.index('id="review-queue"'):]
    assert MISLABELLED in section[:section.index('</table>')] and BROKEN in section[:section.index('</section>')]


def test_same_inputs_give_the_same_queue_bytes(dataset, capsys):
    assert main(['select', str(dataset), '--budget', '50%']) == 0
    first = (dataset / 'review' / 'queue.json').read_bytes()
    (dataset / 'review' / 'embeddings.json').unlink()  # recomputed from the bags: the same vectors
    assert main(['select', str(dataset), '--budget', '50%']) == 0
    assert (dataset / 'review' / 'queue.json').read_bytes() == first
    assert main(['select', str(dataset), '--budget', '50%']) == 0  # from the cache
    assert (dataset / 'review' / 'queue.json').read_bytes() == first
    assert json.loads(first)['budget'] == {'asked': '50%', 'episodes': 4}  # half of 7, rounded up
    capsys.readouterr()


def test_the_policy_uncertainty_ranks_and_is_explained(dataset, capsys, tmp_path):
    frames = tmp_path / 'loss.csv'
    # per-frame action-prediction loss: ep05 is where the policy struggles, at a few frames
    rows = ['episode,frame,loss'] + [f'ep{i:02d},{f},{0.1 + 0.01 * i}' for i in range(7) for f in range(20)]
    rows += [f'ep05,{f},5.0' for f in range(20, 24)]
    frames.write_text('\n'.join(rows) + '\n')
    code, queue, _ = _select(capsys, dataset, '--budget', '2', '--uncertainty', frames)
    assert code == 0
    by_id = {p['episode_id']: p for p in queue['queue']}
    assert 'ep05' in by_id
    assert by_id['ep05']['signals']['uncertainty']['value'] == 1.0
    assert "the policy's uncertainty 5: the highest among these episodes" in by_id['ep05']['reasons']
    assert queue['inputs']['uncertainty']['episodes'] == 7
    # without it, ep05 (a clean success) is not worth a place
    code, plain, _ = _select(capsys, dataset, '--budget', '2')
    assert code == 0 and 'ep05' not in [p['episode_id'] for p in plain['queue']]


@pytest.mark.parametrize(('content', 'expected'), [
    ('episode,loss\nep01,high\n', 'line 2: \'high\' is not a number'),
    ('name,value\nep01,1\n', 'line 1: the header must name an episode column'),
    ('{"ep01": [1, "NaN"]}', "'NaN' is not a finite number"),
])
def test_a_bad_uncertainty_file_is_one_line_and_keeps_the_stored_queue(dataset, capsys, tmp_path, content, expected):
    assert main(['select', str(dataset), '--budget', '2']) == 0
    stored = (dataset / 'review' / 'queue.json').read_bytes()
    bad = tmp_path / ('scores.json' if content.startswith('{') else 'scores.csv')
    bad.write_text(content)
    capsys.readouterr()
    code, _, err = _select(capsys, dataset, '--uncertainty', bad)
    assert code == 1
    assert err.count('\n') == 1 and err.startswith('robodata select: error: ') and expected in err
    assert (dataset / 'review' / 'queue.json').read_bytes() == stored


@pytest.mark.parametrize(('budget', 'expected'), [('abc', 'neither a number of episodes'), ('0', 'at least 1'),
                                                  ('150%', 'at most 100%')])
def test_a_bad_budget_is_one_line(dataset, capsys, budget, expected):
    code, _, err = _select(capsys, dataset, '--budget', budget)
    assert code == 1 and expected in err and err.count('\n') == 1
    assert not (dataset / 'review').exists()


def test_an_unscored_dataset_says_what_to_run(tmp_path, capsys):
    dataset = Dataset.create(tmp_path / 'raw', profile=without_sensors(load_profile(PROFILE)))
    add_sim_episode(dataset, 'ep00', 0, max_duration_s=6.0)
    code, _, err = _select(capsys, dataset.root)
    assert code == 1 and 'run `robodata score' in err


def _verdicts(dataset: Path, episode: str, *given: tuple[str, str]) -> None:
    """Reviewers' verdicts put into annotations.json by the review loop's own store."""
    labels = [Label(VERDICT, verdict, annotator, '2026-12-01T10:00:00+00:00', Source('label_studio', 'p', '1'))
              for annotator, verdict in given]
    add_labels(dataset / 'episodes' / episode, dataset / 'audit.jsonl', labels, who='test')


def test_a_reviewed_verdict_keeps_an_episode_out_unless_asked(dataset, capsys):
    _verdicts(dataset, MISLABELLED, ('bo', 'success'))
    code, queue, _ = _select(capsys, dataset, '--budget', '2')
    assert code == 0 and MISLABELLED not in [p['episode_id'] for p in queue['queue']]
    assert {'episode_id': MISLABELLED, 'reason': 'already reviewed (verdict success)'} in queue['excluded']
    code, queue, _ = _select(capsys, dataset, '--budget', '2', '--include-reviewed')
    assert code == 0 and queue['queue'][0]['episode_id'] == MISLABELLED
    # a file that is not readable JSON is no review, and is said
    (dataset / 'episodes' / MISLABELLED / 'annotations.json').write_text('{"labels": [')
    code, queue, _ = _select(capsys, dataset, '--budget', '2')
    assert code == 0 and queue['queue'][0]['episode_id'] == MISLABELLED
    assert any('annotations.json' in note and 'read as not reviewed' in note for note in queue['notes'])


def test_reviewers_who_disagree_put_the_episode_back_in_the_queue_with_their_reasons(dataset, capsys):
    """Two reviewers split on an episode the machine had no doubt about: it needs a third look."""
    code, queue, _ = _select(capsys, dataset, '--budget', '2')
    calm = next(e for e in ('ep00', 'ep01', 'ep05') if e not in [p['episode_id'] for p in queue['queue']])
    _verdicts(dataset, calm, ('bo', 'success'), ('carla', 'failure'))
    write_disagreements(dataset / 'review', agreement(current_labels(Dataset.open(dataset))))
    code, queue, _ = _select(capsys, dataset, '--budget', '2')
    picked = {p['episode_id']: p for p in queue['queue']}
    assert code == 0 and calm in picked  # it was not before
    assert 'reviewers disagree' in json.dumps(picked[calm]) and 'verdict' in json.dumps(picked[calm])
    assert calm not in [e['episode_id'] for e in queue['excluded']]


def test_a_dry_run_stores_nothing(dataset, capsys):
    code, queue, _ = _select(capsys, dataset, '--budget', '1', '--dry-run')
    assert code == 0 and queue['path'] is None and queue['queue'][0]['episode_id'] == MISLABELLED
    assert not (dataset / 'review').exists()
    assert all(row.review_rank is None for row in Dataset.open(dataset).catalog.query())


def test_python_users_get_the_same_queue(dataset):
    run = select_for_review(Dataset.open(dataset), budget=2, write=False)
    assert run.picks[0].episode_id == MISLABELLED and BROKEN in run.excluded


def test_near_identical_episodes_do_not_fill_the_queue():
    """Ten near-copies of one doubtful demonstration and five different, slightly less doubtful ones: a queue of five
    takes one copy and the different ones, because each copy after the first adds nothing new."""
    rng = np.random.default_rng(0)
    doubt = {'doubtful_events': Signal(1.0, 'grasp detected with low confidence')}
    lesser = {'doubtful_events': Signal(0.8, 'grasp detected with low confidence')}
    candidates = {f'a{i}': doubt for i in range(10)} | {f'b{i}': lesser for i in range(5)}
    base = rng.normal(size=32)
    vectors = {f'a{i}': base + rng.normal(scale=0.01, size=32) for i in range(10)}
    vectors |= {f'b{i}': rng.normal(size=32) for i in range(5)}
    picks = [p.episode_id for p in pick(candidates, standardized(vectors), 5)]
    assert sum(name.startswith('a') for name in picks) == 1
    assert picks[0].startswith('a')  # the most doubtful comes first
    assert picks == [p.episode_id for p in pick(candidates, standardized(vectors), 5)]


def test_a_broken_queue_file_costs_the_report_and_the_catalog_nothing(dataset, capsys):
    assert main(['select', str(dataset), '--budget', '2']) == 0
    (dataset / 'review' / 'queue.json').write_text('{"format": "ros_robodata.review_queue/1", "queue": [{"rank": ')
    assert main(['report', str(dataset), '--episodes', '0']) == 0
    page = (dataset / 'report.html').read_text()
    assert 'the review queue could not be read' in page[page.index('id="review-queue"'):]
    assert main(['catalog', 'rebuild', str(dataset)]) == 0
    assert all(row.review_rank is None for row in Dataset.open(dataset).catalog.query())
    assert list(read_audit(dataset / 'audit.jsonl'))[-1]['action'] == 'unreadable_review_queue'
    capsys.readouterr()


def test_a_catalog_rebuild_audits_a_quality_file_it_cannot_read(dataset, capsys):
    (dataset / 'episodes' / 'ep01' / 'quality.json').write_text('{"score": "high"}')
    assert main(['catalog', 'rebuild', str(dataset)]) == 0
    audited = [e for e in read_audit(dataset / 'audit.jsonl') if e['action'] == 'unreadable_quality_file']
    assert [(e['episode'], Path(e['file']).name) for e in audited] == [('ep01', 'quality.json')]
    capsys.readouterr()
