"""The dataset at a glance on the report's first screen: how the scores spread, and which checks fired how often.
Plain HTML (bars are widths), so it reads the same with the page's script off."""

from __future__ import annotations

import html
from typing import Any

from ros_robodata.report.scores import ScoredEpisode

BINS = 10  # score bands of 0.1
BAR_PX = 240


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _bar(n: int, most: int) -> str:
    width = round(BAR_PX * n / most) if most else 0
    return f'<span class="bar" style="width:{width}px"></span>' if width else ''


def score_distribution_html(episodes: list[ScoredEpisode]) -> str:
    """Episodes per score band (0.0-0.1 ... 0.9-1.0), best band first, and those without a score."""
    counts = [0] * BINS
    unscored = 0
    for ep in episodes:
        if ep.score != ep.score:
            unscored += 1
        else:
            counts[min(BINS - 1, max(0, int(ep.score * BINS)))] += 1
    most = max([*counts, unscored, 1])
    out = ['<h3>Score distribution</h3><table class="bars"><tr><th>score</th><th class="num">episodes</th>'
           '<th></th></tr>']
    for band in range(BINS - 1, -1, -1):
        low, high = band / BINS, (band + 1) / BINS
        label = f'{low:.1f}–{high:.1f}' if band < BINS - 1 else f'{low:.1f}–{high:.1f} (incl.)'
        out.append(f'<tr><td>{label}</td><td class="num">{counts[band]}</td><td>{_bar(counts[band], most)}</td>'
                   '</tr>')
    if unscored:
        out.append(f'<tr><td>no score</td><td class="num">{unscored}</td><td>{_bar(unscored, most)}</td></tr>')
    out.append('</table>')
    return '\n'.join(out)


def findings_by_check_html(checks: dict[str, int], episodes: list[ScoredEpisode]) -> str:
    """Per check: the episodes it fired in (quality_summary.json's count), and its findings by severity (from each
    episode's quality.json)."""
    severities: dict[str, dict[str, int]] = {}
    for ep in episodes:
        for f in ep.findings:
            check = str(f.get('check', ''))
            by = severities.setdefault(check, {})
            severity = str(f.get('severity', ''))
            by[severity] = by.get(severity, 0) + 1
    names = sorted(set(checks) | set(severities), key=lambda c: (-checks.get(c, 0), c))
    out = ['<h3>Findings by check</h3>']
    if not names:
        out.append('<p class="muted">No check fired in any episode.</p>')
        return '\n'.join(out)
    out.append(f'<table><tr><th>check</th><th class="num">episodes (of {len(episodes)})</th>'
               '<th class="num">error findings</th><th class="num">warnings</th></tr>')
    for check in names:
        by = severities.get(check, {})
        warnings = sum(n for s, n in by.items() if s != 'error')
        out.append(f'<tr><td>{_e(check)}</td><td class="num">{_e(checks.get(check, "–"))}</td>'
                   f'<td class="num">{by.get("error", 0)}</td><td class="num">{warnings}</td></tr>')
    out.append('</table>')
    return '\n'.join(out)


def robots_html(episodes: list[ScoredEpisode], summarized: int | None) -> str:
    """Per robot of a pooled dataset (`robodata merge`): its episodes, their mean score and findings, from each
    episode's own quality.json; '' for one robot. `summarized`: how many episodes quality_summary.json counts, said
    when fewer than the page shows (a dataset scored one robot at a time keeps the last run's summary)."""
    robots: dict[str, list[ScoredEpisode]] = {}
    for ep in episodes:
        robots.setdefault(ep.episode.robot or '(none)', []).append(ep)
    if len(robots) < 2:
        return ''
    out = ['<h3>Robots</h3><table><tr><th>robot</th><th class="num">episodes</th><th class="num">mean score</th>'
           '<th class="num">with findings</th></tr>']
    for robot, own in robots.items():
        scores = [ep.score for ep in own if ep.score == ep.score]
        mean = f'{sum(scores) / len(scores):.2f}' if scores else '–'
        out.append(f'<tr><td>{_e(robot)}</td><td class="num">{len(own)}</td><td class="num">{mean}</td>'
                   f'<td class="num">{sum(1 for ep in own if ep.findings)}</td></tr>')
    out.append('</table><p class="muted">Each episode is drawn with its own robot\'s profile.</p>')
    if summarized is not None and summarized < len(episodes):
        out.append(f'<p class="warn">The dataset summary (mean score, outcomes, warnings, checks) counts '
                   f'{summarized} of the {len(episodes)} episodes shown: the last <code>robodata score</code> run '
                   'scored only those (a dataset scored one robot at a time keeps its last run\'s summary). This '
                   'table is of every episode.</p>')
    return '\n'.join(out)
