"""One grasp attempt, from the fingers starting to close to their opening: what the gripper's steps and the fusion
with the wrist learn of it on the way, and the states the fingers pass through."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from ros_robodata.events.event import Evidence
from ros_robodata.events.load import GraspLoad

# The fingers' states: at rest (idle), closing, stopped on something (gripping), holding it, opening after a hold
# (letting go), closed on nothing (empty), and closed after the object slipped out (slipped).
IDLE, CLOSING, GRIPPING, HOLDING, EMPTY, SLIPPED = 'idle', 'closing', 'gripping', 'holding', 'empty', 'slipped'
LETTING_GO = 'letting_go'

RECENT_SAMPLES = 512  # the closing path kept to stamp where it reached its rest


@dataclass
class GraspAttempt:
    """The current grasp attempt, from the start of closing to the opening."""

    start_ns: int
    start_x: float = 1.0
    announced: bool = False
    contact_ns: int | None = None
    stall_ns: int | None = None
    stall_x: float = math.nan
    ref_x: float = math.nan
    confirmed: bool = False
    loosened: bool = False
    loosened_ns: int | None = None  # when the holding effort went (a slip starts there)
    peak_effort: float = 0.0
    load: GraspLoad | None = None  # the wrist's view of this grasp, from its confirmation on
    slipped_ns: int | None = None
    quiet_from: int | None = None
    slip_pending: tuple[int, Evidence, int] | None = None  # the carried load went: (when, evidence, seen) until
    # what the fingers do next says whether it slipped or was set down
    hold_x: float = math.nan  # where the grasp settled (slow creep moves it, a slip's closing on does not)
    # Where the grasp was secured: creep moves the hold at most a closed margin from it. A slip sinking slower
    # than the velocity threshold (a follower at 30 Hz closing to its leader) would otherwise drag the hold down.
    secured_x: float = math.nan
    pressed: bool = False  # the command pressed the held fingers further shut
    letgo: tuple[int, list[Evidence], bool] | None = None  # an opening under way: (onset, evidence, placed)
    left_ns: int | None = None  # when the opening fingers passed back where they met the object
    # The opening's first samples, when it was first seen just after a gap in the stream (a tracker that lost its
    # markers as the hand let go): the speed after the gap dates its start better than the jump across it.
    letgo_after_gap: list[tuple[int, float]] | None = None
    sinking_ns: int | None = None  # when the fingers began closing on past where they held
    closed_since: int | None = None  # when they crept into the closed margin while the command neither held nor opened
    moving: tuple[int, float, float] | None = None  # the last sample where the fingers clearly closed (t, x, v)
    stop_ns: int | None = None  # when the fingers stopped on the object, from that sample's speed
    pause_x: float = math.inf  # where a staged close paused
    fast: tuple[int, float, float] | None = None  # the last sample where they closed at twice the threshold
    stop_x: float = math.nan  # where they first stood still after closing
    stopped_since: int | None = None  # since when they stand still (no command, no effort: a pause or contact)
    press_since: int | None = None  # since when the command presses the stopped fingers further shut
    peak_v: float = 0.0  # the closing speed's peak in this stroke (stroke fractions per second; reset by a pause)
    rest_since: int | None = None  # since when the fingers stand still within this stroke
    seen_ns: int = 0  # the sample that started this attempt
    efforts: list[tuple[int, float]] = field(default_factory=list)  # (stamp, effort) while closing
    fast_pts: list[tuple[int, float]] = field(default_factory=list)  # the last samples closing at speed
    slow_pts: list[tuple[int, float]] = field(default_factory=list)  # the first samples after the stroke slowed
    slowed_gradually: bool = False  # after its cruise the stroke still closed at speed a while: it eased in
    knee_x: float = math.nan  # where the fingers met the object (the closing's end, before any squeeze)
    new_stroke: bool = False  # a pause ended the last cruise: the next one starts the line afresh
    recent: deque[tuple[int, float]] = field(default_factory=lambda: deque(maxlen=RECENT_SAMPLES))  # (t, x) closing

    def load_gone_before(self, before_ns: int) -> tuple[int, Evidence] | None:
        """When the carried load had already dropped below three quarters before the gripper opened: the time
        it was last carried, with the evidence; None when the object was still carried (or nothing says)."""
        if self.load is None or not self.load.telling:
            return None
        level = self.load.level_before(before_ns)
        if level is None or level >= 0.75 * self.load.carried:
            return None
        return self.slip_start(before_ns), Evidence('wrench.load', level, 0.75 * self.load.carried)

    def slip_start(self, default: int) -> int:
        """A loosened grip lets go at once; else the load was last carried at the window's middle."""
        assert self.load is not None
        return self.loosened_ns or self.load.carrying_ns or default
