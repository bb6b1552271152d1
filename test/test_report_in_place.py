"""`robodata report` on a LeRobot dataset where it lies, as a data engineer checks a public dataset before pooling it:
the page names the folder's episode indices and frames, shows the episodes and findings a report of an imported copy
shows, says what it lacks without a dataset's catalog, and leaves the folder exactly as it was."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from ros_robodata.cli.main import main

ROOT = Path(__file__).resolve().parent.parent


class _Cells(HTMLParser):
    """The page as (section id, heading, table rows of cell texts): what a reader sees, not the HTML's bytes."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[dict[str, Any]] = []
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self._heading: list[str] | None = None
        self._table: list[list[str]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == 'section':
            self.sections.append({'id': dict(attrs).get('id') or '', 'h2': '', 'tables': {}, 'h3': ''})
        elif tag in ('h2', 'h3'):
            self._heading = []
        elif tag == 'table' and self.sections:
            self._table = self.sections[-1]['tables'].setdefault(self.sections[-1]['h3'], [])
        elif tag == 'tr':
            self._row = []
        elif tag in ('td', 'th'):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ('h2', 'h3') and self._heading is not None and self.sections:
            self.sections[-1][tag] = ' '.join(''.join(self._heading).split())
            self._heading = None
        elif tag in ('td', 'th') and self._cell is not None and self._row is not None:
            self._row.append(' '.join(''.join(self._cell).split()))
            self._cell = None
        elif tag == 'tr' and self._row is not None and self._table is not None:
            self._table.append(self._row)
            self._row = None
        elif tag == 'table':
            self._table = None

    def handle_data(self, data: str) -> None:
        for part in (self._cell, self._heading):
            if part is not None:
                part.append(data)


def _page(path: Path) -> list[dict[str, Any]]:
    parser = _Cells()
    parser.feed(path.read_text(encoding='utf-8'))
    return parser.sections


def _content(path: Path, rename: Any = lambda s: s) -> dict[str, Any]:
    """What the page says: the summary's tables, the detailed episodes' table, and each episode's findings (check,
    severity, topic, when, message), ids as `rename` gives them."""
    sections = _page(path)
    summary = next(s for s in sections if s['id'] == 'summary')
    detailed = next(s for s in sections if s['id'] == 'detailed')
    episodes = {}
    for section in sections:
        if section['id'].startswith('ep-'):
            findings = section['tables'].get('Findings', [[]])
            header = findings[0]
            keep = [i for i, name in enumerate(header) if name != 'frames']
            episodes[rename(section['id'][3:])] = [[row[i] for i in keep] for row in findings]
    return {'summary': {k: v for k, v in summary['tables'].items()},
            'detailed': [[rename(row[0]), *row[1:]] for row in next(iter(detailed['tables'].values()))],
            'episodes': episodes}


def _as_in_place(name: str) -> str:
    return re.sub(r'^reachy2_apple_storage-0*(\d+)$', r'episode \1', name)


def _state(root: Path) -> dict[str, tuple[str, int]]:
    """Every file and folder under `root`: its bytes and its mtime (ns), so a write of the same bytes shows too."""
    return {str(p.relative_to(root)): (p.read_bytes().hex() if p.is_file() else 'dir', p.stat().st_mtime_ns)
            for p in sorted(root.rglob('*'))}


@pytest.fixture(scope='module')
def imported_page(reachy_imported: Path) -> Path:
    ds = reachy_imported
    assert main(['score', str(ds)]) == 0
    page = ds.parent / 'imported.html'
    assert main(['report', str(ds), '--episodes', 'all', '--out', str(page)]) == 0
    return page


def test_report_in_place_shows_what_the_imported_copys_report_shows(reachy_folder: Path, imported_page: Path,
                                                                   tmp_path: Path) -> None:
    before = _state(reachy_folder)
    page = tmp_path / 'page.html'
    assert main(['report', str(reachy_folder), '--episodes', 'all', '--out', str(page)]) == 0
    assert _state(reachy_folder) == before  # not a byte, not a timestamp, no file added
    in_place, copy = _content(page), _content(imported_page, _as_in_place)
    assert sorted(in_place['episodes']) == ['episode 0', 'episode 1', 'episode 2']
    assert in_place == copy
    assert any(len(rows) > 1 for rows in in_place['episodes'].values())  # findings to compare: a speed jump or two
    assert in_place['detailed'][0][:2] == ['episode', 'task']  # a header, then a row per episode
    assert [row[1] for row in in_place['detailed'][1:]] == ['place the apple in the plate'] * 3


def test_the_page_says_each_findings_frames_in_the_folder(reachy_folder: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(['score', str(reachy_folder), '--json']) == 0
    scored = json.loads(capsys.readouterr().out)['episodes']
    page = tmp_path / 'page.html'
    assert main(['report', str(reachy_folder), '--episodes', 'all', '--out', str(page)]) == 0
    said = 0
    for section in _page(page):
        if not section['id'].startswith('ep-'):
            continue
        header, *rows = section['tables']['Findings']
        assert header == ['check', 'severity', 'topic', 'when (s)', 'frames', 'message']
        findings = scored[section['id'][3:]]['findings']
        assert [row[0] for row in rows] == [f['check'] for f in findings]
        for row, finding in zip(rows, findings, strict=True):
            frames = ', '.join(f'{a}–{b}' for a, b in finding.get('frames', []))
            assert row[4] == (frames or '–')
            said += bool(finding.get('frames'))
    assert said >= 2  # the speed jumps of episodes 1 and 2, at their frame indices


def test_the_page_says_what_a_folder_in_place_lacks(reachy_folder: Path, tmp_path: Path) -> None:
    page = tmp_path / 'page.html'
    assert main(['report', str(reachy_folder), '--out', str(page)]) == 0
    sections = {s['id']: s for s in _page(page)}
    assert 'review-queue' not in sections
    text = page.read_text(encoding='utf-8')
    note = text[text.index('<section id="in-place">'):].split('</section>')[0]
    assert 'no review queue' in note and 'no operator labels' in note
    assert f'robodata import {reachy_folder} --dataset D' in note


def test_a_page_inside_the_folder_is_refused(reachy_folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _state(reachy_folder)
    capsys.readouterr()
    assert main(['report', str(reachy_folder), '--out', str(reachy_folder / 'meta' / 'report.html')]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert 'read in place and left as it is: name an --out outside it' in line
    assert _state(reachy_folder) == before


def test_the_default_page_is_written_in_the_current_folder(reachy_folder: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    before = _state(reachy_folder)
    assert main(['report', str(reachy_folder)]) == 0
    assert (tmp_path / 'reachy2_apple_storage_report.html').is_file()
    assert _state(reachy_folder) == before


def test_a_v21_folder_of_a_humanoid_is_reported_in_place(tmp_path: Path) -> None:
    """The vendored G1 (LeRobot v2.1: one parquet file per episode, jsonl metadata, 26 joints)."""
    folder = tmp_path / 'g1_inspire_3ep'
    shutil.copytree(ROOT / 'test' / 'data' / 'lerobot' / 'g1_inspire_3ep', folder)
    before = _state(folder)
    page = tmp_path / 'g1.html'
    assert main(['report', str(folder), '--episodes', 'all', '--out', str(page)]) == 0
    assert _state(folder) == before
    sections = _page(page)
    assert sorted(s['id'] for s in sections if s['id'].startswith('ep-')) == ['ep-episode 0', 'ep-episode 1',
                                                                              'ep-episode 2']
    text = page.read_text(encoding='utf-8')
    assert text.count('<img class="timeline"') == 3 and 'could not read' not in text
    assert 'Pick up the yellow bottle on the table.' in text
