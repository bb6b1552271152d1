"""Why a joint that held still while its command moved is no fault: it rests at an end of its travel (an end
stop, a readback clipped there, a follower whose leader asks past its stop), or it is a finger closed on an object.
Used per episode (motion.py) and over a dataset's travel (patterns.py)."""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ['END_MARGIN_SHARE', 'END_STOP_SHARE', 'HAND_WORDS', 'KNOWN_TRAVEL_SHARE', 'TWITCH_SHARE',
           'explain_stuck', 'is_hand_joint']

END_STOP_SHARE = 0.05  # of a joint's travel: a reading this close to its lowest or highest is at an end
KNOWN_TRAVEL_SHARE = 0.5  # readings over this share of the travel show where a joint's ends are
# A stretch whose command moved by less than this share of all the command's travel is a twitch of the leader
# inside the follower's deadband (a hobby servo does not answer a degree); motion.py's stuck_command_share.
TWITCH_SHARE = 0.25
END_MARGIN_SHARE = 0.2  # ... and a command that stays this close to that end does not move it off the stop
# Joint names that say a hand or a gripper (LeRobot's and common hands' conventions: Inspire, Shadow, Allegro,
# SO-101's gripper, ALOHA's): an object in the fingers holds them where their command is not.
HAND_WORDS = ('gripper', 'hand', 'finger', 'thumb', 'index', 'middle', 'ring', 'pinky', 'little', 'claw', 'jaw')


def explain_stuck(name: str, spans: Sequence[Sequence[float]], readings: Sequence[float],
                  commands: Sequence[float] | None = None, twitch_share: float = TWITCH_SHARE) -> str:
    """Why a joint that held still while its command moved is no fault, given where its readings reach
    (`readings`: low, high, this episode's or the dataset's) and its commands (`commands`): '' when any of its
    stretches (held value, command low, command high) is not explained. At an end stop the reading rests within
    END_STOP_SHARE of the readings' end and the command stays beyond that end or within END_MARGIN_SHARE of it
    (a follower whose leader asks past its stop, a readback clipped there); a hand joint's command going on past
    where it held is an object in the fingers. A stretch whose command moved by less than `twitch_share` of all
    the command's travel is a twitch of the leader inside the follower's deadband, not held against the joint."""
    low, high = readings
    c_low, c_high = commands if commands is not None else readings
    travel = max(high - low, c_high - c_low, 1e-9)
    margin = END_MARGIN_SHARE * travel
    known = high - low >= KNOWN_TRAVEL_SHARE * travel  # the readings show where its ends are
    reasons = set()
    for held, lo, hi in spans:
        at_low = known and held - low <= END_STOP_SHARE * travel and hi <= held + margin
        at_high = known and high - held <= END_STOP_SHARE * travel and lo >= held - margin
        if is_hand_joint(name) and (lo >= held or hi <= held or (lo < held if held - low <= high - held
                                                                 else hi > held)):
            # Its command on one side of where it held, or past it towards the end it held nearer to (fingers
            # closed on an object sit towards their closed end, and a tighter squeeze does not move them).
            reasons.add('a hand joint whose command went on past where it held (closed on an object, or at its '
                        'end stop)')
        elif at_low or at_high:
            reasons.add('at the end of its travel, its command beyond that end or within a small margin of it (an '
                        'end stop, or a readback clipped there)')
        elif hi - lo < twitch_share * (c_high - c_low):
            reasons.add("its command only twitched there, within the follower's deadband")
        else:
            return ''
    return '; '.join(sorted(reasons))


def is_hand_joint(name: str) -> bool:
    """Whether a joint's name says it moves a finger or a gripper jaw."""
    words = {w.lower() for w in re.findall(r'[A-Z]?[a-z]+|[A-Z]+(?![a-z])', name)}  # snake_case, camelCase
    return bool(words & set(HAND_WORDS))
