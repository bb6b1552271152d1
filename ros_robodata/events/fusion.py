"""The gripper and the wrist together, where neither says it alone: a held object lifted off its support (the wrist
takes its weight), and a carried load that vanished, which the fingers then tell apart (closing on past the
hold: a slip; opening: a place) or, with neither for a while, is reported as a slip at low confidence. The
wrist's load while the object slipped out also says when it stopped rubbing on the fingers."""

from __future__ import annotations

from ros_robodata.events.event import Event, Evidence
from ros_robodata.events.event_log import EventLog
from ros_robodata.events.grasp_attempt import EMPTY, HOLDING, SLIPPED, GraspAttempt
from ros_robodata.events.gripper_track import GripperTrack
from ros_robodata.events.load import Vec
from ros_robodata.events.wrench_track import WrenchTrack
from ros_robodata.vocabulary import CONTACT_LOST, LIFT

# A carried load that vanished is a slip once the fingers close on past where they held, a place once they (or the
# command) open; with neither after this long (and three gripper samples), it is a guess, said as one.
AMBIGUOUS_S = 1.0


class Fusion:
    """Judgements that need both tracks; called by the detector on each sample, after the track took it in."""

    def __init__(self, fingers: GripperTrack, wrench: WrenchTrack, log: EventLog) -> None:
        self.fingers = fingers
        self.wrench = wrench
        self.log = log

    def carried_load(self, out: list[Event], t: int, load: Vec, size: float) -> None:
        """A wrist sample while a grasp holds (the lift, the load going) or after the object slipped out."""
        fingers = self.fingers
        g = fingers.grasp
        if fingers.state == HOLDING and g is not None and g.load is not None:
            lift = g.load.add(t, load, size)
            if lift is not None:
                along = g.load.axis is not None
                evidence = Evidence('wrench.load_along_weight' if along else 'wrench.load_step', lift[1],
                                    g.load.edge_threshold if along else 2 * g.load.threshold)
                self.log.emit(out, LIFT, lift[0], t, 0.85, [evidence], frame_id=self.wrench.frame)
            elif g.load.lifted:
                self._watch_slip(out, g, t)
        elif fingers.state == SLIPPED and g is not None and g.load is not None:
            # The falling object rubs on the fingers in bursts: contact is lost once the load has stayed at
            # none, steadily, for 0.1 s.
            g.load.add(t, load, size)
            quiet_since = g.load.quiet_since()
            if quiet_since is None or quiet_since < (g.slipped_ns or 0):
                g.quiet_from = None
            elif g.quiet_from is None:
                g.quiet_from = quiet_since
            elif t - g.quiet_from >= 150_000_000:
                self.log.emit(out, CONTACT_LOST, g.quiet_from, t, 0.7,
                              [Evidence('wrench.load', g.load.level(), g.load.edge_threshold)],
                              frame_id=self.wrench.frame)
                fingers.state = EMPTY

    def _watch_slip(self, out: list[Event], g: GraspAttempt, t: int) -> None:
        """The carried load dropped below half: a slip or a place, which the fingers say next (see holding_step
        and settle_slip); a grip whose own effort let go before the load went (with the command, if any, still
        closed) lost the object: a slip at once."""
        assert g.load is not None
        if not g.load.telling:  # the object is too light for the wrist to tell it from none
            return
        level = g.load.level()
        if level >= 0.5 * g.load.carried or g.slip_pending is not None:
            return
        start = g.slip_start(t)
        evidence = Evidence('wrench.load', level, 0.5 * g.load.carried)
        command = self.fingers.command
        let_go = (command is not None and g.loosened_ns is not None
                  and command.opened_since(g.loosened_ns - int(0.2e9), g.ref_x) is not None)
        if g.loosened and g.loosened_ns is not None and g.loosened_ns <= start and not let_go:
            effort = Evidence('gripper.effort_loosened', 1.0, 0.0)
            self.fingers.fail(out, start, t, [evidence, effort], 'the grip let go and the carried load vanished: the '
                              'object slipped out', contact_lost=False)
            self.fingers.state = SLIPPED  # contact_lost once the object stops rubbing on the fingers, or they open
            g.slipped_ns = t
            return
        g.slip_pending = (start, evidence, t)

    def settle_slip(self, out: list[Event], t: int) -> None:
        """A load that vanished with neither the fingers closing on nor opening (nor the command opening) for
        AMBIGUOUS_S: most likely the object fell while the grip stayed put, but nothing says it; a guess at low
        confidence, and a warning."""
        fingers = self.fingers
        g = fingers.grasp
        if fingers.state != HOLDING or g is None or g.slip_pending is None:
            return
        start, evidence, seen = g.slip_pending
        if g.load is not None and g.load.level() >= 0.75 * g.load.carried:
            g.slip_pending = None  # the load is back: the arm's own acceleration, not the object leaving
            return
        if fingers.command is not None and fingers.command.opened_since(start, g.ref_x) is not None:
            return  # the operator is letting go: the fingers' opening will make it a release
        if t - seen < max(AMBIGUOUS_S * 1e9, 3 * fingers.period_ns):
            return
        g.slip_pending = None
        fingers.fail(out, start, t, [evidence], 'the carried load vanished and the fingers neither closed on nor '
                     'opened: a slip is the likelier reading, not a certain one', contact_lost=False, confidence=0.4)
        self.log.doubts.append(f'at {start / 1e9:.3f} the carried load vanished with no finger motion either way: '
                               'reported as a slip at low confidence (a place whose opening came late, or a gripper '
                               'that does not close on after a slip?)')
        fingers.state = SLIPPED  # contact_lost once the object stops rubbing on the fingers, or they open
        g.slipped_ns = t
