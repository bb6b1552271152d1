"""The commands of a batch of messages (a leader arm's JointState) handed to JointMotion as .command hands them
over one sample at a time, without its per-sample, per-joint Python.

What the stream keeps of the commands: each joint's range over the episode (order-free: its lowest and highest
value, the first of equal ones), and each joint's recent history (stamp, value), halved once it holds more than
64 and its oldest is older than twice the stuck time (the stuck check reads it). The history a joint holds after
any number of samples follows from its own stamps alone, so it is worked out once per distinct stamp sequence and
built as a list only when the stuck check reads it (rarely), and for every joint at the end of the batch.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from ros_robodata.quality.motion import JointMotion

_KEPT = 64  # JointMotion.command: a history longer than this is halved once its oldest entry is old


class CommandRows(Protocol):
    seqs: np.ndarray
    names: tuple[str, ...]
    stamps: np.ndarray
    positions: np.ndarray


class _Joint:
    """One joint's history: what it held before the batch, then its finite values of the batch in order."""

    def __init__(self, held: int, order: np.ndarray, stamps: list[int], values: list[float], starts: np.ndarray,
                 arrays: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        self.held = held  # entries held before the batch, at the start of stamps and values
        self.order = order  # the pending index of each of the batch's values
        self.stamps, self.values = stamps, values
        self.starts = starts  # after the k-th of the batch's values: the first entry still kept
        self._given = arrays  # stamps and values as arrays already (the batch's own columns), else made when asked
        self._arrays: tuple[np.ndarray, np.ndarray, np.ndarray | None] | None = None
        self._lists: tuple[list[int], list[int]] | None = None  # order and starts as lists
        self._run_list: list[int] | bool | None = None  # False: stamps out of order

    def _window(self, fed: int) -> tuple[int, int]:
        """Where the history after the first `fed` pending commands starts and ends in stamps and values."""
        if self._lists is None:  # lists, bisected: the stuck check asks once per stretch, without numpy's call cost
            self._lists = (self.order.tolist(), self.starts.tolist())
        order, starts = self._lists
        k = bisect_left(order, fed)
        return (starts[k - 1] if k else 0), self.held + k

    def _runs(self) -> list[int] | None:
        """_prepared()'s runs as a list (None: stamps out of order)."""
        if self._run_list is None:
            runs = self._prepared()[2]
            self._run_list = runs.tolist() if runs is not None else False
        return self._run_list if isinstance(self._run_list, list) else None

    def history(self, fed: int) -> list[tuple[int, float]]:
        """The history after the first `fed` pending commands."""
        start, end = self._window(fed)
        return list(zip(self.stamps[start:end], self.values[start:end], strict=True))

    def travel(self, fed: int, since_ns: int, until_ns: int) -> float:
        """How far the command moved between two stamps in that history (max - min; 0 without a value there): what
        the stuck check asks of every sample a joint holds still, on arrays rather than a list built for it."""
        if self._runs() is not None:  # stamps in order: the values between them are one slice
            a, b = self._between(fed, since_ns, until_ns)
            return float(max(self.values[a:b]) - min(self.values[a:b])) if b > a else 0.0
        inside = self._inside(fed, since_ns, until_ns)
        return float(inside.max() - inside.min()) if inside.size else 0.0

    def span(self, fed: int, since_ns: int, until_ns: int) -> tuple[float, float] | None:
        """The lowest and highest value between two stamps in that history (None without one there)."""
        inside = self._inside(fed, since_ns, until_ns)
        return (float(inside.min()), float(inside.max())) if inside.size else None

    def still(self, fed: int, since_ns: int, until_ns: int) -> float | None:
        """The command's value if it held one value between two stamps in that history (None: it moved, or has
        no value there): what the stuck check asks of a joint come to rest, once per stretch of it."""
        runs = self._runs()
        if runs is None:  # stamps out of order: the values between them, wherever they sit
            inside = self._inside(fed, since_ns, until_ns)
            return float(inside[0]) if inside.size and inside.min() == inside.max() else None
        a, b = self._between(fed, since_ns, until_ns)
        return float(self.values[a]) if b > a and runs[b - 1] <= a else None

    def _between(self, fed: int, since_ns: int, until_ns: int) -> tuple[int, int]:
        """Where the history's entries stamped since_ns..until_ns start and end (its stamps in order)."""
        start, end = self._window(fed)
        return bisect_left(self.stamps, since_ns, start, end), bisect_left(self.stamps, until_ns + 1, start, end)

    def _prepared(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Stamps, values, and (stamps in order) where the run of equal values each value belongs to starts."""
        if self._arrays is None:
            stamps, values = self._given or (np.asarray(self.stamps, dtype=np.int64),
                                             np.asarray(self.values, dtype=np.float64))
            runs = None
            if len(stamps) < 2 or bool((np.diff(stamps) >= 0).all()):
                changed = np.ones(len(values), dtype=bool)
                changed[1:] = values[1:] != values[:-1]
                runs = np.maximum.accumulate(np.where(changed, np.arange(len(values)), 0))
            self._arrays = (stamps, values, runs)
        return self._arrays

    def _inside(self, fed: int, since_ns: int, until_ns: int) -> np.ndarray:
        stamps_all, values_all, _ = self._prepared()
        start, end = self._window(fed)
        stamps, values = stamps_all[start:end], values_all[start:end]
        return values[(stamps >= since_ns) & (stamps <= until_ns)]


class _Histories(dict[str, list[tuple[int, float]]]):
    """JointMotion._commands while a batch is fed: a joint of the batch has its history built as the stuck check
    reads it (.get), as of the commands fed so far."""

    def __init__(self, before: dict[str, list[tuple[int, float]]], joints: dict[str, _Joint]) -> None:
        super().__init__(before)
        self.joints = joints
        self.fed = 0

    def get(self, name: str, default: Any = None) -> Any:
        joint = self.joints.get(name)
        return joint.history(self.fed) if joint is not None else super().get(name, default)

    def travel(self, name: str, since_ns: int, until_ns: int) -> float | None:
        """JointMotion._command_travel for a joint of the batch (None for another: its list is read as it is)."""
        joint = self.joints.get(name)
        return joint.travel(self.fed, since_ns, until_ns) if joint is not None else None

    def span(self, name: str, since_ns: int, until_ns: int) -> tuple[float, float] | None:
        """JointMotion._command_span for a joint of the batch (None for another, or none there: the list is read)."""
        joint = self.joints.get(name)
        return joint.span(self.fed, since_ns, until_ns) if joint is not None else None

    def still(self, name: str, since_ns: int, until_ns: int) -> tuple[bool, float | None]:
        """JointMotion._command_still for a joint of the batch: (True, its value or None); (False, None) for
        another (its list is read as it is)."""
        joint = self.joints.get(name)
        return (True, joint.still(self.fed, since_ns, until_ns)) if joint is not None else (False, None)


def _starts(stamps: list[int], held: int, horizon_ns: int) -> np.ndarray:
    """After each of the batch's stamps (those from `held` on) is appended: the first entry kept."""
    out = np.empty(len(stamps) - held, dtype=np.int64)
    start = 0
    for e in range(held, len(stamps)):
        length = e + 1 - start
        if length > _KEPT and stamps[start] < stamps[e] - horizon_ns:
            start += length // 2
        out[e - held] = start
    return out


class CommandFeed:
    """The batch's commands in sequence order; `advance(seq)` feeds those before `seq`, `finish()` all of them."""

    def __init__(self, motion: JointMotion, commands: Sequence[CommandRows]) -> None:
        self.motion = motion
        seqs = np.concatenate([c.seqs for c in commands]).astype(np.int64)
        sort = np.argsort(seqs, kind='stable')  # as Python's stable sort of the runs' samples by sequence
        self.seqs = seqs[sort]
        where = np.empty(len(sort), dtype=np.int64)
        where[sort] = np.arange(len(sort))
        horizon_ns = int(2 * motion.limits.stuck_after_s * 1e9)
        offsets = np.cumsum([0] + [len(c.seqs) for c in commands]).tolist()
        columns: dict[str, list[tuple[int, int]]] = {}  # per joint: (run, column) of each run naming it
        first_layout: dict[tuple[str, ...], int] = {}
        orders = [where[offset:offset + len(run.seqs)] for run, offset in zip(commands, offsets, strict=False)]
        for r, (run, order) in enumerate(zip(commands, orders, strict=True)):
            if len(order):
                first_layout[run.names] = min(first_layout.get(run.names, len(sort)), int(order.min()))
            for j, name in enumerate(run.names[:min(len(run.names), run.positions.shape[1])]):
                columns.setdefault(str(name), []).append((r, j))
        self.layouts = sorted(first_layout, key=lambda names: first_layout[names])
        before = motion._commands
        joints: dict[str, _Joint] = {}
        firsts: list[tuple[int, int, str]] = []
        shared: dict[tuple[Any, ...], np.ndarray] = {}
        ranges = motion._command_range
        plain: dict[int, tuple[list[int], list[list[float]], np.ndarray, np.ndarray]] = {}  # per run, on first use
        rising = [len(order) < 2 or bool((np.diff(order) > 0).all()) for order in orders]
        for name, parts in columns.items():
            held = before.get(name, [])
            r, j = parts[0]
            run = commands[r]
            if len(parts) == 1 and bool(np.isfinite(run.positions[:, j]).all()) and rising[r]:
                # The usual: one run names the joint, every value finite (the run's columns read in one go).
                if r not in plain:
                    positions, run_stamps = run.positions.astype(float), run.stamps.astype(np.int64)
                    plain[r] = (run_stamps.tolist(), positions.T.tolist(), positions, run_stamps)
                stamps_list, values_list, positions, run_stamps = plain[r]
                given = None if held else (run_stamps, positions[:, j])
                order, key = orders[r], (r, tuple(t for t, _ in held))
                stamps = [t for t, _ in held] + stamps_list if held else stamps_list
                values = [v for _, v in held] + values_list[j] if held else values_list[j]
                column = positions[:, j]
                first_column = j
            else:
                order = np.concatenate([orders[r] for r, _ in parts])
                times = np.concatenate([commands[r].stamps for r, _ in parts]).astype(np.int64)
                column = np.concatenate([commands[r].positions[:, j] for r, j in parts]).astype(float)
                at = np.concatenate([np.full(len(orders[r]), j) for r, j in parts])
                by = np.argsort(order, kind='stable')
                by = by[np.isfinite(column[by])]
                order, times, column, at = order[by], times[by], column[by], at[by]
                key = (times.tobytes(), tuple(t for t, _ in held))
                stamps = [t for t, _ in held] + times.tolist()
                values = [v for _, v in held] + column.tolist()
                first_column = int(at[0]) if len(at) else 0
                given = None
            if key not in shared:
                shared[key] = _starts(stamps, len(held), horizon_ns)
            joints[name] = _Joint(len(held), order, stamps, values, shared[key], given)
            if not len(column):
                continue
            low, high = float(column[int(np.argmin(column))]), float(column[int(np.argmax(column))])
            span = ranges.get(name)
            if span is None:
                firsts.append((int(order[0]), first_column, name))
                ranges[name] = (low, high)
            else:
                ranges[name] = (low if low < span[0] else span[0], high if high > span[1] else span[1])
        for _, _, name in sorted(firsts):  # a joint's range enters the dict at its first finite command
            ranges[name] = ranges.pop(name)
        self.histories = _Histories(before, joints)
        motion._commands = self.histories

    def advance(self, seq: int) -> None:
        self.histories.fed = max(self.histories.fed, int(np.searchsorted(self.seqs, seq, side='left')))

    def finish(self) -> None:
        """Every command fed: the histories as lists again, the joints' lists shared with their layouts."""
        motion, fed = self.motion, len(self.seqs)
        out: dict[str, list[tuple[int, float]]] = {}
        for names in [*motion._command_layouts, *self.layouts]:  # JointMotion.command's setdefault order
            for name in names:
                out.setdefault(str(name), [])
        for name, history in dict.items(self.histories):
            out.setdefault(name, history)
        for name in out:
            joint = self.histories.joints.get(name)
            out[name] = joint.history(fed) if joint is not None else dict.get(self.histories, name, out[name])
        motion._commands = out
        for names in self.layouts:
            motion._command_layouts.setdefault(names, [])
        for names in motion._command_layouts:
            motion._command_layouts[names] = [(str(n), out[str(n)]) for n in names]
