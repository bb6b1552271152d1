"""The overlay's core (issue 17): what an episode's sidecars say at a replay time, and a box drawn on the camera
frame annotations.json puts it on, at its pixels, in its taxonomy colour."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ros_robodata.bag.image import decode_image
from ros_robodata.bag.reader import BagReader
from ros_robodata.cli.main import main
from ros_robodata.dataset import Dataset
from ros_robodata.dataset.episode import Episode
from ros_robodata.dataset.label import BOX, SEGMENT, VERDICT, Label, Source
from ros_robodata.events.offline import read_events_file
from ros_robodata.labeling.taxonomy import load_taxonomy
from ros_robodata.profile import load_profile
from ros_robodata.replay.draw import annotate, hex_to_bgr
from ros_robodata.replay.episode_view import EVENT_HOLD_NS, EpisodeView, load_episode_view
from ros_robodata.review.apply import apply_labels, import_annotations
from ros_robodata.signals import header_stamp_ns
from ros_robodata.sim.faults import parse_fault
from ros_robodata.sim.to_bag import write_sim_episode
from test.profiles import CONFIG, PROFILE

EPISODE = 'ep1'
WRIST = '/camera/wrist/image_raw'
BOX_XYWH = (100.0, 80.0, 60.0, 50.0)  # px on the wrist camera's 320x240 frame
POLYGON = ((200.0, 150.0), (260.0, 150.0), (230.0, 200.0))
BOXED_FRAME = 6  # export frame index (every 0.5 s: 3.0 s into the episode)
GRASP_LABEL_S = (3.0, 3.6)  # a reviewer's temporal label, in the episode's seconds


def build_episode(root: Path) -> dict[str, Any]:
    """One simulated, segmented, scored episode (a blurred wrist camera 1.0-1.5 s), its frames exported, a box
    and a polygon drawn on one exported wrist frame and imported from the export's COCO file, as an annotator's
    round trip does; a reviewer's grasp span and verdict. Returns the paths and what was labelled."""
    profile = load_profile(PROFILE)
    dataset = Dataset.create(root / 'ds', profile=profile)
    truth = write_sim_episode(dataset.bag_dir(EPISODE), profile, seed=1, cameras=True, image_size=(320, 240),
                              max_duration_s=4.5, faults=[parse_fault('camera/wrist:blur:1.0:1.5')])
    dataset.add_episode(Episode(id=EPISODE, task='pick_cube', status='complete', outcome='failure',
                                start_ns=truth['start_ns']))
    frames = root / 'frames'
    assert main(['segment', str(dataset.root)]) == 0
    assert main(['score', str(dataset.root)]) == 0
    assert main(['export', 'frames', str(dataset.root), '--out', str(frames), '--every', '0.5s']) == 0
    coco_path = frames / 'coco' / 'annotations.json'
    coco = json.loads(coco_path.read_text())
    image = next(i for i in coco['images']
                 if i['frame_id'] == f'{EPISODE}/{BOXED_FRAME:06d}' and i['sensor'] == 'camera_wrist')
    (x, y, w, h), polygon = BOX_XYWH, [c for p in POLYGON for c in p]
    coco['annotations'] = [
        {'id': 1, 'image_id': image['id'], 'category_id': 20, 'bbox': [x, y, w, h], 'area': w * h, 'iscrowd': 0},
        {'id': 2, 'image_id': image['id'], 'category_id': 21, 'segmentation': [polygon], 'area': 1.0, 'iscrowd': 0},
    ]
    coco_path.write_text(json.dumps(coco))
    import_annotations(dataset, coco_path, annotator='carla')
    source = Source('label_studio', 'pick review', '7', 'timeline')
    apply_labels(dataset, {EPISODE: [
        Label(SEGMENT, 'manipulation/grasp', 'dora', '2026-01-01T00:00:00', source, start_s=GRASP_LABEL_S[0],
              end_s=GRASP_LABEL_S[1]),
        Label(VERDICT, 'success', 'dora', '2026-01-01T00:00:00', Source('label_studio', 'pick review', '7', 'v'))]})
    manifest = json.loads((frames / 'manifest.json').read_text())
    boxed = next(f for f in manifest['frames'] if f['frame_id'] == f'{EPISODE}/{BOXED_FRAME:06d}')
    return {'dataset': dataset, 'episode_dir': dataset.episode_dir(EPISODE), 'frames': frames,
            'box_stamp_ns': boxed['sensors']['camera_wrist']['stamp_ns']}


@pytest.fixture(scope='module')
def episode(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return build_episode(tmp_path_factory.mktemp('overlay'))


def wrist_frame(episode: dict[str, Any], stamp_ns: int) -> tuple[int, np.ndarray]:
    """(header stamp, BGR pixels) of the bag's wrist image nearest `stamp_ns`."""
    best: tuple[int, Any] | None = None
    with BagReader(episode['dataset'].bag_dir(EPISODE)) as reader:
        for message in reader.messages([WRIST]):
            stamp = header_stamp_ns(message.data)
            if best is None or abs(stamp - stamp_ns) < abs(best[0] - stamp_ns):
                best = (stamp, reader.decode(message))
    assert best is not None
    return best[0], decode_image(best[1], 'bgr')


def test_each_event_is_the_headline_from_its_stamp_on_in_the_subtask_it_falls_in(episode: dict[str, Any]) -> None:
    view = load_episode_view(episode['episode_dir'])
    doc = read_events_file(episode['episode_dir'] / 'events.json')
    assert view.notes == []
    assert load_episode_view(episode['episode_dir'] / 'bag') == view  # the episode's bag names it as well
    assert view.event_times_ns() == sorted(e['t_ns'] for e in doc['events'])
    assert {e['kind'] for e in doc['events']} >= {'grasp_start', 'contact', 'grasp', 'lift'}
    for event in doc['events']:
        at = view.at(event['t_ns'])
        assert at.event is not None and at.event.t_ns == event['t_ns']
        # Events stamped the same ns (a contact that is at once the grasp) share the headline; none is hidden.
        assert event['kind'] in [e.kind for e in (*at.together, at.event)]
        assert f'{event["kind"]} (' in at.headline().split(' | ')[0]
        before = view.at(event['t_ns'] - 1)
        assert before.event is None or before.event.t_ns < event['t_ns']
    last = max(doc['events'], key=lambda e: e['t_ns'])
    assert view.at(last['t_ns'] + EVENT_HOLD_NS + 1).event is None  # the banner does not keep an old event
    for segment in doc['timeline']:
        middle = (segment['start_ns'] + segment['end_ns']) // 2
        assert view.at(middle).subtask == segment['name']
        assert f'subtask: {segment["name"]}' in view.at(middle).headline()
    start, end = doc['start_ns'], doc['end_ns']
    assert view.at(start).progress == 0.0 and view.at(end).progress == 1.0
    assert view.at((start + end) // 2).progress == pytest.approx(0.5)


def test_an_episode_nobody_reviewed_yet_is_shown_without_a_note(episode: dict[str, Any], tmp_path: Path) -> None:
    """No annotations.json is the usual case before review: no warning line beside the player's status line."""
    import shutil

    copy = tmp_path / 'episodes' / EPISODE
    shutil.copytree(episode['episode_dir'], copy, ignore=shutil.ignore_patterns('bag', 'annotations.json'))
    view = load_episode_view(copy)
    assert view.notes == [] and view.labels == [] and view.events


def test_a_finding_is_active_over_its_time_window_and_the_reviewers_say_is_shown(episode: dict[str, Any]) -> None:
    view = load_episode_view(episode['episode_dir'])
    quality = json.loads((episode['episode_dir'] / 'quality.json').read_text())
    blur = next(f for f in quality['findings'] if f['check'] == 'image.blur')
    (a, b), = blur['ranges_ns']
    during, after = view.at((a + b) // 2), view.at(b + 2_000_000_000)
    assert [(f.check, f.topic) for f in during.flags] == [('image.blur', WRIST)]
    assert during.flag_lines() == [f'warn: {blur["message"]}']
    assert after.flags == ()  # the episode-level finding (no LiDAR) has no time: it is never "active now"
    # A segment's seconds count from the episode's one time origin: events.json's start_ns is quality.json's.
    zero = read_events_file(episode['episode_dir'] / 'events.json')['start_ns']
    assert zero == quality['start_ns']
    labelled = view.at(zero + round(sum(GRASP_LABEL_S) / 2 * 1e9))
    assert labelled.label_lines() == ['label manipulation/grasp (dora)']
    assert view.at(zero + round((GRASP_LABEL_S[1] + 0.1) * 1e9)).labels == ()
    assert labelled.status_line() == f'episode {EPISODE}: complete, outcome failure, reviewed success'


def test_a_box_label_lands_on_the_camera_frame_the_export_took_it_from(episode: dict[str, Any]) -> None:
    """frame_id `<episode>/<index>` + sensor -> that export frame's camera stamp_ns, which is the bag image's
    header stamp; an image matches within half a frame period, so the next frame does not get the box."""
    view = load_episode_view(episode['episode_dir'])
    stamp = episode['box_stamp_ns']
    assert {(s.kind, s.value, s.camera, s.stamp_ns) for s in view.shapes} == {
        ('box', 'object/cube', 'wrist', stamp), ('polygon', 'object/cylinder', 'wrist', stamp)}
    header_stamp, _ = wrist_frame(episode, stamp)
    assert header_stamp == stamp
    half_period = round(0.5e9 / 30)
    assert len(view.shapes_at('wrist', stamp + half_period - 1, half_period)) == 2
    assert view.shapes_at('wrist', stamp + 2 * half_period, half_period) == []  # the next 30 Hz frame
    assert view.shapes_at('scene', stamp, half_period) == []  # drawn on the wrist camera only


def test_the_box_is_drawn_at_its_pixels_in_the_taxonomy_colour_with_the_banner(episode: dict[str, Any]) -> None:
    view = load_episode_view(episode['episode_dir'])
    taxonomy = load_taxonomy(CONFIG / 'taxonomy.yaml')
    stamp, pixels = wrist_frame(episode, episode['box_stamp_ns'])
    drawn = annotate(pixels, view.shapes_at('wrist', stamp, 16_000_000), view.at(stamp), taxonomy)
    cube, cylinder = hex_to_bgr(taxonomy.get('object/cube').color), hex_to_bgr(taxonomy.get('object/cylinder').color)
    assert cube == (180, 30, 145)  # '#911eb4' in OpenCV's order
    x, y, w, h = (int(v) for v in BOX_XYWH)
    for px, py in ((x, y + h // 2), (x + w - 1, y + h // 2), (x + w // 2, y + h - 1), (x + w // 2, y)):
        assert tuple(drawn[py, px]) == cube, (px, py)
    # Outside the box and inside it, the camera's pixels are left as they were.
    for px, py in ((x - 1, y + h // 2), (x + w, y + h // 2), (x + w // 2, y + h), (x + w // 2, y + h // 2)):
        assert tuple(drawn[py, px]) == tuple(pixels[py, px]), (px, py)
    for vx, vy in POLYGON:
        assert tuple(drawn[int(vy), int(vx)]) == cylinder
    assert np.array_equal(pixels, wrist_frame(episode, stamp)[1])  # the source image is not drawn on
    # The banner: the top rows darkened under white text (the event and subtask of that moment).
    assert view.at(stamp).headline()
    band = drawn[:12].astype(int)
    assert band.mean() < pixels[:12].astype(int).mean() and (band.min(axis=2) > 200).any()
    # Another frame: no shapes, still the banner.
    other_stamp, other = wrist_frame(episode, stamp - 1_000_000_000)
    assert view.shapes_at('wrist', other_stamp, 16_000_000) == []
    plain = annotate(other, [], view.at(other_stamp), taxonomy)
    assert tuple(plain[y + h // 2, x]) == tuple(other[y + h // 2, x]) != cube
    assert (plain[:12].astype(int).min(axis=2) > 200).any()


def test_frame_labels_pulled_from_label_studio_are_found_in_the_review_media(episode: dict[str, Any],
                                                                              tmp_path: Path) -> None:
    """`robodata review push` exports its frames into DATASET/review/media/frames: a pulled box there is placed
    without naming any folder; a frame id no export holds is said in notes, naming the file."""
    from ros_robodata.dataset.annotations import add_labels
    from ros_robodata.dataset.targets import prepare
    from ros_robodata.export.export_plan import ExportOptions
    from ros_robodata.export.frames_run import export_items
    from ros_robodata.export.schedule import ScheduleSpec

    root = tmp_path / 'ds'
    shutil.copytree(episode['dataset'].root, root)
    dataset = Dataset.open(root)
    media = root / 'review' / 'media' / 'frames'
    result = export_items(prepare(dataset).items, dataset.profile, media,
                          ExportOptions(schedule=ScheduleSpec(every_ns=1_000_000_000)), name=dataset.name)
    frame = result.manifest['frames'][2]
    source = Source('label_studio', 'pick review frames', '12', 'box')
    add_labels(dataset.episode_dir(EPISODE), dataset.audit_path, [
        Label(BOX, 'object/sphere', 'erin', '', source, frame=2, frame_id=frame['frame_id'], sensor='camera_scene',
              box=(10, 10, 20, 20)),
        Label(BOX, 'object/sphere', 'erin', '', Source('label_studio', 'p', '13', 'x'), frame=99,
              frame_id=f'{EPISODE}/000099', sensor='camera_scene', box=(1, 1, 2, 2))])
    view = load_episode_view(dataset.episode_dir(EPISODE))
    assert ('scene', frame['sensors']['camera_scene']['stamp_ns']) in {(s.camera, s.stamp_ns) for s in view.shapes}
    assert len(view.shapes) == 3  # the COCO box and polygon too, from the export beside the file they came from
    assert [n for n in view.notes if 'not drawn' in n] == [
        f'{dataset.episode_dir(EPISODE) / "annotations.json"}: 1 box/polygon label(s) not drawn: no frame export '
        f'holds their frame ({EPISODE}/000099); pass the export folder (`robodata export frames --out`) as the '
        "overlay's `frames` parameter"]


def test_missing_or_broken_sidecars_are_named_and_the_rest_is_still_shown(episode: dict[str, Any],
                                                                         tmp_path: Path) -> None:
    folder = tmp_path / 'episodes' / EPISODE
    shutil.copytree(episode['episode_dir'], folder)
    (folder / 'events.json').unlink()
    (folder / 'quality.json').write_text('{"findings": [{"check": "image.blur"')  # cut short by a full disk
    view = load_episode_view(folder, [episode['frames']])
    assert len(view.notes) == 3, view.notes
    assert view.notes[0].startswith(f'{folder / "events.json"}: missing')
    assert view.notes[1].startswith(str(folder / 'quality.json'))
    assert view.notes[2].startswith(f'{folder / "annotations.json"}: 1 temporal label(s) not shown')
    assert view.events == [] and view.flags == []
    assert len(view.shapes) == 2 and view.verdict == 'success'  # what could be read is still drawn
    (folder / 'annotations.json').write_text('[]')
    assert load_episode_view(folder).notes[-1] == (f'{folder / "annotations.json"}: not a ros_robodata annotations '
                                                   "file (format 'ros_robodata.annotations' expected)")


def test_live_events_and_quality_statuses_come_and_go() -> None:
    view = EpisodeView(episode_id='live1', status='recording', start_ns=1_000)
    view.add_event('grasp', 5_000_000_000, 0.9)
    view.add_event('contact', 4_900_000_000, 0.8)  # confirmed later than the grasp, but happened before it
    assert view.event_times_ns() == [4_900_000_000, 5_000_000_000]
    assert view.at(4_899_999_999).event is None
    assert view.at(4_950_000_000).headline() == 'contact (0.80)'
    assert view.at(5_000_000_000).headline() == 'grasp (0.90)'
    view.live_status('image.blur', WRIST, 'warn', f'{WRIST}: blurry', 5_000_000_000)
    assert view.at(6_000_000_000).flag_lines() == [f'warn: {WRIST}: blurry']
    assert view.at(9_000_000_000).flags == ()  # not repeated for 3 s: the monitor stopped saying it
    view.live_status('image.blur', WRIST, None, 'OK', 6_000_000_000)
    assert view.at(6_000_000_000).flags == ()
