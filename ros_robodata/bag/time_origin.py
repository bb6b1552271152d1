"""An episode's one time origin: every `t_s`, `ranges_s` and caption counts from it, in events.json and
quality.json alike, so a grasp said at 5.47 s in one file is at 5.47 s in the other.

It is the earliest header stamp among the first stamped message of each topic read: both the segmenter (which
reads the gripper and wrench topics) and the quality checks (which read all of the profile's) ask for it over the
profile's topics, from this one function, rather than taking the first stamp their own pass happens to read.
"""

from __future__ import annotations

from collections.abc import Iterable

from ros_robodata.bag.reader import BagReader

__all__ = ['time_origin']

# Stop looking once the log has run this far past its first message: a topic that has not spoken by then is late
# (or silent) and does not move the origin of an episode that started without it.
_LOOK_NS = 5_000_000_000


def time_origin(reader: BagReader, topics: Iterable[str]) -> int | None:
    """The earliest header stamp (ns) of the first stamped message of each of `topics` in the bag; None when none
    of them carries a header stamp (then times count from what each pass read first).

    Args:
        reader: An open bag.
        topics: The topics whose stamps count (the robot profile's).
    """
    wanted = {t for t in topics if t in reader.topics and reader.topics[t].count}
    firsts = reader.first_stamps(wanted) if wanted else None
    if firsts is not None:  # a reader holding its streams as arrays: the same answer, nothing decoded
        if not firsts:
            return None
        start = min(t for t, _ in firsts.values())
        stamps = [stamp for t, stamp in firsts.values() if t - start <= _LOOK_NS and stamp > 0]
        return min(stamps) if stamps else None
    seen: set[str] = set()
    best: int | None = None
    first_log: int | None = None
    for message in reader.messages(wanted):
        first_log = message.t_ns if first_log is None else first_log
        if message.t_ns - first_log > _LOOK_NS:
            break
        if message.topic in seen:
            continue
        seen.add(message.topic)
        try:
            header = getattr(reader.decode(message), 'header', None)
        except Exception:  # a message that does not decode carries no stamp we can read
            continue
        stamp = getattr(header, 'stamp', None)
        if stamp is not None:
            ns = int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)
            if ns > 0:
                best = ns if best is None else min(best, ns)
        if seen == wanted:
            break
    return best
