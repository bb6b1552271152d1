"""The simulated cell as a rig: episodes one after another on one unbroken timeline, as a real cell runs all day.

Between two episodes the arm goes home and the next scene is set up while every sensor keeps publishing: no gap
in the stamps, no lost sample, no jump in the joints (the next episode's physics starts from the joint state the
last one ended in). The hand-over to the next scene happens on a whole second of rig time, where every stream's
sample grid (100, 500, 30, 10 Hz ...) lines up, so each stream keeps its exact period across it.

Two ways to start an episode:
- 'auto': the scripted operator starts each one itself (it then also presses start and stop on a recorder, in
  the node); the first begins after `lead_in_s` so that a recorder's pre-roll has something to keep;
- 'key': the cell holds at home until `begin()` (the operator's start key, seen as a START event) and goes home
  at `end()` (the stop key), or when it acted its episode out and the operator stops it.

Use:

    rig = SimRig(seed=0, start='auto')
    while running:
        samples, events = rig.step_until(wall_clock_s - t0)   # samples: (stamp ns from the rig's start, Sample)
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ros_robodata.sim import sim_samples as S
from ros_robodata.sim.cell import SimCell
from ros_robodata.sim.faults import Fault
from ros_robodata.sim.scene_assets import SceneAssets, prepare_scene
from ros_robodata.sim.sensors import prepare_in_background

STARTS = ('auto', 'key')


@dataclass
class RigEvent:
    """'begin': an episode's script starts (index, seed); 'done': it was acted out (with its ground truth);
    'ready': a new scene is set and the cell waits for the start key (start='key')."""

    kind: str
    index: int
    seed: int
    at_ns: int  # rig time (ns since the rig started)
    truth: dict[str, Any] = field(default_factory=dict)  # its 'start_ns': rig time of the scene's time 0


class SimRig:
    def __init__(self, seed: int, mode: str = 'teleop', *, start: str = 'auto', episodes: int = 0,
                 faults: list[Fault] | None = None, streams: Iterable[str] | None = None,
                 rates: dict[str, float] | None = None, image_size: tuple[int, int] = (320, 240),
                 lead_in_s: float = 1.0) -> None:
        if start not in STARTS:
            raise ValueError(f'start {start!r} is not one of {", ".join(STARTS)}')
        self.seed, self.mode, self.start, self.episodes = seed, mode, start, episodes
        self._faults, self._streams, self._rates, self._image_size = faults, streams, rates, image_size
        self._lead_in_s = lead_in_s
        self.index = 0
        self._offset_ns = 0  # rig time of the current cell's time 0
        self._handover_s: float | None = None  # cell time of the next hand-over, once decided
        self._reported = False  # 'done' said for the current cell
        self._ended = False  # end() asked for the current cell
        self._pending: list[RigEvent] = []
        # The next scene, made on a thread while the arm goes home: made at the hand-over itself, its camera
        # renderer held the publishing thread for 100-150 ms and every stream went out late at each boundary.
        self._next_assets: SceneAssets | None = None
        self._preparing: threading.Thread | None = None
        self.cell = self._build(None)
        self.finished = False  # every episode asked for is done and the arm is home

    @property
    def seed_now(self) -> int:
        return self.seed + self.index

    @property
    def now_ns(self) -> int:
        return self._offset_ns + round(self.cell.time * 1e9)

    def _build(self, previous: SimCell | None) -> SimCell:
        key = self.start == 'key' or (previous is None and self._lead_in_s > 0)
        cell = SimCell(self.seed_now, self.index, self.mode, faults=self._faults, streams=self._streams,
                       rates=self._rates, image_size=self._image_size, wait_for_begin=key,
                       start_state=previous.arm_state() if previous is not None else None,
                       assets=self._take_prepared())
        if self.start == 'key':
            self._pending.append(RigEvent('ready', self.index, self.seed_now, self._offset_ns))
        elif not key:
            self._pending.append(RigEvent('begin', self.index, self.seed_now, self._offset_ns))
        return cell

    def begin(self) -> bool:
        """The start key: the operator begins the waiting episode; False when none is waiting."""
        if self.cell.phase != 'hold' or self._handover_s is not None:
            return False
        self.cell.begin()
        self._pending.append(RigEvent('begin', self.index, self.seed_now, self.now_ns))
        return True

    def end(self) -> None:
        """The stop key: the episode is over (acted out or not); the arm goes home and the next scene comes."""
        self._ended = True

    def step_until(self, t_s: float) -> tuple[list[tuple[int, S.Sample]], list[RigEvent]]:
        """Advance the rig to `t_s` (seconds since it started): the samples that fell due, stamped in ns since the
        rig started, and what happened on the way."""
        out: list[tuple[int, S.Sample]] = []
        while True:
            cell_t = t_s - self._offset_ns / 1e9
            if self._handover_s is not None:
                cell_t = min(cell_t, self._handover_s - self.cell.timestep)  # the old scene's last step
            out += [(self._offset_ns + round(s.stamp * 1e9), s) for s in self.cell.step_until(cell_t)]
            if self._handover_s is not None and t_s * 1e9 >= self._offset_ns + self._handover_s * 1e9:
                self._hand_over()
                continue
            self._advance()
            break
        events, self._pending = self._pending, []
        return out, events

    def _advance(self) -> None:
        cell = self.cell
        if self.start == 'auto' and cell.phase == 'hold' and cell.time >= self._lead_in_s:
            self.begin()
        if cell.phase == 'script' and cell.finished and not self._reported:
            self._reported = True
            truth = {**cell.ground_truth(), 'start_ns': self._offset_ns}
            self._pending.append(RigEvent('done', self.index, self.seed_now, self.now_ns, truth))
            if self.start == 'auto':
                self._ended = True
        if self._ended and cell.phase != 'home':
            if not self._reported:  # stopped before the script was through: what happened until then
                self._reported = True
                truth = {**cell.ground_truth(), 'start_ns': self._offset_ns, 'cut_short': True}
                self._pending.append(RigEvent('done', self.index, self.seed_now, self.now_ns, truth))
            cell.go_home()
            self._prepare_next()
        if cell.phase == 'home' and cell.at_home and self._handover_s is None:
            if self.episodes and self.index + 1 >= self.episodes:
                self.finished = True
                return
            self._handover_s = float(math.floor(cell.time) + 1)  # the next whole second: every grid lines up

    def _hand_over(self) -> None:
        assert self._handover_s is not None
        previous = self.cell
        self._offset_ns += round(self._handover_s * 1e9)
        self._handover_s = None
        self._reported = self._ended = False
        self.index += 1
        try:
            self.cell = self._build(previous)
        finally:
            previous.close()

    def _prepare_next(self) -> None:
        if self._preparing is not None or not prepare_in_background():
            return
        if self.episodes and self.index + 1 >= self.episodes:
            return
        seed = self.seed_now + 1

        def prepare() -> None:
            self._next_assets = prepare_scene(seed, streams=self._streams, image_size=self._image_size,
                                              cameras_for_another_thread=True)

        self._preparing = threading.Thread(target=prepare, name='sim-next-scene', daemon=True)
        self._preparing.start()

    def _take_prepared(self) -> SceneAssets | None:
        """The scene made ahead (None when there is none or making it failed: the cell then makes its own)."""
        if self._preparing is None:
            return None
        self._preparing.join()
        self._preparing = None
        assets, self._next_assets = self._next_assets, None
        return assets

    def close(self) -> None:
        assets = self._take_prepared()
        if assets is not None:
            assets.close()
        self.cell.close()

    def __enter__(self) -> SimRig:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
