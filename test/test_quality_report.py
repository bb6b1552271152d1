"""`robodata report`: one HTML file a reviewer opens offline, showing what `robodata score` found and where."""

from __future__ import annotations

import base64
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import cv2
import numpy as np
import pytest

from ros_robodata.cli.main import main
from ros_robodata.dataset import Dataset
from ros_robodata.dataset.episode import Episode
from ros_robodata.profile import load_profile
from ros_robodata.report.report_signals import Envelope
from ros_robodata.sim.faults import Fault
from ros_robodata.sim.to_bag import write_sim_episode
from test.profiles import PROFILE

CLEAN, BLURRED = '20260101-120000', '20260101-120100'
HOSTILE_TASK = '<script>alert(1)</script>'


@pytest.fixture(scope='module')
def scored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two short simulated episodes with cameras, the second with its wrist camera blurred at 2-3 s; scored."""
    profile = load_profile(PROFILE)
    root = tmp_path_factory.mktemp('report') / 'ds'
    dataset = Dataset.create(root, profile=profile)
    for episode_id, seed, faults, task in ((CLEAN, 0, [], 'pick'),
                                          (BLURRED, 1, [Fault('camera/wrist', 'blur', 2.0, 3.0)], HOSTILE_TASK)):
        write_sim_episode(dataset.bag_dir(episode_id), profile, seed=seed, cameras=True, lidar=False,
                          image_size=(96, 72), faults=faults, max_duration_s=9.0)
        dataset.add_episode(Episode(id=episode_id, task=task, operator='ana', status='complete', outcome='success'))
    assert main(['score', str(root)]) == 0
    return root


@pytest.fixture(scope='module')
def page(scored: Path) -> str:
    assert main(['report', str(scored)]) == 0
    return (scored / 'report.html').read_text(encoding='utf-8')


def _section(page: str, episode_id: str) -> str:
    start = page.index(f'<section class="episode" id="ep-{episode_id}">')
    return page[start:page.index('</section>', start)]


def _rows(page: str) -> list[list]:
    """The table's rows as the page embeds them for its script."""
    found = re.search(r'<script type="application/json" id="episode-rows">(.*?)</script>', page, re.S)
    assert found, 'no table of every episode'
    return json.loads(found.group(1))['rows']


def _quality(root: Path, episode_id: str) -> dict:
    return json.loads((root / 'episodes' / episode_id / 'quality.json').read_text())


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.links: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.links += [(tag, name, value or '') for name, value in attrs if name in ('src', 'href')]


def test_the_report_is_one_file_that_opens_offline(page: str) -> None:
    parser = _Links()
    parser.feed(page)
    assert page.startswith('<!DOCTYPE html>') and page.rstrip().endswith('</html>')
    assert 'http://' not in page and 'https://' not in page and 'url(' not in page
    assert not {'script', 'link', 'iframe', 'object'} & set(parser.tags)  # no script, stylesheet or frame
    assert all(value.startswith('data:image/') for tag, name, value in parser.links if name == 'src')
    assert all(value.startswith('#') for tag, name, value in parser.links if name == 'href')  # in-page anchors
    assert sum(1 for _, name, _ in parser.links if name == 'src') >= 2 + 2 * 2  # two timelines, two frames each


def test_every_episode_is_listed_with_its_score_worst_first(scored: Path, page: str) -> None:
    rows = {}
    for episode_id in (CLEAN, BLURRED):
        row = re.search(rf'<tr><td><a href="#ep-{episode_id}">{episode_id}</a>.*?</tr>', page)
        assert row, episode_id
        rows[episode_id] = row.start()
        assert f'{_quality(scored, episode_id)["score"]:.2f}' in row.group(0)
        assert f'{_quality(scored, episode_id)["score"]:.2f}' in _section(page, episode_id)
    assert _quality(scored, BLURRED)['score'] < _quality(scored, CLEAN)['score']
    assert rows[BLURRED] < rows[CLEAN]
    # The columns say how to read them: the consistency limit, and that the score is not the task's success.
    assert 'consistency<br><span class="muted">x typical; outlier &gt; 1.5</span>' in page
    assert 'a failed grasp recorded cleanly scores 1.00' in page


def test_the_blurred_moment_is_shown_with_its_frame(scored: Path, page: str) -> None:
    section = _section(page, BLURRED)
    blur = next(f for f in _quality(scored, BLURRED)['findings'] if f['check'] == 'image.blur')
    assert blur['message'] in section
    figure = re.search(r'<figure class="warn"><img [^>]*src="data:image/jpeg;base64,([^"]+)"><figcaption>'
                       r'wrist: image\.blur at ([0-9.]+) s</figcaption>', section)
    assert figure, 'no thumbnail of the blurred frames'
    start, end = blur['ranges_s'][0]
    assert start - 0.05 <= float(figure.group(2)) <= end + 0.05
    frame = cv2.imdecode(np.frombuffer(base64.b64decode(figure.group(1)), np.uint8), cv2.IMREAD_COLOR)
    assert frame is not None and frame.shape[1] <= 240
    assert 'image.blur' not in _section(page, CLEAN)
    for episode_id in (CLEAN, BLURRED):  # what the robot saw at the grasp, from both cameras
        context = _section(page, episode_id).split('What the cameras saw', 1)[1]
        assert context.count('src="data:image/jpeg;base64,') == 2
        assert 'wrist at grasp' in context and 'scene at grasp' in context


def test_events_and_the_timeline_are_in_each_section(scored: Path, page: str) -> None:
    for episode_id in (CLEAN, BLURRED):
        section = _section(page, episode_id)
        events = json.loads((scored / 'episodes' / episode_id / 'events.json').read_text())['events']
        assert events
        for event in events:
            assert f'<b>{event["kind"]}</b> {event["t_s"]:.2f} s' in section
        assert re.search(r'<img class="timeline" [^>]*src="data:image/png;base64,', section)


def test_text_from_files_is_escaped(page: str) -> None:
    assert HOSTILE_TASK not in page
    assert '&lt;script&gt;alert(1)&lt;/script&gt;' in page


def test_out_and_episodes_limit_the_detail(scored: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / 'worst.html'
    assert main(['report', str(scored), '--out', str(out), '--episodes', '1']) == 0
    assert capsys.readouterr().out.strip() == str(out)
    page = out.read_text(encoding='utf-8')
    assert f'id="ep-{BLURRED}"' in page and f'id="ep-{CLEAN}"' not in page
    # Both still rows of the table, worst first, only the detailed one linking to its section (the rows as the
    # page's script draws them: test_report_pages.py opens it in Chromium).
    assert [(row[0], row[10]) for row in _rows(page)] == [(BLURRED, 1), (CLEAN, 0)]


def test_an_unscored_dataset_says_to_score_it(scored: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / 'ds'
    shutil.copytree(scored, copy, ignore=shutil.ignore_patterns('bag', 'report.html'))
    (copy / 'episodes' / CLEAN / 'bag').mkdir()
    (copy / 'episodes' / CLEAN / 'bag' / 'placeholder').write_bytes(b'')  # the episode has a recording
    (copy / 'episodes' / CLEAN / 'quality.json').unlink()
    assert main(['report', str(copy)]) == 1
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and CLEAN in err and f'robodata score {copy}' in err
    (copy / 'quality_summary.json').unlink()
    assert main(['report', str(copy)]) == 1
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and 'not scored yet' in err and f'robodata score {copy}' in err
    assert not (copy / 'report.html').exists()


def test_a_consistency_outlier_is_drawn_against_the_demo_it_was_compared_with(scored: Path, tmp_path: Path) -> None:
    """The verdict names joints and a stretch of the course; the report shows those joints of both demos."""
    copy = tmp_path / 'ds'
    shutil.copytree(scored, copy, ignore=shutil.ignore_patterns('report.html'))
    path = copy / 'episodes' / BLURRED / 'quality.json'
    quality = json.loads(path.read_text())
    quality['consistency'] = {'distance': 9.0, 'normalized': 3.2, 'robust_z': 6.1, 'outlier': True,
                              'medoid': CLEAN, 'reference': CLEAN, 'far_joints': ['joint2', 'joint3'],
                              'far_span': [0.3, 0.5], 'idle_joints': [], 'rest_offsets': {}}
    path.write_text(json.dumps(quality))
    assert main(['report', str(copy)]) == 0
    section = _section((copy / 'report.html').read_text(encoding='utf-8'), BLURRED)
    assert 'Unlike the others: most in joint2, joint3 at 30%-50% of its course, against ' + CLEAN in section
    figure = re.search(r'alt="[^"]* against the demo it was compared with" src="data:image/png;base64,([^"]+)"',
                       section)
    assert figure is not None
    image = cv2.imdecode(np.frombuffer(base64.b64decode(figure.group(1)), np.uint8), cv2.IMREAD_COLOR)
    assert image is not None and image.shape[0] > 150  # two joints, one panel each
    # The clean episode is no outlier: no comparison there.
    clean = _section((copy / 'report.html').read_text(encoding='utf-8'), CLEAN)
    assert 'compared with' not in clean


def test_envelope_is_bounded_and_keeps_a_one_sample_spike() -> None:
    """A long signal decimated while it is read: fixed memory, and the spike a collision leaves still shows."""
    start, period = 10**18, 2_000_000
    count = 200_000  # 400 s at 500 Hz
    envelope = Envelope(start, start + count * period, buckets=1500, width=2)
    for i in range(count):
        value = 50.0 if i == 123_457 else np.sin(i / 5000)
        envelope.add(start + i * period, (value, np.nan if 1000 <= i < 2000 else -value))
    envelope.add(start - 10**12, (1e6, 1e6))  # a clock jump far outside the episode: left out
    assert envelope.lo.shape == (1500, 2)
    (x0, y0), (x1, y1) = envelope.lines()
    assert len(x0) <= 2 * 1500 and np.nanmax(y0) == 50.0 and np.nanmax(y1) < 1.01
    assert abs(x0[np.nanargmax(y0)] - 123_457 * period / 1e9) < 400 / 1500
    assert np.isnan(x1).any()  # the NaN stretch breaks the line instead of being bridged


def test_a_camera_marked_pii_shows_no_picture(scored: Path, tmp_path: Path) -> None:
    """A report is shared as one file: the camera that films people shows no frame (its findings are still said)."""
    import yaml

    data = yaml.safe_load(Path(PROFILE).read_text())
    for camera in data['topics']['cameras']:
        camera['pii'] = camera['name'] == 'wrist'
    private = tmp_path / 'private.yaml'
    private.write_text(yaml.safe_dump(data))
    out = tmp_path / 'shared.html'
    assert main(['report', str(scored), '--profile', str(private), '--out', str(out)]) == 0
    section = _section(out.read_text(encoding='utf-8'), BLURRED)
    assert 'no picture of camera wrist: marked pii in the robot profile' in section
    assert 'wrist at grasp' not in section and 'wrist: image.blur at' not in section
    assert 'scene at grasp' in section and section.count('src="data:image/jpeg;base64,') == 1
    assert next(f for f in _quality(scored, BLURRED)['findings'] if f['check'] == 'image.blur')['message'] in section


def test_quality_json_counts_camera_frames_in_whole_numbers(scored: Path) -> None:
    cameras = _quality(scored, CLEAN)['metrics']['cameras']
    assert cameras and all(type(c['frames']) is int and c['frames'] > 0 for c in cameras.values())


def test_by_default_only_the_worst_get_sections_and_all_gives_every_one(
        scored: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A dataset of thousands of episodes must still make a page a browser opens: sections for the worst
    DETAILED_BY_DEFAULT (1 here, 100 as shipped), every episode in the table; `--episodes all` details them all."""
    from ros_robodata.cli import report_cmd

    monkeypatch.setattr(report_cmd, 'DETAILED_BY_DEFAULT', 1)
    out = tmp_path / 'default.html'
    assert main(['report', str(scored), '--out', str(out)]) == 0
    page = out.read_text(encoding='utf-8')
    assert f'id="ep-{BLURRED}"' in page and f'id="ep-{CLEAN}"' not in page and CLEAN in [r[0] for r in _rows(page)]
    assert '1 of 2 episodes are shown in detail below (timeline, camera frames): those with the lowest scores' in page
    assert main(['report', str(scored), '--out', str(out), '--episodes', 'all']) == 0
    page = out.read_text(encoding='utf-8')
    assert f'id="ep-{BLURRED}"' in page and f'id="ep-{CLEAN}"' in page
    assert 'All 2 episode(s) are shown in detail below' in page and 'id="episode-rows"' not in page
    capsys.readouterr()
    for bad in ('-1', 'lots'):
        assert main(['report', str(scored), '--out', str(out), '--episodes', bad]) == 1
        assert f"--episodes must be a count of 0 or more, or all; got '{bad}'" in capsys.readouterr().err
