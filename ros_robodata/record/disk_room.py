"""How long the dataset's disk lasts at the rig's own write rate: the operator sees it before an episode is cut short.

A fixed free-space floor means nothing across rigs (a joint-states arm writes 50 KiB/s, three cameras and a LiDAR
90 MB/s), so the warning is in recording time: the rate is the one measured while recording, kept between episodes,
and the warning comes when less than `recording.disk_warn_s` of it is left. Before any rate is known only a disk
that is practically full is said.
"""

from __future__ import annotations

from dataclasses import dataclass

from ros_robodata.files import mib

__all__ = ['DISK_FULL_BYTES', 'DiskRoom', 'WriteRate', 'disk_room']

# Below this much free space the disk is as good as full for a recording (one bag chunk and its index).
DISK_FULL_BYTES = 16 << 20
OK, WARN, ERROR = 0, 1, 2  # as diagnostic_msgs/DiagnosticStatus numbers them


@dataclass(frozen=True)
class DiskRoom:
    """The room left on the dataset's disk, as the recorder's diagnostics tell it."""

    free_bytes: int | None
    rate_bps: float | None  # the measured write rate, None until an episode has been written for a while
    seconds_left: float | None
    level: int  # OK / WARN / ERROR
    message: str


def _size(n: float) -> str:
    return f'{n / 2**30:.1f} GiB' if n >= 10 * 2**30 else mib(round(n))


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f'{seconds / 3600:.1f} h'
    if seconds >= 120:
        return f'{seconds / 60:.0f} min'
    return f'{seconds:.0f} s'


def disk_room(free_bytes: int | None, rate_bps: float | None, warn_s: float) -> DiskRoom:
    """What the free space means for recording.

    Args:
        free_bytes: free space on the dataset's disk (None: unreadable).
        rate_bps: the rig's measured write rate in bytes per second (None: not measured yet).
        warn_s: warn when less than this much recording time is left.
    """
    if free_bytes is None:
        return DiskRoom(None, rate_bps, None, WARN, 'free space on the dataset disk cannot be read')
    left = free_bytes / rate_bps if rate_bps else None
    text = f'{_size(free_bytes)} free'
    if left is not None:
        text += f', about {_duration(left)} of recording at {_size(rate_bps or 0.0)}/s'
    if free_bytes < DISK_FULL_BYTES:
        return DiskRoom(free_bytes, rate_bps, left, ERROR, f'disk full: {text}; free space before the next episode')
    if left is not None and left < warn_s:
        return DiskRoom(free_bytes, rate_bps, left, WARN,
                        f'disk nearly full: {text} (warned under {_duration(warn_s)}); free space soon')
    return DiskRoom(free_bytes, rate_bps, left, OK, text)


class WriteRate:
    """The recorder's write rate, measured over the seconds an episode is written; kept between episodes."""

    # Figures from the first seconds of an episode (pre-roll flushed at once) say more about the start than the rig.
    MIN_SPAN_S = 3.0

    def __init__(self) -> None:
        self._since: tuple[float, int] | None = None
        self.rate_bps: float | None = None

    def update(self, now_s: float, written_bytes: int, recording: bool) -> float | None:
        """Feed the total bytes written so far; returns the rate (the last episode's while idle)."""
        if not recording:
            self._since = None
            return self.rate_bps
        if self._since is None:
            self._since = (now_s, written_bytes)
            return self.rate_bps
        span = now_s - self._since[0]
        if span >= self.MIN_SPAN_S:
            self.rate_bps = max(0.0, (written_bytes - self._since[1]) / span)
        return self.rate_bps
