"""What the dataset already knows about one episode, read for selection: its label, its quality.json (score,
findings, success verdict, consistency) and its events.json (events with their confidence, the segmenter's
warnings). Sidecars are read as untrusted; what cannot be read is said, and the episode is judged without it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ros_robodata import untrusted
from ros_robodata.errors import RobodataError

if TYPE_CHECKING:  # types only: selection loads neither the segmenter nor the scorer
    from ros_robodata.events.event import EventJson
    from ros_robodata.quality.quality_format import FindingJson

QUALITY_FILE = 'quality.json'  # as quality.score writes it (not imported: selection needs no scorer)
EVENTS_FILE = 'events.json'


@dataclass
class Evidence:
    """One episode's inputs to selection."""

    episode_id: str
    task: str
    outcome: str
    status: str
    scored: bool = False
    score: float | None = None
    # The entries of quality.json and events.json that are objects (an events.json entry with a kind): what a
    # reader takes of them beyond that, it checks where it takes it (the files may have been edited).
    findings: list[FindingJson] = field(default_factory=list)
    success: dict[str, Any] = field(default_factory=dict)  # quality.json's, {} without one (SuccessJson's keys)
    consistency: dict[str, Any] = field(default_factory=dict)  # quality.json's, {} without one (ConsistencyJson's)
    events: list[EventJson] | None = None
    event_warnings: list[str] = field(default_factory=list)
    reviewed: str | None = None  # the reviewed verdict from annotations.json, if any
    reviewers_disagree: str = ''  # why its reviewers disagreed (review/disagreements.json), if they did
    notes: list[str] = field(default_factory=list)


def read_evidence(episode_dir: Path, episode_id: str, task: str, outcome: str, status: str) -> Evidence:
    evidence = Evidence(episode_id, task, outcome, status)
    quality = _read(episode_dir / QUALITY_FILE, evidence)
    if quality is not None:
        score = quality.get('score')
        if isinstance(score, (int, float)) and not isinstance(score, bool):
            evidence.scored, evidence.score = True, float(score)
            findings = [f for f in quality.get('findings') or [] if isinstance(f, dict)]
            evidence.findings = cast('list[FindingJson]', findings)
            success, consistency = quality.get('success'), quality.get('consistency')
            evidence.success = success if isinstance(success, dict) else {}
            evidence.consistency = consistency if isinstance(consistency, dict) else {}
        else:
            evidence.notes.append(f'{episode_dir / QUALITY_FILE}: no score in it (not what robodata score writes)')
    events = _read(episode_dir / EVENTS_FILE, evidence)
    if events is not None and isinstance(events.get('events'), list):
        evidence.events = cast('list[EventJson]', [e for e in events['events']
                                                   if isinstance(e, dict) and isinstance(e.get('kind'), str)])
        warnings = events.get('warnings')
        evidence.event_warnings = [str(w) for w in warnings] if isinstance(warnings, list) else []
    return evidence


def _read(path: Path, evidence: Evidence) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        data = untrusted.read_json(path)
    except RobodataError as err:
        evidence.notes.append(f'{" ".join(str(err).split())}: judged without it')
        return None
    if not isinstance(data, dict):
        evidence.notes.append(f'{path}: not a JSON object: judged without it')
        return None
    return data
