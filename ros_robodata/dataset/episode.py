"""One episode's description: episode.yaml beside its bag.

episode.yaml is the episode's own record and travels with it (copy an episode folder and you copy
what it is); the catalog is an index over these files and can be rebuilt from them.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from ros_robodata.errors import DatasetError
from ros_robodata.files import read_yaml, write_yaml
from ros_robodata.vocabulary import MODES, OUTCOMES, STATUSES, check_choice

_ID = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]{0,127}')


def check_episode_id(episode_id: str) -> str:
    """Episode ids become folder names: letters, digits, '_', '-', '.', never a path."""
    if not isinstance(episode_id, str) or not _ID.fullmatch(episode_id) or '..' in episode_id:
        msg = f'invalid episode id {episode_id!r}: use letters, digits, "_", "-", "." (not starting with "." or "-")'
        raise DatasetError(msg)
    return episode_id


@dataclass
class Episode:
    """What a reviewer or a training pipeline needs to know about one episode: the content of its episode.yaml.

    Args:
        id: the episode id, also its folder's name (letters, digits, '_', '-', '.').
        task: what the robot was doing, e.g. pick_cube.
        operator: who drove it (a teleoperator's name, 'scripted').
        mode: how it was driven, one of MODES (teleop, autonomous...).
        robot: the robot's name from the profile.
        outcome: how it ended, one of OUTCOMES (success, failure, recovery, unknown...).
        status: where it stands, one of STATUSES (recording, complete, discarded...).
        start_ns: receive time of the bag's first message (pre-roll included).
        stop_ns: receive time of the bag's last message.
        marked_start_ns: when the operator pressed start.
        marked_stop_ns: when the operator pressed stop.
        stamp_start_ns: earliest header stamp in the bag (sensor time); None: not read.
        stamp_stop_ns: latest header stamp in the bag.
        profile_sha256: the hash of the robot profile it was recorded with.
        notes: free text (the operator's, or what an import or repair did).
        topics: per topic, what the bag holds of it (type, message count, rate).
        loss: messages lost (in all, seen as gaps in header stamps, dropped by the recorder; per topic).
        bag_sha256: each bag file's SHA-256, to find later corruption or edits.
        source: where an imported episode came from (path, kind, method, content id); empty when recorded.
        decision: the latest approval or rejection and what it rests on; empty until one is made.
        participant: the pseudonymous id (participants.yaml) of the person recorded; '' when none.
        copied_from: each dataset the episode was copied or moved out of (`robodata episodes copy|move`,
            `robodata merge`), oldest first: that dataset's name and path, the episode's id there, how and when;
            empty when it never left the dataset it was recorded or imported into.
        capture: a take captured to a protocol (`robodata session --protocol`): protocol, participant, take, the
            intended conditions and the measured ones with a verdict each; empty when none.

    Raises:
        DatasetError: a field of the wrong type, an invalid id, or an unknown mode, outcome or status.
    """

    id: str
    task: str = ''
    operator: str = ''
    mode: str = 'teleop'
    robot: str = ''
    outcome: str = 'unknown'
    status: str = 'recording'
    start_ns: int | None = None  # first message in the bag (pre-roll included)
    stop_ns: int | None = None  # last message in the bag
    marked_start_ns: int | None = None  # when the operator pressed start
    marked_stop_ns: int | None = None  # when the operator pressed stop
    stamp_start_ns: int | None = None  # earliest header stamp in the bag (sensor time); None: not read
    stamp_stop_ns: int | None = None  # latest header stamp in the bag
    profile_sha256: str = ''
    notes: str = ''
    topics: dict[str, dict[str, Any]] = field(default_factory=dict)
    loss: dict[str, Any] = field(default_factory=dict)
    bag_sha256: dict[str, str] = field(default_factory=dict)
    # Where an imported episode came from (path, kind, method, content_id, window, video metadata); empty when
    # the recorder wrote it.
    source: dict[str, Any] = field(default_factory=dict)
    # The latest approval or rejection (`robodata approve`): verdict, policy name and sha256, reasons, who, why, when;
    # empty until one is made. The audit log keeps every earlier one.
    decision: dict[str, Any] = field(default_factory=dict)
    # Who was recorded (a person in view or at the controls), by pseudonymous id from participants.yaml; '' none.
    participant: str = ''
    # Where it was pooled from, oldest first (`episodes copy|move`, `merge`): dataset name and path, id there, how,
    # when. Kept apart from `source`, whose being empty means "recorded live" to the segmenter and the scorer.
    copied_from: list[dict[str, Any]] = field(default_factory=list)
    # A take captured to a protocol (ros_robodata/capture/take_save.py writes it); empty when none.
    capture: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._check_types()
        check_episode_id(self.id)
        check_choice('outcome', self.outcome, OUTCOMES, DatasetError)
        check_choice('mode', self.mode, MODES, DatasetError)
        check_choice('status', self.status, STATUSES, DatasetError)

    def _check_types(self) -> None:
        """Every field of the type robodata writes (an episode.yaml edited by hand: `topics: 3`, a sha256 where its
        mapping belongs), said in one line naming the field, before any command walks it."""
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name.endswith('_ns'):
                ok, what = value is None or (isinstance(value, int) and not isinstance(value, bool)), 'an integer'
            elif f.name in ('topics', 'loss', 'bag_sha256', 'source', 'decision', 'capture'):
                ok, what = isinstance(value, dict), 'a mapping'
                if ok and f.name == 'topics':
                    ok, what = all(isinstance(v, dict) for v in value.values()), 'a mapping of topic mappings'
                if ok and f.name == 'bag_sha256':
                    ok, what = all(isinstance(v, str) for v in value.values()), 'a mapping of file name to sha256'
            elif f.name == 'copied_from':
                ok, what = isinstance(value, list) and all(isinstance(v, dict) for v in value), 'a list of mappings'
            else:
                ok, what = isinstance(value, str), 'text'
            if not ok:
                raise DatasetError(f'{f.name}: expected {what}, got {type(value).__name__} {str(value)[:40]!r}')

    @property
    def duration_s(self) -> float | None:
        """From the bag's first message to its last, in seconds; None when not known."""
        if self.start_ns is None or self.stop_ns is None:
            return None
        return (self.stop_ns - self.start_ns) / 1e9

    def to_dict(self) -> dict[str, Any]:
        """Every field as plain data, as episode.yaml stores it (from_dict reads it back)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = '<dict>') -> Episode:
        """An episode from plain data (parsed episode.yaml, to_dict()), checked as a hand-edited file must be.

        Args:
            data: the episode's fields.
            source: where the data came from, named in the error (the episode.yaml's path).

        Raises:
            DatasetError: not a mapping, an unknown key, or a field that is not what robodata writes.
        """
        if not isinstance(data, dict):
            raise DatasetError(f'{source}: expected a mapping of episode fields')
        known = {f.name for f in fields(cls)}
        if unknown := sorted(set(data) - known):
            raise DatasetError(f'{source}: unknown key(s) {", ".join(unknown)}')
        try:
            return cls(**data)
        except (TypeError, DatasetError) as err:
            raise DatasetError(f'{source}: {err}') from None


def read_episode(path: Path) -> Episode:
    if not path.exists():
        raise DatasetError(f'{path}: missing (not an episode folder?)')
    return Episode.from_dict(read_yaml(path, DatasetError), str(path))


def write_episode(path: Path, episode: Episode) -> None:
    """Durable and whole: a crash leaves the previous episode.yaml or the new one, never half of one."""
    write_yaml(path, episode.to_dict(), durable=True)
