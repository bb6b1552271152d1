"""The wrist wrench: its samples taken in (the load itself is load.py's), contact on a rig without a gripper, knocks
while the gripper holds nothing, and what the wrist tells the gripper's judgements (a contact felt too, a push
before the fingers stopped, the load a new grasp carries). It reads nothing of the gripper but what it is given."""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from ros_robodata.events.event import Event, Evidence
from ros_robodata.events.event_log import EventLog
from ros_robodata.events.load import GraspLoad, Vec, WristLoad
from ros_robodata.events.segmenter_settings import SegmenterSettings
from ros_robodata.signals.samples import WrenchReading
from ros_robodata.vocabulary import COLLISION, CONTACT, CONTACT_LOST

# A wrist transient this many times the contact threshold (and above what the free arm's own motion shows, and
# above COLLISION_MIN_N), while the gripper neither holds nor closes, is a collision if it is over within
# COLLISION_MAX_S: a knock, not the arm's own acceleration carrying the tool (a 1.5 kg tool at 3 m/s² reads 4.5 N
# for as long as the acceleration lasts) nor a push.
COLLISION_FACTOR = 3.0
COLLISION_MIN_N = 5.0
COLLISION_MAX_S = 0.3
# After the fingers open, the object they let go of may still brush them, and a knock rings: no collision is
# called this soon after either.
COLLISION_QUIET_S = 0.5


class WrenchTrack:
    """Feed `take` each wrench sample; the detector then asks for contact (no gripper) or a knock (a gripper)."""

    def __init__(self, settings: SegmenterSettings, log: EventLog) -> None:
        self.settings = settings
        self.log = log
        self.wrist = WristLoad(settings.contact_force_threshold_n)
        self.last_ns: int | None = None
        self.in_contact = False  # a wrench-only rig's contact
        self.free_loads: deque[float] = deque(maxlen=2500)  # |load| while free: what motion alone does
        self.free_seen = 0
        self.motion_floor = 0.0
        self.run: list[int] = []  # the samples beyond the contact threshold so far (wrench-only)
        self.frame = ''
        self.bump: list[tuple[int, float]] = []  # the wrist transient under way while free
        self.bumped_ns: int | None = None  # when the last collision ended

    def take(self, r: WrenchReading, holding: bool) -> tuple[Vec, float] | None:
        """The sample's load and its size, once the baseline is known; None for a sample skipped (counted) or
        still learning. `holding`: the gripper closes on or holds something (the baseline learns while free)."""
        f = r.force
        if not (math.isfinite(f[0]) and math.isfinite(f[1]) and math.isfinite(f[2])):
            self.log.skip('wrench_not_finite')
            return None
        if self.last_ns is not None and r.stamp_ns <= self.last_ns:
            self.log.skip('wrench_stamp_not_increasing')
            return None
        self.last_ns = r.stamp_ns
        self.frame = r.frame_id
        self.log.seen(r.stamp_ns)
        # The baseline and noise floor learn from the free wrist; a wrench-only rig's baseline follows slowly
        # even in contact, so one taken during a knock does not stick.
        return self.wrist.add(r.stamp_ns, f, free=not (holding or self.in_contact),
                              follow=not (self.settings.has_gripper and holding))

    @property
    def threshold(self) -> float:
        """The contact threshold (N): above the measured noise, or the profile's."""
        return self.wrist.threshold

    # --- what the wrist tells the gripper -------------------------------------------------------------------------
    def agrees(self, since_ns: int, now_ns: int) -> tuple[float, list[Evidence]]:
        """Confidence of a gripper contact, raised when the wrist felt it too (within 50 ms before, or since)."""
        if not self.settings.use_wrench or self.wrist.baseline is None:
            return 0.85, []
        peak = self.wrist.peak(since_ns - 50_000_000, now_ns)
        thr = self.wrist.threshold
        if peak > thr:
            return 0.97, [Evidence('wrench.force_change', peak, thr)]
        return 0.8, []

    def pushed(self, since_ns: int, stop_ns: int) -> tuple[int, Evidence] | None:
        """When the wrist felt a push between `since_ns` and the fingers' stop (a finger met the object first)."""
        if self.settings.use_wrench and self.wrist.baseline is not None:
            at = self.wrist.rose(since_ns, stop_ns)
            if at is not None:
                return at, Evidence('wrench.force_change', self.wrist.peak(at, stop_ns), self.wrist.threshold)
        return None

    def grasp_load(self) -> GraspLoad | None:
        """The wrist's watch over a grasp just secured (None: no wrist, or no baseline yet)."""
        if self.settings.use_wrench and self.wrist.baseline is not None:
            return GraspLoad(self.wrist.weight_axis(), self.wrist.threshold)
        return None

    # --- the wrist on its own -------------------------------------------------------------------------------------
    def learn_motion_floor(self, size: float) -> None:
        """What the free wrist reads from the arm's own motion: 1.5x the 99th percentile of its recent loads,
        recomputed every 100 samples (a percentile a sample would cost the live node more than the rest)."""
        self.free_loads.append(size)
        self.free_seen += 1
        if self.free_seen % 100 == 0:
            self.motion_floor = 1.5 * float(np.percentile(self.free_loads, 99))

    def wrench_only_contact(self, out: list[Event], t: int, size: float) -> None:
        """Wrench-only rigs: contact while the load stands above the noise (3 samples), lost below half of it.

        Without a gripper to say when a grasp is on, the arm's own accelerations must not read as contact: the
        threshold also stays above what the free wrist showed lately."""
        if not self.in_contact:
            self.learn_motion_floor(size)
        thr = self.wrist.threshold
        if self.settings.contact_force_threshold_n is None:
            thr = max(thr, self.motion_floor)
        beyond = size > thr if not self.in_contact else size < thr / 2
        if not beyond:
            self.run.clear()
            return
        self.run.append(t)
        needed = 3 if not self.in_contact else 10
        if len(self.run) < needed:
            return
        at = self.run[0]
        self.run.clear()
        self.in_contact = not self.in_contact
        kind = CONTACT if self.in_contact else CONTACT_LOST
        self.log.emit(out, kind, at, t, 0.8, [Evidence('wrench.force_change', size, thr if self.in_contact
                                                       else thr / 2)], frame_id=self.frame)

    def watch_bump(self, out: list[Event], t: int, size: float, idle: bool, opened_ns: int | None) -> None:
        """Collision: a wrist transient well above the noise and above what the free arm's own motion shows,
        while the gripper neither holds nor closes (`idle`) nor just let go of something (opened at `opened_ns`)."""
        quiet_ns = COLLISION_QUIET_S * 1e9  # after an opening, and after a knock (it rings)
        free = idle and not (
            opened_ns is not None and t - opened_ns < quiet_ns) and not (
            self.bumped_ns is not None and t - self.bumped_ns < quiet_ns)
        if not free:
            self.bump.clear()
            return
        thr = max(COLLISION_FACTOR * self.wrist.threshold, self.motion_floor, COLLISION_MIN_N)
        if not self.bump:
            self.learn_motion_floor(size)
        if size > thr:
            self.bump.append((t, size))
            return
        if len(self.bump) >= 3 and size < thr / 2 and t - self.bump[0][0] <= COLLISION_MAX_S * 1e9:
            peak = max(v for _, v in self.bump)
            self.log.emit(out, COLLISION, self.bump[0][0], t, 0.8, [Evidence('wrench.peak_force', peak, thr)],
                          note=f'a {peak:.1f} N knock while not holding', frame_id=self.frame)
            self.bumped_ns = t
        if size < thr / 2 or len(self.bump) < 3:
            self.bump.clear()
