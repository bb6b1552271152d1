"""`robodata export frames` run again as a new user would, after labels went into its files: nothing a person put
in the export folder is lost, every refusal or kept file is one line, and --jpeg-quality does what it says."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import cv2
import pytest

from ros_robodata.cli.main import main
from ros_robodata.dataset import Dataset
from ros_robodata.dataset.episode import Episode
from ros_robodata.profile import load_profile
from ros_robodata.sim.to_bag import write_sim_episode
from test.profiles import PROFILE


@pytest.fixture(scope='module')
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    profile = load_profile(PROFILE)
    root = tmp_path_factory.mktemp('safety') / 'ds'
    ds = Dataset.create(root, profile=profile)
    for seed in (0, 1):
        episode_id = f'ep{seed}'
        write_sim_episode(ds.bag_dir(episode_id), profile, seed=seed, cameras=True, image_size=(96, 72),
                          max_duration_s=5.0)
        ds.add_episode(Episode(id=episode_id, task='pick', status='complete', outcome='success'))
    return root


@pytest.fixture(scope='module')
def first_export(dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp('first') / 'frames'
    assert main(['export', 'frames', str(dataset), '--out', str(out), '--every', '1s']) == 0
    return out


def export(capsys: pytest.CaptureFixture[str], dataset: Path, out: Path, *options: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(['export', 'frames', str(dataset), '--out', str(out), *options])
    return code, capsys.readouterr().err


def _label(path: Path) -> bytes:
    """What an annotator does: boxes into the COCO file, a reviewed annotation into the first Label Studio task."""
    if path.name == 'annotations.json':
        coco = json.loads(path.read_text())
        coco['annotations'] = [{'id': 1, 'image_id': coco['images'][0]['id'], 'category_id': 1,
                                'bbox': [10, 10, 20, 20], 'area': 400, 'iscrowd': 0}]
        path.write_text(json.dumps(coco))
    else:
        tasks = json.loads(path.read_text())
        tasks[0]['annotations'] = [{'completed_by': 1, 'result': [{'type': 'rectanglelabels', 'value': {}}]}]
        path.write_text(json.dumps(tasks))
    return path.read_bytes()


@pytest.mark.parametrize('labelled', ['coco/annotations.json', 'label_studio/tasks_images.json'])
def test_a_rerun_keeps_hand_made_labels_and_says_so(dataset, first_export, tmp_path, capsys, labelled):
    out = tmp_path / 'frames'
    shutil.copytree(first_export, out)
    labels = _label(out / labelled)
    code, err = export(capsys, dataset, out, '--every', '0.5s')  # more frames: the task files change
    assert code == 0
    assert (out / labelled).read_bytes() == labels
    new = out / labelled.replace('.json', '.new.json')
    assert len(json.loads(new.read_text())) > 0 and new.read_bytes() != labels
    lines = [line for line in err.splitlines() if labelled in line]
    assert lines == [f'robodata export: {labelled}: changed since robodata wrote it (labels?): kept; this export\'s '
                     f'version is {new.relative_to(out).as_posix()}']
    # the files nobody touched are brought up to date as before
    assert len(json.loads((out / 'manifest.json').read_text())['frames']) > \
        len(json.loads((first_export / 'manifest.json').read_text())['frames'])
    untouched = 'cvat/task.json'
    assert (out / untouched).read_bytes() != (first_export / untouched).read_bytes()
    # and again: still kept, the same line, the .new file refreshed in place
    code, again = export(capsys, dataset, out, '--every', '0.5s')
    assert code == 0 and (out / labelled).read_bytes() == labels
    assert [line for line in again.splitlines() if labelled in line] == lines


def test_an_unchanged_rerun_touches_nothing_and_says_nothing(dataset, first_export, tmp_path, capsys):
    out = tmp_path / 'frames'
    shutil.copytree(first_export, out)
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in out.rglob('*') if p.is_file()}
    code, err = export(capsys, dataset, out, '--every', '1s')
    assert code == 0 and err == ''
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in out.rglob('*') if p.is_file()} == before


def test_a_file_of_someone_elses_with_a_task_file_name_is_kept(dataset, tmp_path, capsys):
    out = tmp_path / 'theirs'
    (out / 'coco').mkdir(parents=True)
    (out / 'coco' / 'annotations.json').write_text('{"images": [], "annotations": [{"id": 7}]}')
    code, err = export(capsys, dataset, out, '--every', '1s')
    assert code == 0
    assert json.loads((out / 'coco' / 'annotations.json').read_text())['annotations'] == [{'id': 7}]
    assert 'coco/annotations.json: not written by robodata (labels?): kept; this export\'s version is ' \
           'coco/annotations.new.json' in err


def test_a_file_where_a_task_folder_belongs_is_one_line_not_a_traceback(dataset, first_export, tmp_path, capsys):
    out = tmp_path / 'frames'
    shutil.copytree(first_export, out)
    shutil.rmtree(out / 'coco')
    (out / 'coco').write_text('my notes')
    before = {p: p.read_bytes() for p in out.rglob('*') if p.is_file()}
    code, err = export(capsys, dataset, out, '--every', '1s')
    assert code == 0 and err.splitlines() == [
        'robodata export: coco/annotations.json: coco is a file, not a folder: nothing written there']
    assert {p: p.read_bytes() for p in out.rglob('*') if p.is_file()} == before  # the rest was current: unchanged
    assert (out / 'coco').read_text() == 'my notes'


@pytest.mark.parametrize(('where', 'expected'), [
    ('dataset/frames', 'inside the dataset at'),
    ('dataset/review/frames', 'inside the dataset at'),
    ('dataset/episodes/ep0/frames', 'inside the dataset at'),
    ('a_file', 'exists and is not a folder'),
    ('a_file/frames', 'cannot create the export folder'),
    ('their_export', "its manifest.json is not one robodata wrote"),
])
def test_out_that_would_destroy_something_is_refused_in_one_line(dataset, tmp_path, capsys, where, expected):
    copy = tmp_path / 'dataset'
    shutil.copytree(dataset, copy)
    (tmp_path / 'a_file').write_text('keep me')
    (tmp_path / 'their_export').mkdir()
    (tmp_path / 'their_export' / 'manifest.json').write_text('{"version": 3, "files": []}')
    before = {p: p.read_bytes() for p in tmp_path.rglob('*') if p.is_file()}
    for force in ([], ['--force']):
        code, err = export(capsys, copy, tmp_path / where, '--every', '1s', *force)
        assert code == 1
        assert err.count('\n') == 1 and err.startswith('robodata export: error: ') and expected in err
    assert {p: p.read_bytes() for p in tmp_path.rglob('*') if p.is_file()} == before
    assert not (tmp_path / 'dataset' / 'frames').exists()


def test_jpeg_quality_sets_the_frames_quality(dataset, tmp_path, capsys):
    def first_frame(out: Path) -> Path:
        return sorted((out / 'episodes' / 'ep0' / 'camera_wrist').glob('*.jpg'))[0]

    assert export(capsys, dataset, tmp_path / 'low', '--every', '1s', '--jpeg-quality', '20')[0] == 0
    assert export(capsys, dataset, tmp_path / 'high', '--every', '1s', '--jpeg-quality', '100')[0] == 0
    low, high = first_frame(tmp_path / 'low'), first_frame(tmp_path / 'high')
    assert low.stat().st_size < high.stat().st_size
    assert cv2.imread(str(low)).shape == cv2.imread(str(high)).shape == (72, 96, 3)
    manifest = json.loads((tmp_path / 'low' / 'manifest.json').read_text())
    assert manifest['frames'][0]['sensors']['camera_wrist']['file'].endswith('.jpg')
    code, err = export(capsys, dataset, tmp_path / 'bad', '--jpeg-quality', '0')
    assert code == 1 and '--jpeg-quality: 0 is not between 1 and 100' in err and not (tmp_path / 'bad').exists()
