"""The shot list at the rig: the take to capture next under a protocol, which the operator accepts (records),
skips or changes, shown on the keys screen as 'take 14/120: 6-10 ft, 100-500 lux, left, surprise'.

The order is coverage's (`robodata coverage --next`): the cells with the fewest takes within spec first, then
protocol order, so two sessions on the same dataset propose the same take. A skipped cell goes to the back for the
rest of the session; changing a condition cycles one factor's level of the take shown. After each take the list is
recounted from the dataset, so a take measured in another cell than intended counts where it fell.
"""

from __future__ import annotations

from dataclasses import dataclass

from ros_robodata.capture.coverage import CellCount, Coverage
from ros_robodata.capture.protocol import Protocol
from ros_robodata.errors import RobodataError

__all__ = ['ShotList', 'Take', 'empty_coverage', 'take_line']

Conditions = tuple[tuple[str, str], ...]


def take_line(protocol: Protocol, conditions: Conditions) -> str:
    """The conditions as the operator reads them: '6-10 ft, 100-500 lux, left, surprise' (levels in factor order,
    a bin with its unit)."""
    parts = []
    for name, level in conditions:
        factor = protocol.factor(name)
        parts.append(f'{level} {factor.unit}' if factor is not None and factor.unit else level)
    return ', '.join(parts)


@dataclass(frozen=True)
class Take:
    """The take shown: its number among the protocol's takes (the takes within spec so far, plus one), the total,
    its conditions (factor -> level or bin label, in factor order), the factors the operator changed and the
    combination the list proposed before they did (`cell`; the conditions when unchanged)."""

    number: int
    total: int
    conditions: Conditions
    changed: tuple[str, ...] = ()
    cell: Conditions = ()

    @property
    def intended(self) -> dict[str, str]:
        """The conditions as a mapping, as capture.json's `intended` holds them."""
        return dict(self.conditions)


def empty_coverage(protocol: Protocol, dataset: str) -> Coverage:
    """Coverage of a dataset that has no take yet (one not created yet): every take missing.

    Args:
        protocol: the protocol.
        dataset: the dataset's name.
    """
    return Coverage(protocol, dataset, [CellCount(cell, i) for i, cell in enumerate(protocol.cells)], [])


class ShotList:
    """The session's shot list; not thread-safe (the node calls it from its executor only).

    Args:
        coverage: the dataset's coverage of the protocol when the session starts.
    """

    def __init__(self, coverage: Coverage) -> None:
        self.protocol = coverage.protocol
        self._skipped: list[Conditions] = []
        self._queue: list[Conditions] = []
        self.done = 0
        self.total = 0
        self.current: Take | None = None
        self.refresh(coverage)

    def refresh(self, coverage: Coverage) -> None:
        """Recount from the dataset (after a take was saved) and show the next take.

        Args:
            coverage: the dataset's coverage now.
        """
        self._queue = [cell.conditions for cell in coverage.next_takes(coverage.missing)]
        self.done, self.total = coverage.done, coverage.required
        self._skipped = [c for c in self._skipped if c in self._queue]
        self.current = self._pick()

    def _pick(self) -> Take | None:
        if not self._queue:
            return None
        waiting = [c for c in self._queue if c not in self._skipped]
        if not waiting:  # every missing cell skipped once: start over from the top
            self._skipped.clear()
            waiting = self._queue
        return Take(self.done + 1, self.total, waiting[0])

    def skip(self) -> str:
        """Put the take shown to the back of the list; what the screen says.

        Raises:
            RobodataError: nothing is left to capture.
        """
        take = self._require()
        cell = take.cell or take.conditions  # a changed take skips the combination the list proposed
        if cell in self._queue:
            self._skipped.append(cell)
        self.current = self._pick()
        return f'skipped {take_line(self.protocol, take.conditions)}'

    def cycle(self, factor: str) -> str:
        """Change the take shown: the next level of `factor` (after its last, the first); what the screen says.

        Args:
            factor: a factor of the protocol.

        Raises:
            RobodataError: an unknown factor, or nothing left to capture.
        """
        take = self._require()
        found = self.protocol.factor(factor)
        if found is None:
            raise RobodataError(f'protocol {self.protocol.name} has no factor {factor!r}; factors: '
                                f'{", ".join(f.name for f in self.protocol.factors)}')
        labels = found.labels
        conditions = tuple((name, labels[(labels.index(level) + 1) % len(labels)] if name == factor else level)
                           for name, level in take.conditions)
        changed = take.changed if factor in take.changed else (*take.changed, factor)
        self.current = Take(take.number, take.total, conditions, changed, take.cell or take.conditions)
        return f'{factor} now {dict(conditions)[factor]}' + (f' {found.unit}' if found.unit else '')

    def _require(self) -> Take:
        if self.current is None:
            raise RobodataError(f'all {self.total} takes of {self.protocol.name} are captured within spec: '
                                'nothing to skip or change')
        return self.current

    def line(self, take: Take | None = None) -> str:
        """'take 14/120: 6-10 ft, 100-500 lux, left, surprise' for `take` (the one shown unless given), or that
        every take is captured."""
        take = take or self.current
        if take is None:
            return f'{self.protocol.name}: all {self.total} takes captured within spec'
        changed = f' (changed: {", ".join(take.changed)})' if take.changed else ''
        return f'take {take.number}/{take.total}: {take_line(self.protocol, take.conditions)}{changed}'
