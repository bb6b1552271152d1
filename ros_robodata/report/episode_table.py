"""Every episode as one row, for a report of any size: the rows as compact JSON in the page, drawn a page of rows at
a time by a small script of the page's own (no library, nothing fetched), each row's reasons shown when it is
opened. A row costs ~150 bytes where a detailed section costs ~80 KiB, so the page grows with what is detailed.

The JSON sits in a `<script type="application/json">` block with `<`, `>` and `&` escaped, and the script puts
text into the page as text (never as HTML): ids, tasks and reasons come from users.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from ros_robodata.report.scores import ScoredEpisode

ROWS_PER_PAGE = 100
DATA_ID = 'episode-rows'


def _number(value: Any, digits: int) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return round(float(value), digits)


def _row(ep: ScoredEpisode, tasks: dict[str, int], operators: dict[str, int], detailed: bool) -> list[Any]:
    success = ep.quality.get('success')
    verdict = success.get('success') if isinstance(success, dict) else None
    c = ep.quality.get('consistency')
    reasons = [str(r) for r in ep.quality.get('reasons') or []]
    return [ep.id, tasks.setdefault(ep.episode.task, len(tasks)),
            operators.setdefault(ep.episode.operator, len(operators)), ep.episode.outcome, _number(ep.score, 3),
            {True: 1, False: 0}.get(verdict) if isinstance(verdict, bool) else None,
            1 if isinstance(success, dict) and success.get('disagrees') is True else 0,
            _number(c.get('normalized'), 2) if isinstance(c, dict) else None,
            1 if isinstance(c, dict) and c.get('outlier') is True else 0,
            reasons, 1 if detailed else 0]


def rows_json(episodes: list[ScoredEpisode], detailed: set[str], dataset_root: Path | None) -> str:
    """The rows, worst first as given, as JSON safe inside a script block. `dataset_root`: for the command that
    makes a detailed page of one episode on demand (None for bags on their own)."""
    tasks: dict[str, int] = {}
    operators: dict[str, int] = {}
    rows = [_row(ep, tasks, operators, ep.id in detailed) for ep in episodes]
    data = {'columns': ['id', 'task', 'operator', 'outcome', 'score', 'verdict', 'disagrees', 'consistency',
                        'outlier', 'reasons', 'detailed'],
            'tasks': list(tasks), 'operators': list(operators), 'per_page': ROWS_PER_PAGE,
            'command': f'robodata report {shlex.quote(str(dataset_root))}' if dataset_root is not None else '',
            'rows': rows}
    text = json.dumps(data, separators=(',', ':'), ensure_ascii=False, allow_nan=False)
    return text.replace('&', '\\u0026').replace('<', '\\u003c').replace('>', '\\u003e')


def table_html(episodes: list[ScoredEpisode], detailed: set[str], dataset_root: Path | None) -> str:
    """The section: a filter, the table, page buttons, the data and the script that draws them."""
    return '\n'.join([
        f'<section id="episodes"><h2>Every episode ({len(episodes)}), worst score first</h2>',
        '<p class="muted">One row each, a page of rows at a time. Open a row for its reasons; an episode shown in '
        'detail links to its section; <code>report.html#row-ID</code> opens the row of episode ID. Type to keep '
        'only the rows whose id, task, operator, outcome or reasons hold the text.</p>',
        '<p><input id="episode-filter" type="search" placeholder="filter, e.g. image.blur or pick_cube" size="40"> '
        '<label><input id="episode-flagged" type="checkbox"> only episodes with reasons</label> '
        '<span id="episode-count" class="muted"></span></p>',
        '<table id="episode-table"><thead><tr><th>episode</th><th>task</th><th>operator</th><th>outcome</th>'
        '<th class="num">score</th><th>success verdict</th><th class="num">consistency</th><th>first reason</th>'
        '</tr></thead><tbody></tbody></table>',
        '<p id="episode-pages"></p>',
        '<noscript><p class="warn">This table is drawn by the page\'s own script, which this browser did not run. '
        '<code>robodata episodes list DATASET</code> lists the same episodes.</p></noscript>',
        f'<script type="application/json" id="{DATA_ID}">{rows_json(episodes, detailed, dataset_root)}</script>',
        f'<script>{_SCRIPT}</script></section>'])


# The page's own script: draws ROWS_PER_PAGE rows of the JSON at a time; text only ever goes in as textContent.
_SCRIPT = """
(function () {
  var data = JSON.parse(document.getElementById('episode-rows').textContent);
  var rows = data.rows, shown = rows, page = 0, open = {};
  var body = document.querySelector('#episode-table tbody');
  var filter = document.getElementById('episode-filter');
  var flagged = document.getElementById('episode-flagged');
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    if (cls) { e.className = cls; }
    return e;
  }
  function grade(score) {
    return score === null ? 'poor' : score >= 0.9 ? 'good' : score >= 0.7 ? 'fair' : 'poor';
  }
  function scoreCell(score) {
    var td = el('td', null, 'num');
    td.appendChild(el('span', score === null ? '?' : score.toFixed(2), 'score ' + grade(score)));
    return td;
  }
  function verdictCell(r) {
    var td = el('td', r[5] === 1 ? 'success' : r[5] === 0 ? 'failure' : '\\u2013');
    if (r[6]) { td.appendChild(el('span', 'disagrees with label', 'flag')); }
    return td;
  }
  function consistencyCell(r) {
    var td = el('td', r[7] === null ? '\\u2013' : r[7].toFixed(2), 'num');
    if (r[8]) { td.appendChild(el('span', 'outlier', 'flag')); }
    return td;
  }
  function detailRow(r) {
    var tr = el('tr', null, 'episode-detail'), td = el('td');
    td.colSpan = 8;
    if (r[9].length) {
      var ul = el('ul');
      r[9].forEach(function (reason) {
        ul.appendChild(el('li', reason, reason.indexOf('error') === 0 ? 'error' : 'warn'));
      });
      td.appendChild(ul);
    } else {
      td.appendChild(el('p', 'No check fired.', 'muted'));
    }
    if (data.command) {
      var p = el('p', 'Its timeline and frames on a page of their own: ', 'muted');
      p.appendChild(el('code', data.command + " --where 'id = " + r[0] + "' --out " + r[0] + '.html'));
      td.appendChild(p);
    }
    tr.appendChild(td);
    return tr;
  }
  function idCell(r) {
    var td = el('td');
    if (r[10]) {
      var a = el('a', r[0]);
      a.href = '#ep-' + r[0];
      td.appendChild(a);
    } else {
      var b = el('button', (open[r[0]] ? '\\u25be ' : '\\u25b8 ') + r[0], 'episode-open');
      b.type = 'button';
      b.title = 'show its reasons';
      b.onclick = function () { open[r[0]] = !open[r[0]]; draw(); };
      td.appendChild(b);
    }
    return td;
  }
  function draw() {
    var pages = Math.max(1, Math.ceil(shown.length / data.per_page));
    page = Math.min(page, pages - 1);
    body.textContent = '';
    shown.slice(page * data.per_page, (page + 1) * data.per_page).forEach(function (r) {
      var tr = el('tr');
      tr.id = 'row-' + r[0];
      tr.appendChild(idCell(r));
      tr.appendChild(el('td', data.tasks[r[1]]));
      tr.appendChild(el('td', data.operators[r[2]]));
      tr.appendChild(el('td', r[3]));
      tr.appendChild(scoreCell(r[4]));
      tr.appendChild(verdictCell(r));
      tr.appendChild(consistencyCell(r));
      tr.appendChild(r[9].length ? el('td', r[9][0]) : el('td', '\\u2013', 'muted'));
      body.appendChild(tr);
      if (open[r[0]]) { body.appendChild(detailRow(r)); }
    });
    document.getElementById('episode-count').textContent =
      shown.length + ' of ' + rows.length + ' episode(s), page ' + (page + 1) + ' of ' + pages;
    var nav = document.getElementById('episode-pages');
    nav.textContent = '';
    [['\\u00ab first', 0], ['\\u2039 previous', page - 1], ['next \\u203a', page + 1], ['last \\u00bb', pages - 1]]
      .forEach(function (b) {
        var button = el('button', b[0]);
        button.type = 'button';
        button.disabled = b[1] < 0 || b[1] >= pages || b[1] === page;
        button.onclick = function () { page = b[1]; draw(); };
        nav.appendChild(button);
        nav.appendChild(document.createTextNode(' '));
      });
  }
  function refilter() {
    var text = filter.value.toLowerCase();
    shown = rows.filter(function (r) {
      if (flagged.checked && !r[9].length) { return false; }
      if (!text) { return true; }
      var hay = [r[0], data.tasks[r[1]], data.operators[r[2]], r[3]].concat(r[9]).join(' ').toLowerCase();
      return hay.indexOf(text) >= 0;
    });
    page = 0;
    draw();
  }
  function follow() {  // report.html#row-ID: that episode's row, opened, on its page (the review queue links here)
    var id = decodeURIComponent(location.hash.slice(1));
    if (id.indexOf('row-') !== 0) { return; }
    id = id.slice(4);
    var at = shown.findIndex(function (r) { return r[0] === id; });
    if (at < 0) {  // filtered out: show every row again
      filter.value = '';
      flagged.checked = false;
      shown = rows;
      at = rows.findIndex(function (r) { return r[0] === id; });
    }
    if (at < 0) { return; }
    page = Math.floor(at / data.per_page);
    if (!shown[at][10]) { open[id] = true; }
    draw();
    var row = document.getElementById('row-' + id);
    if (row) { row.scrollIntoView(); }
  }
  filter.oninput = refilter;
  flagged.onchange = refilter;
  window.addEventListener('hashchange', follow);
  draw();
  follow();
})();
"""
