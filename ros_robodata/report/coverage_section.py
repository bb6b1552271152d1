"""The coverage heatmap of a capture protocol on the report (`robodata report DATASET --protocol P`): one row per
combination of the protocol's factors, one column per demographic group, each cell the takes within spec by
participants of that group, shaded by how much of the combination's requirement it holds. Plain HTML: it reads
the same with the page's script off, and the numbers are in the cells, not only in the colour."""

from __future__ import annotations

import html
from typing import Any

from ros_robodata.capture.coverage import CellCount, Coverage

__all__ = ['coverage_html']


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _shade(have: int, need: int) -> str:
    """A background from pale red (nothing) to green (the requirement met), by the share held."""
    share = 1.0 if need <= 0 else min(1.0, have / need)
    red, green = round(244 - 150 * share), round(204 + 30 * share)
    return f'background:rgb({red},{green},{round(204 - 60 * share)})'


def _row(cell: CellCount, groups: list[tuple[str, str]]) -> str:
    need = cell.cell.required
    out = [f'<tr><th scope="row">{_e(cell.cell.key)}</th>',
           f'<td class="num" style="{_shade(cell.within_spec, need)}" title="within spec / required">'
           f'{cell.within_spec}/{need}</td><td class="num">{cell.captured}</td>']
    for group in groups:
        have = cell.by_group.get(group, 0)
        out.append(f'<td class="num" style="{_shade(have, need)}">{have}</td>')
    out.append('</tr>')
    return ''.join(out)


def coverage_html(result: Coverage) -> str:
    """The section: the one-line summary, the heatmap (combinations x groups) and what was not counted."""
    groups = [(g.attribute, g.group) for g in result.groups]
    head = ''.join(f'<th class="num">{_e(a)}<br>{_e(g)}</th>' for a, g in groups)
    out = [f'<section id="coverage"><h2>Coverage: protocol {_e(result.protocol.name)}</h2>',
           f'<p>{_e(result.summary())}. Each row is a combination of the protocol\'s factors; "within spec" counts '
           'takes whose measured conditions fall in its levels, by a consenting participant; each group\'s column '
           'counts those takes by participants of that group (self-reported in participants.yaml). Shading: the '
           'share of the combination\'s required takes held.</p>',
           f'<table class="coverage"><tr><th>combination</th><th class="num">within spec</th>'
           f'<th class="num">captured</th>{head}</tr>']
    out.extend(_row(cell, groups) for cell in result.cells)
    out.append('</table>')
    if groups:
        short = [f'{g.attribute} {g.group}: {len(g.participants)}/{g.target} participants' for g in result.groups]
        out.append(f'<p>Participants per group: {_e("; ".join(short))}.</p>')
    if empty := result.empty_message():
        out.append(f'<p class="note">{_e(empty)}</p>')
    out.extend(f'<p class="note">{_e(note)}</p>' for note in result.notes)
    out.append('</section>')
    return '\n'.join(out)
