"""Priors for the segmenter's strokes, pooled from the episodes of a dataset or of one live session.

An episode calibrates its gripper from its own rests (stroke.py); what it has not shown yet (the closed end of a
gripper that never closed on nothing in it, the open end before its first rest) comes from a prior. Offline, a
dataset's episodes are segmented once each from the profile, their observations pooled, and the episodes whose
events the pooled prior could change are segmented again with it; live, the segmenter node pools the episodes
of its own run and says which prior each episode started from, so `robodata segment` can start from the same
one and find the same events.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ros_robodata import untrusted
from ros_robodata.errors import RobodataError
from ros_robodata.events.event import SegmentResult
from ros_robodata.events.stroke import (
    PROFILE,
    RESCALE_SHARE,
    UNDER_HALF,
    UNDER_SHARE,
    Observed,
    Stroke,
    differs,
    pooled,
)
from ros_robodata.files import write_json

GRIPPER, COMMAND = 'gripper', 'command'
SESSION = 'session'
# In an episode's folder: the strokes the live segmenter started the episode from.
PRIOR_FILE = 'segmenter_prior.json'


@dataclass(frozen=True)
class Priors:
    """Where earlier episodes found the gripper (and its command) to close and open; None: the profile's."""

    gripper: Stroke | None = None
    command: Stroke | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v.to_json() for k, v in ((GRIPPER, self.gripper), (COMMAND, self.command)) if v is not None}

    @classmethod
    def from_json(cls, doc: Any) -> Priors | None:
        """Priors as to_json (or events.json's `prior`) wrote them; None when `doc` holds none."""
        if not isinstance(doc, Mapping):
            return None
        gripper, command = Stroke.from_json(doc.get(GRIPPER)), Stroke.from_json(doc.get(COMMAND))
        return cls(gripper, command) if gripper is not None or command is not None else None

    def describe(self) -> str:
        parts = [f'{name} {s.closed:.4g}..{s.open:.4g} ({s.source})'
                 for name, s in ((GRIPPER, self.gripper), (COMMAND, self.command)) if s is not None]
        return ', '.join(parts) or 'the profile'


def pool_priors(calibrations: Iterable[Mapping[str, Any]], source: str) -> Priors | None:
    """A prior from the `calibration` sections of several episodes' results (events.json): per channel, the
    median of their most open rests and of where they closed on nothing. None when no episode showed a rest."""
    found: dict[str, Stroke | None] = {}
    docs = [c for c in calibrations if isinstance(c, Mapping)]
    for channel in (GRIPPER, COMMAND):
        sections = [d[channel] for d in docs if isinstance(d.get(channel), Mapping)]
        nominal = next((s for s in (Stroke.from_json(x.get(PROFILE)) for x in sections) if s is not None), None)
        if nominal is None:
            found[channel] = None
            continue
        found[channel] = pooled(nominal, (Observed.from_json(x.get('observed')) for x in sections), source)
    if found[GRIPPER] is None and found[COMMAND] is None:
        return None
    return Priors(found[GRIPPER], found[COMMAND])


def needs_prior(calibration: Mapping[str, Any], priors: Priors) -> bool:
    """Whether an episode segmented from the profile could read differently from the pooled prior: it judged
    a stroke before its own rests had told it the stroke, or it never saw where the gripper closes on nothing
    while the pool did, and the prior differs from what it used."""
    if calibration.get('prior_from') == 'live':  # started from what the live segmenter used: keep it so
        return False
    for channel, prior in ((GRIPPER, priors.gripper), (COMMAND, priors.command)):
        section = calibration.get(channel)
        if prior is None or not isinstance(section, Mapping):
            continue
        used = Stroke.from_json(section)
        if used is None:
            continue
        observed = Observed.from_json(section.get('observed'))
        unseen_closed = observed.empty_closed is None and abs(prior.closed - used.closed) > 0
        if (section.get('judged_before_calibrated') or unseen_closed) and differs(used, prior):
            return True
        # A stroke judged before the episode closed on nothing was judged against the profile's closed position:
        # where the dataset's gripper really closes to (a follower resting a few units short of its nominal 0)
        # decides whether those fingers stopped on something or closed on nothing.
        nominal = Stroke.from_json(section.get(PROFILE))
        if section.get('closed_judged_from_profile') and nominal is not None and \
                abs(prior.closed - nominal.closed) > RESCALE_SHARE * abs(prior.span):
            return True
    return False


def part_way_in_a_full_dataset(result: SegmentResult, priors: Priors | None) -> SegmentResult:
    """An episode whose gripper never opened past half of the profile's stroke, in a dataset whose gripper does
    (a job that opens part-way): alone it could not tell that from a profile in the wrong unit and warned of the
    profile; the pool says the profile fits, so the warning becomes a note of what this episode did. Its events
    are kept: they were read from this episode's own rests."""
    prior = priors.gripper if priors is not None else None
    section = result.calibration.get(GRIPPER)
    if prior is None or not isinstance(section, Mapping):
        return result
    used, nominal = Stroke.from_json(section), Stroke.from_json(section.get(PROFILE))
    if used is None or nominal is None or not abs(used.span) < UNDER_SHARE * abs(nominal.span) <= abs(prior.span):
        return result
    kept = [w for w in result.warnings if not (w.startswith('gripper positions ') and UNDER_HALF in w)]
    if len(kept) == len(result.warnings):
        return result
    note = (f'gripper opened only to {used.open:.4g} in this episode (closed {used.closed:.4g}); the dataset\'s '
            f'gripper opens to {prior.open:.4g}, within the profile: a job that opens part-way')
    return replace(result, warnings=kept, inputs=[*result.inputs, note])


def write_prior(episode_dir: Path, priors: Priors | None, pooled_episodes: int) -> None:
    """Record, in an episode's folder, the strokes the live segmenter started it from (None: the profile's)."""
    write_json(episode_dir / PRIOR_FILE, {'format': 'ros_robodata.segmenter_prior/1',
                                          'prior': priors.to_json() if priors is not None else {},
                                          'pooled_episodes': pooled_episodes})


def read_prior(episode_dir: Path) -> tuple[bool, Priors | None]:
    """(True, the strokes) when the live segmenter recorded what it started this episode from (None: the
    profile's); (False, None) when it recorded nothing. A damaged file is an error naming it."""
    path = episode_dir / PRIOR_FILE
    if not path.exists():
        return False, None
    doc = untrusted.read_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get('prior'), dict):
        raise RobodataError(f'{path}: not a segmenter prior (no "prior" mapping): delete it to pool the dataset '
                            'instead')
    return True, Priors.from_json(doc['prior'])
