"""The HTML page: the dataset summary, then per episode its reasons, figure and frames, all embedded (opens offline)."""

from __future__ import annotations

import html
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ros_robodata.events.offline import EVENTS_FILE
from ros_robodata.outputs import REPORT_MARK
from ros_robodata.quality.quality_format import ConsistencyJson, FindingJson, QualityDoc, QualitySummary
from ros_robodata.report.episode_table import table_html
from ros_robodata.report.overview import findings_by_check_html, robots_html, score_distribution_html
from ros_robodata.report.queue_section import queue_html
from ros_robodata.report.report_signals import Thumbnail
from ros_robodata.report.scores import ScoredEpisode
from ros_robodata.selection.queue_format import ReviewQueue
from ros_robodata.version import __version__


@dataclass
class EpisodeVisuals:
    """What the report shows of one episode beyond its quality.json."""

    timeline: str = ''
    flagged: list[Thumbnail] = field(default_factory=list)
    context: list[Thumbnail] = field(default_factory=list)
    problem: str = ''
    notes: list[str] = field(default_factory=list)
    comparison: str = ''  # a consistency outlier's far joints against the demo it was compared with


_CSS = """
body { font: 14px/1.45 system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; color: #1d1d1f; margin: 0;
       background: #f6f7f9; }
main { max-width: 1120px; margin: 0 auto; padding: 16px 24px 48px; }
h1 { font-size: 22px; margin: 16px 0 4px; } h2 { font-size: 18px; margin: 0 0 6px; }
h3 { font-size: 14px; margin: 14px 0 6px; color: #444; }
section { background: #fff; border: 1px solid #dde1e6; border-radius: 6px; padding: 14px 18px; margin: 16px 0; }
table { border-collapse: collapse; margin: 4px 0 8px; }
th, td { text-align: left; padding: 3px 10px 3px 0; border-bottom: 1px solid #eceef1; vertical-align: top; }
th { font-weight: 600; color: #555; font-size: 12px; }
td.num, th.num { text-align: right; padding-right: 14px; font-variant-numeric: tabular-nums; }
a { color: #0b5cad; text-decoration: none; } a:hover { text-decoration: underline; }
.meta, .muted { color: #6b7280; font-size: 12px; }
.score { display: inline-block; min-width: 38px; text-align: center; border-radius: 4px; padding: 0 5px;
         font-weight: 600; font-variant-numeric: tabular-nums; }
.good { background: #dcf3e2; color: #14532d; } .fair { background: #fdf0d2; color: #7a4b00; }
.poor { background: #fbe0e0; color: #8b1414; }
.error { color: #b91c1c; } .warn { color: #a15c00; }
.flag { display: inline-block; font-size: 11px; border-radius: 3px; padding: 0 4px; background: #fbe0e0;
        color: #8b1414; margin-left: 4px; }
.cards { display: flex; gap: 12px; flex-wrap: wrap; margin: 8px 0; }
.card { border: 1px solid #dde1e6; border-radius: 6px; padding: 6px 12px; min-width: 110px; }
.card b { display: block; font-size: 20px; }
ul { margin: 4px 0 8px; padding-left: 20px; }
img.timeline { width: 100%; height: auto; border: 1px solid #eceef1; }
.frames { display: flex; flex-wrap: wrap; gap: 10px; }
figure { margin: 0; width: 240px; } figure img { width: 240px; height: auto; display: block; background: #000; }
figure.error img { outline: 3px solid #d62728; } figure.warn img { outline: 3px solid #f0a020; }
figcaption { font-size: 12px; color: #444; }
.bar { display: inline-block; height: 10px; background: #7aa7d6; border-radius: 2px; }
button.episode-open { border: 0; background: none; padding: 0; color: #0b5cad; cursor: pointer; font: inherit; }
tr.episode-detail td { background: #f9fafb; }
.events span { display: inline-block; margin-right: 12px; white-space: nowrap; }
"""


def render_report(name: str, summary: QualitySummary, episodes: list[ScoredEpisode],
                  visuals: dict[str, EpisodeVisuals], review: tuple[ReviewQueue | None, str | None] | None = None,
                  dataset_root: Path | None = None, coverage: str | None = None, in_place: Path | None = None) -> str:
    """The whole page: the dataset's picture, the detailed episodes (those in `visuals`) in sections, and every
    episode one row (episode_table.py). Everything read from files is escaped: ids, tasks and messages come from
    users. `review`: (the dataset's review queue or None, why it could not be read) for a dataset; None for bags.
    `dataset_root`: the dataset, for the command that details one more episode on demand. `coverage`: a capture
    protocol's coverage section (coverage_section.py), after the summary. `in_place`: the LeRobot folder the
    episodes were read from where it lies; the page says what it lacks without a dataset's catalog."""
    parts = ['<!DOCTYPE html>', f'<html lang="en"><head><meta charset="utf-8">{REPORT_MARK}',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f'<title>{_e(name)}: quality report</title>', f'<style>{_CSS}</style></head><body><main>',
             f'<h1>{_e(name)}: quality report</h1>',
             f'<p class="meta">Generated {_e(time.strftime("%Y-%m-%d %H:%M:%S %Z"))} by ros_robodata '
             f'{_e(__version__)} from what <code>robodata score</code> '
             + ('wrote' if dataset_root is not None else 'found, scoring them in memory (nothing was written beside '
                'them)')
             + '. Times are seconds from each episode\'s first message.</p>']
    if in_place is not None:
        parts.append(in_place_html(in_place))
    parts.append(_summary_html(summary, episodes, visuals))
    if coverage is not None:
        parts.append(coverage)
    if review is not None:
        table = {ep.id for ep in episodes} if len(visuals) < len(episodes) else None  # the rows of table_html
        parts.append(queue_html(review[0], review[1], set(visuals), table))
    if len(visuals) < len(episodes):
        parts.append(table_html(episodes, set(visuals), dataset_root))
    if visuals:
        parts.append(_detailed_html(episodes, visuals))
    for ep in episodes:
        if ep.id in visuals:
            parts.append(_episode_html(ep, visuals[ep.id]))
    parts.append('</main></body></html>\n')
    return '\n'.join(parts)


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def in_place_html(folder: Path) -> str:
    """What a LeRobot folder read where it lies cannot show, for want of a dataset's catalog, and how to get it."""
    command = f'robodata import {folder} --dataset D'
    return ('<section id="in-place"><h2>A LeRobot dataset read in place</h2>'
            f'<p>The episodes were read from <code>{_e(folder)}</code> where it lies, named by their LeRobot episode '
            'index; a finding\'s stretch is also given in that episode\'s frames. Nothing was written into the '
            'folder. Without a dataset\'s catalog this page has:</p><ul>'
            '<li><b>no review queue</b>: <code>robodata select</code> ranks the episodes of a dataset;</li>'
            '<li><b>no operator labels</b>: the outcomes are what an import would record from the folder '
            '(<code>unknown</code> unless its episodes table says one), so the outcome mix and the success verdicts '
            'rest on none;</li>'
            '<li><b>no operators or lifecycle states</b> (approved, released), and no command to detail one more '
            'episode later.</li></ul>'
            f'<p class="muted"><code>{_e(command)}</code>, then <code>robodata score D</code>, '
            '<code>robodata select D</code> and <code>robodata report D</code> give them.</p></section>')


def _anchor(episode_id: str) -> str:
    return 'ep-' + _e(episode_id)


def _score_badge(score: float) -> str:
    if score != score:
        return '<span class="score poor">?</span>'
    grade = 'good' if score >= 0.9 else 'fair' if score >= 0.7 else 'poor'
    return f'<span class="score {grade}">{score:.2f}</span>'


def _verdict(quality: QualityDoc) -> str:
    success = quality.get('success')
    verdicts: dict[object, str] = {True: 'success', False: 'failure'}
    text = verdicts.get(success.get('success') if success else None, '–')
    if success and success.get('disagrees'):
        text += '<span class="flag">disagrees with label</span>'
    return text


def far_span(consistency: ConsistencyJson) -> tuple[float, float] | None:
    """Where in its course a consistency outlier differs most, as quality.json says it; None when it does not say
    it in that shape (an older or hand-edited file)."""
    span = consistency.get('far_span')
    if isinstance(span, list) and len(span) == 2 and all(isinstance(x, (int, float)) for x in span):
        return float(span[0]), float(span[1])
    return None


def _consistency(quality: QualityDoc) -> str:
    c = quality.get('consistency')
    normalized = c.get('normalized') if c else None
    if not isinstance(normalized, (int, float)):
        return '–'
    text = f'{normalized:.2f}'
    if c and c.get('outlier'):
        text += '<span class="flag">outlier</span>'
    return text


def _summary_html(summary: QualitySummary, episodes: list[ScoredEpisode],
                  visuals: dict[str, EpisodeVisuals]) -> str:
    count = len(episodes)
    mean = summary.get('mean_score')
    counts = summary.get('outcomes') or {}
    ratios = summary.get('outcome_ratios') or {}
    errors = sum(1 for ep in episodes for f in ep.findings if f.get('severity') == 'error')
    out = ['<section id="summary"><h2>Summary</h2><div class="cards">',
           f'<div class="card"><b>{count}</b>episodes scored</div>',
           f'<div class="card"><b>{_score_badge(mean) if isinstance(mean, (int, float)) else "–"}</b>mean score</div>',
           f'<div class="card"><b>{sum(1 for ep in episodes if ep.findings)}</b>episodes with findings</div>',
           f'<div class="card"><b>{errors}</b>error findings</div></div>']
    out.append('<h3>Outcomes (operator labels)</h3><table><tr><th>outcome</th><th class="num">episodes</th>'
               '<th class="num">share</th></tr>')
    for outcome, n in counts.items():
        ratio = ratios.get(outcome)
        share = f'{100 * ratio:.0f}%' if isinstance(ratio, (int, float)) else '–'
        out.append(f'<tr><td>{_e(outcome)}</td><td class="num">{_e(n)}</td><td class="num">{share}</td></tr>')
    out.append('</table><h3>Dataset warnings</h3>')
    warnings = summary.get('warnings') or []
    out.append('<ul>' + ''.join(f'<li class="warn">{_e(w)}</li>' for w in warnings) + '</ul>' if warnings
               else '<p class="muted">None.</p>')
    failed = summary.get('failed') or {}
    if failed:
        out.append('<h3>Episodes that could not be scored</h3><ul>' + ''.join(
            f'<li class="error">{_e(i)}: {_e(reason)}</li>' for i, reason in failed.items()) + '</ul>')
    summarized = summary.get('episodes')
    out.append(robots_html(episodes, summarized if isinstance(summarized, int) else None))
    out.append(score_distribution_html(episodes))
    out.append('<p class="muted">The score is the quality of the data (timing, signals, images, completeness), not '
               'of the task: a failed grasp recorded cleanly scores 1.00. Whether the task was done is the success '
               'verdict\'s column.</p>')
    out.append(findings_by_check_html(summary.get('checks') or {}, episodes))
    out.append(f'<h3>Shown in detail</h3><p id="detail-note">{_detail_note(count, len(visuals))}</p></section>')
    return '\n'.join(out)


def _detailed_html(episodes: list[ScoredEpisode], visuals: dict[str, EpisodeVisuals]) -> str:
    """The table of the episodes shown in detail, each linking to its section."""
    out = ['<section id="detailed"><h2>Episodes in detail, worst score first</h2>']
    out.append('<table><tr><th>episode</th><th>task</th><th>operator</th>'
               '<th>outcome</th><th class="num">score</th><th>success verdict</th>'
               '<th class="num" title="DTW distance to the nearest demonstration of the task, in times the task\'s '
               'typical one; an outlier is over 1.5x and a robust z-score over 3.5">consistency<br>'
               '<span class="muted">x typical; outlier &gt; 1.5</span></th><th>first reason</th></tr>')
    for ep in (ep for ep in episodes if ep.id in visuals):
        link = f'<a href="#{_anchor(ep.id)}">{_e(ep.id)}</a>'
        reasons = ep.quality.get('reasons') or []
        first = _e(reasons[0]) if reasons else '<span class="muted">–</span>'
        out.append(f'<tr><td>{link}</td><td>{_e(ep.episode.task)}</td><td>{_e(ep.episode.operator)}</td>'
                   f'<td>{_e(ep.episode.outcome)}</td><td class="num">{_score_badge(ep.score)}</td>'
                   f'<td>{_verdict(ep.quality)}</td><td class="num">{_consistency(ep.quality)}</td>'
                   f'<td>{first}</td></tr>')
    out.append('</table></section>')
    return '\n'.join(out)


def _detail_note(count: int, detailed: int) -> str:
    """How many episodes the page shows in detail, and why not all."""
    if count == 0:
        return 'None: no episode could be scored (above, why).'
    if detailed >= count:
        return f'All {count} episode(s) are shown in detail below, with a timeline and camera frames each.'
    return (f'{detailed} of {count} episodes are shown in detail below (timeline, camera frames): those with the '
            f'lowest scores, as <code>--episodes {detailed}</code> asks. A detailed section costs about 80 KiB, so '
            'a page that detailed every episode would outgrow what a browser opens; every episode is one row in the '
            'table below, its reasons one click away (<code>--episodes all</code> details them all, '
            '<code>--where \'id = ...\'</code> the ones named).')


def _when(ep: ScoredEpisode, f: FindingJson) -> str:
    ranges = f.get('ranges_ns') or []
    if not ranges:
        return '–'
    text = ', '.join(f'{ep.seconds(int(a)):.2f}–{ep.seconds(int(b)):.2f}' for a, b in ranges[:4])
    return text + (f' (+{len(ranges) - 4} more)' if len(ranges) > 4 else '')


def _frames_of(f: FindingJson) -> str:
    """A finding's stretches as the LeRobot episode's frame indices (EpisodeScore writes them for a folder read in
    place), as many as its times show."""
    spans = [s for s in f.get('frames') or [] if isinstance(s, list) and len(s) == 2]
    if not spans:
        return '–'
    text = ', '.join(f'{_e(a)}–{_e(b)}' for a, b in spans[:4])
    return text + (f' (+{len(spans) - 4} more)' if len(spans) > 4 else '')


def _episode_html(ep: ScoredEpisode, v: EpisodeVisuals) -> str:
    e = ep.episode
    out = [f'<section class="episode" id="{_anchor(ep.id)}">',
           f'<h2>{_e(ep.id)} {_score_badge(ep.score)}</h2>',
           f'<p>task <b>{_e(e.task or "–")}</b> · outcome <b>{_e(e.outcome)}</b> · score <b>{ep.score:.2f}</b> · '
           f'status {_e(e.status)}' + (f' · state <b>{_e(ep.state)}</b>' if ep.state else '')
           + f' · operator {_e(e.operator or "–")} · {ep.duration_s():.1f} s</p>']
    reasons = ep.quality.get('reasons') or []
    out.append('<h3>Reasons</h3>')
    if reasons:
        out.append('<ul>' + ''.join(
            f'<li class="{"error" if str(r).startswith("error") else "warn"}">{_e(r)}</li>' for r in reasons) + '</ul>')
    else:
        out.append('<p class="muted">No check fired.</p>')
    success = ep.quality.get('success')
    if success:
        out.append(f'<p>Success verdict: {_verdict(ep.quality)} — {_e(success.get("message", ""))}</p>')
    c = ep.quality.get('consistency')
    if c:
        medoid = ' (the task\'s medoid)' if c.get('medoid') == ep.id else f' (medoid {_e(c.get("medoid"))})'
        out.append(f'<p>Consistency: {_consistency(ep.quality)} times the typical DTW distance to the nearest '
                   f'demonstrations of the task{medoid}.</p>')
        span, joints = far_span(c), c.get('far_joints')
        if c.get('outlier') is True and span is not None and isinstance(joints, list):
            out.append(f'<p class="error">Unlike the others: most in {_e(", ".join(str(j) for j in joints))} '
                       f'at {span[0]:.0%}-{span[1]:.0%} of its course, against {_e(c.get("reference"))}.</p>')
    if v.problem:
        out.append(f'<p class="error">{_e(v.problem)}</p>')
    if v.comparison:
        out.append(f'<img class="timeline" alt="{_e(ep.id)} against the demo it was compared with" '
                   f'src="{v.comparison}">')
    if v.timeline:
        out.append(f'<img class="timeline" alt="timeline of {_e(ep.id)}" src="{v.timeline}">')
    out.append('<h3>Events</h3>')
    if ep.events:
        spans = []
        for event in ep.events:
            t_s = ep.seconds(event['t_ns']) if isinstance(event.get('t_ns'), int) else event.get('t_s')
            when = f'{t_s:.2f} s' if isinstance(t_s, (int, float)) else '?'
            spans.append(f'<span><b>{_e(event.get("kind", ""))}</b> {when}</span>')
        out.append('<p class="events">' + ''.join(spans) + '</p>')
    else:
        out.append(f'<p class="muted">No {EVENTS_FILE}, or no event in it.</p>')
    findings = ep.findings
    if findings:
        framed = any('frames' in f for f in findings)  # a LeRobot episode read in place: its frame indices too
        out.append('<h3>Findings</h3><table><tr><th>check</th><th>severity</th><th>topic</th><th>when (s)</th>'
                   + ('<th>frames</th>' if framed else '') + '<th>message</th></tr>')
        for f in findings:
            severity = str(f.get('severity', ''))
            out.append(f'<tr><td>{_e(f.get("check", ""))}</td><td class="{_e(severity)}">{_e(severity)}</td>'
                       f'<td>{_e(f.get("topic") or "episode")}</td><td>{_when(ep, f)}</td>'
                       + (f'<td>{_frames_of(f)}</td>' if framed else '')
                       + f'<td>{_e(f.get("message", ""))}</td></tr>')
        out.append('</table>')
    if v.flagged:
        out.append('<h3>Frames at flagged moments</h3>' + _frames(v.flagged))
    if v.context:
        out.append('<h3>What the cameras saw</h3>' + _frames(v.context))
    if v.notes:
        out.append('<p class="muted">Bag notes: ' + _e('; '.join(v.notes)) + '</p>')
    out.append('<p class="muted"><a href="#summary">back to the summary</a></p></section>')
    return '\n'.join(out)


def _frames(thumbs: list[Thumbnail]) -> str:
    out = ['<div class="frames">']
    for thumb in thumbs:
        caption = f'{_e(thumb.camera)}: {_e(thumb.caption)}' if thumb.severity else _e(thumb.caption)
        if thumb.uri:
            css = f' class="{_e(thumb.severity)}"' if thumb.severity else ''
            out.append(f'<figure{css}><img alt="{_e(thumb.camera)} at {thumb.t_s:.2f} s" '
                       f'src="{thumb.uri}"><figcaption>{caption}</figcaption></figure>')
        else:
            out.append(f'<figure><figcaption>{caption}<br><span class="muted">{_e(thumb.problem)}</span>'
                       '</figcaption></figure>')
    out.append('</div>')
    return ''.join(out)
