"""A rosbag2 bag (or a ROS 1 bag, converted first) into the dataset: whole as one episode, or split into windows
(import_split.py); a partial episode the watcher made of it earlier is replaced by the whole recording."""

from __future__ import annotations

from dataclasses import replace

from ros_robodata.bag.bag_repair import repair_bag
from ros_robodata.bag.reader import BagReader
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.episode import Episode
from ros_robodata.dataset.episode_stats import bag_checksums, fill_stats_from_bag, fill_stats_from_index
from ros_robodata.dataset.importers.import_common import (
    Imported,
    ImportOptions,
    check_topics,
    episode_id_for,
    source_record,
)
from ros_robodata.dataset.importers.import_rosbag1 import CONVERTED_NOTE, converted_rosbag1
from ros_robodata.dataset.importers.import_split import import_split
from ros_robodata.dataset.partial import partial_episode
from ros_robodata.dataset.sources import METADATA_FILE, Recording, content_id
from ros_robodata.dataset.staging import commit_episode, imported_from, staging_folder
from ros_robodata.dataset.transfer import check_room, remove_source, transfer
from ros_robodata.profile import Profile


def import_bag(dataset: Dataset, recording: Recording, options: ImportOptions, profile: Profile | None,
               who: str | None) -> Imported:
    """Import one bag; nothing when its content is already in the dataset (unless split into new windows)."""
    cid = content_id(recording.source.files)
    done = imported_from(dataset, cid)
    result = Imported(recording.source, dataset)
    if done and options.split is None:
        result.existing = sorted(done)
        return result
    if recording.kind == 'rosbag1':  # converted, then imported as the rosbag2 bag it becomes
        with converted_rosbag1(dataset, recording) as bag:
            converted = import_bag(dataset, bag, replace(options, method='move'), profile, who)
        if options.method == 'move' and converted.episodes:
            remove_source(recording)
        return converted
    if recording.origin is not None:
        result.notes.append(CONVERTED_NOTE)
    with BagReader(recording.path) as reader:
        topics = reader.topics
        damaged = bool(reader.damaged_files)
        reader_notes = list(reader.notes)
    result.notes += check_topics(recording.path, topics, profile)
    check_room(dataset, recording, 'copy' if options.method == 'link' and damaged else options.method)
    if options.split is None:
        partial = None if options.episode_id else partial_episode(dataset, recording)
        if partial is not None:
            result.notes.append(f'the whole recording of partial episode {partial.id} ({partial.status}, '
                                f'{partial.source.get("size_bytes", 0):,} bytes): it replaces it, same id')
        result.episodes.append(_import_whole(dataset, recording, options, profile, who, cid, damaged,
                                             reader_notes, result.notes, replaces=partial))
        return result
    return import_split(dataset, recording, options, profile, who, cid, done, result)


def _import_whole(dataset: Dataset, recording: Recording, options: ImportOptions, profile: Profile | None,
                  who: str | None, cid: str, damaged: bool, reader_notes: list[str], notes: list[str], *,
                  replaces: Episode | None = None) -> str:
    episode_id = replaces.id if replaces is not None else dataset.reserve_episode_id(
        options.episode_id or episode_id_for(recording.name))
    method = 'copy' if damaged and options.method == 'link' else options.method
    if method != options.method:
        notes.append('the bag is damaged: copied and repaired instead of linked')
    with staging_folder(dataset, episode_id) as staging:
        bag = staging / 'bag'
        bag.mkdir()
        hashes = transfer(recording, bag, method)
        repaired = repair_bag(bag) if (damaged or not (bag / METADATA_FILE).is_file()) else None
        status = 'complete'
        episode_notes = list(notes)
        if damaged:
            status = 'incomplete'
            episode_notes += reader_notes
            assert repaired is not None
            episode_notes += repaired.actions
        episode = Episode(id=episode_id, task=options.task, operator=options.operator, mode=options.mode,
                          robot=profile.robot.name if profile else '', outcome=options.outcome, status=status,
                          profile_sha256=profile.sha256 if profile else '', notes='\n'.join(episode_notes),
                          source=source_record(recording, replace(options, method=method), cid))
        if method == 'link':
            fill_stats_from_index(episode, bag, profile)
        else:
            fill_stats_from_bag(episode, bag, profile)
        episode.bag_sha256 = bag_checksums(bag, hashes, linked=method == 'link')
        if replaces is not None:  # what people said about the partial episode stands for the whole one
            episode.task, episode.operator, episode.outcome = replaces.task, replaces.operator, replaces.outcome
        commit_episode(dataset, staging, episode, who, replaces=replaces)
    if method == 'move':
        remove_source(recording)
    return episode_id
