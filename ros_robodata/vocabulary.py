"""The words every part of ros_robodata shares: outcomes, statuses, modes, event kinds, and how a user writes a
duration or a moment. One definition each, so a command, a node and a file never disagree on them."""

from __future__ import annotations

import math
import re
from datetime import datetime, timezone

from ros_robodata.errors import RobodataError

# What the operator (or the success criteria) says of an episode.
SUCCESS, FAILURE, RECOVERY, UNKNOWN = 'success', 'failure', 'recovery', 'unknown'
OUTCOMES = (SUCCESS, FAILURE, RECOVERY, UNKNOWN)

# recording: bag open; complete: closed normally; interrupted: closed by Ctrl-C/SIGTERM; incomplete: closed by an
# error (disk full) or recovered by `robodata repair`; discarded: the operator threw it away (kept on disk);
# approved / rejected: a reviewer's verdict, or `robodata approve`'s against a written policy; retired: its data
# deleted by `robodata retire` (only its catalog row and tombstone are left), never set by hand.
STATUSES = ('recording', 'complete', 'interrupted', 'incomplete', 'discarded', 'approved', 'rejected', 'retired')

# teleop: an operator commands the arm through a device; kinesthetic: the operator moves the arm by hand;
# autonomous: a policy or program ran the robot (deployed robots' logs); human: a person did the task with no robot
# (a phone video, a capture studio); unknown: not said (data imported from elsewhere).
MODES = ('teleop', 'kinesthetic', 'autonomous', 'human', 'unknown')
RECORDED_MODES = ('teleop', 'kinesthetic')  # what an operator at the rig records

# What the segmenter marks inside an episode, as in msg/SegmentEvent.msg.
GRASP_START = 'grasp_start'
CONTACT = 'contact'
CONTACT_LOST = 'contact_lost'
GRASP = 'grasp'
GRASP_FAILED = 'grasp_failed'
LIFT = 'lift'
RELEASE = 'release'
COLLISION = 'collision'
EVENT_KINDS = (GRASP_START, CONTACT, CONTACT_LOST, GRASP, GRASP_FAILED, LIFT, RELEASE, COLLISION)
# How each kind is drawn (RGB 0..1), the same in the live segmenter's labels and the overlay's timeline.
EVENT_COLOURS = {GRASP_START: (0.6, 0.6, 1.0), CONTACT: (1.0, 0.8, 0.2), CONTACT_LOST: (0.7, 0.7, 0.7),
                 GRASP: (0.2, 1.0, 0.2), GRASP_FAILED: (1.0, 0.2, 0.2), LIFT: (0.2, 0.9, 0.9), RELEASE: (1.0, 0.5, 1.0),
                 COLLISION: (1.0, 0.4, 0.0)}

# Files that hold a recording: rosbag2 storage, and the video containers phones and cameras write.
BAG_SUFFIXES = {'.mcap': 'mcap', '.db3': 'sqlite3'}
VIDEO_SUFFIXES = ('.mp4', '.mov', '.m4v', '.mkv', '.avi', '.webm')

_DURATION = re.compile(r'^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ms|s|min|h|d)\s*$')
_UNIT_NS = {'ms': 1e6, 's': 1e9, 'min': 60e9, 'h': 3600e9, 'd': 86400e9}


def parse_duration(text: str, option: str = 'duration', *, allow_zero: bool = False) -> int:
    """'0.5s', '500ms', '2min', '1h' or '7d' in ns. A unit is required, so that '50' is never read as 50 seconds by
    mistake."""
    match = _DURATION.match(str(text))
    if not match:
        raise RobodataError(f'{option}: {text!r} is not a duration; write it with a unit, e.g. 0.5s, 500ms or 2min')
    value = float(match[1]) * _UNIT_NS[match[2]]
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise RobodataError(f'{option}: must be {"0 or more" if allow_zero else "greater than 0"}, got {text!r}')
    return round(value)


def parse_time(text: str, origin_ns: int, where: str) -> int:
    """A moment written by a user: seconds from `origin_ns` ('12.5'; with origin 0, seconds since the epoch),
    nanoseconds since the epoch (an integer of 16 digits or more), or an ISO 8601 date and time
    ('2026-03-02T10:15:00Z'; no zone: UTC)."""
    text = str(text).strip()
    if re.fullmatch(r'\d{16,}', text):
        return _within_calendar(int(text), text, where)
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        if not math.isfinite(seconds) or seconds < 0:
            raise RobodataError(f'{where}: {text!r} is not a time: seconds must be 0 or more')
        return _within_calendar(origin_ns + round(seconds * 1e9), text, where)
    try:
        moment = datetime.fromisoformat(text.replace('Z', '+00:00'))
    except ValueError:
        raise RobodataError(f'{where}: {text!r} is not a time: give seconds, nanoseconds since the epoch or an ISO '
                            '8601 date and time (2026-03-02T10:15:00Z)') from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return round(moment.timestamp() * 1e9)


LAST_NS = 253_402_300_799 * 10**9  # 9999-12-31T23:59:59Z: the calendar's end, past which no time can be shown


def _within_calendar(ns: int, text: str, where: str) -> int:
    if ns > LAST_NS:
        raise RobodataError(f'{where}: {text[:40]!r} is not a time: later than the year 9999')
    return ns


def parse_since(text: str, now_ns: int, where: str = '--since') -> int:
    """The moment `--since` names: a duration back from now ('24h', '7d'), or a time as parse_time reads it with no
    origin (ISO 8601, seconds or nanoseconds since the epoch)."""
    if _DURATION.match(str(text)):
        return now_ns - parse_duration(text, where)
    try:
        return parse_time(text, 0, where)
    except RobodataError:  # every form --help advertises, not only the time forms
        raise RobodataError(f'{where}: {text!r} is neither a duration back from now (24h, 7d, 30min) nor a time '
                            '(2026-03-02, 2026-03-02T10:15:00Z, or seconds since the epoch)') from None


def check_choice(what: str, value: str, allowed: tuple[str, ...],
                 error: type[RobodataError] = RobodataError) -> str:
    """`value` if it is one of `allowed`, else one line (as `error`) naming what was expected."""
    if value not in allowed:
        raise error(f'{what} {value!r} is not one of {", ".join(allowed)}')
    return value
