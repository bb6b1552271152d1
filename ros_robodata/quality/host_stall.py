"""One stall of the recording computer is one finding: when (nearly) every topic arrived late over the same
stretch, no driver is at fault: the receiving host (or the network it shares) stopped taking messages, and
seven `timing.latency` lines, one per topic, would send a user to seven drivers.

A stretch counts as a host stall when the late stretches of at least `min_topics` topics, and of at least
`min_share` of the topics with a rate, overlap it. The topics' latency findings that lie within such stretches
become one `timing.host_stall` finding; a topic also late elsewhere keeps its own finding.
"""

from __future__ import annotations

from ros_robodata.quality.findings import WARN, Finding

__all__ = ['HOST_STALL', 'merge_host_stalls']

HOST_STALL = 'timing.host_stall'
_LATE = 'timing.latency'
_SLACK_NS = 100_000_000  # late stretches this close count as one moment (topics arrive at their own rates)


def merge_host_stalls(findings: list[Finding], timed_topics: int, *, min_topics: int = 3,
                      min_share: float = 0.75, start_ns: int | None = None) -> list[Finding]:
    """`findings` with the latency findings of a host stall replaced by one finding that says so.

    Args:
        findings: An episode's findings.
        timed_topics: How many of its topics have a rate (the ones that can be late).
        min_topics: The fewest topics late together that make a stall.
        min_share: The least share of `timed_topics` late together that makes a stall.
        start_ns: The episode's first header stamp: the message says when, in the episode's seconds.
    """
    late = [f for f in findings if f.check == _LATE and f.ranges]
    need = max(min_topics, int(min_share * timed_topics + 0.999))
    if len({f.topic for f in late}) < need:
        return findings
    windows = _common_windows(late, need)
    if not windows:
        return findings
    absorbed = [f for f in late if all(_overlaps(r, windows) for r in f.ranges)]
    if len(absorbed) < need:
        return findings
    topics = sorted(f.topic for f in absorbed)
    worst = max(f.value for f in absorbed)
    # Each stall from the first late message of any topic in it to the last: how long the host was away.
    spans = []
    for window in windows:
        inside = [r for f in absorbed for r in f.ranges if _overlaps(r, [window])]
        spans.append((min(a for a, _ in inside), max(b for _, b in inside)))
    origin = start_ns if start_ns is not None else spans[0][0]
    when = ', '.join(f'{(a - origin) / 1e9:.2f}-{(b - origin) / 1e9:.2f} s' for a, b in spans)
    message = (f'{len(topics)} of {timed_topics} topics arrived late at once ({when}; up to {worst:.0f} ms): the '
               f'recording computer or its network stalled, not a driver ({", ".join(topics)})')
    stall = Finding(HOST_STALL, WARN, '', message, worst, absorbed[0].threshold, tuple(spans),
                    sum(f.count for f in absorbed))
    kept = [f for f in findings if not any(f is a for a in absorbed)]
    return [*kept, stall]


def _common_windows(late: list[Finding], need: int) -> list[tuple[int, int]]:
    """Stretches where the late stretches of at least `need` topics overlap (each topic counted once)."""
    edges: list[tuple[int, int, str]] = []
    for f in late:
        for a, b in f.ranges:
            edges += [(a - _SLACK_NS, 1, f.topic), (b + _SLACK_NS, -1, f.topic)]
    edges.sort(key=lambda e: (e[0], -e[1]))
    open_by_topic: dict[str, int] = {}
    windows: list[tuple[int, int]] = []
    begin: int | None = None
    for at, step, topic in edges:
        open_by_topic[topic] = open_by_topic.get(topic, 0) + step
        covered = sum(1 for n in open_by_topic.values() if n > 0)
        if covered >= need and begin is None:
            begin = at
        elif covered < need and begin is not None:
            windows.append((begin + _SLACK_NS, at - _SLACK_NS) if at - begin > 2 * _SLACK_NS else (begin, at))
            begin = None
    return windows


def _overlaps(span: tuple[int, int], windows: list[tuple[int, int]]) -> bool:
    a, b = span
    return any(a <= w1 + _SLACK_NS and b >= w0 - _SLACK_NS for w0, w1 in windows)
