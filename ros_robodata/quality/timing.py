"""Timing of one topic: rate, lost samples, stamps going backwards or repeating, clock jumps, latency, silence.

Fed with each message's header stamp (when the sensor took it) and receive time (when the recorder got it;
the bag's log time). Both clocks matter: a gap in stamps with no gap in arrivals is a dropped sample at the
source, a jump in stamps that arrivals do not share is a clock jump, a gap in arrivals is a silent topic.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from ros_robodata.quality.findings import ERROR, WARN, Finding, Ranges


@dataclass(frozen=True)
class TimingLimits:
    rate_hz: float | None  # expected rate; None: rate, gaps and clock jumps are not judged
    rate_tolerance: float = 0.2  # rate below (1 - this) x rate_hz warns
    gap_periods: float = 1.5  # a stamp step over this many periods lost samples
    max_latency_ms: float = 100.0
    silent_after_s: float = 1.0
    clock_jump_s: float = 0.25  # stamps moving this much more (or less) than arrivals: the clock jumped
    latched: bool = False  # latched topics (a URDF) publish once: no timing expectations


def silence(last_receive_ns: int | None, now_ns: int, watched_since_ns: int, silent_after_s: float
            ) -> float | None:
    """How long a topic that should keep a rate has been quiet, judged on its own receive times: the seconds since
    its last message once that is over `silent_after_s`, or since watching began when no message came yet (not
    before `silent_after_s` has passed: a topic is not missing before it had a chance to arrive); None when it is
    not silent. The one rule the recorder's diagnostics and the live quality monitor both apply."""
    since = last_receive_ns if last_receive_ns is not None else watched_since_ns
    quiet = (now_ns - since) / 1e9
    return quiet if quiet > silent_after_s else None


class StreamTiming:
    """Streaming timing checks of one topic."""

    def __init__(self, topic: str, limits: TimingLimits) -> None:
        self.topic = topic
        self.limits = limits
        self.count = 0
        self.first_stamp: int | None = None
        self.last_stamp: int | None = None
        self.first_receive: int | None = None
        self.last_receive: int | None = None
        self.lost = 0
        self._gaps = Ranges(join_ns=200_000_000)
        self._backwards = Ranges()
        self._duplicates = Ranges()
        self._jumps = Ranges()
        self._late = Ranges()
        self._silent = Ranges(join_ns=0)
        self._latency_sum = 0.0
        self._latency_ref: float | None = None  # typical receive - stamp (ns), slowly followed
        # A live monitor sets this: the times its own callbacks may have run late (begin, end ns), shared by its
        # topics. Late messages are then held back until it is known whether the monitor's stall explains them.
        self.own_stalls: list[tuple[int, int]] | None = None
        self._held_late: list[tuple[int, int, float]] = []  # (stamp, receive ns, latency ms)
        self.excused_late = 0

    @property
    def period_ns(self) -> float | None:
        rate = self.limits.rate_hz
        return 1e9 / rate if rate else None

    @property
    def judged(self) -> bool:
        """Event-driven topics (no rate_hz: segment events, commands sent now and then) and latched ones carry no
        timing expectations; they are only counted."""
        return self.limits.rate_hz is not None and not self.limits.latched

    def add(self, stamp_ns: int | None, receive_ns: int) -> list[str]:
        """One message; returns the checks that fired on it (for a live monitor)."""
        fired: list[str] = []
        self.count += 1
        if self.first_receive is None:
            self.first_receive = receive_ns
        last_receive, self.last_receive = self.last_receive, receive_ns
        if not self.judged:
            return fired
        silent_ns = self.limits.silent_after_s * 1e9
        if last_receive is not None and receive_ns - last_receive > silent_ns:
            self._silent.add(last_receive, (receive_ns - last_receive) / 1e9, end_ns=receive_ns)
            fired.append('timing.silent')
        if stamp_ns is None or stamp_ns == 0:
            return fired
        if self.first_stamp is None:
            self.first_stamp = stamp_ns
        latency_ms = (receive_ns - stamp_ns) / 1e6
        self._latency_sum += latency_ms
        if latency_ms > self.limits.max_latency_ms:
            if self.own_stalls is None:
                self._late.add(stamp_ns, latency_ms)
                fired.append('timing.latency')
            else:
                self._held_late.append((stamp_ns, receive_ns, latency_ms))
        last = self.last_stamp
        if last is None:
            self.last_stamp = stamp_ns
            return fired
        step = stamp_ns - last
        assert last_receive is not None
        drift = step - (receive_ns - last_receive)
        period = self.period_ns
        jump_ns = max(self.limits.clock_jump_s * 1e9, 10 * period) if period else self.limits.clock_jump_s * 1e9
        # A stall in delivery delays arrivals, and a publisher catching up after a stall sends a burst of old
        # stamps: neither moves the stamps against the receive clock for good. A clock jump does: stamps running
        # ahead (latency far below its usual value) or going backwards by more than the limit.
        latency = receive_ns - stamp_ns
        reference = self._latency_ref
        ahead = drift > jump_ns and reference is not None and latency < reference - jump_ns
        if ahead or (step < 0 and -step > jump_ns):
            self._jumps.add(receive_ns, abs(drift) / 1e9)  # when it happened: arrivals keep true time
            fired.append('timing.clock_jump')
            self.last_stamp = stamp_ns  # the clock's new reading is the reference from now on
            return fired
        if step < 0:
            self._backwards.add(stamp_ns, -step / 1e9)
            fired.append('timing.stamp_backwards')
        elif step == 0:
            self._duplicates.add(stamp_ns, 0.0)
            fired.append('timing.duplicate_stamp')
        elif period and step > self.limits.gap_periods * period:
            missing = round(step / period) - 1
            if missing >= 1:
                self.lost += missing
                if 'timing.silent' not in fired:  # a silent topic's missing samples are that silence, said once
                    self._gaps.add(last, missing, end_ns=stamp_ns)
                    fired.append('timing.gap')
        if step > 0:
            self.last_stamp = stamp_ns
            reference = self._latency_ref
            self._latency_ref = latency if reference is None else reference + 0.01 * (latency - reference)
        return fired

    def settle_late(self, now_ns: int | None, wait_ns: int) -> int:
        """Judge the late messages held back for `wait_ns` (all of them when `now_ns` is None): those the
        receiver's own stall explains are excused, the rest count. Returns how many counted."""
        counted, held = 0, []
        for stamp, received, latency_ms in self._held_late:
            if now_ns is not None and now_ns - received < wait_ns:
                held.append((stamp, received, latency_ms))
            elif self._own_fault(received, latency_ms):
                self.excused_late += 1
            else:
                self._late.add(stamp, latency_ms)
                counted += 1
        self._held_late = held
        return counted

    def _own_fault(self, received_ns: int, latency_ms: float) -> bool:
        """The message waited in the receiver's own queue through a stall long enough to make it late."""
        for begin, end in self.own_stalls or ():
            if begin <= received_ns <= end:
                waited_ms = (received_ns - begin) / 1e6
                if latency_ms - waited_ms <= self.limits.max_latency_ms:
                    return True
        return False

    def _gap_message(self) -> str:
        """What the gaps are, as a user would go looking for them: one outage, or many short ones spread out (997
        single samples over 100 s is a lossy link, not one long outage)."""
        gaps, lost, longest = self._gaps.count, self.lost, int(self._gaps.worst)
        first, last = self._gaps.items[0][0], self._gaps.items[-1][1]
        over = f'{(last - first) / 1e9:.2f} s'
        steps = f'(stamp steps over {self.limits.gap_periods:g} periods)'
        if gaps == 1:
            return f'{self.topic}: one gap of {lost} missing sample(s) over {over} {steps}'
        if longest == 1:
            return f'{self.topic}: {lost} single missing samples (never two in a row) spread over {over} {steps}'
        return (f'{self.topic}: {lost} samples missing in {gaps} gaps spread over {over}, the longest {longest} in a '
                f'row {steps}')

    def rate_hz(self) -> float | None:
        """Mean rate over the topic's own span of receive times."""
        if self.count < 2 or self.first_receive is None or self.last_receive is None:
            return None
        span = (self.last_receive - self.first_receive) / 1e9
        return (self.count - 1) / span if span > 0 else None

    def mean_latency_ms(self) -> float | None:
        return self._latency_sum / self.count if self.count and self.first_stamp is not None else None

    def findings(self, episode_end_ns: int | None = None) -> list[Finding]:
        """Everything that fired; a topic quiet from its last message to the episode's end is silent too."""
        out: list[Finding] = []
        lim, topic = self.limits, self.topic
        if not self.judged:
            return out
        if (episode_end_ns is not None and self.last_receive is not None
                and (episode_end_ns - self.last_receive) / 1e9 > lim.silent_after_s):
            self._silent.add(self.last_receive, (episode_end_ns - self.last_receive) / 1e9, end_ns=episode_end_ns)
        rate = self.rate_hz()
        if lim.rate_hz and rate is not None and rate < (1 - lim.rate_tolerance) * lim.rate_hz:
            out.append(Finding('timing.rate', WARN, topic, f'{topic} ran at {rate:.1f} Hz, expected {lim.rate_hz:g} Hz',
                               rate, (1 - lim.rate_tolerance) * lim.rate_hz))
        if self._gaps:
            out.append(self._gaps.finding('timing.gap', WARN, topic, self._gap_message(), lim.gap_periods))
        if self._backwards:
            out.append(self._backwards.finding('timing.stamp_backwards', ERROR, topic, f'{topic}: header stamps went '
                                               f'backwards {self._backwards.count} time(s)', 0.0))
        if self._duplicates:
            out.append(self._duplicates.finding('timing.duplicate_stamp', WARN, topic, f'{topic}: '
                                                f'{self._duplicates.count} message(s) repeat the previous stamp', 0.0))
        if self._jumps:
            out.append(self._jumps.finding('timing.clock_jump', ERROR, topic, f'{topic}: the stamp clock jumped by '
                                           f'{self._jumps.worst:.3f} s against arrival times', lim.clock_jump_s))
        if self._late:
            out.append(self._late.finding('timing.latency', WARN, topic, f'{topic}: {self._late.count} message(s) '
                                          f'arrived late (up to {self._late.worst:.0f} ms)', lim.max_latency_ms))
        if self._silent:
            out.append(self._silent.finding('timing.silent', ERROR, topic, f'{topic} was silent for up to '
                                            f'{self._silent.worst:.1f} s', lim.silent_after_s))
        return out


class SyncWatch:
    """Skew between a camera's stamps and the nearest joint-state stamp: an image paired with the wrong arm
    pose teaches the wrong action."""

    def __init__(self, topic: str, reference_topic: str, max_skew_ms: float) -> None:
        self.topic, self.reference_topic = topic, reference_topic
        self.max_skew_ms = max_skew_ms
        self._reference: list[int] = []
        self._skewed = Ranges()
        self.worst_ms = 0.0

    def reference(self, stamp_ns: int) -> None:
        if self._reference and stamp_ns < self._reference[-1]:
            self._reference.clear()  # the reference clock went back: start over rather than misplace stamps
        self._reference.append(stamp_ns)
        if len(self._reference) > 4096:
            del self._reference[:2048]

    def frame(self, stamp_ns: int) -> bool:
        """One camera stamp; True when it is further than max_skew_ms from every recent joint-state stamp."""
        ref = self._reference
        if not ref:
            return False
        i = bisect.bisect_left(ref, stamp_ns)
        nearest = min(abs(stamp_ns - ref[j]) for j in (i - 1, i) if 0 <= j < len(ref))
        skew_ms = nearest / 1e6
        self.worst_ms = max(self.worst_ms, skew_ms)
        if skew_ms > self.max_skew_ms:
            self._skewed.add(stamp_ns, skew_ms)
            return True
        return False

    def findings(self) -> list[Finding]:
        if not self._skewed:
            return []
        return [self._skewed.finding('timing.sync_skew', WARN, self.topic,
                                     f'{self.topic}: {self._skewed.count} frame(s) are {self._skewed.worst:.0f} ms '
                                     f'from the nearest {self.reference_topic} sample', self.max_skew_ms)]
