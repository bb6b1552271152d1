"""What a replay was pointed at: an episode folder (its bag and sidecars) or a bag on its own."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ros_robodata.errors import RobodataError
from ros_robodata.events.offline import read_events


@dataclass(frozen=True)
class ReplaySource:
    """The bag to play; the episode folder whose sidecars (events.json, quality.json, annotations.json) go with
    it, when it is an episode; the event stamps n/p jump between; and what could not be read, for the log."""

    bag: Path
    episode_dir: Path | None = None
    events_ns: tuple[int, ...] = ()
    notes: tuple[str, ...] = field(default=())


def find_source(path: Path) -> ReplaySource:
    """An episode folder, an episode's bag folder, or any bag (folder, .mcap or .db3)."""
    path = Path(path)
    if not path.exists():
        raise RobodataError(f'{path}: no such episode or bag')
    if (path / 'episode.yaml').is_file():
        episode, bag = path, path / 'bag'
    elif path.name == 'bag' and (path.parent / 'episode.yaml').is_file():
        episode, bag = path.parent, path
    else:
        return ReplaySource(path)
    if not bag.exists():
        raise RobodataError(f'{episode}: the episode has no bag folder to replay')
    events_file = episode / 'events.json'
    if not events_file.is_file():
        return ReplaySource(bag, episode, notes=(f'{episode.name}: no events.json, so n/p have no events to go to '
                                                 '(run `robodata segment` on the episode)',))
    try:
        events = read_events(events_file)
    except RobodataError as err:
        return ReplaySource(bag, episode, notes=(f'{err}; replaying without events',))
    return ReplaySource(bag, episode, tuple(sorted(int(e['t_ns']) for e in events)))
