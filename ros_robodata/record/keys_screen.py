"""What `robodata keys` does with a key, and what it shows the operator: no ROS, no terminal.

The operator at a rig has one hand on the teleop device and glances at a terminal, often over
SSH. So the screen is a few lines of plain text, and every decision behind it (what space means
right now, which warnings are still current, how long the episode has run) lives here, fed with
plain data, so it is tested without a recorder. The node (ros_robodata/nodes/keys_node.py) only feeds
it events, diagnostics, quality results and service replies, and sends the requests it returns.

The recorder is the authority: the screen never assumes a request worked until the recorder's
reply or its /robodata/episode_events say so, and it resynchronises from /diagnostics when it
joined late or missed an event. With a shot list (`robodata session --protocol`), the take to record next
is shown too, and n and 1-9 skip or change it.

Why one module: what a key means depends on the whole screen's state at once (an episode running, a
request unanswered, a take recording or shown), and what the screen says is that same state; split into
keys, state and rendering, each part would need the others' internals.
"""

from __future__ import annotations

import re
import textwrap
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

# Key -> action. Space toggles, so the episode's two ends are the same key under the thumb.
KEYMAP: dict[str, str] = {
    ' ': 'toggle',
    's': 'success',
    'f': 'failure',
    'r': 'recovery',
    'd': 'discard',
    'q': 'quit',
    '\x03': 'quit',  # Ctrl-C arriving as a byte (a raw terminal, a pipe)
    '\x04': 'quit',  # Ctrl-D
    'n': 'skip',  # the shot list (`robodata session --protocol`): the next take instead of the one shown
}
TAKE_KEYS = '123456789'  # with a shot list: key N cycles the level of the take's Nth factor
OUTCOME_ACTIONS = ('success', 'failure', 'recovery')
HELP = 'keys: space start/stop, s success, f failure, r recovery, d discard, q quit'  # fits 80 columns
TAKE_HELP = 'take: space records it, n skips it, {keys} change {factors}'

# Levels as diagnostic_msgs/DiagnosticStatus and ros_robodata/msg/QualityStatus number them.
OK, WARN, ERROR, STALE = 0, 1, 2, 3
LEVEL_NAMES = {OK: 'OK', WARN: 'WARN', ERROR: 'ERROR', STALE: 'STALE'}

RECORDER_STATUS = 'robodata recorder'  # the recorder's head status in /diagnostics
_TOPIC_STATUS_PREFIX = RECORDER_STATUS + ': '
DISK_STATUS = 'robodata recorder disk'  # the free space on the dataset's disk, in recording time
TAKE_STATUS = 'robodata take'  # the shot list's verdict on the take's measured conditions (out of spec: WARN)
_RECORDING = re.compile(r'recording (\S+) \((\d+) s\)')

# A warning stays on screen this long after it was last reported: per-topic diagnostics repeat
# every second, quality results presumably as often; a one-off recorder error (disk full,
# auto-stop) must stay long enough for someone whose eyes were on the robot.
TOPIC_HOLD_S = 3.0
QUALITY_HOLD_S = 10.0
NOTICE_HOLD_S = 15.0
RESYNC_AFTER = 2  # consecutive /diagnostics that contradict the screen before it believes them
RESYNC_DRIFT_S = 2.0  # the ticking duration is corrected when the recorder's differs by more
MESSAGES_SHOWN = 3  # the last replies and refusals: a press ignored in a burst is not overwritten by the next
_PAST = {'start': 'started', 'stop': 'stopped', 'discard': 'discarded'}


@dataclass(frozen=True)
class Request:
    """What the node must send: a service call on the recorder ('start', 'stop', 'discard',
    'outcome' with `outcome`), a shot list command ('take' with `command`: 'skip', 'cycle FACTOR'), or 'quit'."""

    service: str
    outcome: str = ''
    command: str = ''


@dataclass
class _Live:
    episode_id: str
    task: str
    started_at: float  # on the screen's clock
    outcome: str = ''


@dataclass
class _Done:
    episode_id: str
    status: str
    outcome: str = ''


@dataclass
class _Warning:
    level: int
    text: str
    seen_at: float
    hold_s: float
    source: str  # 'recorder' or 'quality': the one whose next update confirms or clears it


def problem_key(topic: str, check: str) -> str:
    """One problem, whoever reports it: the recorder's 'silent for 2.1 s' on a topic and the quality monitor's
    timing.silent on it are the same thing to the operator, shown once."""
    return f'{check}:{topic}'


def _recorder_check(text: str) -> str:
    """The quality check a recorder per-topic status means, so both sources share one key."""
    if text.startswith('silent'):
        return 'timing.silent'
    if 'lost' in text:
        return 'timing.loss'
    return 'recorder'


def action_for(key: str) -> str | None:
    """The action of a key; letters work with caps lock on too."""
    return KEYMAP.get(key) or KEYMAP.get(key.lower())


def format_duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f'{hours}:{minutes:02d}:{secs:02d}' if hours else f'{minutes:02d}:{secs:02d}'


class KeysScreen:
    """The state of one keys session; not thread-safe (the node holds a lock around it)."""

    def __init__(self, recorder: str = '/recorder', *, clock: Callable[[], float] = time.monotonic) -> None:
        self.recorder = recorder
        self.clock = clock
        self.ready = False
        self.episode: _Live | None = None
        self.last: _Done | None = None
        self.last_outcome: tuple[str, str] | None = None  # (episode id, outcome)
        self.messages: deque[str] = deque(maxlen=MESSAGES_SHOWN)
        self.busy: set[str] = set()  # start/stop/discard sent and not answered
        self.quitting = False
        self.warnings: dict[str, _Warning] = {}
        self._ended: set[str] = set()  # episodes known stopped: a late reply must not revive them
        self._disagreements = 0
        self.quality_line = ''  # the quality monitor's summary, when one runs
        self.quality_seen_at = 0.0
        self.disk_line = ''  # the recorder's word on the dataset disk's room
        self.disk_seen_at = 0.0
        self._quality_batch: set[str] = set()  # problems the monitor reported since its last summary
        self.take_line = ''  # the shot list's take, when a session captures to a protocol
        self.take_factors: list[str] = []
        self.take_recording = False

    @property
    def message(self) -> str:
        """The latest reply or refusal ('' when none)."""
        return self.messages[-1] if self.messages else ''

    @message.setter
    def message(self, text: str) -> None:
        if text:
            self.messages.append(text)
        else:
            self.messages.clear()

    # -- keys -------------------------------------------------------------------------------------

    def press(self, key: str) -> Request | None:
        """The request a key asks for now, or None (the reason is in `message`)."""
        if key in '\r\n':
            return None
        if key in TAKE_KEYS or action_for(key) == 'skip':
            return self._take_request(key)
        action = action_for(key)
        if action is None:
            self.message = f'key {key!r} does nothing'
            return None
        if action == 'quit':
            self.quitting = True
            return Request('quit')
        if not self.ready:
            self.message = f'recorder {self.recorder} not available yet: {action} ignored'
            return None
        if action in OUTCOME_ACTIONS:
            return Request('outcome', action)
        service = action
        if action == 'toggle':
            service = 'stop' if self.episode is not None else 'start'
        if self.busy & {'start', 'stop', 'discard'}:
            waiting = ', '.join(sorted(self.busy))
            self.message = f'still waiting for the recorder to answer {waiting}: {action} ignored'
            return None
        self.busy.add(service)
        return Request(service)

    def _take_request(self, key: str) -> Request | None:
        if not self.take_factors:
            self.message = f'key {key!r}: no shot list (run robodata session with --protocol)'
            return None
        if self.take_recording:
            self.message = 'the take is recording: its conditions change after it stops'
            return None
        if key not in TAKE_KEYS:
            return Request('take', command='skip')
        index = TAKE_KEYS.index(key)
        if index >= len(self.take_factors):
            self.message = f'key {key!r} does nothing: the protocol has {len(self.take_factors)} factors'
            return None
        return Request('take', command=f'cycle {self.take_factors[index]}')

    # -- what the recorder says -------------------------------------------------------------------

    def set_ready(self, ready: bool) -> None:
        self.ready = ready

    def on_event(self, kind: str, episode_id: str, *, task: str = '', status: str = '', outcome: str = '',
                 age_s: float | None = None) -> None:
        """An EpisodeEvent (start | stop | outcome | discard); `age_s` = how long ago it happened,
        None when the stamp cannot be compared with this machine's clock (simulated time)."""
        now = self.clock()
        if kind == 'start':
            if episode_id not in self._ended:
                self.episode = _Live(episode_id, task, now - max(0.0, age_s or 0.0),
                                     outcome if outcome != 'unknown' else '')
        elif kind in ('stop', 'discard'):
            self._end(episode_id, status, outcome)
        elif kind == 'outcome':
            self._label(episode_id, outcome, status)

    def on_reply(self, service: str, success: bool, message: str, episode_id: str = '', outcome: str = '') -> None:
        """A service reply; Trigger replies carry '<episode_id> <status>' in `message`; `outcome`: the
        outcome that was asked for (so a refusal reads 'outcome success not set', never like the failure label)."""
        self.busy.discard(service)
        if not success:
            what = f'outcome {outcome} not set' if service == 'outcome' else f'not {_PAST.get(service, service)}'
            self.message = f'{what}: {message or "no reason given"}'
            return
        if service == 'start':
            if episode_id and episode_id not in self._ended and (
                    self.episode is None or self.episode.episode_id != episode_id):
                self.episode = _Live(episode_id, '', self.clock())
            self.message = f'started {episode_id}' + (f' ({message})' if message else '')
        elif service in ('stop', 'discard'):
            ended_id, _, status = message.partition(' ')
            self._end(ended_id, status)
            self.message = f'{"stopped" if service == "stop" else "discarded"} {ended_id} ({status})'
        elif service == 'outcome':
            outcome = message.rsplit(' ', 1)[-1] if ' outcome ' in message else ''
            if outcome:
                self._label(episode_id, outcome)
            self.message = message or f'{episode_id} labelled'

    def on_no_answer(self, service: str, waited_s: float) -> None:
        self.busy.discard(service)
        self.message = f'{service}: no answer from the recorder after {waited_s:.0f} s'

    def on_diagnostics(self, statuses: Iterable[tuple[str, int, str]]) -> None:
        """The (name, level, message) of a /diagnostics array; statuses of other nodes are ignored."""
        now = self.clock()
        statuses = list(statuses)
        heads = [text for name, _, text in statuses if name == RECORDER_STATUS]
        # Per-topic figures describe the running episode; between episodes the recorder keeps
        # reporting the last one's topics (as silent), which is not news. The array's own head
        # says which case it is, even when it crossed an episode event on the way.
        recording = _RECORDING.match(heads[0]) is not None if heads else self.episode is not None
        for name, level, text in statuses:
            if name == DISK_STATUS:
                self.disk_line, self.disk_seen_at = (f'disk: {text}' if level == OK else ''), now
                if level == OK:
                    self.warnings.pop('disk', None)
                else:
                    self.warnings['disk'] = _Warning(level, f'recorder: {text}', now, NOTICE_HOLD_S, 'recorder')
            elif name == RECORDER_STATUS:
                self._recorder_status(level, text, now)
            elif name == TAKE_STATUS:
                if level == OK:
                    self.warnings.pop('take', None)
                else:
                    self.warnings['take'] = _Warning(level, f'take {text}', now, TOPIC_HOLD_S, 'take')
            elif name.startswith(_TOPIC_STATUS_PREFIX):
                topic = name[len(_TOPIC_STATUS_PREFIX):]
                keys = [problem_key(topic, check) for check in ('timing.silent', 'timing.loss', 'recorder')]
                if level == OK or not recording:  # the topic is fine now, whoever said otherwise before
                    for key in keys:
                        self.warnings.pop(key, None)
                else:
                    key = problem_key(topic, _recorder_check(text))
                    for other in keys:
                        if other != key and self.warnings.get(other, None) is not None \
                                and self.warnings[other].source == 'recorder':
                            del self.warnings[other]
                    self.warnings[key] = _Warning(level, f'{topic}: {text}', now, TOPIC_HOLD_S, 'recorder')

    def on_take(self, line: str, factors: list[str], recording: bool, message: str = '') -> None:
        """The shot list's take (published by the session's shot_list node): its line, the protocol's factors (the
        keys 1-9 change), whether it is recording, and the list's word on the last command or take."""
        self.take_line, self.take_factors, self.take_recording = line, list(factors), recording
        if message and message != self.message:
            self.message = message

    def on_quality(self, check: str, topic: str, level: int, message: str, episode_id: str = '') -> None:
        """A QualityStatus from the quality monitor; OK clears that check's warning."""
        if check == 'summary':  # the monitor's one-line verdict, shown under the episode line; it closes a batch
            self.quality_line = message
            self.quality_seen_at = self.clock()
            for key in [k for k, w in self.warnings.items() if w.source == 'quality' and k not in self._quality_batch]:
                del self.warnings[key]  # the monitor no longer reports it: it cleared
            self._quality_batch.clear()
            return
        key = problem_key(topic, check)
        if level == OK:
            self.warnings.pop(key, None)
            return
        self._quality_batch.add(key)
        text = message or f'{check} on {topic}'
        self.warnings[key] = _Warning(level, f'quality {check}: {text}', self.clock(), QUALITY_HOLD_S, 'quality')

    # -- rendering --------------------------------------------------------------------------------

    def render(self, ticking: bool = True) -> list[str]:
        """The screen as lines of plain text. `ticking=False` leaves the duration out, so a caller
        printing to a log can tell a real change from the clock moving on."""
        now = self.clock()
        lines = [f'robodata keys: recorder {self.recorder} ' + ('ready' if self.ready else
                                                                 '(waiting for recorder...)')]
        if self.episode is not None:
            live = self.episode
            parts = ['REC', live.episode_id]
            if live.task:
                parts.append(live.task)
            if ticking:
                parts.append(format_duration(now - live.started_at))
            if live.outcome:
                parts.append(f'outcome {live.outcome}')
            if 'stop' in self.busy:
                parts.append('stopping...')
            lines.append('  '.join(parts))
        else:
            lines.append('starting...' if 'start' in self.busy else 'idle: press space to start an episode')
        if self.take_line:
            lines.append(self.take_line)
        if self.quality_line and now - self.quality_seen_at <= QUALITY_HOLD_S:
            lines.append(self.quality_line)
        if self.disk_line and now - self.disk_seen_at <= NOTICE_HOLD_S:
            lines.append(self.disk_line)
        if self.last is not None:
            last = self.last
            lines.append(f'last episode: {last.episode_id} {last.status or "stopped"}'
                         + (f', outcome {last.outcome}' if last.outcome else ''))
        if self.last_outcome is not None:
            lines.append(f'last outcome: {self.last_outcome[1]} ({self.last_outcome[0]})')
        lines.extend(f'> {text}' for text in self.messages)
        lines.extend(self.warning_lines(now))
        if self.take_factors and not self.take_recording:
            shown = self.take_factors[:len(TAKE_KEYS)]
            lines.append(TAKE_HELP.format(keys=f'1-{len(shown)}' if len(shown) > 1 else '1', factors='/'.join(shown)))
        lines.append(HELP)
        return lines

    def warning_lines(self, now: float | None = None, limit: int = 6) -> list[str]:
        """The warnings shown now, worst first: `limit` of them, then how many more."""
        now = self.clock() if now is None else now
        for key in [k for k, w in self.warnings.items() if now - w.seen_at > w.hold_s]:
            del self.warnings[key]
        current = sorted(self.warnings.values(), key=lambda w: (-w.level, w.text))
        lines = [f'! {LEVEL_NAMES.get(w.level, str(w.level)):<5} {w.text}' for w in current[:limit]]
        if len(current) > limit:
            lines.append(f'! ... and {len(current) - limit} more')
        return lines

    # -- internals --------------------------------------------------------------------------------

    def _end(self, episode_id: str, status: str, outcome: str = '') -> None:
        if not episode_id:
            return
        self._ended.add(episode_id)
        live = self.episode if self.episode is not None and self.episode.episode_id == episode_id else None
        if live is not None:
            self.episode = None
            outcome = outcome or live.outcome
        elif self.last is not None and self.last.episode_id == episode_id:
            outcome = outcome or self.last.outcome
        self.last = _Done(episode_id, status, '' if outcome == 'unknown' else outcome)

    def _label(self, episode_id: str, outcome: str, status: str = '') -> None:
        self.last_outcome = (episode_id, outcome)
        if self.episode is not None and self.episode.episode_id == episode_id:
            self.episode.outcome = outcome
        elif self.last is not None and self.last.episode_id == episode_id:
            self.last.outcome = outcome
        elif status and status != 'recording':
            self.last = _Done(episode_id, status, outcome)

    def _recorder_status(self, level: int, text: str, now: float) -> None:
        if level != OK:
            self.warnings['recorder'] = _Warning(level, f'recorder: {text}', now, NOTICE_HOLD_S, 'notice')
        match = _RECORDING.match(text)
        if match is None and not text.startswith('idle'):
            return  # a one-off notice, says nothing about the episode
        recording = match.group(1) if match else None
        ours = self.episode.episode_id if self.episode else None
        if recording != ours:
            self._disagreements += 1
            if self._disagreements >= RESYNC_AFTER:  # one message may just have overtaken an event
                self._disagreements = 0
                if ours is not None:
                    self._end(ours, self.last.status if self.last and self.last.episode_id == ours else '')
                if recording is not None:
                    assert match is not None  # recording is its first group
                    self._ended.discard(recording)
                    self.episode = _Live(recording, '', now - float(match.group(2)))
            return
        self._disagreements = 0
        if match is not None and self.episode is not None:
            elapsed = float(match.group(2))
            if abs((now - self.episode.started_at) - elapsed) > RESYNC_DRIFT_S:
                self.episode.started_at = now - elapsed


ANSI_UP = '\x1b[{n}A'
ANSI_CLEAR_LINE = '\x1b[2K'


def fit(lines: list[str], width: int) -> list[str]:
    """Lines longer than the terminal wrapped onto indented continuation lines (at spaces where possible), so a
    long refusal is read whole rather than cut at the edge."""
    out: list[str] = []
    room = max(8, width - 1)
    for line in lines:
        if len(line) <= room:
            out.append(line)
            continue
        out += textwrap.wrap(line, room, subsequent_indent='    ', break_on_hyphens=False) or ['']
    return out


def redraw(lines: list[str], previous: int, width: int) -> str:
    """The text that replaces the `previous` lines last drawn with `lines`, in place: cursor up,
    clear each line, rewrite; lines cut to `width` so none wraps and breaks the count."""
    out = [ANSI_UP.format(n=previous) if previous else '']
    cut = [line[: max(1, width - 1)] for line in lines]
    out.extend(f'\r{ANSI_CLEAR_LINE}{line}\n' for line in cut)
    out.extend(f'\r{ANSI_CLEAR_LINE}\n' for _ in range(previous - len(cut)))
    if previous > len(cut):
        out.append(ANSI_UP.format(n=previous - len(cut)))
    return ''.join(out)
