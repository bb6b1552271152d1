"""The replay's keys: what the reviewer presses while an episode plays, and the one status line it shows."""

from __future__ import annotations

from ros_robodata.replay.playback import step_rate
from ros_robodata.replay.player import Replay

SEEK_STEP_S = 5.0
_SEQUENCES = {'\x1b[C': 'right', '\x1b[D': 'left', '\x1b[A': 'up', '\x1b[B': 'down',
              '\x1bOC': 'right', '\x1bOD': 'left', '\x1bOA': 'up', '\x1bOB': 'down'}
HELP = 'space pause/resume, <-/-> 5 s, n/p next/previous event, +/- rate, . one message (paused), q quit'


def split_keys(text: str) -> list[str]:
    """Typed text into keys: arrows come as escape sequences ('right', 'left', 'up', 'down'); other escapes
    (function keys) are dropped."""
    keys, i = [], 0
    while i < len(text):
        if text[i] == '\x1b':
            sequence = text[i:i + 3]
            if sequence in _SEQUENCES:
                keys.append(_SEQUENCES[sequence])
                i += 3
                continue
            end = i + 2  # a CSI or SS3 sequence runs to its final byte (@ .. ~)
            while end < len(text) and not '@' <= text[end] <= '~':
                end += 1
            i = end + 1 if text[i + 1:i + 2] in ('[', 'O') else i + 1
            continue
        keys.append(text[i])
        i += 1
    return keys


def press(replay: Replay, key: str) -> str | None:
    """Do what `key` asks; returns what happened, for the status line ('quit' asks the caller to stop)."""
    clock = replay.clock
    if key == 'q':
        return 'quit'
    if key == ' ':
        return 'paused' if clock.toggle() else 'playing'
    if key in ('right', 'left', 'up', 'down'):
        step = SEEK_STEP_S if key in ('right', 'up') else -SEEK_STEP_S
        return f'at {(replay.seek_by(step) - replay.begin_ns) / 1e9:.2f} s'
    if key in ('n', 'p'):
        target = replay.next_event() if key == 'n' else replay.previous_event()
        if target is None:
            return 'no event ' + ('after' if key == 'n' else 'before') + ' this point' if replay.events_ns else \
                'this episode has no events (run `robodata segment` on it)'
        return f'event lead-in at {(target - replay.begin_ns) / 1e9:.2f} s'
    if key in ('+', '=', '-', '_'):
        clock.set_rate(step_rate(clock.rate, up=key in ('+', '=')))
        return f'rate {clock.rate:g}x'
    if key == '.':
        return 'one message' if replay.play_next() else 'press space to pause first'
    return None


def status_line(replay: Replay, said: str = '') -> str:
    clock = replay.clock
    now = clock.now()
    state = 'paused ' if clock.paused else 'playing'
    upcoming = [t for t in replay.events_ns if t > now]
    event = f'  next event in {(upcoming[0] - now) / 1e9:.1f} s' if upcoming else ''
    line = (f'{state} {(now - replay.begin_ns) / 1e9:7.2f} / {(replay.end_ns - replay.begin_ns) / 1e9:.2f} s  '
            f'rate {clock.rate:g}x{event}')
    return f'{line}  ({said})' if said else line
