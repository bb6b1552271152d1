"""`robodata report` on a dataset of hundreds of scored episodes, as a reader sees it in headless Chromium: the
dataset's picture, the worst episodes in detail, every episode one row drawn by the page's own script."""

from __future__ import annotations

import json
import re
import shlex
from html.parser import HTMLParser
from pathlib import Path

import pytest

from ros_robodata.cli.main import main
from ros_robodata.dataset import Dataset
from test.report_sidecars import chromium_dom, make_templates, write_scored_dataset

EPISODES, DETAILED, QUEUED = 600, 5, 50
HOSTILE_TASK = '<img src=x onerror=alert(1)>'


class Scaled:
    """The dataset, its report and what the report is expected to say, worked out from the sidecars."""

    def __init__(self, root: Path, page: Path) -> None:
        self.root, self.page = root, page
        self.scores = {i: json.loads((root / 'episodes' / i / 'quality.json').read_text())['score']
                       for i in Dataset.open(root).episode_ids()}
        self.worst_first = sorted(self.scores, key=lambda i: (self.scores[i], i))
        self.hostile = self.worst_first[DETAILED + 3]  # on the table's first page, not in detail


@pytest.fixture(scope='module')
def templates(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return make_templates(tmp_path_factory.mktemp('templates') / 'ds')


@pytest.fixture(scope='module')
def scaled(tmp_path_factory: pytest.TempPathFactory, templates: Dataset) -> Scaled:
    root = tmp_path_factory.mktemp('scaled') / 'fleet week 2'  # a space: the on-demand command quotes it
    write_scored_dataset(root, EPISODES, templates, queue=QUEUED)
    made = Scaled(root, root / 'report.html')
    Dataset.open(root).set_task(made.hostile, HOSTILE_TASK)
    assert main(['report', str(root), '--episodes', str(DETAILED)]) == 0
    return made


@pytest.fixture(scope='module')
def dom(scaled: Scaled, tmp_path_factory: pytest.TempPathFactory) -> str:
    return chromium_dom(scaled.page, tmp_path_factory.mktemp('chromium'))


def _drawn_rows(dom: str) -> list[str]:
    body = dom[dom.index('<table id="episode-table">'):]
    body = body[:body.index('</table>')]
    return re.findall(r'<tr id="row-[^"]+">.*?</tr>', body)


def test_the_summary_shows_the_dataset_at_a_glance(scaled: Scaled, dom: str) -> None:
    assert f'<div class="card"><b>{EPISODES}</b>episodes scored</div>' in dom
    bands = [0] * 10
    for score in scaled.scores.values():
        bands[min(9, int(score * 10))] += 1
    for band, count in enumerate(bands):
        label = f'{band / 10:.1f}–{(band + 1) / 10:.1f}' + (' (incl.)' if band == 9 else '')
        assert f'<tr><td>{label}</td><td class="num">{count}</td>' in dom, label
    blurred = sum(1 for i in scaled.scores
                  if any(f['check'] == 'image.blur'
                         for f in json.loads((scaled.root / 'episodes' / i / 'quality.json').read_text())['findings']))
    assert blurred and f'<tr><td>image.blur</td><td class="num">{blurred}</td><td class="num">0</td>' \
                       f'<td class="num">{blurred}</td></tr>' in dom
    assert f'{QUEUED} of {EPISODES} candidate episode(s) picked' in dom
    assert f'{DETAILED} of {EPISODES} episodes are shown in detail below (timeline, camera frames): those with the ' \
           f'lowest scores, as <code>--episodes {DETAILED}</code> asks.' in dom
    assert dom.count('<section class="episode" id="ep-') == DETAILED


def test_every_episode_is_a_row_drawn_by_the_page_worst_first(scaled: Scaled, dom: str) -> None:
    assert f'{EPISODES} of {EPISODES} episode(s), page 1 of {EPISODES // 100}' in dom
    rows = _drawn_rows(dom)
    assert [r.split('"', 2)[1].removeprefix('row-') for r in rows] == scaled.worst_first[:100]
    worst = scaled.worst_first[0]
    # A detailed episode's row links to its section, which is on the page: the link resolves.
    assert f'<td><a href="#ep-{worst}">{worst}</a></td>' in rows[0]
    assert f'<section class="episode" id="ep-{worst}">' in dom
    assert f'<span class="score poor">{scaled.scores[worst]:.2f}</span>' in rows[0]
    assert 'error: /lidar/points: no message at all' in rows[0]  # its first reason
    # The others open in place (their reasons are in the page); their score is the one quality.json holds.
    plain = scaled.worst_first[DETAILED]
    assert f'<button class="episode-open" type="button" title="show its reasons">▸ {plain}</button>' in rows[DETAILED]
    assert f'>{scaled.scores[plain]:.2f}</span>' in rows[DETAILED]


def test_text_from_users_stays_text_in_the_drawn_table(scaled: Scaled, dom: str) -> None:
    row = next(r for r in _drawn_rows(dom) if f'id="row-{scaled.hostile}"' in r)
    assert '<td>&lt;img src=x onerror=alert(1)&gt;</td>' in row
    assert '<img src="x"' not in dom and '<img src=x' not in dom
    page = scaled.page.read_text(encoding='utf-8')
    assert HOSTILE_TASK not in page  # escaped in the embedded rows too (\u003c...)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.attrs: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.attrs += [(tag, name, value or '') for name, value in attrs]


def test_the_page_still_opens_offline_as_one_file(scaled: Scaled) -> None:
    page = scaled.page.read_text(encoding='utf-8')
    tags = _Tags()
    tags.feed(page)
    assert 'http://' not in page and 'https://' not in page
    assert not [(t, n) for t, n, _ in tags.attrs if t == 'script' and n == 'src']  # the script is the page's own
    assert all(v.startswith('data:image/') for t, n, v in tags.attrs if n == 'src')
    assert all(v.startswith('#') for t, n, v in tags.attrs if n == 'href')


def test_one_more_episode_in_detail_is_made_on_demand(scaled: Scaled, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """An opened row says how to get its timeline and frames; the command it shows works as shown."""
    page = scaled.page.read_text(encoding='utf-8')
    start = page.index('>', page.index('<script type="application/json" id="episode-rows"')) + 1
    rows = json.loads(page[start:page.index('</script>', start)])
    assert rows['command'] == f'robodata report {shlex.quote(str(scaled.root))}'
    plain = scaled.worst_first[DETAILED]
    out = tmp_path / f'{plain}.html'
    args = shlex.split(rows['command'] + f" --where 'id = {plain}' --out {shlex.quote(str(out))} --json")
    assert args[:2] == ['robodata', 'report']
    capsys.readouterr()
    assert main(args[1:]) == 0
    assert json.loads(capsys.readouterr().out)['detailed'] == 1
    page = out.read_text(encoding='utf-8')
    assert f'<section class="episode" id="ep-{plain}">' in page and page.count('<section class="episode"') == 1
    assert 'All 1 episode(s) are shown in detail below' in page


def test_the_page_grows_with_what_is_detailed_not_with_the_dataset(scaled: Scaled, templates: Dataset,
                                                                   tmp_path: Path) -> None:
    small = tmp_path / 'small'
    write_scored_dataset(small, EPISODES // 3, templates, seed=1)
    assert main(['report', str(small), '--episodes', str(DETAILED)]) == 0
    big_size, small_size = scaled.page.stat().st_size, (small / 'report.html').stat().st_size
    per_row = (big_size - small_size) / (EPISODES - EPISODES // 3)
    page = scaled.page.read_text(encoding='utf-8')
    per_section = (len(page.encode()) - len(page[:page.index('<section class="episode"')].encode())) / DETAILED
    assert per_row < 200 and per_section > 100 * per_row, (per_row, per_section)


def test_drawing_in_two_processes_makes_the_same_page(scaled: Scaled, tmp_path: Path) -> None:
    pages = []
    for workers in ('1', '2'):
        out = tmp_path / f'workers{workers}.html'
        assert main(['report', str(scaled.root), '--episodes', '3', '--workers', workers, '--out', str(out)]) == 0
        pages.append(re.sub(r'Generated [^<]* by', 'Generated by', out.read_text(encoding='utf-8')))
    assert pages[0].count('<section class="episode"') == 3 and 'data:image/png;base64,' in pages[0]
    assert pages[0] == pages[1]


def test_a_link_to_a_row_opens_it_on_its_page(scaled: Scaled, tmp_path: Path) -> None:
    """report.html#row-ID (what the review queue links an episode without a section to) shows that row opened: its
    reasons, and the command that details it."""
    reasons_of = {i: json.loads((scaled.root / 'episodes' / i / 'quality.json').read_text())['reasons']
                  for i in scaled.worst_first}
    at = max(n for n, i in enumerate(scaled.worst_first) if reasons_of[i])  # the best episode with a reason
    far, page = scaled.worst_first[at], at // 100 + 1
    assert page >= 2
    dom = chromium_dom(scaled.page, tmp_path / 'chromium', fragment=f'row-{far}')
    assert f'{EPISODES} of {EPISODES} episode(s), page {page} of {EPISODES // 100}' in dom
    assert f'id="row-{far}"' in _drawn_rows(dom)[at % 100]
    opened = dom[dom.index(f'<tr id="row-{far}">'):]
    opened = opened[:opened.index('</tr>', opened.index('<tr class="episode-detail">'))]
    assert all(f'>{reason}</li>' in opened for reason in reasons_of[far])
    assert f"--where 'id = {far}' --out {far}.html</code>" in opened
    # The review queue links its episodes here (or to their section when they have one).
    queue = scaled.page.read_text(encoding='utf-8').split('<section id="review-queue">', 1)[1].split('</section>')[0]
    assert f'<a href="#ep-{scaled.worst_first[0]}">' in queue
    assert f'<a href="#row-{scaled.worst_first[DETAILED]}">' in queue
