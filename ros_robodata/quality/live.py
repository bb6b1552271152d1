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
from ros_robodata.quality.episode import EpisodeQuality, EpisodeReport
from ros_robodata.quality.images import CameraWatch, ImageLimits

OK, WARN, ERROR, STALE = 0, 1, 2, 3  # as diagnostic_msgs/DiagnosticStatus and ros_robodata/QualityStatus
# Checks that make data unusable (the rest degrade it).
ERROR_CHECKS = frozenset({'timing.stamp_backwards', 'timing.clock_jump', 'timing.silent', 'motion.nan',
                          'motion.joint_limit', 'contact.force_limit', 'image.frozen'})
# A check that fired stays reported this long after it last fired, so a person can read it.
HOLD_S = 3.0


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
        self._checks = self._new_checks()
        self._fired: dict[tuple[str, str], list[int]] = {}  # (check, topic) -> [last receive ns, count]
        self.frames_skipped = 0

    def _new_checks(self) -> EpisodeQuality:
        checks = EpisodeQuality(self.profile, images=False)
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
            self.episode_id = episode_id
            self._checks = self._new_checks()

    def stop(self) -> EpisodeReport:
        """The episode ended: its report (findings so far); the checks carry on for the time between episodes."""
        with self._lock:
            report = self._checks.report()
            self.episode_id = ''
            self._checks = self._new_checks()
            return report

    def add(self, topic: str, receive_ns: int, data: bytes | memoryview, decode: Callable[[], Any]) -> list[str]:
        with self._lock:
            fired = self._checks.add(topic, receive_ns, data, decode)
            self._note(fired, topic, receive_ns)
            return fired

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
            for (check, topic), (last, count) in list(self._fired.items()):
                if now_ns - last > hold_ns:
                    del self._fired[(check, topic)]
                    continue
                if check == 'timing.silent':
                    continue  # judged from the clock below: a topic that came back is no longer silent
                level = ERROR if check in ERROR_CHECKS else WARN
                out.append(Status(check, topic, level, f'{check.split(".", 1)[1]} on {topic} '
                                  f'({count} time(s) lately)'))
            for topic, timing in self._checks.timing.items():
                if not timing.judged:
                    continue
                silent_after = timing.limits.silent_after_s
                if timing.last_receive is None:
                    out.append(Status('timing.silent', topic, STALE, f'{topic}: no message yet'))
                elif (now_ns - timing.last_receive) / 1e9 > silent_after:
                    quiet = (now_ns - timing.last_receive) / 1e9
                    out.append(Status('timing.silent', topic, ERROR, f'{topic} silent for {quiet:.1f} s', quiet,
                                      silent_after))
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
