"""Which of a bag's topics a replay publishes, under which names and with which QoS.

The QoS is the one the topic was recorded with (rosbag2 stores what its publishers offered): a latched topic
(/robot_description, /tf_static) is transient local, so RViz started late still gets it; best effort stays best
effort. The publisher keeps more history than a driver does, so a subscriber that falls behind for a moment is
repaired instead of losing samples: a reliable writer with depth 10 at 500 Hz forgets a message after 20 ms.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rosbags.interfaces import QosDurability, QosReliability

from ros_robodata.bag.reader import TopicInfo
from ros_robodata.errors import ReplayError

# History the player keeps per topic: about a second of small messages, a few frames of large ones.
_SMALL_DEPTH = 1000
_LARGE_DEPTH = 10
_LARGE_TYPES = frozenset({'sensor_msgs/msg/Image', 'sensor_msgs/msg/CompressedImage', 'sensor_msgs/msg/PointCloud2',
                          'foxglove_msgs/msg/CompressedVideo'})
_TOPIC = re.compile(r'^/?[A-Za-z_~][A-Za-z0-9_/~{}]*$')


@dataclass(frozen=True)
class PlayedTopic:
    """One topic of the bag as the replay publishes it."""

    topic: str  # the name in the bag
    published_as: str  # after --remap
    msgtype: str
    reliable: bool
    transient_local: bool
    depth: int
    count: int
    large: bool = False  # frames and clouds: published from a thread of their own


def parse_remaps(remaps: Iterable[str]) -> dict[str, str]:
    """`/from:=/to` pairs, as ros2 bag play --remap takes them."""
    out: dict[str, str] = {}
    for text in remaps:
        source, sep, target = str(text).partition(':=')
        if not sep or not _TOPIC.match(source) or not _TOPIC.match(target):
            raise ReplayError(f'remap {text!r}: write it as /from:=/to (two topic names)')
        out[_absolute(source)] = _absolute(target)
    return out


def _absolute(name: str) -> str:
    return name if name.startswith('/') else f'/{name}'


def plan_topics(topics: Mapping[str, TopicInfo], *, include: Sequence[str] = (), exclude: Sequence[str] = (),
                remap: Mapping[str, str] | None = None) -> list[PlayedTopic]:
    """The topics to publish: `include` names them (all when empty), `exclude` takes some away (names or shell
    patterns such as /camera/*); a named topic or remap the bag does not have is an error that lists what it
    has, since a typo would otherwise replay nothing on it in silence."""
    remap = dict(remap or {})
    have = ', '.join(topics) or 'none'
    wanted = [_absolute(t) for t in include]
    if missing := [t for t in wanted if t not in topics]:
        raise ReplayError(f'no topic {", ".join(missing)} in this bag (it has: {have})')
    if missing := [t for t in remap if t not in topics]:
        raise ReplayError(f'--remap names {", ".join(missing)}, which this bag does not have (it has: {have})')
    chosen = [t for t in topics if not wanted or t in wanted]
    chosen = [t for t in chosen if not any(fnmatch.fnmatchcase(t, _absolute(p)) for p in exclude)]
    if not chosen:
        raise ReplayError(f'nothing left to replay after --topics/--exclude (the bag has: {have})')
    names = [remap.get(t, t) for t in chosen]
    if len(set(names)) != len(names):
        raise ReplayError('two topics would be published under one name after --remap')
    return [_played(topics[t], remap.get(t, t)) for t in chosen]


def _played(info: TopicInfo, name: str) -> PlayedTopic:
    offered = info.qos
    reliable = not offered or all(q.reliability != QosReliability.BEST_EFFORT for q in offered)
    latched = info.latched or any(q.durability == QosDurability.TRANSIENT_LOCAL for q in offered)
    recorded_depth = max((q.depth for q in offered), default=0)
    large = info.msgtype in _LARGE_TYPES
    depth = max(recorded_depth, _LARGE_DEPTH if large else _SMALL_DEPTH)
    return PlayedTopic(info.name, name, info.msgtype, reliable, latched, depth, info.count, large)
