"""What an episode's sidecars say at a replay time: the event just passed, the subtask, the quality findings
active then, the reviewers' temporal labels and verdict, the episode's status, and the boxes and polygons drawn
on each camera frame.

Every time is a header stamp in ns (sensor clock), as events.json and quality.json hold them, so a replayed
bag's own stamps find their moment. Human segments are in the episode's seconds (counted from events.json's
start_ns); box and polygon labels name an exported frame (`<episode>/<index>`), whose camera stamp only the
export's frames.json knows: see `frame_stamp_ns`. The overlay node asks `EpisodeView.at` on every clock tick;
live, it fills the same view from /robodata/events and /robodata/quality instead of the files.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ros_robodata import untrusted
from ros_robodata.dataset.annotations import FILE as ANNOTATIONS_FILE
from ros_robodata.dataset.annotations import Stored, read_annotations
from ros_robodata.dataset.episode import read_episode
from ros_robodata.dataset.label import BOX, POLYGON, SEGMENT, Label
from ros_robodata.errors import RobodataError
from ros_robodata.events.offline import EVENTS_FILE, read_events_file
from ros_robodata.quality.findings import ERROR, INFO, SEVERITIES, WARN, Finding
from ros_robodata.quality.scoring import QUALITY_FILE

EVENT_HOLD_NS = 2_000_000_000  # an event stays the headline this long after it happened
FLAG_PAD_NS = 250_000_000  # a finding that fired on one sample shows this long either side of it
LIVE_FLAG_HOLD_NS = 3_000_000_000  # a live quality status not repeated for this long is gone (3 monitor periods)
LIVE_EVENTS_KEPT = 1000
_LABEL_STUDIO_STATE = ('review', 'label_studio.json')
_MEDIA = (('review', 'media'), ('review', 'media', 'frames'))  # where `robodata review push` exports frames
_WORST_FIRST = {ERROR: 0, WARN: 1, INFO: 2}


@dataclass(frozen=True)
class EventMark:
    """A segmenter event: what happened and when."""

    kind: str
    t_ns: int
    confidence: float = 1.0


@dataclass(frozen=True)
class Span:
    """A stretch of the episode: a subtask of the segmenter's timeline or a reviewer's temporal label."""

    name: str  # subtask name, or the label's class path
    start_ns: int
    end_ns: int
    annotator: str = ''

    def covers(self, t_ns: int) -> bool:
        return self.start_ns <= t_ns <= self.end_ns


@dataclass(frozen=True)
class Flag:
    """A quality finding; `ranges` are where it fired (none: it is about the whole episode)."""

    check: str
    severity: str
    topic: str
    message: str
    ranges: tuple[tuple[int, int], ...] = ()

    def active(self, t_ns: int) -> bool:
        return any(a - FLAG_PAD_NS <= t_ns <= b + FLAG_PAD_NS for a, b in self.ranges)


@dataclass(frozen=True)
class Shape:
    """A box ([x, y, width, height] px from the top-left corner) or polygon a reviewer drew on one camera frame,
    the frame found by the camera's header stamp."""

    kind: str  # box | polygon
    value: str  # class path
    camera: str  # profile camera name
    stamp_ns: int
    box: tuple[float, float, float, float] | None = None
    points: tuple[tuple[float, float], ...] = ()
    annotator: str = ''


@dataclass(frozen=True)
class Moment:
    """What is true of the episode at `t_ns`: what the overlay shows."""

    t_ns: int
    episode_id: str = ''
    event: EventMark | None = None  # the latest event at or before t_ns, for EVENT_HOLD_NS
    subtask: str = ''
    flags: tuple[Flag, ...] = ()  # findings active at t_ns, worst first
    labels: tuple[Span, ...] = ()  # reviewers' temporal labels covering t_ns
    verdict: str = ''  # the reviewed verdict ('' before review)
    outcome: str = ''
    status: str = ''
    start_ns: int | None = None
    end_ns: int | None = None
    together: tuple[EventMark, ...] = ()  # events stamped the same ns before `event` (a contact that is the grasp)

    @property
    def progress(self) -> float | None:
        """0..1 through the episode; None when its span is unknown."""
        if self.start_ns is None or self.end_ns is None or self.end_ns <= self.start_ns:
            return None
        return min(1.0, max(0.0, (self.t_ns - self.start_ns) / (self.end_ns - self.start_ns)))

    @property
    def elapsed_s(self) -> float | None:
        return None if self.start_ns is None else (self.t_ns - self.start_ns) / 1e9

    def headline(self) -> str:
        """The event just passed and the subtask: 'grasp (0.97) | subtask: transport'; events stamped the same ns
        are shown together ('contact (0.97) + grasp (0.95)'), so none of them is hidden by its neighbour."""
        parts = []
        if self.event is not None:
            parts.append(' + '.join(f'{e.kind} ({e.confidence:.2f})' for e in (*self.together, self.event)))
        if self.subtask:
            parts.append(f'subtask: {self.subtask}')
        return ' | '.join(parts)

    def status_line(self) -> str:
        """'episode 20261129-214335: complete, outcome success, reviewed failure'."""
        parts = [p for p in (self.status, f'outcome {self.outcome}' if self.outcome else '',
                             f'reviewed {self.verdict}' if self.verdict else '') if p]
        head = f'episode {self.episode_id}' if self.episode_id else 'episode'
        return f'{head}: {", ".join(parts)}' if parts else (head if self.episode_id else '')

    def label_lines(self) -> list[str]:
        return [f'label {s.name}' + (f' ({s.annotator})' if s.annotator else '') for s in self.labels]

    def flag_lines(self) -> list[str]:
        return [f'{f.severity}: {f.message}' for f in self.flags]

    def shown(self) -> tuple[Any, ...]:
        """Everything a viewer sees change except the clock itself: a new value means new markers now."""
        return (self.episode_id, self.together, self.event, self.subtask, self.flags, self.labels, self.verdict,
                self.outcome, self.status)


@dataclass
class EpisodeView:
    """One episode as the overlay draws it, from its sidecars (load_episode_view) or filled live."""

    episode_id: str = ''
    events: list[EventMark] = field(default_factory=list)  # in time order
    subtasks: list[Span] = field(default_factory=list)
    flags: list[Flag] = field(default_factory=list)
    labels: list[Span] = field(default_factory=list)
    shapes: list[Shape] = field(default_factory=list)
    verdict: str = ''
    outcome: str = ''
    status: str = ''
    start_ns: int | None = None
    end_ns: int | None = None
    notes: list[str] = field(default_factory=list)  # what could not be read, and why (one line each)
    _live_flags: dict[tuple[str, str], Flag] = field(default_factory=dict, repr=False)

    def event_times_ns(self) -> list[int]:
        """Every event's stamp, sorted: where a reviewer jumps with next/previous."""
        return sorted(e.t_ns for e in self.events)

    def at(self, t_ns: int) -> Moment:
        events = self.events  # in time order (load_episode_view, add_event)
        passed = bisect_right([e.t_ns for e in events], t_ns)
        event = events[passed - 1] if passed and t_ns - events[passed - 1].t_ns <= EVENT_HOLD_NS else None
        first = passed - 1
        while event is not None and first > 0 and events[first - 1].t_ns == event.t_ns:
            first -= 1
        together = tuple(events[first:passed - 1]) if event is not None else ()
        subtask = next((s.name for s in self.subtasks if s.start_ns <= t_ns < s.end_ns), '')
        if not subtask and self.subtasks and self.subtasks[-1].end_ns == t_ns:
            subtask = self.subtasks[-1].name
        flags = sorted((f for f in (*self.flags, *self._live_flags.values()) if f.active(t_ns)),
                       key=lambda f: (_WORST_FIRST.get(f.severity, 3), f.check, f.topic))
        return Moment(t_ns, self.episode_id, event, subtask, tuple(flags),
                      tuple(s for s in self.labels if s.covers(t_ns)), self.verdict, self.outcome, self.status,
                      self.start_ns, self.end_ns, together)

    def shapes_at(self, camera: str, stamp_ns: int, tolerance_ns: int) -> list[Shape]:
        """The shapes drawn on `camera`'s frame stamped `stamp_ns` (within `tolerance_ns`: half a frame period)."""
        return [s for s in self.shapes if s.camera == camera and abs(s.stamp_ns - stamp_ns) <= tolerance_ns]

    def add_event(self, kind: str, t_ns: int, confidence: float = 1.0) -> None:
        """A live event (/robodata/events), kept in time order; a session without episodes keeps the latest."""
        insort(self.events, EventMark(kind, t_ns, confidence), key=lambda e: e.t_ns)
        del self.events[:-LIVE_EVENTS_KEPT]

    def live_status(self, check: str, topic: str, severity: str | None, message: str, t_ns: int) -> None:
        """A live quality status (/robodata/quality): shown until LIVE_FLAG_HOLD_NS after its last repeat;
        severity None (the check is OK again) takes it down."""
        if severity is None:
            self._live_flags.pop((check, topic), None)
        else:
            self._live_flags[(check, topic)] = Flag(check, severity, topic, message,
                                                    ((t_ns, t_ns + LIVE_FLAG_HOLD_NS),))


def load_episode_view(episode_dir: Path, frames_dirs: Sequence[Path] = ()) -> EpisodeView:
    """The episode's sidecars (episode.yaml, events.json, quality.json, annotations.json) as one view. A sidecar
    missing or unreadable is one line in `notes` and the rest is still shown; the episode's bag/ folder names the
    episode too. `frames_dirs`: frame export folders
    (`robodata export frames --out`) to look in for the frames that box and polygon labels name."""
    episode_dir = Path(episode_dir)
    if episode_dir.name == 'bag' and (episode_dir.parent / 'episode.yaml').is_file():  # the episode's bag named
        episode_dir = episode_dir.parent
    view = EpisodeView(episode_id=episode_dir.name)
    stamp_start = None
    try:
        episode = read_episode(episode_dir / 'episode.yaml')
        view.outcome, view.status = episode.outcome, episode.status
        stamp_start = episode.stamp_start_ns
        view.start_ns, view.end_ns = episode.stamp_start_ns, episode.stamp_stop_ns
    except RobodataError as err:
        view.notes.append(_line(err))
    events_start = _read_events(episode_dir / EVENTS_FILE, view)
    quality_start = _read_quality(episode_dir / QUALITY_FILE, view)
    zero = next((t for t in (events_start, quality_start, stamp_start) if t is not None), None)
    _read_labels(episode_dir, view, zero, [Path(d) for d in frames_dirs])
    return view


def _read_events(path: Path, view: EpisodeView) -> int | None:
    """Events and subtasks into the view; the episode's zero for its seconds (None without the file)."""
    if not path.is_file():
        view.notes.append(f'{path}: missing: no events or subtasks shown (run `robodata segment` on the episode)')
        return None
    try:
        doc = read_events_file(path)
    except RobodataError as err:
        view.notes.append(_line(err))
        return None
    view.events = sorted((EventMark(e['kind'], e['t_ns'], _number(e.get('confidence'), 1.0)) for e in doc['events']),
                         key=lambda e: e.t_ns)
    view.subtasks = [Span(s['name'], s['start_ns'], s['end_ns']) for s in doc.get('timeline', [])]
    start, end = doc.get('start_ns'), doc.get('end_ns')
    if isinstance(start, int) and isinstance(end, int):
        view.start_ns, view.end_ns = start, end
    return start if isinstance(start, int) else None


def _read_quality(path: Path, view: EpisodeView) -> int | None:
    """quality.json's findings into the view; its start_ns."""
    if not path.is_file():
        view.notes.append(f'{path}: missing: no quality findings shown (run `robodata score` on the episode)')
        return None
    try:
        doc = untrusted.read_json(path)
        if not isinstance(doc, dict) or not isinstance(doc.get('findings'), list):
            raise RobodataError(f'{path}: no list of findings in it (not what `robodata score` writes)')
        for n, entry in enumerate(doc['findings']):
            try:
                finding = Finding.from_json(entry)
            except (KeyError, TypeError, ValueError) as err:
                raise RobodataError(f'{path}: findings[{n}] unreadable ({type(err).__name__}: {err})') from None
            severity = finding.severity if finding.severity in SEVERITIES else WARN
            view.flags.append(Flag(finding.check, severity, finding.topic, finding.message, finding.ranges))
    except RobodataError as err:
        view.flags.clear()
        view.notes.append(_line(err))
        return None
    start, end = doc.get('start_ns'), doc.get('end_ns')
    if view.start_ns is None and isinstance(start, int) and isinstance(end, int):
        view.start_ns, view.end_ns = start, end
    return start if isinstance(start, int) else None


def _read_labels(episode_dir: Path, view: EpisodeView, zero_ns: int | None, frames_dirs: list[Path]) -> None:
    path = episode_dir / ANNOTATIONS_FILE
    if not path.is_file():  # an episode nobody reviewed yet: the usual case, nothing to warn about
        return
    try:
        annotations = read_annotations(episode_dir)
    except RobodataError as err:
        view.notes.append(_line(err))
        return
    view.verdict = annotations.reviewed_verdict()
    revisions = {r.get('revision'): r.get('source') or {} for r in annotations.revisions}
    exports = _Exports()
    dataset_root = episode_dir.parent.parent if episode_dir.parent.name == 'episodes' else None
    unplaced: list[str] = []
    unzeroed = 0
    for stored in annotations.current():
        label = stored.label
        if label.kind == SEGMENT and label.start_s is not None and label.end_s is not None:
            if zero_ns is None:
                unzeroed += 1
                continue
            view.labels.append(Span(label.value, zero_ns + round(label.start_s * 1e9),
                                    zero_ns + round(label.end_s * 1e9), label.annotator))
        elif label.kind in (BOX, POLYGON):
            folders = _export_folders(stored, revisions.get(stored.revision, {}), dataset_root, frames_dirs)
            found = next((hit for folder in folders if (hit := exports.frame(folder, view.episode_id, label))), None)
            if found is None:
                unplaced.append(label.frame_id or f'frame {label.frame}')
                continue
            camera, stamp = found
            view.shapes.append(Shape(label.kind, label.value, camera, stamp, label.box, label.points, label.annotator))
    if unzeroed:
        view.notes.append(f'{path}: {unzeroed} temporal label(s) not shown: no events.json or quality.json says '
                          'where the episode\'s seconds start')
    if unplaced:
        more = f' and {len(unplaced) - 3} more' if len(unplaced) > 3 else ''
        view.notes.append(f'{path}: {len(unplaced)} box/polygon label(s) not drawn: no frame export holds their frame '
                          f'({", ".join(unplaced[:3])}{more}); pass the export folder (`robodata export frames --out`) '
                          'as the overlay\'s `frames` parameter')


def _export_folders(stored: Stored, revision: dict[str, Any], dataset_root: Path | None,
                    frames_dirs: list[Path]) -> list[Path]:
    """Where to look for the export a frame label was made on, most likely first: the export folder holding
    the file it was imported from; for a Label Studio pull, the media folder the push recorded for the label's
    project; then the folders the user named; then every media folder a review push writes."""
    out: list[Path] = []
    file = revision.get('file')
    if isinstance(file, str) and file:
        out += [p for p in list(Path(file).parents)[:4] if (p / 'manifest.json').is_file()][:1]
    state = _label_studio_state(dataset_root)
    project = state.get(f'{revision.get("url", "")} {stored.label.source.project}')
    if stored.label.source.tool == 'label_studio' and isinstance(project, dict) and project.get('media'):
        out.append(Path(str(project['media'])))
    out += frames_dirs
    out += [Path(str(p['media'])) for p in state.values() if isinstance(p, dict) and p.get('media')]
    if dataset_root is not None:
        out += [dataset_root.joinpath(*parts) for parts in _MEDIA]
    return list(dict.fromkeys(out))


def _label_studio_state(dataset_root: Path | None) -> dict[str, Any]:
    """review/label_studio.json's projects (empty when there is none or it cannot be read)."""
    if dataset_root is None or not dataset_root.joinpath(*_LABEL_STUDIO_STATE).is_file():
        return {}
    try:
        state = untrusted.read_json(dataset_root.joinpath(*_LABEL_STUDIO_STATE))
    except RobodataError:
        return {}
    projects = state.get('projects') if isinstance(state, dict) else None
    return projects if isinstance(projects, dict) else {}


class _Exports:
    """Frame exports' frames.json documents, each read once."""

    def __init__(self) -> None:
        self._docs: dict[Path, dict[str, Any] | None] = {}

    def frame(self, folder: Path, episode_id: str, label: Label) -> tuple[str, int] | None:
        """(camera, stamp_ns) of the frame `label` is on, if this export holds it; see frame_stamp_ns."""
        path = folder / 'episodes' / episode_id / 'frames.json'
        if path not in self._docs:
            try:
                doc = untrusted.read_json(path) if path.is_file() else None
            except RobodataError:
                doc = None
            self._docs[path] = doc if isinstance(doc, dict) and isinstance(doc.get('frames'), list) else None
        doc = self._docs[path]
        return None if doc is None else frame_stamp_ns(doc, episode_id, label)


def frame_stamp_ns(frames_doc: dict[str, Any], episode_id: str, label: Label) -> tuple[str, int] | None:
    """(camera, header stamp) of the camera image a box or polygon label was drawn on, from the export's
    frames.json: the frame whose id is the label's frame_id (else `<episode>/<frame:06d>`), the camera its sensor
    names (`camera_wrist` or `wrist`; none: the export's reference camera), that image's `stamp_ns`. None when the
    export has no such frame or image."""
    frame_id = label.frame_id or (f'{episode_id}/{label.frame:06d}' if label.frame is not None else '')
    entry = next((f for f in frames_doc['frames'] if isinstance(f, dict) and f.get('frame_id') == frame_id), None)
    if entry is None or not isinstance(entry.get('sensors'), dict):
        return None
    sync = (frames_doc.get('settings') or {}).get('sync') or {}
    sensor = label.sensor or str(sync.get('reference', '') if isinstance(sync, dict) else '')
    camera = sensor.removeprefix('camera_')
    image = entry['sensors'].get(f'camera_{camera}')
    stamp = image.get('stamp_ns') if isinstance(image, dict) else None
    return (camera, stamp) if isinstance(stamp, int) and not isinstance(stamp, bool) else None


def _number(value: Any, default: float) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _line(err: Exception) -> str:
    return ' '.join(str(err).split())
