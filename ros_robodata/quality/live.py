"""The live view of quality at the rig: which checks fired lately, which topics went quiet, one summary line.

The node feeds messages as they arrive; camera frames come separately (a node decodes them off the intake
thread and may skip some when behind). Every second it asks for `statuses()` and publishes them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ros_robodata.profile import Profile
from ros_robodata.quality.episode_checks import EpisodeQuality, EpisodeReport
from ros_robodata.quality.images import CameraWatch, ImageLimits
from ros_robodata.quality.timing import silence

OK, WARN, ERROR, STALE = 0, 1, 2, 3  # as diagnostic_msgs/DiagnosticStatus and ros_robodata/QualityStatus
# Checks that make data unusable (the rest degrade it).
ERROR_CHECKS = frozenset({'timing.stamp_backwards', 'timing.clock_jump', 'timing.silent', 'motion.nan',
                          'motion.joint_limit', 'contact.force_limit', 'image.frozen'})
# A check that fired stays reported this long after it last fired, so a person can read it.
HOLD_S = 3.0
# A force spike is reported once the gripper readings around it have come in: fingers closing on an object jolt
# the wrist, and the offline report excuses those; live must not warn at every grasp either.
SPIKE_WAIT_NS = 400_000_000
# A late message is counted once the monitor knows whether its own callbacks were running late then.
LATE_WAIT_NS = 300_000_000


@dataclass(frozen=True)
class Status:
    check: str  # e.g. 'image.blur', 'timing.silent', or 'summary'
    topic: str
    level: int
    message: str
    value: float = float('nan')
    threshold: float = float('nan')


class LiveQuality:
    """Thread-safe: `add` from the intake thread, `add_frame` from a frame worker, `statuses` from a timer."""

    def __init__(self, profile: Profile, *, images: bool = True) -> None:
        self.profile = profile
        self.images = images
        self.episode_id = ''
        self._lock = threading.Lock()
        self._stalls: list[tuple[int, int]] = []  # when the monitor's own callbacks may have run late (begin, end ns)
        self._checks = self._new_checks()
        self._fired: dict[tuple[str, str], list[int]] = {}  # (check, topic) -> [last receive ns, count]
        self.frames_skipped = 0
        # Silence is a property of the stream, not of an episode: these survive the checks' restart at each start.
        self._last_receive: dict[str, int] = {}
        self._watched_since: dict[str, int] = {}
        self._spikes: list[tuple[int, int, str]] = []  # (stamp, receive ns, topic) not yet judged

    def watch(self, topic: str, now_ns: int) -> None:
        """The node subscribed to `topic` now: from here on it is expected (its silence is judged from now)."""
        self._watched_since.setdefault(topic, now_ns)

    def stalled(self, begin_ns: int, end_ns: int, slack_ns: int) -> None:
        """The monitor's own callbacks ran late from `begin_ns` (give or take `slack_ns`) to `end_ns`: its process
        was busy. Messages it timed late then are excused as far as that wait explains them."""
        with self._lock:
            self._stalls.append((begin_ns - slack_ns, end_ns + slack_ns))
            while self._stalls and end_ns - self._stalls[0][1] > 60_000_000_000:
                del self._stalls[0]

    def _settle_late(self, now_ns: int | None) -> None:
        for topic, timing in self._checks.timing.items():
            if timing.settle_late(now_ns, LATE_WAIT_NS):
                self._note(['timing.latency'], topic, timing.last_receive or 0)

    def _new_checks(self) -> EpisodeQuality:
        checks = EpisodeQuality(self.profile, images=False)
        for timing in checks.timing.values():
            timing.own_stalls = self._stalls
        if self.images and self.profile.topics.cameras:
            limits = ImageLimits(blur_threshold=self.profile.quality.blur_threshold)
            checks.cameras = {c.topic: CameraWatch(c.topic, c.name, limits) for c in self.profile.topics.cameras}
        return checks

    @property
    def camera_topics(self) -> set[str]:
        return set(self._checks.cameras)

    def start(self, episode_id: str) -> None:
        """A new episode: its checks start from nothing."""
        with self._lock:
            self._judge_spikes(None)
            self._settle_late(None)
            self.episode_id = episode_id
            self._checks = self._new_checks()

    def stop(self) -> EpisodeReport:
        """The episode ended: its report (findings so far); the checks carry on for the time between episodes."""
        return self.end_episode().report()

    def end_episode(self) -> EpisodeQuality:
        """The episode ended: its checks, handed over whole for the caller to report on where it likes (a node does
        it on a worker, off the thread that times messages); fresh checks carry on for the time between episodes."""
        with self._lock:
            self._judge_spikes(None)
            self._settle_late(None)
            ended = self._checks
            self.episode_id = ''
            self._checks = self._new_checks()
            return ended

    def add(self, topic: str, receive_ns: int, data: bytes | memoryview, decode: Callable[[], Any]) -> list[str]:
        with self._lock:
            self._last_receive[topic] = receive_ns
            fired = self._checks.add(topic, receive_ns, data, decode)
            if 'contact.force_spike' in fired and self._checks.wrench is not None:
                self._spikes.append((self._checks.wrench.last_spike_ns, receive_ns, topic))
                self._note([check for check in fired if check != 'contact.force_spike'], topic, receive_ns)
            else:
                self._note(fired, topic, receive_ns)
            return fired

    def _judge_spikes(self, now_ns: int | None) -> None:
        """Force spikes old enough (all of them when `now_ns` is None) are noted unless the gripper was moving."""
        waiting = []
        for stamp, received, topic in self._spikes:
            if now_ns is not None and now_ns - received < SPIKE_WAIT_NS:
                waiting.append((stamp, received, topic))
            elif not self._checks.gripper_moving_at(stamp):
                self._note(['contact.force_spike'], topic, received)
        self._spikes = waiting

    def add_frame(self, topic: str, stamp_ns: int, receive_ns: int, image: np.ndarray) -> list[str]:
        """A decoded camera frame (called off the intake thread)."""
        watch = self._checks.cameras.get(topic)
        if watch is None:
            return []
        fired = watch.add(stamp_ns, image)
        with self._lock:
            self._note(fired, topic, receive_ns)
        return fired

    def _note(self, fired: list[str], topic: str, receive_ns: int) -> None:
        for check in fired:
            entry = self._fired.setdefault((check, topic), [receive_ns, 0])
            entry[0] = receive_ns
            entry[1] += 1

    def statuses(self, now_ns: int) -> list[Status]:
        """What is wrong now, worst first, then a 'summary' status (OK when nothing is)."""
        out: list[Status] = []
        hold_ns = HOLD_S * 1e9
        with self._lock:
            self._judge_spikes(now_ns)
            self._settle_late(now_ns)
            for (check, topic), (last_fired, count) in list(self._fired.items()):
                if now_ns - last_fired > hold_ns:
                    del self._fired[(check, topic)]
                    continue
                if check == 'timing.silent':
                    continue  # judged from the clock below: a topic that came back is no longer silent
                level = ERROR if check in ERROR_CHECKS else WARN
                out.append(Status(check, topic, level, f'{check.split(".", 1)[1]} on {topic} '
                                  f'({count} time(s) lately)'))
            for topic, timing in self._checks.timing.items():
                if not timing.judged or topic not in self._watched_since:
                    continue
                silent_after = timing.limits.silent_after_s
                last = self._last_receive.get(topic)
                quiet = silence(last, now_ns, self._watched_since[topic], silent_after)
                if quiet is None:
                    continue
                text = f'{topic} silent for {quiet:.1f} s' if last is not None else \
                    f'{topic}: no message for {quiet:.1f} s since it was subscribed'
                out.append(Status('timing.silent', topic, ERROR, text, quiet, silent_after))
        out.sort(key=lambda s: (-s.level if s.level != STALE else -1.5, s.check, s.topic))
        errors = sum(1 for s in out if s.level == ERROR)
        warnings = sum(1 for s in out if s.level == WARN)
        stale = sum(1 for s in out if s.level == STALE)
        if not out:
            summary = Status('summary', '', OK, 'quality OK')
        else:
            level = ERROR if errors else (WARN if warnings else STALE)
            counts = ', '.join(f'{n} {name}' for n, name in ((errors, 'error(s)'), (warnings, 'warning(s)'),
                                                            (stale, 'waiting')) if n)
            summary = Status('summary', '', level, f'quality: {counts}: {out[0].message}')
        return [*out, summary]
