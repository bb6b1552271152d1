"""A user's checks on the labeling task files: taxonomy, Label Studio, CVAT and COCO from a frame manifest.

The manifest is a small fake in the exporter's format (2 episodes, 2 cameras + 1 LiDAR) with real
tiny JPEGs on disk, so every path the task files name can be opened.
"""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import cv2
import numpy as np
import pytest

from ros_robodata.errors import RobodataError, TaskFileError, TaxonomyError
from ros_robodata.export.label_tasks import DEFAULT_BASE_URL, write_task_files
from ros_robodata.labeling.taxonomy import KINDS, load_taxonomy, parse_taxonomy

TAXONOMY = Path(__file__).resolve().parent.parent / 'config' / 'taxonomy.yaml'
CAMERAS = {'camera_wrist': (32, 24), 'camera_scene': (40, 30)}  # name -> (width, height)
EPISODES = {'ep_0001': 3, 'ep_0002': 2}  # episode id -> frames
EVERY_S = 0.5


def _make_export(root: Path) -> dict[str, Any]:
    """Write tiny JPEGs and a PCD stand-in under `root`; return the manifest that describes them."""
    frames: list[dict[str, Any]] = []
    for e, (episode_id, count) in enumerate(EPISODES.items()):
        for index in range(count):
            t_ns = 1_700_000_000_000_000_000 + e * 10**10 + int(index * EVERY_S * 1e9)
            sensors: dict[str, Any] = {}
            for c, (camera, (width, height)) in enumerate(CAMERAS.items()):
                rel = f'episodes/{episode_id}/{camera}/{index:06d}.jpg'
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                image = np.full((height, width, 3), 40 * index + 20 * c + 10, np.uint8)
                assert cv2.imwrite(str(root / rel), image)
                sensors[camera] = {
                    'topic': f'/{camera}/image_raw',
                    'stamp_ns': t_ns,
                    'offset_ms': 0.0 if camera == 'camera_wrist' else 3.5,
                    'file': rel,
                    'sha256': '0' * 64,
                    'width': width,
                    'height': height,
                    'encoding': 'bgr8',
                }
            pcd = f'episodes/{episode_id}/lidar_scene/{index:06d}.pcd'
            (root / pcd).parent.mkdir(parents=True, exist_ok=True)
            (root / pcd).write_bytes(b'# .PCD v0.7 stand-in\n')
            sensors['lidar_scene'] = {
                'topic': '/lidar/points',
                'stamp_ns': t_ns,
                'offset_ms': 12.0,
                'file': pcd,
                'sha256': '0' * 64,
                'points': 10,
                'fields': ['x', 'y', 'z', 'intensity'],
            }
            frames.append(
                {
                    'frame_id': f'{episode_id}/{index:06d}',
                    'episode_id': episode_id,
                    'index': index,
                    't_ns': t_ns,
                    't_s': t_ns / 1e9,
                    'sensors': sensors,
                    'unmatched': [],
                    'joint_state': None,
                    'gripper': None,
                    'events_active': ['grasp'] if index == 1 else [],
                }
            )
    return {
        'format': 'ros_robodata.frames/1',
        'dataset': 'demo_ds',
        'schedule': {
            'mode': 'every',
            'every_s': EVERY_S,
            'every_n': None,
            'around_events': [],
            'window_s': None,
            'cameras': list(CAMERAS),
            'lidar': True,
            'format': 'jpg',
        },
        'sync': {'reference': 'camera_wrist', 'tolerance_ms': 20.0},
        'episodes': [
            {'episode_id': eid, 'task': 'pick_cube', 'outcome': 'success', 'frames': n, 'unmatched': 0}
            for eid, n in EPISODES.items()
        ],
        'frames': frames,
    }


@pytest.fixture(scope='module')
def export(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], dict[str, list[Path]]]:
    root = tmp_path_factory.mktemp('export')
    manifest = _make_export(root)
    written = write_task_files(manifest, root, load_taxonomy(TAXONOMY))
    return root, manifest, written


def _camera_files(manifest: dict[str, Any]) -> list[str]:
    return [s['file'] for f in manifest['frames'] for s in f['sensors'].values() if 'width' in s]


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding='utf-8'))


def test_fake_manifest_matches_the_exporter_schema(tmp_path: Path) -> None:
    from ros_robodata.export.manifest import validate_manifest

    validate_manifest(_make_export(tmp_path))


# -- taxonomy ----------------------------------------------------------------------------------


def test_project_taxonomy_loads() -> None:
    taxonomy = load_taxonomy(TAXONOMY)
    paths = [c.path for c in taxonomy.classes]
    for expected in ('manipulation/grasp', 'object/cube', 'scene/gripper', 'quality/blur', 'road_damage/pothole'):
        assert expected in paths
    assert 'hri/emotion/smile' in taxonomy  # listed without hri or hri/emotion: parents are implied
    assert 'hri/emotion' in taxonomy.parents()
    assert all(c.color.startswith('#') and len(c.color) == 7 for c in taxonomy.classes)
    assert len({c.id for c in taxonomy.classes}) == len(taxonomy.classes)
    leaves = {c.path for c in taxonomy.leaves()}
    assert 'manipulation' not in leaves and 'manipulation/grasp' in leaves


@pytest.mark.parametrize(
    ('classes', 'needle'),
    [
        (
            [{'name': 'object/cube', 'kinds': ['bbox']}, {'name': 'object/cube', 'kinds': ['polygon']}],
            'duplicate class',
        ),
        ([{'name': 'object/cube', 'color': 'red', 'kinds': ['bbox']}], 'bad color'),
        ([{'name': 'object/cube', 'color': '#12345', 'kinds': ['bbox']}], 'bad color'),
        ([{'name': 'object/cube', 'kinds': ['box']}], 'unknown label kind'),
        ([{'name': 'object/cube', 'id': 3}, {'name': 'object/ball', 'id': 3}], 'duplicate id'),
        ([{'name': 'object/../cube'}], 'bad path segment'),
        ([{'name': 'object/cube', 'colour': '#ffffff'}], 'unknown key'),
    ],
)
def test_bad_taxonomy_is_one_line_error(tmp_path: Path, classes: list[dict[str, Any]], needle: str) -> None:
    path = tmp_path / 'taxonomy.yaml'
    path.write_text(json.dumps({'version': 1, 'name': 'bad', 'classes': classes}), encoding='utf-8')
    with pytest.raises(TaxonomyError) as info:
        load_taxonomy(path)
    message = str(info.value)
    assert isinstance(info.value, RobodataError)
    assert needle in message and str(path) in message and '\n' not in message


def test_duplicate_yaml_key_is_refused(tmp_path: Path) -> None:
    path = tmp_path / 'taxonomy.yaml'
    path.write_text('version: 1\nclasses:\n  - name: object/cube\n    color: "#ffffff"\n    color: "#000000"\n')
    with pytest.raises(TaxonomyError, match='duplicate key'):
        load_taxonomy(path)


def test_coco_categories_follow_the_supercategory_rule() -> None:
    taxonomy = load_taxonomy(TAXONOMY)
    categories = taxonomy.coco_categories()
    names = [c['name'] for c in categories]
    assert len(names) == len(set(names))
    assert len({c['id'] for c in categories}) == len(categories)
    by_path = {c.path: taxonomy.coco_category(c.path) for c in taxonomy.classes}
    assert by_path['road_damage/pothole']['supercategory'] == 'road_damage'
    assert by_path['road_damage/pothole']['name'] == 'pothole'
    assert by_path['hri/emotion/smile'] == {'id': 110, 'name': 'smile', 'supercategory': 'hri'}
    assert by_path['scene/gripper']['keypoints'] == ['tip_left', 'tip_right', 'palm']
    # two classes ending in the same segment keep unique names: the dotted path
    assert taxonomy.coco_name('manipulation/contact') == 'manipulation.contact'
    assert taxonomy.coco_name('hri/contact') == 'hri.contact'
    # only classes COCO can hold (spatial kinds) become categories
    assert 'grasp' not in names and 'manipulation.contact' not in names


def test_clashing_leaf_names_become_dotted_paths() -> None:
    taxonomy = parse_taxonomy(
        {
            'classes': [
                {'name': 'hri/emotion/smile', 'kinds': ['bbox']},
                {'name': 'robot/display/smile', 'kinds': ['bbox']},
                {'name': 'person', 'kinds': ['bbox']},
            ]
        }
    )
    categories = taxonomy.coco_categories()
    assert [c['name'] for c in categories] == ['hri.emotion.smile', 'robot.display.smile', 'person']
    assert [c['supercategory'] for c in categories] == ['hri', 'robot', 'person']
    assert [c['id'] for c in categories] == [1, 2, 3]


# -- Label Studio ------------------------------------------------------------------------------


def test_label_studio_image_tasks_point_at_every_camera_frame(export: tuple) -> None:
    root, manifest, _ = export
    tasks = _read_json(root / 'label_studio' / 'tasks_images.json')
    assert len(tasks) == len(_camera_files(manifest)) == 10
    for task in tasks:
        data = task['data']
        assert data['image'].startswith(DEFAULT_BASE_URL)
        assert (root / unquote(data['image'][len(DEFAULT_BASE_URL) :])).is_file()
        assert data['sensor'] in CAMERAS and data['frame_id'].startswith(data['episode_id'] + '/')
    assert {t['data']['image'].removeprefix(DEFAULT_BASE_URL) for t in tasks} == set(_camera_files(manifest))
    assert [t['data']['events_active'] for t in tasks if t['data']['frame_id'] == 'ep_0001/000001'] == [['grasp']] * 2


def test_label_studio_configs_hold_every_class_for_its_kinds(export: tuple) -> None:
    root, _, _ = export
    taxonomy = load_taxonomy(TAXONOMY)
    image_view = ET.parse(root / 'label_studio' / 'config_images.xml').getroot()
    timeline_view = ET.parse(root / 'label_studio' / 'config_timeline.xml').getroot()
    assert image_view.tag == timeline_view.tag == 'View'
    controls = {'bbox': 'RectangleLabels', 'polygon': 'PolygonLabels', 'keypoints': 'KeyPointLabels', 'tag': 'Choices'}
    for kind in KINDS:
        view, tag = (timeline_view, 'TimelineLabels') if kind == 'temporal' else (image_view, controls[kind])
        control = view.find(tag)
        assert control is not None, tag
        values = [child.get('value') for child in control]
        assert values == [c.path for c in taxonomy.with_kind(kind)]
        if tag != 'Choices':
            assert [child.get('background') for child in control] == [c.color for c in taxonomy.with_kind(kind)]
    assert image_view.find('Image').get('value') == '$image'
    assert timeline_view.find('Video').get('value') == '$video'


def test_timeline_task_per_episode_with_ordered_frames_and_video(export: tuple) -> None:
    root, _, _ = export
    tasks = _read_json(root / 'label_studio' / 'tasks_timeline.json')
    assert [t['data']['episode_id'] for t in tasks] == list(EPISODES)
    for task in tasks:
        data = task['data']
        count = EPISODES[data['episode_id']]
        assert data['frame_ids'] == [f'{data["episode_id"]}/{i:06d}' for i in range(count)]
        assert data['frames'] == [
            f'{DEFAULT_BASE_URL}episodes/{data["episode_id"]}/camera_wrist/{i:06d}.jpg' for i in range(count)
        ]
        assert data['fps'] == pytest.approx(1 / EVERY_S)
        video = root / unquote(data['video'].removeprefix(DEFAULT_BASE_URL))
        capture = cv2.VideoCapture(str(video))
        assert capture.isOpened()
        decoded = 0
        while True:
            ok, image = capture.read()
            if not ok:
                break
            assert image.shape[:2] == (CAMERAS['camera_wrist'][1], CAMERAS['camera_wrist'][0])
            decoded += 1
        capture.release()
        assert decoded == count


# -- CVAT and COCO -----------------------------------------------------------------------------


def test_cvat_task_lists_every_image_once_in_order(export: tuple) -> None:
    root, manifest, _ = export
    spec = _read_json(root / 'cvat' / 'task.json')
    files = spec['image_files']
    assert sorted(files) == sorted(_camera_files(manifest)) and len(set(files)) == len(files)
    assert files == sorted(files)  # CVAT's default lexicographic sorting keeps frame k == files[k]
    assert [f['file'] for f in spec['frames']] == files
    assert (root / 'cvat' / 'image_list.txt').read_text().splitlines() == files
    assert _read_json(root / 'cvat' / 'labels.json') == spec['labels']
    types = {label['name']: label['type'] for label in spec['labels']}
    assert types['object/cube'] == 'any' and types['quality/blur'] == 'tag' and types['scene/table'] == 'polygon'
    assert 'manipulation' not in types  # a group heading is not a label
    assert all(not Path(f).is_absolute() and (root / f).is_file() for f in files)


def test_cvat_copy_mode_gives_flat_unique_copies(tmp_path: Path) -> None:
    manifest = _make_export(tmp_path)
    written = write_task_files(manifest, tmp_path, load_taxonomy(TAXONOMY), tools=('cvat',), copy_images=True)
    spec = _read_json(tmp_path / 'cvat' / 'task.json')
    files = spec['image_files']
    assert len(files) == 10 and all(f.startswith('cvat/images/') and '/' not in f[12:] for f in files)
    for file, frame in zip(files, spec['frames'], strict=True):
        assert (tmp_path / file).read_bytes() == (tmp_path / frame['source']).read_bytes()
    assert set(written) == {'cvat'}


def test_coco_images_have_sizes_and_unique_ids(export: tuple) -> None:
    root, manifest, _ = export
    coco = _read_json(root / 'coco' / 'annotations.json')
    assert coco['licenses'] == [] and coco['annotations'] == []
    assert coco['categories'] == load_taxonomy(TAXONOMY).coco_categories()
    ids = [image['id'] for image in coco['images']]
    assert len(ids) == len(set(ids)) == len(_camera_files(manifest))
    for image in coco['images']:
        decoded = cv2.imread(str(root / image['file_name']))
        assert decoded is not None
        assert (image['width'], image['height']) == (decoded.shape[1], decoded.shape[0])
        assert image['sensor'] in CAMERAS


# -- safety and idempotence --------------------------------------------------------------------


def test_rerun_gives_identical_bytes(export: tuple) -> None:
    root, manifest, written = export
    before = {p: p.read_bytes() for paths in written.values() for p in paths}
    assert any(p.suffix == '.mp4' for p in before)
    again = write_task_files(copy.deepcopy(manifest), root, load_taxonomy(TAXONOMY))
    assert again == written
    assert {p: p.read_bytes() for p in before} == before
    assert not list(root.rglob('*.tmp*'))


@pytest.mark.parametrize('bad', ['../../etc/passwd', '/etc/passwd', 'episodes/../../outside.jpg'])
def test_file_path_outside_the_export_is_rejected(tmp_path: Path, bad: str) -> None:
    root = tmp_path / 'export'
    root.mkdir()
    manifest = _make_export(root)
    manifest['frames'][1]['sensors']['camera_scene']['file'] = bad
    with pytest.raises(TaskFileError) as info:
        write_task_files(manifest, root, load_taxonomy(TAXONOMY))
    assert 'frames[1].sensors.camera_scene' in str(info.value) and '\n' not in str(info.value)
    assert not (root / 'label_studio').exists() and not (root / 'coco').exists()


def test_lidar_path_traversal_is_rejected_too(tmp_path: Path) -> None:
    manifest = _make_export(tmp_path)
    manifest['frames'][0]['sensors']['lidar_scene']['file'] = '../../etc/passwd'
    with pytest.raises(TaskFileError, match='outside the export folder'):
        write_task_files(manifest, tmp_path, load_taxonomy(TAXONOMY), tools=('coco',))


def test_unsafe_episode_id_is_rejected(tmp_path: Path) -> None:
    manifest = _make_export(tmp_path)
    manifest['frames'][0]['episode_id'] = '../ep'
    with pytest.raises(TaskFileError, match='episode_id'):
        write_task_files(manifest, tmp_path, load_taxonomy(TAXONOMY), video=False)
