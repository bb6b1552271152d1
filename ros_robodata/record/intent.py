"""What the operator's commands so far make of the recorder, known at once on the caller's thread.

The writer may still be working through its queue (or, in the writer process, through the pipe behind a backlog of
camera frames) when the next command comes: a start, stop or outcome is checked and answered from here, without
waiting for the writer, so that the thread that takes messages from DDS never waits on a bag being closed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ros_robodata.errors import RecorderError

__all__ = ['EpisodeIntent']


class EpisodeIntent:
    """The running episode and the last one, as the commands issued so far leave them.

    Args:
        new_episode_id: Reserves and returns a fresh episode id (Dataset.new_episode_id).
        min_episode_s: The shortest episode a stop accepts (a quicker second press is a double press).
    """

    def __init__(self, new_episode_id: Callable[[], str], min_episode_s: float) -> None:
        self._new_episode_id = new_episode_id
        self._min_episode_s = min_episode_s
        self._lock = threading.Lock()
        self.running: str | None = None
        self._running_since = 0.0  # monotonic time of the start request
        self.last: str | None = None

    def begin(self) -> str:
        """A start: the new episode's id.

        Raises:
            RecorderError: An episode is recording.
        """
        with self._lock:
            if self.running is not None:
                raise RecorderError(f'episode {self.running} is recording; stop it first')
            self.running = self._new_episode_id()
            self._running_since = time.monotonic()
            return self.running

    def end(self, discard: bool = False) -> str:
        """A stop (or a discard, which may also take the last episode): the episode it ends.

        Raises:
            RecorderError: Nothing to stop or discard, or a stop too soon after the start.
        """
        with self._lock:
            if self.running is not None:
                age = time.monotonic() - self._running_since
                if not discard and age < self._min_episode_s:
                    raise RecorderError(f'episode started {age:.1f} s ago (a double press? the shortest is '
                                        f'{self._min_episode_s:g} s): stop again to end it')
                episode_id, self.running = self.running, None
                self.last = episode_id
                return episode_id
            if discard and self.last is not None:
                return self.last
        raise RecorderError('nothing to discard: no episode recorded yet' if discard else 'no episode is recording')

    def target(self) -> str:
        """The episode an outcome is for: the running one, else the last.

        Raises:
            RecorderError: No episode recorded yet.
        """
        with self._lock:
            target = self.running or self.last
        if target is None:
            raise RecorderError('no episode recorded yet to take an outcome')
        return target

    def running_for(self) -> tuple[str, float] | None:
        """The running episode and the seconds since its start was asked, None when none runs."""
        with self._lock:
            return (self.running, time.monotonic() - self._running_since) if self.running is not None else None

    def adopt(self, episode_id: str) -> None:
        """A start checked and numbered elsewhere (the writer process's parent): `episode_id` is running."""
        with self._lock:
            self.running, self._running_since = episode_id, time.monotonic()

    def ended(self, episode_id: str) -> None:
        """The episode ended without a stop checked here: the writer closed it on its own (max duration, storage
        error, failed start), or a stop was checked elsewhere."""
        with self._lock:
            if self.running == episode_id:
                self.running = None
            self.last = episode_id

    def forget_last(self) -> None:
        """The last episode is gone (deleted on discard): nothing left to discard or label."""
        with self._lock:
            self.last = None
