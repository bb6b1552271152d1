"""The robot profiles of a dataset that holds several embodiments (a `robodata merge` of different rigs).

A dataset of one robot keeps its profile snapshot in dataset.yaml (`robot_profile`), as always. A dataset of several
keeps one snapshot per embodiment as a profile file of its own, listed in dataset.yaml:

    embodiments:
      - {name: sim_cell_arm, file: profiles/sim_cell_arm.yaml, sha256: ...}
      - {name: reachy2, file: profiles/reachy2.yaml, sha256: ...}

and each episode points at its own by `profile_sha256` (its robot name where that is empty). `robot_profile` stays the
first source's, for what reads one profile per dataset. A profile file is a plain robot profile YAML, so
`--profile DATASET/profiles/reachy2.yaml` works too; a file edited since (its sha256 no longer the listed one) is
refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ros_robodata.dataset.audit import append_audit
from ros_robodata.dataset.dataset import DATASET_FILE, Dataset
from ros_robodata.dataset.episode import Episode
from ros_robodata.errors import DatasetError, RobodataError
from ros_robodata.files import write_yaml
from ros_robodata.profile import Profile, load_profile

__all__ = ['EMBODIMENTS', 'PROFILES_DIR', 'Embodiment', 'add_embodiments', 'embodiment_of', 'embodiments',
           'holds_several', 'one_profile', 'profile_of']

EMBODIMENTS = 'embodiments'  # the key in dataset.yaml
PROFILES_DIR = 'profiles'

_loaded: dict[tuple[str, str], Profile] = {}  # (file, sha256) -> the profile: read and validated once a process


@dataclass(frozen=True)
class Embodiment:
    """One robot profile of a dataset: its name (the robot's, made unique), its file and sha256.

    Args:
        name: the embodiment's name, the robot's name (with a short sha256 when two profiles share one).
        sha256: the profile's sha256, as episodes record it (`profile_sha256`).
        profile: the profile.
    """

    name: str
    sha256: str
    profile: Profile


def _listed(dataset: Dataset) -> list[dict[str, Any]]:
    entries = dataset.info.get(EMBODIMENTS) or []
    if not isinstance(entries, list) or not all(isinstance(e, dict) and {'name', 'file', 'sha256'} <= set(e)
                                                for e in entries):
        raise DatasetError(f'{dataset.root / DATASET_FILE}: {EMBODIMENTS}: expected a list of mappings with name, '
                           f'file and sha256, got {entries!r:.60}')
    return entries


def embodiments(dataset: Dataset) -> list[Embodiment]:
    """The dataset's embodiments, in the order listed; a dataset of one robot: its one profile (none without one).

    Raises:
        DatasetError: a listed profile file is missing, edited (sha256 differs) or `embodiments` is malformed.
        ProfileError: a profile file is not a valid profile.
    """
    entries = _listed(dataset)
    if not entries:
        if not dataset.has_profile:
            return []
        profile = dataset.profile
        return [Embodiment(profile.robot.name, profile.sha256, profile)]
    out = []
    for entry in entries:
        file = dataset.root / str(entry['file'])
        key = (str(file.resolve()), str(entry['sha256']))
        if key not in _loaded:
            if not file.is_file():
                raise DatasetError(f'{file}: listed in {DATASET_FILE} as embodiment {entry["name"]}, but missing')
            profile = load_profile(file)
            if profile.sha256 != entry['sha256']:
                raise DatasetError(f'{file}: edited since the merge (sha256 {profile.sha256[:12]}, {DATASET_FILE} '
                                   f'lists {str(entry["sha256"])[:12]}): put it back as it was')
            _loaded[key] = profile
        out.append(Embodiment(str(entry['name']), str(entry['sha256']), _loaded[key]))
    return out


def embodiment_of(dataset: Dataset, episode: Episode, known: list[Embodiment] | None = None) -> Embodiment:
    """The embodiment an episode was recorded with: the one of its profile_sha256, else of its robot name, else the
    dataset's first (an episode of a dataset of one robot).

    Args:
        dataset: the dataset the episode is in.
        episode: the episode.
        known: embodiments(dataset), when the caller has them already.

    Raises:
        DatasetError: the dataset has no robot profile, or as embodiments() does.
    """
    known = embodiments(dataset) if known is None else known
    if not known:
        raise DatasetError(f'{dataset.root}: dataset.yaml holds no robot profile; pass --profile')
    by_sha = [e for e in known if episode.profile_sha256 and e.sha256 == episode.profile_sha256]
    by_name = [e for e in known if episode.robot and e.profile.robot.name == episode.robot]
    return (by_sha or (by_name if len(by_name) == 1 else []) or known)[0]


def profile_of(dataset: Dataset, episode: Episode) -> Profile:
    """The robot profile to read an episode with (see embodiment_of)."""
    return embodiment_of(dataset, episode).profile


def holds_several(dataset: Dataset) -> bool:
    """Whether the dataset lists several embodiments (read from dataset.yaml only: no profile is loaded)."""
    return len(_listed(dataset)) > 1


def one_profile(dataset: Dataset, episodes: list[Episode]) -> Profile:
    """The one robot profile `episodes` of `dataset` were recorded with, for a command that runs on one robot's.

    Raises:
        RobodataError: they were recorded with different ones: one line naming `--where "robot = ..."` for each.
    """
    known = embodiments(dataset)
    if len(known) < 2:
        return dataset.profile
    groups: dict[str, list[str]] = {}
    for episode in episodes:
        groups.setdefault(embodiment_of(dataset, episode, known).name, []).append(episode.id)
    by_name = {e.name: e.profile for e in known}
    if len(groups) > 1:
        picks = ' or '.join(f'--where "robot = {by_name[name].robot.name}" ({len(ids)} episode(s))'
                            for name, ids in groups.items())
        raise RobodataError(f'{dataset.root}: the episodes picked are of {len(groups)} robots ({", ".join(groups)}) '
                            f'and this runs on one robot\'s at a time: add {picks}')
    return by_name[next(iter(groups))] if groups else dataset.profile


def add_embodiments(dataset: Dataset, profiles: list[Profile], who: str | None = None) -> list[Embodiment]:
    """List `profiles` as embodiments of the dataset (each written to profiles/<name>.yaml once; one already listed,
    by sha256, is kept), the dataset's own profile first: what a merge of different rigs does.

    Args:
        dataset: the dataset (with a robot profile).
        profiles: the profiles its episodes are recorded with.
        who: who, for the audit log.

    Raises:
        DatasetError: the dataset has no robot profile.
        RobodataError: a file cannot be written.
    """
    if not dataset.has_profile:
        raise DatasetError(f'{dataset.root}: dataset.yaml holds no robot profile to add embodiments to')
    entries = [dict(e) for e in _listed(dataset)]
    known = {str(e['sha256']) for e in entries}
    names = {str(e['name']) for e in entries}
    added = []
    for profile in ([dataset.profile] if not entries else []) + profiles:
        if profile.sha256 in known:
            continue
        name = profile.robot.name if profile.robot.name not in names else f'{profile.robot.name}-{profile.sha256[:8]}'
        name = ''.join(c if c.isalnum() or c in '-_.' else '_' for c in name)
        file = Path(PROFILES_DIR) / f'{name}.yaml'
        (dataset.root / PROFILES_DIR).mkdir(exist_ok=True)
        write_yaml(dataset.root / file, profile.to_dict(), durable=True)
        entries.append({'name': name, 'file': file.as_posix(), 'sha256': profile.sha256})
        known.add(profile.sha256)
        names.add(name)
        added.append(name)
    if added:
        dataset.info[EMBODIMENTS] = entries
        write_yaml(dataset.root / DATASET_FILE, dataset.info, durable=True)
        append_audit(dataset.audit_path, 'add_embodiments', None, who, embodiments=added)
    return embodiments(dataset)
