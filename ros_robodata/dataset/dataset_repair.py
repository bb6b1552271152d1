"""After a crash or a hand edit: make a dataset's episodes whole and its records match what is on disk.

An episode whose bag was cut short gets a complete bag (the damaged original kept in bag/damaged/), an episode
the recorder never closed becomes `incomplete`, and a folder under episodes/ that holds a bag but no
episode.yaml (a bag copied in by hand) is registered as an episode. Every folder checked is reported, so
"nothing to do" is said, never implied by silence.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ros_robodata.bag.bag_repair import repair_bag
from ros_robodata.bag.reader import BagReader
from ros_robodata.dataset.audit import append_audit
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.episode import Episode, check_episode_id
from ros_robodata.dataset.episode_stats import fill_stats_from_bag
from ros_robodata.dataset.importers.import_common import check_topics
from ros_robodata.dataset.sources import METADATA_FILE, content_id, recording_at
from ros_robodata.errors import RobodataError
from ros_robodata.files import leftover_temporaries
from ros_robodata.profile import Profile

DATASET_FILES = '(dataset files)'  # what repair_dataset calls the dataset's own files in its results


@dataclass
class Repaired:
    """What repair did to one episode folder; no actions means it was whole."""

    episode: str
    actions: list[str] = field(default_factory=list)
    messages: int = 0
    problem: str = ''  # could not be repaired (and why)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {'episode': self.episode, 'actions': self.actions, 'messages': self.messages}
        if self.problem:
            data['problem'] = self.problem
        return data


def repair_episode(dataset: Dataset, episode_id: str) -> dict[str, Any]:
    """Repair one episode; a whole episode whose records agree with its bag is left untouched."""
    episode = dataset.episode(episode_id)
    bag = dataset.bag_dir(episode_id)
    actions: list[str] = remove_leftovers(dataset.episode_dir(episode_id), bag)
    if not dataset.bag_files(episode_id):
        return {'episode': episode_id, 'actions': [*actions, 'no bag to repair'], 'messages': 0}
    with BagReader(bag) as reader:
        needs_bag_repair = not reader.complete
    if needs_bag_repair:
        actions.extend(repair_bag(bag).actions)
    if needs_bag_repair or episode.status == 'recording' or not (episode.bag_sha256 or _linked(episode)):
        with BagReader(bag) as reader:
            episode.topics = {
                name: {**episode.topics.get(name, {}), 'type': info.msgtype, 'count': info.count}
                for name, info in reader.topics.items()
            }
            if reader.start_ns is not None:
                episode.start_ns = episode.start_ns or reader.start_ns
                episode.stop_ns = reader.end_ns
            messages = reader.message_count
        if episode.status == 'recording' or (needs_bag_repair and episode.status in ('complete', 'approved')):
            why = 'the recorder did not close it' if episode.status == 'recording' else 'its bag was damaged'
            actions.append(f'status {episode.status} -> incomplete ({why})')
            episode.status = 'incomplete'
        dataset.save_episode(episode)
        dataset.record_checksums(episode_id)
        actions.append('episode.yaml, catalog and checksums updated from the bag')
        append_audit(dataset.audit_path, 'repair', episode_id, actions=actions)
    else:
        with BagReader(bag) as reader:
            messages = reader.message_count
    return {'episode': episode_id, 'actions': actions, 'messages': messages}


def remove_leftovers(*folders: Path) -> list[str]:
    """Temporary files of a command that was killed while writing: the files they were to replace are intact."""
    removed = []
    for folder in folders:
        for path in leftover_temporaries(folder):
            path.unlink(missing_ok=True)
            removed.append(path.name)
    return [f'removed {len(removed)} temporary file(s) left by a killed command ({", ".join(removed)})'] \
        if removed else []


def _linked(episode: Episode) -> bool:
    return episode.source.get('method') == 'link'


def repair_dataset(dataset: Dataset, profile: Profile | None = None) -> list[Repaired]:
    """Every folder under episodes/: unregistered bags registered, empty leftovers removed, each episode
    repaired as repair_episode does, so a dataset left by a crash or a hand copy is whole again.

    Args:
        dataset: the dataset to repair.
        profile: the robot profile a bag found without episode.yaml is checked against; None: not checked.

    Raises:
        RobodataError: the catalog or an episode.yaml cannot be written while a folder is registered (an
            episode's own problem is kept in its Repaired.problem instead).
    """
    results = []
    leftovers = remove_leftovers(dataset.root)
    if leftovers:
        results.append(Repaired(DATASET_FILES, leftovers))
    folders = sorted(p for p in dataset.episodes_dir.iterdir() if p.is_dir() and not p.name.startswith('.')) \
        if dataset.episodes_dir.is_dir() else []
    for folder in folders:
        if (folder / 'episode.yaml').is_file():
            try:
                results.append(Repaired(**repair_episode(dataset, folder.name)))
            except RobodataError as err:
                results.append(Repaired(folder.name, problem=' '.join(str(err).split())))
            continue
        results.append(register_folder(dataset, folder, profile))
    return results


def register_folder(dataset: Dataset, folder: Path, profile: Profile | None) -> Repaired:
    """A folder under episodes/ without episode.yaml: an empty one (left by a recording or an import that was
    stopped) is removed; one holding a bag becomes an episode (outcome unknown), its bag left where it is."""
    result = Repaired(folder.name)
    if not any(folder.iterdir()):
        folder.rmdir()
        result.actions.append('empty folder (a recording or an import that was stopped): removed')
        return result
    try:
        check_episode_id(folder.name)
    except RobodataError as err:
        result.problem = f'holds no episode.yaml and its name is not an episode id ({err}): rename the folder'
        return result
    bag = folder / 'bag'
    if not bag.exists():
        inside = [p for p in folder.iterdir() if not p.name.startswith('.')]
        recordings = [r for r in (recording_at(p) for p in inside) if r is not None and r.is_bag]
        if recording_at(folder) is not None:
            result.problem = ('its bag files lie in the episode folder itself: move them into '
                              f'{folder.name}/bag/ and run repair again')
            return result
        if len(recordings) != 1:
            result.problem = ('no episode.yaml and no bag/ folder' + (f' ({len(recordings)} bags in it: one '
                              'episode holds one bag)' if recordings else ' or bag in it') + ': nothing to register')
            return result
        found = recordings[0]
        bag.mkdir()
        for file in found.files:
            shutil.move(str(file), bag / file.name)
        if found.has_metadata:
            shutil.move(str(found.path / METADATA_FILE), bag / METADATA_FILE)
        if found.kind == 'bag' and not any(found.path.iterdir()):
            found.path.rmdir()
        result.actions.append(f'moved {found.path.name} to {folder.name}/bag/')
    try:
        with BagReader(bag) as reader:
            topics, damaged = reader.topics, bool(reader.damaged_files)
        notes = check_topics(bag, topics, profile)
        if damaged or not (bag / METADATA_FILE).is_file():
            result.actions.extend(repair_bag(bag).actions)
    except RobodataError as err:
        result.problem = f'holds a bag that cannot be read: {" ".join(str(err).split())}'
        return result
    files = sorted(p for p in bag.iterdir() if p.is_file() and p.name != METADATA_FILE)
    episode = Episode(id=folder.name, robot=profile.robot.name if profile else '',
                      status='incomplete' if damaged else 'complete', mode='unknown',
                      profile_sha256=profile.sha256 if profile else '',
                      notes='\n'.join(['registered by `robodata repair`: its bag was put in the folder by hand',
                                       *notes]),
                      source={'path': str(bag.resolve()), 'kind': 'bag', 'method': 'in_place',
                              'content_id': content_id(files)})
    result.messages = fill_stats_from_bag(episode, bag, profile)
    dataset.save_episode(episode)
    dataset.record_checksums(episode.id)
    append_audit(dataset.audit_path, 'register_episode', episode.id, source=str(bag))
    result.actions.append(f'registered as an episode ({result.messages} messages, outcome unknown: '
                          f'`robodata set {dataset.episode_dir(episode.id)} --outcome ...` labels it)')
    return result
