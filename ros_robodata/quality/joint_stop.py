"""Why a joint that held still while its command moved is no fault: it rests at an end of its travel (an end
stop, a readback clipped there, a follower whose leader asks past its stop), or it is a finger closed on an object.
Used per episode (motion.py) and over a dataset's travel (patterns.py)."""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ['END_MARGIN_SHARE', 'END_STOP_SHARE', 'HAND_WORDS', 'KNOWN_TRAVEL_SHARE', 'LATE_FACTOR', 'TWITCH_SHARE',
           'explain_stuck', 'is_hand_joint']

END_STOP_SHARE = 0.05  # of a joint's travel: a reading this close to its lowest or highest is at an end
KNOWN_TRAVEL_SHARE = 0.5  # readings over this share of the travel show where a joint's ends are
# A stretch whose command moved by less than this share of all the command's travel is a twitch of the leader
# inside the follower's deadband (a hobby servo does not answer a degree); motion.py's stuck_command_share.
TWITCH_SHARE = 0.25
END_MARGIN_SHARE = 0.2  # ... and a command that stays this close to that end does not move it off the stop
# A follower still no longer after its command moved than this many times its usual answer (the median delay from
# its command's move to its own, over the dataset) is answering late, not stuck: twice, as a teleop loop's delay
# varies with the operator's speed and a frame's jitter, while a stuck joint does not answer at all.
LATE_FACTOR = 2.0
# Joint names that say a hand or a gripper (LeRobot's and common hands' conventions: Inspire, Shadow, Allegro,
# SO-101's gripper, ALOHA's): an object in the fingers holds them where their command is not.
HAND_WORDS = ('gripper', 'hand', 'finger', 'thumb', 'index', 'middle', 'ring', 'pinky', 'little', 'claw', 'jaw')


def explain_stuck(name: str, spans: Sequence[Sequence[float]], readings: Sequence[float],
                  commands: Sequence[float] | None = None, twitch_share: float = TWITCH_SHARE,
                  deadband: float | None = None, latency: float | None = None, startup: float | None = None
                  ) -> str:
    """Why a joint that held still while its command moved is no fault, given where its readings reach
    (`readings`: low, high, this episode's or the dataset's) and its commands (`commands`): '' when any of its
    stretches (held value, command low, command high) is not explained. At an end stop the reading rests within
    END_STOP_SHARE of the readings' end and the command stays beyond that end or within END_MARGIN_SHARE of it
    (a follower whose leader asks past its stop, a readback clipped there); a hand joint's command going on past
    where it held is an object in the fingers. A stretch whose command moved by less than `twitch_share` of all
    the command's travel is a twitch of the leader inside the follower's deadband, not held against the joint; so is
    one whose command moved by at most twice `deadband` (the widest gap to its command the joint typically rests
    with, over the dataset: a servo that rests that far off its command does not answer a command wandering inside
    that band, either side of it). A stretch still no longer than LATE_FACTOR times the follower's usual answer
    after its command moved (a stretch's fourth value) is a follower answering late, not a stuck one: against
    `startup`, its usual first answer, for a stretch held since the episode's start (its fifth value 1.0: drivers
    enabling, a follower catching on), else against `latency` (a teleop loop's delay).

    Args:
        name: the joint (its name says whether it is a hand or gripper joint).
        spans: its stretches: held value, command low, command high, and optionally s since its command moved and
            1.0 if held since the episode's start (JointMotion.stuck_detail).
        readings: the lowest and highest reading of the joint (this episode's, or the dataset's).
        commands: the lowest and highest command (default: `readings`).
        twitch_share: a command travel under this share of its whole travel is a twitch.
        deadband: the joint's widest gap to its command at rest over the dataset (None: unknown).
        latency: its usual answer to its command after an operator's stop, in s (None: unknown).
        startup: its usual first answer at an episode's start, in s (None: unknown).
    """
    low, high = readings
    c_low, c_high = commands if commands is not None else readings
    travel = max(high - low, c_high - c_low, 1e-9)
    margin = END_MARGIN_SHARE * travel
    known = high - low >= KNOWN_TRAVEL_SHARE * travel  # the readings show where its ends are
    reasons = set()
    for held, lo, hi, *cue in spans:
        usual = (startup if len(cue) > 1 and cue[1] else latency) if cue else None
        late = usual is not None and cue[0] <= LATE_FACTOR * usual
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
        elif late and len(cue) > 1 and cue[1]:
            reasons.add(f'its follower starts answering its command late at an episode\'s start (typically '
                        f'{startup:.2g} s after it first moves, in this dataset: drivers enabling, a follower '
                        'catching on)')
        elif late:
            reasons.add(f'its follower answers its command late (typically {latency:.2g} s after it moves, in this '
                        'dataset)')
        elif deadband is not None and hi - lo <= 2 * deadband:
            reasons.add(f'its command moved by less than the follower\'s deadband (it rests up to {deadband:.3g} '
                        'off its command)')
        else:
            return ''
    return '; '.join(sorted(reasons))


def is_hand_joint(name: str) -> bool:
    """Whether a joint's name says it moves a finger or a gripper jaw."""
    words = {w.lower() for w in re.findall(r'[A-Z]?[a-z]+|[A-Z]+(?![a-z])', name)}  # snake_case, camelCase
    return bool(words & set(HAND_WORDS))
