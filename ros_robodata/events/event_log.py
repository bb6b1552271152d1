"""The events one episode's detector confirmed, with what it skipped and noted on the way: every track emits
through this one log, so the minimum gap between two events of a kind holds whichever signal saw them."""

from __future__ import annotations

from ros_robodata.events.event import Event, Evidence


class EventLog:
    """Events in the order they were confirmed; `skipped` counts unusable samples by reason, `marks` are internal
    moments for the timeline (the gripper open again), `doubts` events reported as guesses (said as warnings)."""

    def __init__(self, min_event_gap_s: float) -> None:
        self.min_event_gap_s = min_event_gap_s
        self.events: list[Event] = []
        self.skipped: dict[str, int] = {}
        self.marks: list[tuple[int, str]] = []
        self.doubts: list[str] = []
        self.first_ns: int | None = None
        self.last_ns: int | None = None

    def emit(self, out: list[Event], kind: str, stamp_ns: int, now_ns: int, confidence: float,
             evidence: list[Evidence], note: str = '', frame_id: str = '') -> None:
        """Add an event (to the log and to `out`), unless one of its kind is within the minimum gap of it."""
        gap_ns = int(self.min_event_gap_s * 1e9)
        for e in reversed(self.events):
            if e.kind == kind and abs(stamp_ns - e.stamp_ns) < gap_ns:
                return
            if stamp_ns - e.stamp_ns > gap_ns:
                break
        event = Event(kind, stamp_ns, round(confidence, 3), tuple(evidence), now_ns, frame_id, note)
        self.events.append(event)
        out.append(event)

    def seen(self, stamp_ns: int) -> None:
        """A usable sample of any signal: the episode spans it."""
        if self.first_ns is None or stamp_ns < self.first_ns:
            self.first_ns = stamp_ns
        if self.last_ns is None or stamp_ns > self.last_ns:
            self.last_ns = stamp_ns

    def skip(self, why: str) -> list[Event]:
        """A sample not used, counted by why; no events came of it."""
        self.skipped[why] = self.skipped.get(why, 0) + 1
        return []
