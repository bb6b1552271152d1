"""`robodata annotations import`: labels made in Label Studio, CVAT or as COCO, read into annotations.json as a
reviewer would check them; malformed files are one line and import nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ros_robodata.cli.main import main
from ros_robodata.dataset import Dataset

A, B = '20260102-100000', '20260102-110000'


@pytest.fixture
def dataset(make_demo_dataset: Callable[..., Dataset]) -> Dataset:
    return make_demo_dataset([{'episode_id': A, 'outcome': 'success'}, {'episode_id': B, 'outcome': 'failure'}])


def labels_of(ds: Dataset, episode: str) -> list[dict[str, Any]]:
    path = ds.episode_dir(episode) / 'annotations.json'
    return json.loads(path.read_text())['labels'] if path.exists() else []


def run(*args: str) -> int:
    return main(['annotations', 'import', *args])


LS_EXPORT = [{
    'id': 41, 'data': {'episode_id': A, 'fps': 10, 't_s': [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]},
    'annotations': [{
        'id': 7, 'completed_by': {'id': 3, 'email': 'ana@lab'}, 'created_at': '2026-12-01T10:00:00Z',
        'updated_at': '2026-12-01T10:05:00Z', 'was_cancelled': False,
        'result': [
            {'id': 'r1', 'type': 'timelinelabels', 'from_name': 'timeline', 'to_name': 'video',
             'value': {'ranges': [{'start': 2, 'end': 5}], 'timelinelabels': ['manipulation/grasp']}},
            {'id': 'r2', 'type': 'choices', 'from_name': 'verdict', 'to_name': 'video',
             'value': {'choices': ['recovery']}},
        ]}, {
        'id': 8, 'completed_by': 4, 'was_cancelled': True, 'result': [
            {'id': 'r9', 'type': 'choices', 'from_name': 'verdict', 'to_name': 'video',
             'value': {'choices': ['failure']}}]},
    ]}, {
    'id': 42, 'data': {'episode_id': B, 'frame_id': f'{B}/000003', 'sensor': 'wrist', 'image': '/x.jpg'},
    'annotations': [{
        'id': 9, 'completed_by': {'email': 'bea@lab'}, 'updated_at': '2026-12-01T11:00:00Z', 'result': [
            {'id': 'b1', 'type': 'rectanglelabels', 'from_name': 'bbox', 'to_name': 'image', 'original_width': 200,
             'original_height': 100, 'value': {'x': 10, 'y': 20, 'width': 50, 'height': 30,
                                               'rectanglelabels': ['object/cube']}},
            {'id': 'p1', 'type': 'polygonlabels', 'from_name': 'polygon', 'to_name': 'image', 'original_width': 200,
             'original_height': 100, 'value': {'points': [[0, 0], [50, 0], [50, 50]],
                                               'polygonlabels': ['object/cylinder']}},
        ]}]}]


def test_label_studio_export(dataset: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / 'export.json'
    path.write_text(json.dumps(LS_EXPORT))
    assert run(str(path), '--dataset', str(dataset.root)) == 0
    assert '(label_studio): 4 label(s) added to 2 episode(s)' in capsys.readouterr().out
    a = {x['kind']: x for x in labels_of(dataset, A)}
    assert set(a) == {'segment', 'verdict'}, 'the cancelled annotation gives nothing'
    assert (a['segment']['value'], a['segment']['start_s'], a['segment']['end_s']) == ('manipulation/grasp', 0.1, 0.4)
    assert (a['verdict']['value'], a['verdict']['annotator'], a['verdict']['time']) == \
        ('recovery', 'ana@lab', '2026-12-01T10:05:00Z')
    assert a['verdict']['source'] == {'tool': 'label_studio', 'project': 'export.json', 'task': '41', 'item': '7/r2'}
    b = {x['kind']: x for x in labels_of(dataset, B)}
    assert b['box']['box'] == [20.0, 20.0, 100.0, 30.0]  # percent of 200 x 100 -> pixels
    assert b['box']['frame_id'] == f'{B}/000003' and b['box']['sensor'] == 'wrist'
    assert b['polygon']['points'] == [[0.0, 0.0], [100.0, 0.0], [100.0, 50.0]]
    # the reviewed verdict beside the operator's outcome, in the catalog and in `robodata list`
    row = dataset.catalog.get(A)
    assert (row.outcome, row.reviewed_outcome) == ('success', 'recovery')
    assert main(['list', str(dataset.root), '--json']) == 0
    listed = {r['id']: r for r in json.loads(capsys.readouterr().out)}
    assert (listed[A]['outcome'], listed[A]['reviewed_outcome']) == ('success', 'recovery')
    # again: nothing added, the file unchanged
    before = (dataset.episode_dir(A) / 'annotations.json').read_bytes()
    assert run(str(path), '--dataset', str(dataset.root)) == 0
    assert '0 label(s) added' in capsys.readouterr().out
    assert (dataset.episode_dir(A) / 'annotations.json').read_bytes() == before
    # the catalog rebuilt from the files keeps the reviewed verdict
    dataset.catalog.path.unlink()
    assert main(['catalog', 'rebuild', str(dataset.root)]) == 0
    assert Dataset.open(dataset.root).catalog.get(A).reviewed_outcome == 'recovery'


CVAT_VIDEO = f"""<?xml version="1.0" encoding="utf-8"?>
<annotations>
  <version>1.1</version>
  <meta><task><id>12</id><name>{A} wrist</name><mode>interpolation</mode><size>8</size>
    <owner><username>carla</username></owner><updated>2026-11-30 09:00:00+00:00</updated>
    <source>{A}/camera_wrist.mp4</source></task></meta>
  <track id="0" label="object/cube" source="manual">
    <box frame="0" keyframe="1" outside="0" occluded="0" xtl="10" ytl="10" xbr="30" ybr="30" z_order="0"/>
    <box frame="1" keyframe="0" outside="0" occluded="0" xtl="12" ytl="10" xbr="32" ybr="30" z_order="0"/>
    <box frame="2" keyframe="1" outside="0" occluded="1" xtl="14" ytl="10" xbr="34" ybr="30" z_order="0"/>
    <box frame="3" keyframe="0" outside="0" occluded="1" xtl="16" ytl="10" xbr="36" ybr="30" z_order="0"/>
    <box frame="4" keyframe="1" outside="0" occluded="0" xtl="18" ytl="10" xbr="38" ybr="30" z_order="0"/>
    <box frame="5" keyframe="1" outside="1" occluded="0" xtl="18" ytl="10" xbr="38" ybr="30" z_order="0"/>
  </track>
  <track id="1" label="object.cylinder" source="manual">
    <box frame="0" keyframe="1" outside="0" occluded="0" xtl="100" ytl="50" xbr="120" ybr="90" z_order="0"/>
    <box frame="4" keyframe="1" outside="0" occluded="0" xtl="140" ytl="50" xbr="160" ybr="90" z_order="0"/>
  </track>
</annotations>
"""


def test_cvat_video_tracks(dataset: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / 'annotations.xml'
    path.write_text(CVAT_VIDEO)
    assert run(str(path), '--dataset', str(dataset.root)) == 0
    assert '(cvat_video): 10 label(s) added to 1 episode(s)' in capsys.readouterr().out
    boxes = labels_of(dataset, A)
    cube = {x['frame']: x for x in boxes if x['value'] == 'object/cube'}
    assert sorted(cube) == [0, 1, 2, 3, 4], 'frame 5 is outside: the cube is not in view, no box'
    assert [cube[f]['occluded'] for f in range(5)] == [False, False, True, True, False]
    assert [cube[f]['keyframe'] for f in range(5)] == [True, False, True, False, True]
    assert {x['annotator'] for x in boxes} == {'carla'} and {x['track'] for x in boxes} == {'12/0', '12/1'}
    cylinder = {x['frame']: x['box'] for x in boxes if x['value'] == 'object/cylinder'}
    assert cylinder == {f: [100.0 + 10 * f, 50.0, 20.0, 40.0] for f in range(5)}, 'between keyframes, interpolated'


CVAT_IMAGES = """<?xml version="1.0" encoding="utf-8"?>
<annotations>
  <version>1.1</version>
  <meta><task><id>5</id><name>frames</name><owner><username>{who}</username></owner></task></meta>
  <image id="0" name="episodes/{ep}/camera_wrist/000003.jpg" width="64" height="48">
    <box label="object/cube" occluded="0" xtl="{x}" ytl="4" xbr="{x2}" ybr="24"/>
    <polygon label="object/cylinder" occluded="1" points="40,4;60,4;60,40"/>
    <tag label="manipulation/grasp"/>
  </image>
</annotations>
"""


def test_cvat_images_and_box_agreement(dataset: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for who, x in (('ana', 4), ('bea', 6)):
        path = tmp_path / f'{who}.xml'
        path.write_text(CVAT_IMAGES.format(who=who, ep=B, x=x, x2=x + 20))
        assert run(str(path), '--dataset', str(dataset.root)) == 0
    labels = labels_of(dataset, B)
    assert sorted((x['kind'], x['annotator']) for x in labels) == [
        ('box', 'ana'), ('box', 'bea'), ('polygon', 'ana'), ('polygon', 'bea'), ('tag', 'ana'), ('tag', 'bea')]
    box = next(x for x in labels if x['kind'] == 'box' and x['annotator'] == 'ana')
    assert (box['frame'], box['sensor'], box['box']) == (3, 'wrist', [4.0, 4.0, 20.0, 20.0])
    capsys.readouterr()
    assert main(['review', 'agreement', str(dataset.root), '--json']) == 0
    task = json.loads(capsys.readouterr().out)['tasks'][0]
    assert task['box_iou'] == pytest.approx(18 * 20 / (2 * 400 - 18 * 20), abs=1e-4)  # boxes 2 px apart
    assert task['box_class_agreement'] == 1.0 and task['reasons'] == []


def test_box_that_jumps_along_a_track_is_flagged(dataset: Dataset, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    jumpy = CVAT_VIDEO.replace('xtl="16" ytl="10" xbr="36" ybr="30"', 'xtl="116" ytl="10" xbr="136" ybr="30"')
    path = tmp_path / 'jumpy.xml'
    path.write_text(jumpy)
    assert run(str(path), '--dataset', str(dataset.root)) == 0
    capsys.readouterr()
    assert main(['review', 'agreement', str(dataset.root)]) == 0
    out = capsys.readouterr().out
    assert 'track carla/12/0: the box jumps between consecutive frames 2 time(s)' in out
    flagged = json.loads((dataset.root / 'review' / 'disagreements.json').read_text())['episodes']
    assert [f['episode'] for f in flagged] == [A]


COCO = {
    'info': {'contributor': 'ros_robodata', 'date_created': '2026-11-29'},
    'images': [{'id': 1, 'file_name': f'episodes/{A}/camera_wrist/000007.jpg', 'width': 64, 'height': 48},
               {'id': 2, 'file_name': 'elsewhere/img.jpg', 'width': 64, 'height': 48, 'episode_id': B,
                'frame_id': f'{B}/000002'}],
    'categories': [{'id': 8, 'name': 'slip', 'supercategory': 'manipulation'},
                   {'id': 500, 'name': 'crack', 'supercategory': 'road'},
                   {'id': 101, 'name': 'cone', 'supercategory': 'cone'}],
    'annotations': [
        {'id': 1, 'image_id': 1, 'category_id': 8, 'bbox': [1, 2, 3, 4], 'area': 12, 'iscrowd': 0},
        {'id': 2, 'image_id': 1, 'category_id': 500, 'bbox': [5, 5, 10, 10], 'iscrowd': 0,
         'segmentation': [[5, 5, 15, 5, 15, 15, 5, 15]]},
        {'id': 3, 'image_id': 2, 'category_id': 101, 'bbox': [0, 0, 8, 8], 'iscrowd': 0, 'score': 0.9},
    ]}


def test_coco_supercategory_hierarchy(dataset: Dataset, tmp_path: Path) -> None:
    path = tmp_path / 'coco.json'
    path.write_text(json.dumps(COCO))
    assert run(str(path), '--dataset', str(dataset.root), '--annotator', 'dora') == 0
    a = {x['value']: x for x in labels_of(dataset, A)}
    # id 8 'slip' is the taxonomy's manipulation/failure/slip (its COCO name); a foreign class keeps super/name
    assert set(a) == {'manipulation/failure/slip', 'road/crack'}
    assert a['road/crack']['kind'] == 'polygon' and a['manipulation/failure/slip']['box'] == [1.0, 2.0, 3.0, 4.0]
    assert a['manipulation/failure/slip']['frame'] == 7 and a['manipulation/failure/slip']['annotator'] == 'dora'
    b = labels_of(dataset, B)
    assert [(x['value'], x['frame_id'], x['confidence']) for x in b] == [('cone', f'{B}/000002', 0.9)]


BROKEN = {
    'truncated.json': json.dumps(LS_EXPORT)[:200],
    'no_episode.json': json.dumps([{'id': 1, 'data': {'image': 'x'}, 'annotations': []}]),
    'bad_verdict.json': json.dumps([{'id': 1, 'data': {'episode_id': A}, 'annotations': [
        {'id': 2, 'result': [{'type': 'choices', 'from_name': 'verdict', 'value': {'choices': ['great']}}]}]}]),
    'other_dataset.json': json.dumps([{'id': 1, 'data': {'episode_id': '20990101-000000'}, 'annotations': []}]),
    'broken.xml': CVAT_VIDEO[:400],
    'bad_box.xml': CVAT_VIDEO.replace('xbr="30" ybr="30"', 'xbr="abc" ybr="30"', 1),
    'reversed.xml': CVAT_IMAGES.format(who='x', ep=B, x=40, x2=10),
    'not_cvat.xml': '<?xml version="1.0"?><svg></svg>',
    'coco_no_image.json': json.dumps({**COCO, 'annotations': [{**COCO['annotations'][0], 'image_id': 99}]}),
    'coco_rle.json': json.dumps({**COCO, 'annotations': [{**COCO['annotations'][0],
                                                          'segmentation': {'counts': 'abc', 'size': [4, 4]}}]}),
    'empty.json': '',
}


@pytest.mark.parametrize('name', sorted(BROKEN))
def test_malformed_file_is_one_line_and_imports_nothing(dataset: Dataset, tmp_path: Path, name: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / name
    path.write_text(BROKEN[name])
    audit_before = (dataset.root / 'audit.jsonl').read_bytes()
    files_before = {p: p.read_bytes() for p in dataset.root.rglob('*') if p.is_file()}
    assert run(str(path), '--dataset', str(dataset.root)) == 1
    out, err = capsys.readouterr()
    assert err.startswith('robodata annotations: error: ') and err.count('\n') == 1, err
    assert out == '' and path.read_text() == BROKEN[name]  # the file given is left as it was
    assert {p: p.read_bytes() for p in dataset.root.rglob('*') if p.is_file()} == files_before
    assert labels_of(dataset, A) == [] and labels_of(dataset, B) == []
    assert (dataset.root / 'audit.jsonl').read_bytes() == audit_before


def test_a_bad_file_imports_nothing_even_after_good_parts(dataset: Dataset, tmp_path: Path) -> None:
    """The first task is fine, the second is not: the first is not imported either."""
    path = tmp_path / 'half.json'
    path.write_text(json.dumps([LS_EXPORT[0], {'id': 2, 'data': {'episode_id': B}, 'annotations': [
        {'id': 3, 'result': [{'type': 'rectanglelabels', 'value': {'x': 1}}]}]}]))
    assert run(str(path), '--dataset', str(dataset.root)) == 1
    assert labels_of(dataset, A) == []


def test_relabel_supersedes_and_keeps_the_old_label(dataset: Dataset, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / 'export.json'
    path.write_text(json.dumps(LS_EXPORT[:1]))
    assert run(str(path), '--dataset', str(dataset.root)) == 0
    changed = json.loads(json.dumps(LS_EXPORT[:1]))
    changed[0]['annotations'][0]['result'][1]['value']['choices'] = ['failure']
    path.write_text(json.dumps(changed))
    assert run(str(path), '--dataset', str(dataset.root), '--who', 'lead') == 0
    doc = json.loads((dataset.episode_dir(A) / 'annotations.json').read_text())
    verdicts = [x for x in doc['labels'] if x['kind'] == 'verdict']
    assert [v['value'] for v in verdicts] == ['recovery', 'failure']
    assert verdicts[1]['supersedes'] == verdicts[0]['id'] and verdicts[1]['revision'] == 2
    assert dataset.catalog.get(A).reviewed_outcome == 'failure'
    audit = [json.loads(line) for line in (dataset.root / 'audit.jsonl').read_text().splitlines()]
    last = audit[-1]
    assert (last['action'], last['who'], last['episode'], last['superseded']) == \
        ('add_labels', 'lead', A, [verdicts[0]['id']])
    capsys.readouterr()
    assert main(['annotations', 'list', str(dataset.episode_dir(A)), '--json']) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed['reviewed_verdict'] == 'failure'
    assert [x['value'] for x in listed['labels'] if x['kind'] == 'verdict'] == ['failure']
