"""What `robodata score` and `robodata segment` wrote, as the report reads it: one ScoredEpisode each."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ros_robodata import untrusted
from ros_robodata.dataset.catalog import CatalogRow
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.episode import Episode
from ros_robodata.dataset.targets import Filters, select_rows
from ros_robodata.errors import RobodataError
from ros_robodata.events.event import EventJson
from ros_robodata.events.offline import EVENTS_FILE
from ros_robodata.quality.quality_format import FindingJson, QualityDoc, QualitySummary
from ros_robodata.quality.scoring import QUALITY_FILE, SUMMARY_FILE


@dataclass
class ScoredEpisode:
    """One episode as the report sees it before its bag is opened."""

    episode: Episode
    quality: QualityDoc
    events: list[EventJson] = field(default_factory=list)
    state: str = ''  # its lifecycle state from the catalog (approved, released...); '' for a bag on its own
    events_file: Path | None = None  # its events.json, read by read_events() only for an episode shown in detail
    name: str = ''  # what the page calls it when not its id: a LeRobot episode read in place is 'episode 3'

    @property
    def id(self) -> str:
        return self.name or self.episode.id

    @property
    def score(self) -> float:
        value = self.quality.get('score')
        return float(value) if isinstance(value, (int, float)) else float('nan')

    @property
    def findings(self) -> list[FindingJson]:
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
        data = untrusted.read_json(path)
    except RobodataError as err:
        raise RobodataError(f'{err}: {hint}') from None
    if not isinstance(data, dict):
        raise RobodataError(f'{path}: not what robodata writes (expected a JSON object): {hint}')
    return data


_NUMBER = (int, float)
_NONE = type(None)
# What the report reads from each file as robodata score writes it: the types a value may have, or
# ('list'|'dict', the type of each item).
_SUMMARY_SHAPE: dict[str, Any] = {
    'episodes': (int,), 'failed': ('dict', str), 'outcomes': ('dict', int), 'outcome_ratios': ('dict', _NUMBER),
    'warnings': ('list', str), 'mean_score': (*_NUMBER, _NONE), 'checks': ('dict', int), 'skipped': (list,)}
_QUALITY_SHAPE: dict[str, Any] = {
    'score': (*_NUMBER, _NONE), 'findings': ('list', dict), 'reasons': ('list', str), 'start_ns': (int, _NONE),
    'end_ns': (int, _NONE), 'metrics': (dict,), 'success': (dict, _NONE), 'consistency': (dict, _NONE)}


def _fits(value: Any, want: tuple[Any, ...]) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int) and not -2**63 <= value < 2**63:  # what robodata writes fits a bag's int64 (ns)
        return False
    if want[0] == 'list':
        return isinstance(value, list) and all(_fits(v, (want[1],)) for v in value)
    if want[0] == 'dict':
        return isinstance(value, dict) and all(_fits(v, (want[1],)) for v in value.values())
    return isinstance(value, want)


def _ranges_fit(findings: list[dict[str, Any]]) -> bool:
    return all(isinstance(f.get('ranges_ns') or [], list)
               and all(isinstance(r, list) and len(r) == 2 and all(_fits(t, (int,)) for t in r)
                       for r in f.get('ranges_ns') or []) for f in findings)


def _check_shape(data: dict[str, Any], shape: dict[str, Any], path: Path, hint: str) -> dict[str, Any]:
    """A sidecar edited by hand or by another tool is named here, not in a TypeError halfway through the page."""
    for key, want in shape.items():
        value: Any = data.get(key)  # anything the file holds: _fits checks it
        if key in data and not (_fits(value, want) and (key != 'findings' or _ranges_fit(value))):
            raise RobodataError(f'{path}: not what robodata score writes ({key!r} holds {type(value).__name__} '
                                f'{str(value)[:40]!r}): {hint}')
    return data


def load_scores(dataset: Dataset, filters: Filters | None = None) -> tuple[QualitySummary, list[ScoredEpisode]]:
    """quality_summary.json and every scored episode `filters` pick; fails with what to run when the dataset is
    not scored, because a report of a partly scored dataset would silently leave episodes out."""
    hint = f'run `robodata score {dataset.root}` first'
    summary_path = dataset.root / SUMMARY_FILE
    if not summary_path.is_file():
        raise RobodataError(f'{dataset.root}: not scored yet (no {SUMMARY_FILE}): {hint}')
    # The shapes checked are what the report reads as it is; what it reads of the rest (a finding's keys, an
    # event's), it reads with .get and checks where it uses it: an edited file is named, never a traceback.
    summary = cast(QualitySummary, _check_shape(_read_json(summary_path, hint), _SUMMARY_SHAPE, summary_path, hint))
    failed = summary.get('failed') or {}
    scored, missing = [], []
    # The catalog's rows, not each episode.yaml: what the page shows of an episode (task, operator, outcome,
    # status) is in its row, and parsing 10,000 YAML files took most of a big report's reading time.
    for catalog_row in select_rows(dataset, filters):
        if catalog_row.id in failed or not dataset.bag_files(catalog_row.id):  # as select(): episodes with a bag
            continue
        episode = _episode_of(catalog_row)
        folder = dataset.episode_dir(episode.id)
        path = folder / QUALITY_FILE
        if not path.is_file():
            missing.append(episode.id)
            continue
        quality = cast(QualityDoc, _check_shape(_read_json(path, hint), _QUALITY_SHAPE, path, hint))  # see above
        scored.append(ScoredEpisode(episode, quality, [], catalog_row.state, folder / EVENTS_FILE))
    if missing:
        more = f' and {len(missing) - 3} more' if len(missing) > 3 else ''
        raise RobodataError(f'{dataset.root}: no {QUALITY_FILE} for episode(s) {", ".join(missing[:3])}{more}: '
                            f'{hint}')
    if not scored and not failed:
        raise RobodataError(f'{dataset.root}: no scored episode to report on: {hint}')
    return summary, scored


def read_events(ep: ScoredEpisode) -> None:
    """The episode's events.json into `ep.events` (the objects among them), for its detailed section: a report of
    10,000 episodes reads only the events it draws.

    Raises:
        RobodataError: the file is not JSON or not an object.
    """
    path = ep.events_file
    if path is None or not path.is_file():
        return
    hint = f'run `robodata segment {path.parent.parent.parent}` again'
    ep.events = cast('list[EventJson]', [e for e in _read_json(path, hint).get('events') or [] if isinstance(e, dict)])


def _episode_of(row: CatalogRow) -> Episode:
    """An episode as its catalog row describes it (the fields the report shows)."""
    return Episode(id=row.id, task=row.task, operator=row.operator, mode=row.mode, robot=row.robot,
                   outcome=row.outcome, status=row.status, start_ns=row.start_ns, stop_ns=row.stop_ns)
