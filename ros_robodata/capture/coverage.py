"""How far a dataset is through a capture protocol: takes required, captured and within spec per combination, and
participants per demographic group, so a session lead knows what to capture next.

A take (an episode with capture.json naming the protocol) counts for the cell its measured conditions fall in, per
factor, when that factor was measured and falls in a level or bin; else for its intended one. It counts as within
spec when every measured factor falls in one of the protocol's levels or bins and, when the protocol requires
consent, its participant is registered in participants.yaml with a consent and has not withdrawn. A participant
counts for a demographic group when participants.yaml gives them that category under `demographics` (self-reported,
e.g. `demographics: {age_group: 65+, gender: female}`) and they have at least one take within spec. Discarded and
retired episodes are left out.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

from ros_robodata.capture.protocol import Cell, Protocol
from ros_robodata.capture.take_record import CAPTURE_FILE, TakeRecord, read_take
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.participants import read_participants
from ros_robodata.dataset.targets import select_rows

__all__ = ['CellCount', 'Coverage', 'GroupCount', 'coverage']


@dataclass
class CellCount:
    """One combination: its place in protocol order, the takes it needs, those captured and those within spec."""

    cell: Cell
    index: int
    captured: int = 0
    within_spec: int = 0
    by_group: dict[tuple[str, str], int] = field(default_factory=dict)  # (attribute, group): takes within spec

    @property
    def missing(self) -> int:
        """Takes within spec still needed."""
        return max(0, self.cell.required - self.within_spec)

    def to_json(self) -> dict[str, Any]:
        """The counts as JSON."""
        return {'conditions': dict(self.cell.conditions), 'required': self.cell.required, 'captured': self.captured,
                'within_spec': self.within_spec, 'missing': self.missing,
                'within_spec_by_group': {f'{a}={g}': n for (a, g), n in sorted(self.by_group.items())}}


@dataclass
class GroupCount:
    """One demographic group (`attribute` age_group, `group` 65+): the participants in it with a take within spec."""

    attribute: str
    group: str
    target: int
    participants: list[str] = field(default_factory=list)

    @property
    def short(self) -> int:
        """Participants still needed."""
        return max(0, self.target - len(self.participants))

    def to_json(self) -> dict[str, Any]:
        """The counts as JSON."""
        return {'attribute': self.attribute, 'group': self.group, 'participants': len(self.participants),
                'target': self.target, 'ids': sorted(self.participants)}


@dataclass
class Coverage:
    """A protocol against a dataset's takes.

    Args:
        protocol: the protocol.
        dataset: the dataset's name.
        cells: every combination with its counts, in protocol order.
        groups: every demographic group with its participants.
        takes: take records of this protocol found.
        notes: what was found but not counted (takes of another protocol or version, off the protocol's cells).
    """

    protocol: Protocol
    dataset: str
    cells: list[CellCount]
    groups: list[GroupCount]
    takes: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def required(self) -> int:
        """Takes the protocol needs."""
        return sum(c.cell.required for c in self.cells)

    @property
    def done(self) -> int:
        """Takes within spec that count toward what is required (extra takes of a full cell do not)."""
        return sum(min(c.within_spec, c.cell.required) for c in self.cells)

    @property
    def missing(self) -> int:
        """Takes within spec still needed."""
        return sum(c.missing for c in self.cells)

    def missing_cells(self) -> list[CellCount]:
        """The cells still short, in the order to capture them: fewest takes within spec first, then protocol order."""
        return sorted((c for c in self.cells if c.missing), key=lambda c: (c.within_spec, c.index))

    def next_takes(self, n: int) -> list[Cell]:
        """The next `n` takes to capture (fewer when fewer are missing): always one of the cells with the fewest
        takes within spec, the first in protocol order, as if each take were captured as listed.

        Args:
            n: how many takes.
        """
        heap = [(c.within_spec, c.index, c.missing) for c in self.cells if c.missing]
        heapq.heapify(heap)
        out: list[Cell] = []
        while heap and len(out) < n:
            have, index, missing = heapq.heappop(heap)
            out.append(self.cells[index].cell)
            if missing > 1:
                heapq.heappush(heap, (have + 1, index, missing - 1))
        return out

    def summary(self) -> str:
        """One line: 'takes 37/120 within spec, 83 missing; groups: age_group 65+ 0/2 participants, ...'."""
        line = f'takes {self.done}/{self.required} within spec, {self.missing} missing'
        if not self.groups:
            return line
        short = [f'{g.attribute} {g.group} {len(g.participants)}/{g.target} participants' for g in self.groups
                 if g.short]
        return f'{line}; groups: {", ".join(short) if short else "every group at its target"}'

    def empty_message(self) -> str | None:
        """What to say when no take of this protocol was found (None when some were)."""
        if self.takes:
            return None
        return (f'{self.dataset}: no take captured to protocol {self.protocol.name} yet (no episode has a '
                f'{CAPTURE_FILE} naming it): all {self.required} takes missing')

    def to_json(self, next_n: int | None = None) -> dict[str, Any]:
        """Everything as JSON; `next` holds the next `next_n` takes when asked.

        Args:
            next_n: how many next takes to list; None leaves `next` out.
        """
        data: dict[str, Any] = {
            'protocol': self.protocol.name, 'protocol_sha256': self.protocol.sha256, 'dataset': self.dataset,
            'takes': {'records': self.takes, 'required': self.required, 'within_spec': self.done,
                      'captured': sum(c.captured for c in self.cells), 'missing': self.missing},
            'cells': [c.to_json() for c in self.cells],
            'missing': [c.to_json() for c in self.missing_cells()],
            'groups': [g.to_json() for g in self.groups],
            'summary': self.summary(), 'notes': self.notes,
        }
        if next_n is not None:
            data['next'] = [dict(c.conditions) for c in self.next_takes(next_n)]
        return data


def _place(protocol: Protocol, record: TakeRecord) -> tuple[tuple[tuple[str, str], ...] | None, bool]:
    """The combination a take counts for (None when some factor falls nowhere) and whether its measured conditions
    are all within the protocol's levels or bins."""
    within = True
    conditions = []
    for f in protocol.factors:
        level = None
        measured = record['measured'].get(f.name)
        if measured is not None and measured['value'] is not None:
            level = f.level_of(measured['value'])
            within = within and level is not None
        if level is None and f.name in record['intended']:
            level = f.level_of(record['intended'][f.name])
        if level is None:
            return None, within
        conditions.append((f.name, level))
    names = {f.name for f in protocol.factors}  # the camera, the repetitions: out of spec takes the take out
    within = within and all(m['verdict'] != 'outside' for k, m in record['measured'].items() if k not in names)
    return tuple(conditions), within


def _consented(person: dict[str, Any] | None) -> bool:
    return person is not None and bool(person.get('consent')) and not person.get('withdrawn')


def coverage(dataset: Dataset, protocol: Protocol) -> Coverage:
    """Count the dataset's takes (capture.json in an episode folder) against `protocol`.

    Args:
        dataset: the dataset.
        protocol: the loaded protocol.

    Raises:
        DatasetError: the catalog, a capture.json or participants.yaml cannot be read (one line naming the file).
    """
    cells = [CellCount(cell, i) for i, cell in enumerate(protocol.cells)]
    by_combo = {c.cell.conditions: c for c in cells}
    people = read_participants(dataset.root)
    result = Coverage(protocol, dataset.name, cells, [])
    other = stale = off = no_consent = 0
    contributors: set[str] = set()
    for row in select_rows(dataset):
        record = read_take(dataset.episode_dir(row.id))
        if record is None:
            continue
        if record['protocol'] != protocol.name:
            other += 1
            continue
        result.takes += 1
        stale += record['protocol_sha256'] != protocol.sha256
        combo, within = _place(protocol, record)
        cell = by_combo.get(combo) if combo is not None else None
        if cell is None:
            off += 1
            continue
        participant = record['participant'] or dataset.episode(row.id).participant
        if protocol.participants.consent_required and not _consented(people.get(participant)):
            no_consent += 1
            within = False
        cell.captured += 1
        if within:
            cell.within_spec += 1
            if participant:
                contributors.add(participant)
                said = (people.get(participant) or {}).get('demographics')
                for attribute, groups in protocol.participants.groups:
                    value = said.get(attribute) if isinstance(said, dict) else None
                    if value is not None and str(value) in groups:
                        key = (attribute, str(value))
                        cell.by_group[key] = cell.by_group.get(key, 0) + 1
    targets = protocol.participants
    for attribute, groups in targets.groups:
        counts = {g: GroupCount(attribute, g, targets.per_group) for g in groups}
        for pid in sorted(contributors):
            said = (people.get(pid) or {}).get('demographics')
            value = said.get(attribute) if isinstance(said, dict) else None
            if value is not None and str(value) in counts:
                counts[str(value)].participants.append(pid)
        result.groups.extend(counts.values())
    for n, what in ((other, 'of another protocol, not counted'),
                    (stale, f'captured to another version of {protocol.name} (its sha256 differs), counted'),
                    (off, 'whose conditions fall in no combination of the protocol, not counted'),
                    (no_consent, 'by a participant without consent in participants.yaml, not within spec')):
        if n:
            result.notes.append(f'{n} take(s) {what}')
    return result
