"""What episode.yaml says about an episode's bag: per-topic counts, rates and loss, header-stamp range, checksums.

Measured as the recorder measures them (TopicStats over every message), or, for a bag linked where it lies, read
from the bag's index alone.
"""

from __future__ import annotations

from pathlib import Path

from ros_robodata.bag.reader import BagReader
from ros_robodata.dataset.episode import Episode
from ros_robodata.files import file_sha256
from ros_robodata.profile import Profile
from ros_robodata.signals import starts_with_header
from ros_robodata.signals.topic_stats import TopicStats, stamp_range


def expected_rates(profile: Profile | None) -> dict[str, float | None]:
    return {} if profile is None else {spec.topic: spec.rate_hz for _, spec in profile.all_topics()}


def fill_stats_from_bag(episode: Episode, bag: Path, profile: Profile | None) -> int:
    """Counts, rates, header-stamp range and loss by stamps, as the recorder writes them: one pass over the bag;
    returns the number of messages."""
    rates = expected_rates(profile)
    with BagReader(bag) as reader:
        store = reader.typestore
        stats = {name: TopicStats(name, info.msgtype, rates.get(name), info.msgtype in store.fielddefs
                                  and starts_with_header(info.msgtype, store), info.latched)
                 for name, info in reader.topics.items()}
        for message in reader.messages():
            stats[message.topic].update(message.t_ns, message.data)
        episode.start_ns, episode.stop_ns = reader.start_ns, reader.end_ns
    fill_stats(episode, stats)
    return sum(s.count for s in stats.values())


def fill_stats(episode: Episode, stats: dict[str, TopicStats]) -> None:
    """episode.yaml's topics, loss and header-stamp range from the per-topic figures of its messages."""
    episode.topics = {topic: s.summary() for topic, s in stats.items()}
    episode.stamp_start_ns, episode.stamp_stop_ns = stamp_range(stats.values())
    episode.loss = {
        'total_lost': sum(s.lost for s in stats.values()),
        'missing_by_stamp': sum(s.missing_by_stamp for s in stats.values()),
        'dropped_by_recorder': 0,
        'topics': {topic: s.loss(episode.stamp_start_ns) for topic, s in stats.items()},
    }


def fill_stats_from_index(episode: Episode, bag: Path, profile: Profile | None) -> None:
    """What the bag's index says, without reading a message: a linked import costs the same for any size."""
    rates = expected_rates(profile)
    with BagReader(bag) as reader:
        duration = reader.duration_ns / 1e9
        episode.start_ns, episode.stop_ns = reader.start_ns, reader.end_ns
        episode.topics = {
            name: {'type': info.msgtype, 'count': info.count,
                   'rate_hz': round(info.count / duration, 3) if duration > 0 and info.count > 1 else None,
                   'expected_rate_hz': rates.get(name), 'latched': info.latched}
            for name, info in reader.topics.items()}
    episode.loss = {'note': 'not measured: a linked bag is not read at import (`robodata score` measures it)'}


def bag_checksums(bag: Path, hashes: dict[str, str], *, linked: bool) -> dict[str, str]:
    """sha256 of every file of the episode's bag: taken while copying where possible. A linked bag's files are
    not read (that is what --link is for): they are checked by their content id instead."""
    out = {}
    for path in sorted(p for p in bag.iterdir() if p.is_file()):
        if path.is_symlink() and linked:
            continue
        out[path.name] = hashes.get(path.name) or file_sha256(path)
    return out
