"""Agreement figures against worked examples, and the machine-versus-human report on an episode whose truth is
written down."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from ros_robodata.cli.main import main
from ros_robodata.dataset import Dataset
from ros_robodata.review import Label, Source, apply_labels
from ros_robodata.review.agreement import box_iou, cohen_kappa, fleiss_kappa, temporal_iou

# Fleiss (1971) as worked in most textbooks: 10 subjects, 14 raters, 5 categories; kappa = 0.210.
FLEISS_TABLE = [(0, 0, 0, 0, 14), (0, 2, 6, 4, 2), (0, 0, 3, 5, 6), (0, 3, 9, 2, 0), (2, 2, 8, 1, 1),
                (7, 7, 0, 0, 0), (3, 2, 6, 3, 0), (2, 5, 3, 2, 2), (6, 5, 2, 1, 0), (0, 2, 2, 3, 7)]


def test_kappas_on_worked_examples() -> None:
    # two raters, 50 items: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no -> p_o 0.7, p_e 0.5, kappa 0.4
    pairs = [('yes', 'yes')] * 20 + [('yes', 'no')] * 5 + [('no', 'yes')] * 10 + [('no', 'no')] * 15
    assert cohen_kappa(pairs) == pytest.approx(0.4)
    items = [[str(c) for c, n in enumerate(row) for _ in range(n)] for row in FLEISS_TABLE]
    assert fleiss_kappa(items) == pytest.approx(0.210, abs=5e-4)
    assert cohen_kappa([]) is None and fleiss_kappa([['a']]) is None
    assert cohen_kappa([('a', 'b'), ('b', 'a')]) < 0  # systematic disagreement is worse than chance


def test_overlaps() -> None:
    assert temporal_iou([(0, 2)], [(1, 3)]) == pytest.approx(1 / 3)
    assert temporal_iou([(0, 1), (0.5, 2)], [(0, 2)]) == 1.0  # overlapping spans of one annotator merge
    assert temporal_iou([(0, 1)], []) == 0.0 and temporal_iou([], []) == 1.0
    assert box_iou((0, 0, 10, 10), (5, 0, 10, 10)) == pytest.approx(50 / 150)
    assert box_iou((0, 0, 10, 10), (20, 20, 5, 5)) == 0.0


def _segment(value: str, start: float, end: float, who: str = 'ana', item: str = '') -> Label:
    return Label('segment', value, who, '2026-12-01T10:00:00Z', Source('label_studio', 'p', '1', item or value),
                 start_s=start, end_s=end)


def test_machine_against_reviewers(make_demo_dataset: Callable[..., Dataset],
                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The segmenter saw a grasp at 2.0 s (confirmed), a second grasp at 6.0 s (none there: wrong) and no
    release where the reviewer marked one; its success verdict says failure where the reviewer says success."""
    ds = make_demo_dataset([{'episode_id': '20260103-090000', 'outcome': 'success'}])
    folder = ds.episode_dir('20260103-090000')
    start = 1_000_000_000_000
    (folder / 'events.json').write_text(json.dumps({
        'format': 'ros_robodata.events/1', 'start_ns': start,
        'events': [{'kind': 'grasp', 't_ns': start + 2_000_000_000}, {'kind': 'grasp', 't_ns': start + 6_000_000_000},
                   {'kind': 'lift', 't_ns': start + 3_000_000_000}],
        'timeline': [{'name': 'grasp', 'start_ns': start + 1_500_000_000, 'end_ns': start + 2_500_000_000}]}))
    (folder / 'quality.json').write_text(json.dumps({'success': {'success': False}}))
    apply_labels(ds, {'20260103-090000': [
        _segment('manipulation/grasp', 1.8, 2.6), _segment('manipulation/release', 4.0, 4.5),
        Label('verdict', 'success', 'ana', '2026-12-01T10:00:00Z', Source('label_studio', 'p', '1', 'v'))]})
    assert main(['review', 'machine', str(ds.root), '--json']) == 0
    report = json.loads(capsys.readouterr().out)
    kinds = {k['kind']: k for k in report['kinds']}
    assert (kinds['grasp']['machine_events'], kinds['grasp']['confirmed'], kinds['grasp']['precision']) == (2, 1, 0.5)
    assert (kinds['grasp']['reviewed_segments'], kinds['grasp']['recall']) == (1, 1.0)
    assert (kinds['release']['machine_events'], kinds['release']['recall']) == (0, 0.0)
    assert report['unchecked_kinds'] == {'lift': 1}
    assert report['subtask_iou']['grasp'] == pytest.approx(0.7 / 1.1, abs=1e-3)  # 1.8-2.5 of 1.5-2.6
    assert report['success_verdict'] == {'compared': 1, 'agreeing': 0, 'agreement': 0.0}
    assert report['operator_outcome'] == {'compared': 1, 'agreeing': 1, 'agreement': 1.0}
    assert main(['review', 'machine', str(ds.root)]) == 0
    out = capsys.readouterr().out
    assert 'grasp' in out and 'success verdict agrees with the reviewers on 0 of 1 episode(s)' in out


def test_labels_of_unknown_episode_write_nothing(make_demo_dataset: Callable[..., Dataset]) -> None:
    from ros_robodata.errors import DatasetError

    ds = make_demo_dataset([{'episode_id': '20260103-090000'}])
    with pytest.raises(DatasetError, match='no such episode'):
        apply_labels(ds, {'20260103-090000': [_segment('manipulation/grasp', 0, 1)],
                          '20260103-999999': [_segment('manipulation/grasp', 0, 1)]})
    assert not (ds.episode_dir('20260103-090000') / 'annotations.json').exists()


def test_which_episodes_a_push_takes(make_demo_dataset: Callable[..., Dataset]) -> None:
    from ros_robodata.errors import DatasetError
    from ros_robodata.review.label_studio.server_sync import choose_episodes

    ids = ['20260104-000001', '20260104-000002', '20260104-000003']
    ds = make_demo_dataset([{'episode_id': e} for e in ids])
    chosen, said = choose_episodes(ds, episodes=None, queue=2)
    assert chosen == ids[:2] and said.startswith('no review queue') and 'first 2 episode(s) by id' in said
    assert choose_episodes(ds, episodes=None, queue=None)[0] == ids
    (ds.root / 'review').mkdir()
    (ds.root / 'review' / 'queue.json').write_text(json.dumps([ids[2], {'episode_id': ids[0]}]))
    chosen, said = choose_episodes(ds, episodes=None, queue=5)
    assert chosen == [ids[2], ids[0]] and said == 'the first 2 of the review queue (2 ranked)'
    assert choose_episodes(ds, episodes=[ids[1]], queue=None)[0] == [ids[1]]
    (ds.root / 'review' / 'queue.json').write_text(json.dumps({'queue': ['20990101-000000']}))
    with pytest.raises(DatasetError, match='not in the dataset'):
        choose_episodes(ds, episodes=None, queue=1)
    (ds.root / 'review' / 'queue.json').write_text('{"queue": 3}')
    with pytest.raises(DatasetError, match='not a review queue'):
        choose_episodes(ds, episodes=None, queue=1)
