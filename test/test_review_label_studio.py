"""The review loop against a real Label Studio server: push the queue, two annotators label (one disagreement),
pull, and what the dataset then holds; pushing and pulling again change nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ros_robodata.cli.main import main
from ros_robodata.dataset import Dataset
from ros_robodata.dataset.episode import Episode
from ros_robodata.profile import load_profile
from ros_robodata.sim.to_bag import write_sim_episode
from test import label_studio_server

PROFILE = Path(__file__).resolve().parent.parent / 'config' / 'sim_cell.yaml'
EPISODES = ('20260101-120000', '20260101-120001', '20260101-120002')
PROJECT = 'pick review'
FRAMES = 'pick review frames'


@pytest.fixture(scope='module')
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[label_studio_server.Server]:
    work = tmp_path_factory.mktemp('label_studio')
    root = work / 'docroot'
    root.mkdir()
    running = label_studio_server.start(work, root)
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope='module')
def dataset(server: label_studio_server.Server) -> Dataset:
    """Three simulated episodes with the wrist camera, segmented and scored, inside the server's document root; a
    review queue that ranks the third episode first."""
    profile = load_profile(PROFILE)
    ds = Dataset.create(server.document_root / 'ds', profile=profile)
    for seed, episode_id in enumerate(EPISODES):
        write_sim_episode(ds.bag_dir(episode_id), profile, seed=seed, cameras=True, image_size=(64, 48),
                          max_duration_s=5.0)
        ds.add_episode(Episode(id=episode_id, task='pick', status='complete', outcome='success', operator='olga'))
    assert main(['segment', str(ds.root)]) == 0
    assert main(['score', str(ds.root), '--no-images']) == 0
    (ds.root / 'review').mkdir()
    (ds.root / 'review' / 'queue.json').write_text(json.dumps(
        {'queue': [{'episode': EPISODES[2], 'rank': 1}, {'episode': EPISODES[0], 'rank': 2},
                   {'episode': EPISODES[1], 'rank': 3}]}))
    return ds


def robodata(server: label_studio_server.Server, monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    monkeypatch.setenv('LABEL_STUDIO_API_KEY', server.token)
    return main([*args[:2], args[2], '--label-studio', server.url, '--project', PROJECT, *args[3:]])


def tasks_on_server(server: label_studio_server.Server, title: str = PROJECT) -> list[dict[str, Any]]:
    projects = server.api('GET', f'/api/projects/?title={title.replace(" ", "%20")}')['results']
    projects = [p for p in projects if p['title'] == title]
    assert len(projects) == 1
    answer = server.api('GET', f'/api/tasks/?project={projects[0]["id"]}&fields=all&page_size=100')
    return answer['tasks'] if isinstance(answer, dict) else answer


def dataset_files(ds: Dataset) -> dict[str, bytes]:
    return {str(p.relative_to(ds.root)): p.read_bytes() for p in sorted(ds.root.rglob('*'))
            if p.is_file() and 'media' not in p.parts and p.suffix not in ('.sqlite', '.sqlite-wal', '.sqlite-shm')}


def annotate(server: label_studio_server.Server, task: dict[str, Any], user_id: int, verdict: str,
             grasp: tuple[int, int]) -> dict[str, Any]:
    """What an annotator's browser sends: a verdict and a grasp span on the timeline (frame numbers)."""
    return server.api('POST', f'/api/tasks/{task["id"]}/annotations/', {
        'completed_by': user_id,
        'result': [
            {'id': 'v1', 'from_name': 'verdict', 'to_name': 'video', 'type': 'choices',
             'value': {'choices': [verdict]}},
            {'id': 'g1', 'from_name': 'timeline', 'to_name': 'video', 'type': 'timelinelabels',
             'value': {'ranges': [{'start': grasp[0], 'end': grasp[1]}], 'timelinelabels': ['manipulation/grasp']}},
        ]})


def box(server: label_studio_server.Server, task: dict[str, Any], user_id: int, x_percent: float) -> None:
    """A cube's box on an image task, in Label Studio's percent of the image."""
    server.api('POST', f'/api/tasks/{task["id"]}/annotations/', {'completed_by': user_id, 'result': [
        {'id': 'b1', 'from_name': 'bbox', 'to_name': 'image', 'type': 'rectanglelabels', 'original_width': 64,
         'original_height': 48, 'value': {'x': x_percent, 'y': 20, 'width': 50, 'height': 50, 'rotation': 0,
                                          'rectanglelabels': ['object/cube']}}]})


def test_push_annotate_pull_and_again(server: label_studio_server.Server, dataset: Dataset,
                                      monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # push the first two of the queue: the third episode and the first
    assert robodata(server, monkeypatch, 'review', 'push', str(dataset.root), '--queue', '2',
                    '--document-root', str(server.document_root), '--frames', '2s') == 0
    out = capsys.readouterr().out
    assert 'the first 2 of the review queue' in out and '2 task(s) created' in out
    assert "project 'pick review frames'" in out and 'frame task(s) created' in out
    tasks = tasks_on_server(server)
    assert sorted(t['data']['episode_id'] for t in tasks) == sorted([EPISODES[2], EPISODES[0]])
    for task in tasks:
        status, video = server.fetch(task['data']['video'])  # the video Label Studio's player loads
        assert status == 200 and video[4:8] == b'ftyp'
        assert task['data']['outcome'] == 'success'
        predicted = [r for p in server.api('GET', f'/api/predictions/?task={task["id"]}') for r in p['result']]
        assert any(r['type'] == 'timelinelabels' and r['value']['timelinelabels'] == ['manipulation/grasp']
                   for r in predicted), 'the machine grasp is offered as a prediction'

    frame_tasks = tasks_on_server(server, FRAMES)
    assert {t['data']['episode_id'] for t in frame_tasks} == {EPISODES[2], EPISODES[0]}
    status, image = server.fetch(frame_tasks[0]['data']['image'])
    assert status == 200 and image[:2] == b'\xff\xd8'  # a JPEG

    # pushing again updates in place: no new task, nothing changed
    assert robodata(server, monkeypatch, 'review', 'push', str(dataset.root), '--queue', '2',
                    '--document-root', str(server.document_root), '--frames', '2s') == 0
    out = capsys.readouterr().out
    assert '0 task(s) created, 0 updated, 2 unchanged' in out and '0 frame task(s) created, 0 updated' in out
    assert len(tasks_on_server(server)) == 2 and len(tasks_on_server(server, FRAMES)) == len(frame_tasks)

    # two annotators: ana (the admin) and bea; they agree on one episode and not on the other
    bea = server.api('POST', '/api/users/', {'username': 'bea', 'email': 'bea@robodata.test', 'password': 'x' * 12})
    ana = server.api('GET', '/api/current-user/whoami')
    by_episode = {t['data']['episode_id']: t for t in tasks_on_server(server)}
    agreed, disputed = by_episode[EPISODES[2]], by_episode[EPISODES[0]]
    annotate(server, agreed, ana['id'], 'success', (10, 14))
    annotate(server, agreed, bea['id'], 'success', (10, 15))
    annotate(server, disputed, ana['id'], 'failure', (3, 6))
    bea_disputed = annotate(server, disputed, bea['id'], 'success', (12, 16))
    frame = next(t for t in frame_tasks if t['data']['episode_id'] == EPISODES[2])
    box(server, frame, ana['id'], 10)
    box(server, frame, bea['id'], 15)

    assert robodata(server, monkeypatch, 'review', 'pull', str(dataset.root)) == 0
    out = capsys.readouterr().out
    assert '10 label(s) added' in out and '1 task(s) back to the review queue' in out
    labels = json.loads((dataset.episode_dir(EPISODES[0]) / 'annotations.json').read_text())['labels']
    assert sorted((x['kind'], x['annotator'], x['value']) for x in labels) == [
        ('segment', 'ana@robodata.test', 'manipulation/grasp'), ('segment', 'bea@robodata.test', 'manipulation/grasp'),
        ('verdict', 'ana@robodata.test', 'failure'), ('verdict', 'bea@robodata.test', 'success')]
    for label in labels:
        assert label['source']['tool'] == 'label_studio' and label['source']['project'] == PROJECT
        assert label['source']['task'] == str(disputed['id']) and label['time']
    grasp = next(x for x in labels if x['kind'] == 'segment' and x['annotator'] == 'ana@robodata.test')
    times = disputed['data']['t_s']
    assert (grasp['start_s'], grasp['end_s']) == (pytest.approx(times[2]), pytest.approx(times[5]))

    boxes = [x for x in json.loads((dataset.episode_dir(EPISODES[2]) / 'annotations.json').read_text())['labels']
             if x['kind'] == 'box']
    assert sorted(x['annotator'] for x in boxes) == ['ana@robodata.test', 'bea@robodata.test']
    assert {x['frame_id'] for x in boxes} == {frame['data']['frame_id']}
    assert {x['value'] for x in boxes} == {'object/cube'} and boxes[0]['box'][2:] == [32.0, 24.0]  # 50 % of 64 x 48

    # the reviewed verdict sits beside the operator's label, which stays
    rows = {r.id: r for r in dataset.catalog.query()}
    assert (rows[EPISODES[2]].outcome, rows[EPISODES[2]].reviewed_outcome) == ('success', 'success')
    assert (rows[EPISODES[0]].outcome, rows[EPISODES[0]].reviewed_outcome) == ('success', 'disputed')
    assert rows[EPISODES[1]].reviewed_outcome == ''
    assert dataset.episode(EPISODES[0]).outcome == 'success'

    # the disputed task goes back to the queue, with its reasons; the agreed one does not
    flagged = json.loads((dataset.root / 'review' / 'disagreements.json').read_text())['episodes']
    assert [f['episode'] for f in flagged] == [EPISODES[0]]
    assert any('verdicts differ' in r for r in flagged[0]['reasons'])
    assert any('manipulation/grasp: temporal IoU 0.00' in r for r in flagged[0]['reasons'])
    assert main(['review', 'agreement', str(dataset.root), '--json']) == 0
    figures = json.loads(capsys.readouterr().out)
    # verdicts: (success, success) and (failure, success): observed 0.5, by chance 0.5 -> kappa 0
    assert figures['verdict_cohen_kappa'] == {'ana@robodata.test|bea@robodata.test': 0.0}
    by_task = {t['episode']: t for t in figures['tasks']}
    # boxes 32 px wide, 5 % of 64 px (3.2 px) apart: IoU 28.8 / 35.2
    assert by_task[EPISODES[2]]['box_iou'] == pytest.approx(28.8 / 35.2, abs=1e-3)
    agreed_iou = by_task[EPISODES[2]]['temporal_iou']['manipulation/grasp']
    expected = (times_of(agreed, 14) - times_of(agreed, 10)) / (times_of(agreed, 15) - times_of(agreed, 10))
    assert agreed_iou == pytest.approx(expected, abs=1e-3)

    # the audit trail: one line per episode and pull, naming the source
    audit = [json.loads(line) for line in (dataset.root / 'audit.jsonl').read_text().splitlines()]
    added = [a for a in audit if a['action'] == 'add_labels']
    assert sorted(a['episode'] for a in added) == sorted([EPISODES[0], EPISODES[2]])
    assert all(a['source'] == {'tool': 'label_studio', 'url': server.url, 'project': PROJECT} for a in added)

    # pulling and pushing again change nothing in the dataset, and the token is nowhere in it
    before = dataset_files(dataset)
    assert robodata(server, monkeypatch, 'review', 'pull', str(dataset.root)) == 0
    assert '0 label(s) added' in capsys.readouterr().out
    assert robodata(server, monkeypatch, 'review', 'push', str(dataset.root), '--queue', '2',
                    '--document-root', str(server.document_root)) == 0
    assert dataset_files(dataset) == before
    assert len(tasks_on_server(server)) == 2
    assert not any(server.token.encode() in content for content in before.values())
    assert server.token not in capsys.readouterr().out

    # bea changes her mind: the new verdict supersedes hers, the old one is kept, the dispute is over
    server.api('PATCH', f'/api/annotations/{bea_disputed["id"]}/', {'result': [
        {'id': 'v1', 'from_name': 'verdict', 'to_name': 'video', 'type': 'choices', 'value': {'choices': ['failure']}},
        {'id': 'g1', 'from_name': 'timeline', 'to_name': 'video', 'type': 'timelinelabels',
         'value': {'ranges': [{'start': 3, 'end': 6}], 'timelinelabels': ['manipulation/grasp']}}]})
    assert robodata(server, monkeypatch, 'review', 'pull', str(dataset.root)) == 0
    doc = json.loads((dataset.episode_dir(EPISODES[0]) / 'annotations.json').read_text())
    assert len(doc['labels']) == 6 and len(doc['revisions']) == 2
    assert sum(1 for x in doc['labels'] if 'supersedes' in x) == 2
    assert dataset.catalog.get(EPISODES[0]).reviewed_outcome == 'failure'
    assert json.loads((dataset.root / 'review' / 'disagreements.json').read_text())['episodes'] == []

    # the operator relabels an episode: pushing again updates that task in place
    assert main(['set', str(dataset.episode_dir(EPISODES[2])), '--outcome', 'failure']) == 0
    capsys.readouterr()
    assert robodata(server, monkeypatch, 'review', 'push', str(dataset.root), '--queue', '2',
                    '--document-root', str(server.document_root)) == 0
    assert '0 task(s) created, 1 updated, 1 unchanged' in capsys.readouterr().out
    tasks = {t['data']['episode_id']: t for t in tasks_on_server(server)}
    assert len(tasks) == 2 and tasks[EPISODES[2]]['data']['outcome'] == 'failure'
    assert tasks[EPISODES[2]]['id'] == agreed['id']


def times_of(task: dict[str, Any], frame: int) -> float:
    return float(task['data']['t_s'][frame - 1])


def test_a_wrong_token_is_one_line_and_never_shown(server: label_studio_server.Server, dataset: Dataset,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    token_file = tmp_path / 'token'
    token_file.write_text('not-the-token-0123456789\n')
    monkeypatch.delenv('LABEL_STUDIO_API_KEY', raising=False)
    assert main(['review', 'pull', str(dataset.root), '--label-studio', server.url, '--project', PROJECT,
                 '--token-file', str(token_file)]) == 1
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and 'refused the token (HTTP 401)' in err
    assert 'not-the-token' not in err
    assert main(['review', 'push', str(dataset.root), '--label-studio', server.url, '--project', PROJECT]) == 1
    assert 'no Label Studio token' in capsys.readouterr().err
