"""The timeline figure of one episode: joints, gripper opening and wrist force, with events and findings marked."""

from __future__ import annotations

import base64
import io
import math
from typing import Any

from ros_robodata.profile import Profile
from ros_robodata.report.report_signals import EpisodeSignals
from ros_robodata.report.scores import ScoredEpisode

MAX_SPANS = 300  # shaded ranges per finding in a figure (a finding may hold thousands)
ERROR_COLOR, WARN_COLOR = '#d62728', '#f0a020'
EVENT_LABEL_ROWS = 3
LEGEND_ROWS = 10  # joints whose legend fits beside a panel of the usual height


def timeline_png(ep: ScoredEpisode, signals: EpisodeSignals, profile: Profile, dpi: int = 100) -> str:
    """Stacked panels on one time axis (arm joints, gripper opening, wrist force, findings on other topics),
    events as vertical lines, findings' ranges shaded on the panel of their topic; a PNG data: URI, or ''
    when there is nothing to draw."""
    # Start-up time: matplotlib (~290 ms) loads only when a report draws a figure.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.transforms import blended_transform_factory

    t = profile.topics
    panels: list[tuple[str, str, Any]] = []  # key, y label, what to draw
    if signals.joints is not None:
        panels.append(('joints', 'arm joints (rad)', signals.joints))
    if signals.gripper is not None:
        panels.append(('gripper', 'gripper opening', signals.gripper))
    if signals.force is not None:
        panels.append(('force', 'wrist force (N)', signals.force))
    panel_of = {t.joint_states.topic: 'joints'} if t.joint_states is not None else {}
    if t.gripper is not None:
        panel_of.setdefault(t.gripper.topic, 'gripper')
    if t.wrench is not None:
        panel_of[t.wrench.topic] = 'force'
    drawn = {key for key, _, _ in panels}
    shaded = [f for f in ep.findings if f.get('ranges_ns')]
    lanes = sorted({str(f.get('topic')) for f in shaded if f.get('topic') and panel_of.get(f['topic']) not in drawn})
    if lanes:
        panels.append(('other', 'other topics', lanes))
    if not panels:
        return ''
    duration = max(ep.duration_s(), 1e-3)
    many = len(signals.joint_names) > LEGEND_ROWS  # a humanoid's 26 joints: a taller panel, a smaller legend
    heights = [0.35 * len(lanes) + 0.45 if key == 'other' else
               max(1.5, 0.13 * len(signals.joint_names)) if key == 'joints' else 1.5 for key, _, _ in panels]
    top_in, bottom_in = 0.2 + 0.17 * EVENT_LABEL_ROWS, 0.5
    fig = Figure(figsize=(10.0, sum(heights) + top_in + bottom_in), dpi=dpi)
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False, gridspec_kw={'height_ratios': heights})[:, 0]
    total = sum(heights) + top_in + bottom_in
    fig.subplots_adjust(left=0.1, right=0.87, top=1 - top_in / total, bottom=bottom_in / total, hspace=0.12)
    axis = dict(zip([key for key, _, _ in panels], axes, strict=True))
    for (key, label, content), ax in zip(panels, axes, strict=True):
        ax.set_ylabel(label, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, color='#e5e5e5', linewidth=0.6)
        if key == 'other':
            ax.set_ylim(-0.5, len(content) - 0.5)
            ax.set_yticks(range(len(content)), [_lane_name(x, profile) for x in content], fontsize=7)
            ax.invert_yaxis()
            continue
        names = signals.joint_names if key == 'joints' else [label]
        for i, (x, y) in enumerate(content.lines()):
            ax.plot(x, y, linewidth=0.8, label=names[i] if i < len(names) else str(i))
        if key == 'joints' and names:
            ax.legend(loc='upper left', bbox_to_anchor=(1.0, 1.0), fontsize=6 if many else 7, frameon=False,
                      labelspacing=0.3 if many else 0.5)
        if key == 'gripper':
            ax.set_ylim(-0.08, 1.12)
    axes[-1].set_xlim(0, duration)
    axes[-1].set_xlabel('seconds from the episode start', fontsize=8)
    min_width = duration / 400  # a one-sample range must still show
    labelled: dict[Any, int] = {}
    for f in shaded:
        topic = str(f.get('topic') or '')
        color = ERROR_COLOR if f.get('severity') == 'error' else WARN_COLOR
        ranges = [(ep.seconds(int(a)), ep.seconds(int(b))) for a, b in f['ranges_ns'][:MAX_SPANS]]
        targets: list[tuple[Any, int | None]]  # (the axes to shade, the lane on them or None for all of it)
        if not topic:
            targets = [(ax, None) for ax in axes]
        elif panel_of.get(topic) in drawn:
            targets = [(axis[panel_of[topic]], None)]
        else:
            targets = [(axis['other'], lanes.index(topic))]
        for ax, lane in targets:
            for a, b in ranges:
                if lane is None:
                    ax.axvspan(a, max(b, a + min_width), color=color, alpha=0.22, linewidth=0)
                else:
                    ax.broken_barh([(a, max(b - a, min_width))], (lane - 0.35, 0.7), color=color, alpha=0.6)
            level = labelled.get(ax, 0)
            labelled[ax] = level + 1
            y = 0.95 - 0.13 * (level % 4) if lane is None else lane + 0.0
            transform = blended_transform_factory(ax.transData, ax.transAxes if lane is None else ax.transData)
            ink = ('#9b1111' if f.get('severity') == 'error' else '#8a5300') if lane is None else '#222222'
            ax.text(ranges[0][0], y, ' ' + str(f.get('check', '')), transform=transform, fontsize=7, color=ink,
                    va='top' if lane is None else 'center', ha='left', clip_on=True)
    _draw_events(ep, axes, duration, blended_transform_factory)
    buffer = io.BytesIO()
    fig.savefig(buffer, format='png', dpi=dpi)
    return 'data:image/png;base64,' + base64.b64encode(buffer.getvalue()).decode('ascii')


def _draw_events(ep: ScoredEpisode, axes: Any, duration: float, blended: Any) -> None:
    """Vertical lines on every panel; labels above the top one, events closer than 2% of the episode sharing
    one label (grasp_start, contact and grasp fall within milliseconds), each label on the first of three rows
    where it does not run into the previous one."""
    times = []
    for e in ep.events:
        if isinstance(e.get('t_ns'), int) and ep.start_ns is not None:
            times.append((ep.seconds(e['t_ns']), str(e.get('kind', ''))))
        elif isinstance(e.get('t_s'), (int, float)):
            times.append((float(e['t_s']), str(e.get('kind', ''))))
    times = sorted(x for x in times if 0 <= x[0] <= duration)  # a jumped clock's event has no place on the axis
    groups: list[tuple[float, list[str]]] = []
    for t_s, kind in times:
        for ax in axes:
            ax.axvline(t_s, color='#444444', linewidth=0.7, linestyle='--', alpha=0.7)
        if groups and t_s - groups[-1][0] < 0.02 * duration:
            if kind not in groups[-1][1]:
                groups[-1][1].append(kind)
        else:
            groups.append((t_s, [kind]))
    top = axes[0]
    transform = blended(top.transData, top.transAxes)
    bbox = top.get_position()
    axes_in = top.figure.get_figwidth() * bbox.width
    char_s = duration * (7 * 0.6 / 72) / axes_in  # a 7 pt character, in seconds of the axis
    row_step = 0.17 / (top.figure.get_figheight() * bbox.height)  # 0.17 in, in axes heights
    ends = [-math.inf] * EVENT_LABEL_ROWS  # where each row's last label ends
    for t_s, kinds in groups:
        label = '/'.join(kinds)
        row = next((r for r, end in enumerate(ends) if end < t_s), min(range(len(ends)), key=ends.__getitem__))
        ends[row] = t_s + (len(label) + 1) * char_s
        top.text(t_s, 1.02 + row * row_step, label, transform=transform, fontsize=7, color='#222222', ha='left',
                 va='bottom', clip_on=False)


def _lane_name(topic: str, profile: Profile) -> str:
    """Cameras by their profile name; other topics shortened to fit the margin."""
    for camera in profile.topics.cameras:
        if camera.topic == topic:
            return f'camera {camera.name}'
    return topic if len(topic) <= 18 else '…' + topic[-17:]


def comparison_png(signals: EpisodeSignals, reference: EpisodeSignals, joints: list[str], reference_id: str,
                   span: tuple[float, float] | None = None, dpi: int = 100) -> str:
    """An episode flagged as unlike its task's other demonstrations, against the nearest typical one: the joints that
    made it far over each one's course (0-100%, so speed does not matter), the stretch that differs most shaded.
    '' when neither bag has those joints."""
    # Start-up time: matplotlib (~290 ms) loads only when a report draws a figure.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    drawn = [j for j in joints if j in signals.joint_names and j in reference.joint_names]
    if signals.joints is None or reference.joints is None or not drawn:
        return ''
    fig = Figure(figsize=(10.0, 0.4 + 1.3 * len(drawn)), dpi=dpi)
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(drawn), 1, sharex=True, squeeze=False)[:, 0]
    fig.subplots_adjust(left=0.1, right=0.8, top=0.95, bottom=0.5 / (0.4 + 1.3 * len(drawn)) + 0.05, hspace=0.15)
    mine, theirs = signals.joints.lines(), reference.joints.lines()
    for joint, ax in zip(drawn, axes, strict=True):
        for lines, source, style, label in ((theirs, reference, '--', reference_id),
                                            (mine, signals, '-', 'this episode')):
            x, y = lines[source.joint_names.index(joint)]
            assert source.joints is not None  # both checked above
            ax.plot(100 * x / (source.joints.span_ns / 1e9), y, style, linewidth=0.9, label=label,
                    color='#1f77b4' if style == '-' else '#777777')
        if span is not None:
            ax.axvspan(100 * span[0], 100 * span[1], color=WARN_COLOR, alpha=0.2, linewidth=0)
        ax.set_ylabel(joint, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, color='#e5e5e5', linewidth=0.6)
    axes[0].legend(loc='upper left', bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)
    axes[-1].set_xlim(0, 100)
    axes[-1].set_xlabel('% of the demonstration', fontsize=8)
    buffer = io.BytesIO()
    fig.savefig(buffer, format='png', dpi=dpi)
    return 'data:image/png;base64,' + base64.b64encode(buffer.getvalue()).decode('ascii')
