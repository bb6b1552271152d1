"""The review queue in the quality report: what `robodata select` picked for a human, in order, with its reasons,
and what it filtered out. Everything shown comes from review/queue.json and is escaped."""

from __future__ import annotations

import html
from typing import Any

from ros_robodata.selection.queue_format import ReviewQueue

SHOWN_EXCLUDED = 50


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def queue_html(queue: ReviewQueue | None, problem: str | None, detailed: set[str], rows: set[str] | None = None
               ) -> str:
    """The section; a note when there is no queue yet or it could not be read. `detailed`: the episodes that have
    a section of their own on the page (their ids link to it); `rows`: those with a row in the page's table of every
    episode (their ids open it)."""
    out = ['<section id="review-queue"><h2>Review queue</h2>']
    if problem:
        out.append(f'<p class="warn">{_e(problem)}</p></section>')
        return '\n'.join(out)
    if queue is None:
        out.append('<p class="muted">No queue yet: <code>robodata select DATASET</code> picks the episodes worth a '
                   'reviewer\'s time.</p></section>')
        return '\n'.join(out)
    budget = queue.get('budget')
    if not isinstance(budget, dict):
        budget = {}
    out.append(f'<p>{_e(queue.get("picked", 0))} of {_e(queue.get("candidates", 0))} candidate episode(s) picked '
               f'(budget {_e(budget.get("asked", "?"))}), {_e(queue.get("considered", 0))} considered, '
               f'{len(queue.get("excluded") or [])} filtered out.</p>')
    out.append('<table><tr><th class="num">rank</th><th>episode</th><th>outcome</th><th class="num">score</th>'
               '<th class="num">priority</th><th>why</th></tr>')
    for entry in queue.get('queue') or []:
        if not isinstance(entry, dict):
            continue
        episode = str(entry.get('episode_id', ''))
        link = f'<a href="#ep-{_e(episode)}">{_e(episode)}</a>' if episode in detailed else \
            f'<a href="#row-{_e(episode)}">{_e(episode)}</a>' if rows and episode in rows else _e(episode)
        reasons = entry.get('reasons')
        if not isinstance(reasons, list):
            reasons = []
        why = '<br>'.join(_e(r) for r in reasons) or '<span class="muted">picked to fill the budget</span>'
        score = entry.get('score')
        priority = entry.get('priority')
        out.append(f'<tr><td class="num">{_e(entry.get("rank", ""))}</td><td>{link}</td>'
                   f'<td>{_e(entry.get("outcome", ""))}</td>'
                   f'<td class="num">{f"{score:.2f}" if isinstance(score, (int, float)) else "–"}</td>'
                   f'<td class="num">{f"{priority:.2f}" if isinstance(priority, (int, float)) else "–"}</td>'
                   f'<td>{why}</td></tr>')
    out.append('</table>')
    excluded = [x for x in queue.get('excluded') or [] if isinstance(x, dict)]
    if excluded:
        out.append('<h3>Filtered out before review</h3><ul>')
        out.extend(f'<li>{_e(x.get("episode_id", ""))}: {_e(x.get("reason", ""))}</li>'
                   for x in excluded[:SHOWN_EXCLUDED])
        if len(excluded) > SHOWN_EXCLUDED:
            out.append(f'<li class="muted">... and {len(excluded) - SHOWN_EXCLUDED} more (review/queue.json)</li>')
        out.append('</ul>')
    out.append('</section>')
    return '\n'.join(out)
