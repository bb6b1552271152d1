"""One self-contained HTML page that shows a reviewer what `robodata score` found, and where.

The numbers come from what `robodata score` wrote (quality_summary.json, each episode's quality.json and
events.json): nothing is checked again here. The bags are opened only for what a person has to see: the arm,
gripper and wrist signals around each finding, and the camera frames at the flagged moments. Each bag is
streamed once; signals are reduced to min/max envelopes while they are read and only the frames that will be
shown are decoded, so memory stays bounded however long an episode is. The page embeds its figures and
thumbnails as data: URIs, so it opens offline and can be mailed or attached to a ticket as one file.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ros_robodata import __version__
from ros_robodata.bag.reader import BagMessage, BagReader
from ros_robodata.dataset import Dataset
from ros_robodata.dataset.episode import Episode
from ros_robodata.dataset.targets import Item
from ros_robodata.errors import RobodataError
from ros_robodata.events.offline import EVENTS_FILE
from ros_robodata.files import write_atomic
from ros_robodata.profile import Profile
from ros_robodata.quality.score import QUALITY_FILE, SUMMARY_FILE
from ros_robodata.signals import header_stamp_ns, read_gripper, read_joints, read_wrench

REPORT_FILE = 'report.html'
BUCKETS = 1500  # envelope buckets per signal: a min and a max each, so 3000 points a line at most
THUMB_WIDTH = 240  # px; frames are shrunk to this width, never enlarged
MAX_RANGES_PER_FINDING = 3  # thumbnails per camera finding
MAX_FLAGGED_FRAMES = 24  # thumbnails of flagged moments per episode, whatever the number of findings
MAX_SPANS = 300  # shaded ranges per finding in a figure (a finding may hold thousands)
ERROR_COLOR, WARN_COLOR = '#d62728', '#f0a020'
EVENT_LABEL_ROWS = 3
Progress = Callable[[Iterable[Any]], Iterator[Any]]


# -- what score and segment wrote --------------------------------------------------------------------


@dataclass
class ScoredEpisode:
    """One episode as the report sees it before its bag is opened."""

    episode: Episode
    quality: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.episode.id

    @property
    def score(self) -> float:
        value = self.quality.get('score')
        return float(value) if isinstance(value, (int, float)) else float('nan')

    @property
    def findings(self) -> list[dict[str, Any]]:
        return list(self.quality.get('findings') or [])

    @property
    def start_ns(self) -> int | None:
        return self.quality.get('start_ns')

    @property
    def end_ns(self) -> int | None:
        return self.quality.get('end_ns')

    def seconds(self, stamp_ns: int) -> float:
        """A stamp as seconds from the episode's start, the time axis of every figure and caption."""
        return (stamp_ns - (self.start_ns or 0)) / 1e9

    def duration_s(self) -> float:
        if self.start_ns is None or self.end_ns is None:
            return float((self.quality.get('metrics') or {}).get('duration_s') or 0.0)
        return max(0.0, (self.end_ns - self.start_ns) / 1e9)


def _read_json(path: Path, hint: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding='utf-8'))
    except (OSError, ValueError) as err:
        raise RobodataError(f'{path}: unreadable ({" ".join(str(err).split())}): {hint}') from None
    if not isinstance(data, dict):
        raise RobodataError(f'{path}: not what robodata writes (expected a JSON object): {hint}')
    return data


def load_scores(dataset: Dataset) -> tuple[dict[str, Any], list[ScoredEpisode]]:
    """quality_summary.json and every scored episode; fails with what to run when the dataset is not scored,
    because a report of a partly scored dataset would silently leave episodes out."""
    hint = f'run `robodata score {dataset.root}` first'
    summary_path = dataset.root / SUMMARY_FILE
    if not summary_path.is_file():
        raise RobodataError(f'{dataset.root}: not scored yet (no {SUMMARY_FILE}): {hint}')
    summary = _read_json(summary_path, hint)
    failed = summary.get('failed') or {}
    scored, missing = [], []
    for row in dataset.list():
        if row.status == 'discarded' or row.id in failed or not dataset.bag_files(row.id):
            continue
        path = dataset.episode_dir(row.id) / QUALITY_FILE
        if not path.is_file():
            missing.append(row.id)
            continue
        quality = _read_json(path, hint)
        events_path = dataset.episode_dir(row.id) / EVENTS_FILE
        events: list[dict[str, Any]] = []
        if events_path.is_file():
            events = [e for e in _read_json(events_path, hint).get('events') or [] if isinstance(e, dict)]
        scored.append(ScoredEpisode(dataset.episode(row.id), quality, events))
    if missing:
        more = f' and {len(missing) - 3} more' if len(missing) > 3 else ''
        raise RobodataError(f'{dataset.root}: no {QUALITY_FILE} for episode(s) {", ".join(missing[:3])}{more}: '
                            f'{hint}')
    if not scored and not failed:
        raise RobodataError(f'{dataset.root}: no scored episode to report on: {hint}')
    return summary, scored


# -- signals, reduced as they are read ---------------------------------------------------------------


class Envelope:
    """Min and max of a signal in fixed time buckets over the episode: memory is fixed by the bucket count
    whatever the episode's length, and a one-sample spike survives (an average or every-nth sample would not).
    NaN and Inf are left out (their findings are shaded instead); samples stamped far outside the episode
    (a clock jump) are dropped, not piled onto its edges."""

    def __init__(self, start_ns: int, end_ns: int, buckets: int, width: int, block: int = 4096) -> None:
        self.start_ns = start_ns
        self.span_ns = max(1, end_ns - start_ns)
        self.buckets = max(1, buckets)
        self.lo = np.full((self.buckets, width), np.inf)
        self.hi = np.full((self.buckets, width), -np.inf)
        self._t = np.empty(block, np.int64)
        self._v = np.empty((block, width))
        self._n = 0

    def add(self, stamp_ns: int, values: Iterable[float]) -> None:
        if self._n == len(self._t):
            self._flush()
        self._t[self._n] = stamp_ns
        self._v[self._n] = list(values)
        self._n += 1

    def _flush(self) -> None:
        if not self._n:
            return
        rel = (self._t[:self._n] - self.start_ns) / self.span_ns
        slack = 1e9 / self.span_ns  # stamps lead the receive times the episode is bounded by: keep a second
        keep = (rel > -slack) & (rel < 1 + slack)
        index = np.clip((rel[keep] * self.buckets).astype(np.int64), 0, self.buckets - 1)
        values = self._v[:self._n][keep]
        values = np.where(np.isfinite(values), values, np.nan)  # fmin/fmax skip NaN
        np.fmin.at(self.lo, index, values)
        np.fmax.at(self.hi, index, values)
        self._n = 0

    def lines(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per channel (seconds, values): a zig-zag through each bucket's min and max, broken where the
        signal has no sample for a while so a silence does not look like a straight ramp."""
        self._flush()
        width_s = self.span_ns / self.buckets / 1e9
        max_gap = max(4, math.ceil(0.25 / width_s))
        out = []
        for channel in range(self.lo.shape[1]):
            filled = np.flatnonzero(np.isfinite(self.lo[:, channel]))
            if not len(filled):
                out.append((np.empty(0), np.empty(0)))
                continue
            x = np.repeat((filled + 0.5) * width_s, 2)
            y = np.column_stack([self.lo[filled, channel], self.hi[filled, channel]]).ravel()
            breaks = np.flatnonzero(np.diff(filled) > max_gap)
            if len(breaks):
                at = (breaks + 1) * 2
                x = np.insert(x, at, np.nan)
                y = np.insert(y, at, np.nan)
            out.append((x, y))
        return out


@dataclass
class Thumbnail:
    """One camera frame shown in the report, or why it could not be."""

    camera: str
    t_s: float
    caption: str
    severity: str = ''  # error | warn for a flagged moment, '' for context
    uri: str = ''
    problem: str = ''


@dataclass
class _Target:
    topic: str
    stamp_ns: int
    thumb: Thumbnail


class FramePicker:
    """The frame stamped nearest each wanted moment, decoded once. Frames stream past in time order, so the
    choice is between the last frame before the moment and the first one after it: one frame per camera is
    held, never the stream."""

    def __init__(self, targets: Iterable[_Target]) -> None:
        self._pending: dict[str, deque[_Target]] = {}
        for target in sorted(targets, key=lambda t: t.stamp_ns):
            self._pending.setdefault(target.topic, deque()).append(target)
        self._last: dict[str, tuple[int, BagMessage]] = {}

    @property
    def topics(self) -> set[str]:
        return set(self._pending)

    def frame(self, message: BagMessage, stamp_ns: int, decode: Callable[[BagMessage], Any]) -> None:
        pending = self._pending.get(message.topic)
        while pending and pending[0].stamp_ns <= stamp_ns:
            target = pending.popleft()
            last = self._last.get(message.topic)
            if last is not None and target.stamp_ns - last[0] < stamp_ns - target.stamp_ns:
                _fill(target.thumb, last[1], decode)
            else:
                _fill(target.thumb, message, decode)
        self._last[message.topic] = (stamp_ns, message)

    def finish(self, decode: Callable[[BagMessage], Any]) -> None:
        """Moments after the last frame get the last frame; a camera with no frame says so."""
        for topic, pending in self._pending.items():
            last = self._last.get(topic)
            for target in pending:
                if last is None:
                    target.thumb.problem = f'no frame of {topic} in the bag'
                else:
                    _fill(target.thumb, last[1], decode)
            pending.clear()


def _fill(thumb: Thumbnail, message: BagMessage, decode: Callable[[BagMessage], Any]) -> None:
    from ros_robodata.bag.image import decode_image

    try:
        thumb.uri = jpeg_uri(decode_image(decode(message), color='bgr'))
    except RobodataError as err:
        thumb.problem = ' '.join(str(err).split())


def jpeg_uri(bgr: np.ndarray, width: int = THUMB_WIDTH) -> str:
    """A frame as a data: URI of a small JPEG, so the page carries its own pictures."""
    import cv2

    height, wide = bgr.shape[:2]
    if wide > width:
        bgr = cv2.resize(bgr, (width, max(1, round(height * width / wide))), interpolation=cv2.INTER_AREA)
    ok, encoded = cv2.imencode('.jpg', np.ascontiguousarray(bgr), [cv2.IMWRITE_JPEG_QUALITY, 80])
    if not ok:
        raise RobodataError('image: JPEG encoding failed')
    return 'data:image/jpeg;base64,' + base64.b64encode(encoded.tobytes()).decode('ascii')


@dataclass
class EpisodeSignals:
    """What one pass over a bag gave the report."""

    joint_names: list[str] = field(default_factory=list)
    joints: Envelope | None = None
    gripper: Envelope | None = None
    force: Envelope | None = None
    flagged: list[Thumbnail] = field(default_factory=list)
    context: list[Thumbnail] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _frame_targets(ep: ScoredEpisode, profile: Profile) -> tuple[list[_Target], list[_Target]]:
    """(flagged, context): the middle of up to 3 ranges of every finding on a camera topic, and one frame per
    camera at the first grasp (mid-episode when there was none) so a reviewer sees what the robot saw."""
    cameras = {c.topic: c.name for c in profile.topics.cameras}
    flagged: list[_Target] = []
    for f in ep.findings:
        if f.get('topic') not in cameras:
            continue
        for a, b in (f.get('ranges_ns') or [])[:MAX_RANGES_PER_FINDING]:
            if len(flagged) >= MAX_FLAGGED_FRAMES:
                break
            middle = (int(a) + int(b)) // 2
            t_s = ep.seconds(middle)
            flagged.append(_Target(f['topic'], middle, Thumbnail(
                cameras[f['topic']], t_s, f'{f.get("check", "")} at {t_s:.2f} s', str(f.get('severity', '')))))
    grasp = next((e for e in ep.events if e.get('kind') == 'grasp' and isinstance(e.get('t_ns'), int)), None)
    if grasp is not None:
        moment, label = int(grasp['t_ns']), 'grasp'
    elif ep.start_ns is not None and ep.end_ns is not None:
        moment, label = (ep.start_ns + ep.end_ns) // 2, 'mid-episode'
    else:
        return flagged, []
    t_s = ep.seconds(moment)
    context = [_Target(topic, moment, Thumbnail(name, t_s, f'{name} at {label} ({t_s:.2f} s)'))
               for topic, name in cameras.items()]
    return flagged, context


def read_signals(bag_dir: Path, ep: ScoredEpisode, profile: Profile) -> EpisodeSignals:
    """One streaming pass over the episode's bag: envelopes of the arm joints, the gripper opening and the wrist
    force, and the frames the report shows. Header stamps are used throughout, as the findings' ranges are."""
    out = EpisodeSignals()
    t = profile.topics
    flagged, context = _frame_targets(ep, profile)
    out.flagged = [target.thumb for target in flagged]
    out.context = [target.thumb for target in context]
    with BagReader(bag_dir) as reader:
        available = reader.topics
        start = ep.start_ns if ep.start_ns is not None else reader.start_ns
        end = ep.end_ns if ep.end_ns is not None else reader.end_ns
        if start is None or end is None:
            out.notes.append('the bag holds no message')
            return out
        picker = FramePicker([x for x in flagged + context if x.topic in available])
        for target in flagged + context:
            if target.topic not in available:
                target.thumb.problem = f'no {target.topic} topic in the bag'

        def buckets(topic: str) -> int:
            return min(BUCKETS, max(1, available[topic].count // 2))

        joint_topic = t.joint_states.topic if t.joint_states and t.joint_states.topic in available else None
        gripper = t.gripper if t.gripper is not None and t.gripper.topic in available else None
        wrench_topic = t.wrench.topic if t.wrench is not None and t.wrench.topic in available else None
        if gripper is not None:
            out.gripper = Envelope(start, end, buckets(gripper.topic), 1)
        if wrench_topic is not None:
            out.force = Envelope(start, end, buckets(wrench_topic), 1)
        columns: dict[tuple[str, ...], list[int]] = {}
        topics = {x for x in (joint_topic, gripper.topic if gripper else None, wrench_topic) if x} | picker.topics
        for message in reader.messages(sorted(topics)):
            topic = message.topic
            decode = lambda m=message: reader.decode(m)  # noqa: E731 - one closure, three readers
            if topic == joint_topic:
                joints = read_joints(message.data, decode)
                names = joints.names
                if out.joints is None:
                    skip = gripper.joint if gripper is not None and gripper.topic == joint_topic else None
                    out.joint_names = list(profile.robot.arm_joints) or [n for n in names if n != skip]
                    out.joints = Envelope(start, end, buckets(topic), max(1, len(out.joint_names)))
                key = tuple(names)
                if key not in columns:
                    columns[key] = [names.index(n) if n in names else -1 for n in out.joint_names]
                out.joints.add(joints.stamp_ns or message.t_ns,
                               [joints.position[i] if 0 <= i < len(joints.position) else math.nan
                                for i in columns[key]])
            if gripper is not None and topic == gripper.topic and out.gripper is not None:
                reading = read_gripper(message.data, gripper.joint, decode)
                if reading is not None:
                    stroke = gripper.open_position - gripper.closed_position
                    out.gripper.add(reading.stamp_ns or message.t_ns,
                                    [(reading.position - gripper.closed_position) / stroke])
            if topic == wrench_topic and out.force is not None:
                wrench = read_wrench(message.data, decode)
                out.force.add(wrench.stamp_ns or message.t_ns, [math.sqrt(sum(float(v) ** 2 for v in wrench.force))])
            if topic in picker.topics:
                picker.frame(message, header_stamp_ns(message.data) or message.t_ns, reader.decode)
        picker.finish(reader.decode)
        out.notes += reader.notes
    return out


# -- the timeline figure -----------------------------------------------------------------------------


def timeline_png(ep: ScoredEpisode, signals: EpisodeSignals, profile: Profile, dpi: int = 100) -> str:
    """Stacked panels on one time axis (arm joints, gripper opening, wrist force, findings on other topics),
    events as vertical lines, findings' ranges shaded on the panel of their topic; a PNG data: URI, or ''
    when there is nothing to draw."""
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
    heights = [0.35 * len(lanes) + 0.45 if key == 'other' else 1.5 for key, _, _ in panels]
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
            ax.legend(loc='upper left', bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)
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


# -- the page ----------------------------------------------------------------------------------------


@dataclass
class EpisodeVisuals:
    """What the report shows of one episode beyond its quality.json."""

    timeline: str = ''
    flagged: list[Thumbnail] = field(default_factory=list)
    context: list[Thumbnail] = field(default_factory=list)
    problem: str = ''
    notes: list[str] = field(default_factory=list)


@dataclass
class ReportResult:
    path: Path
    episodes: int
    detailed: int
    size_bytes: int
    problems: dict[str, str] = field(default_factory=dict)


def write_report(dataset: Dataset, profile: Profile, out: Path | None = None, *, detail: int | None = None,
                 progress: Progress | None = None) -> ReportResult:
    """Build the report of a scored dataset and write it whole (a crash leaves the previous one). `detail` limits
    the per-episode sections (timeline, frames) to the worst episodes, since those are the costly part of a big
    dataset."""
    path = Path(out) if out is not None else dataset.root / REPORT_FILE
    _check_out(path)
    summary, scored = load_scores(dataset)
    return render_to(path, dataset.name, summary, scored, {ep.id: dataset.bag_dir(ep.id) for ep in scored},
                     profile, detail=detail, progress=progress)


def report_items(items: list[Item], profile: Profile, out: Path, *, name: str, workers: int = 1,
                 detail: int | None = None, progress: Progress | None = None) -> ReportResult:
    """Score bags on their own in memory (nothing is written beside them), then report on them into `out`."""
    from ros_robodata.quality.score import score_items

    _check_out(out)
    run = score_items(items, profile, workers=workers)
    scored = [ScoredEpisode(Episode(id=i.name, status='complete'), run.scores[i.name].to_json(),
                            list(run.events.get(i.name) or [])) for i in items if i.name in run.scores]
    if not scored:
        raise RobodataError(f'{name}: no bag could be scored: ' + '; '.join(f'{k}: {v}' for k, v in run.failed.items()))
    result = render_to(out, name, run.summary, scored, {i.name: i.bag for i in items}, profile, detail=detail,
                       progress=progress)
    result.problems.update(run.failed)
    return result


def _check_out(path: Path) -> None:
    if not path.parent.is_dir():
        raise RobodataError(f'{path}: no folder {path.parent} to write the report into')


def render_to(path: Path, name: str, summary: dict[str, Any], scored: list[ScoredEpisode], bags: dict[str, Path],
              profile: Profile, *, detail: int | None = None, progress: Progress | None = None) -> ReportResult:
    """Figures and frames of the worst `detail` episodes from their bags, the page, written whole."""
    ordered = sorted(scored, key=lambda s: (s.score if s.score == s.score else -1.0, s.id))
    detailed = ordered if detail is None else ordered[:max(0, detail)]
    visuals: dict[str, EpisodeVisuals] = {}
    problems: dict[str, str] = {}
    for ep in progress(detailed) if progress else detailed:
        visuals[ep.id] = episode_visuals(bags[ep.id], ep, profile)
        if visuals[ep.id].problem:
            problems[ep.id] = visuals[ep.id].problem
    page = render_report(name, summary, ordered, visuals)
    write_atomic(path, page)
    return ReportResult(path, len(ordered), len(detailed), path.stat().st_size, problems)


def episode_visuals(bag: Path, ep: ScoredEpisode, profile: Profile) -> EpisodeVisuals:
    """The figure and thumbnails of one episode; a bag that cannot be read leaves a note, not a failed report."""
    try:
        signals = read_signals(bag, ep, profile)
    except RobodataError as err:
        return EpisodeVisuals(problem=f'could not read the bag: {" ".join(str(err).split())}')
    return EpisodeVisuals(timeline_png(ep, signals, profile), signals.flagged, signals.context,
                          notes=signals.notes)


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
.events span { display: inline-block; margin-right: 12px; white-space: nowrap; }
"""


def render_report(name: str, summary: dict[str, Any], episodes: list[ScoredEpisode],
                  visuals: dict[str, EpisodeVisuals]) -> str:
    """The whole page. Everything read from files is escaped: ids, tasks and messages come from users."""
    parts = ['<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f'<title>{_e(name)}: quality report</title>', f'<style>{_CSS}</style></head><body><main>',
             f'<h1>{_e(name)}: quality report</h1>',
             f'<p class="meta">Generated {_e(time.strftime("%Y-%m-%d %H:%M:%S %Z"))} by ros_robodata '
             f'{_e(__version__)} from what <code>robodata score</code> wrote. Times are seconds from each '
             'episode\'s first message.</p>']
    parts.append(_summary_html(summary, episodes, visuals))
    for ep in episodes:
        if ep.id in visuals:
            parts.append(_episode_html(ep, visuals[ep.id]))
    parts.append('</main></body></html>\n')
    return '\n'.join(parts)


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _anchor(episode_id: str) -> str:
    return 'ep-' + _e(episode_id)


def _score_badge(score: float) -> str:
    if score != score:
        return '<span class="score poor">?</span>'
    grade = 'good' if score >= 0.9 else 'fair' if score >= 0.7 else 'poor'
    return f'<span class="score {grade}">{score:.2f}</span>'


def _verdict(quality: dict[str, Any]) -> str:
    success = quality.get('success') or {}
    text = {True: 'success', False: 'failure'}.get(success.get('success'), '–')
    if success.get('disagrees'):
        text += '<span class="flag">disagrees with label</span>'
    return text


def _consistency(quality: dict[str, Any]) -> str:
    c = quality.get('consistency') or {}
    normalized = c.get('normalized')
    if not isinstance(normalized, (int, float)):
        return '–'
    text = f'{normalized:.2f}'
    if c.get('outlier'):
        text += '<span class="flag">outlier</span>'
    return text


def _summary_html(summary: dict[str, Any], episodes: list[ScoredEpisode],
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
    checks = summary.get('checks') or {}
    out.append('<h3>Checks that fired</h3>')
    if checks:
        out.append(f'<table><tr><th>check</th><th class="num">episodes (of {count})</th></tr>')
        for check, n in sorted(checks.items(), key=lambda item: (-item[1], item[0])):
            out.append(f'<tr><td>{_e(check)}</td><td class="num">{_e(n)}</td></tr>')
        out.append('</table>')
    else:
        out.append('<p class="muted">No check fired in any episode.</p>')
    out.append('<h3>Episodes, worst score first</h3><table><tr><th>episode</th><th>task</th><th>operator</th>'
               '<th>outcome</th><th class="num">score</th><th>success verdict</th><th class="num">consistency</th>'
               '<th>first reason</th></tr>')
    for ep in episodes:
        link = f'<a href="#{_anchor(ep.id)}">{_e(ep.id)}</a>' if ep.id in visuals else _e(ep.id)
        reasons = ep.quality.get('reasons') or []
        first = _e(reasons[0]) if reasons else '<span class="muted">–</span>'
        out.append(f'<tr><td>{link}</td><td>{_e(ep.episode.task)}</td><td>{_e(ep.episode.operator)}</td>'
                   f'<td>{_e(ep.episode.outcome)}</td><td class="num">{_score_badge(ep.score)}</td>'
                   f'<td>{_verdict(ep.quality)}</td><td class="num">{_consistency(ep.quality)}</td>'
                   f'<td>{first}</td></tr>')
    out.append('</table>')
    if len(visuals) < count:
        out.append(f'<p class="muted">Detailed sections for the {len(visuals)} worst episode(s) only.</p>')
    out.append('</section>')
    return '\n'.join(out)


def _when(ep: ScoredEpisode, f: dict[str, Any]) -> str:
    ranges = f.get('ranges_ns') or []
    if not ranges:
        return '–'
    text = ', '.join(f'{ep.seconds(int(a)):.2f}–{ep.seconds(int(b)):.2f}' for a, b in ranges[:4])
    return text + (f' (+{len(ranges) - 4} more)' if len(ranges) > 4 else '')


def _episode_html(ep: ScoredEpisode, v: EpisodeVisuals) -> str:
    e = ep.episode
    out = [f'<section class="episode" id="{_anchor(ep.id)}">',
           f'<h2>{_e(ep.id)} {_score_badge(ep.score)}</h2>',
           f'<p>task <b>{_e(e.task or "–")}</b> · outcome <b>{_e(e.outcome)}</b> · score <b>{ep.score:.2f}</b> · '
           f'status {_e(e.status)} · operator {_e(e.operator or "–")} · {ep.duration_s():.1f} s</p>']
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
        out.append(f'<p>Consistency: {_consistency(ep.quality)} times the typical DTW distance to the task medoid'
                   f'{medoid}.</p>')
    if v.problem:
        out.append(f'<p class="error">{_e(v.problem)}</p>')
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
        out.append('<h3>Findings</h3><table><tr><th>check</th><th>severity</th><th>topic</th><th>when (s)</th>'
                   '<th>message</th></tr>')
        for f in findings:
            severity = str(f.get('severity', ''))
            out.append(f'<tr><td>{_e(f.get("check", ""))}</td><td class="{_e(severity)}">{_e(severity)}</td>'
                       f'<td>{_e(f.get("topic") or "episode")}</td><td>{_when(ep, f)}</td>'
                       f'<td>{_e(f.get("message", ""))}</td></tr>')
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
