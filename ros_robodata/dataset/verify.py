"""`robodata verify`: an episode's files against the sha256 recorded when it was written, the catalog against
the files, a linked recording against its content id; and a bag that belongs to no dataset, read whole."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ros_robodata.bag.reader import BagReader
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.episode import Episode
from ros_robodata.dataset.sources import content_id
from ros_robodata.errors import BagError, DatasetError
from ros_robodata.files import file_sha256, leftover_temporaries

__all__ = ['Problem', 'verify_bag', 'verify_dataset']


@dataclass(frozen=True)
class Problem:
    """Something `verify` found wrong with an episode."""

    episode: str
    what: str

    def __str__(self) -> str:
        return f'{self.episode}: {self.what}'


def verify_dataset(dataset: Dataset, progress: Callable[[Iterable[str]], Iterable[str]] | None = None
                   ) -> list[Problem]:
    """Check every episode's files against its recorded sha256 and the catalog against the files.

    Args:
        dataset: the dataset to check.
        progress: wraps the episode ids to show progress.

    Returns:
        Every problem found, the dataset's own leftovers first; empty when all is well.
    """
    problems: list[Problem] = []
    on_disk = dataset.episode_ids()
    listed = {row.id: row for row in dataset.catalog.query()}
    for episode_id in sorted(set(listed) - set(on_disk)):
        if listed[episode_id].status == 'retired':
            continue  # its data was deleted on purpose: tombstones/ID.json says when, by whom and why
        problems.append(Problem(episode_id, 'in the catalog but its folder or episode.yaml is missing'))
    ids = progress(on_disk) if progress else on_disk
    for episode_id in ids:
        try:
            episode = dataset.episode(episode_id)
        except DatasetError as err:
            problems.append(Problem(episode_id, str(err)))
            continue
        row = listed.get(episode_id)
        if row is None:
            problems.append(Problem(episode_id, 'not in the catalog (run `robodata catalog rebuild`)'))
        elif (row.outcome, row.status) != (episode.outcome, episode.status):
            problems.append(Problem(episode_id, f'catalog says {row.outcome}/{row.status}, episode.yaml says '
                                                f'{episode.outcome}/{episode.status}'))
        problems.extend(_verify_bag(dataset, episode))
        problems.extend(_leftovers(dataset, episode_id, dataset.episode_dir(episode_id),
                                        dataset.episode_dir(episode_id) / 'bag'))
    return [*_leftovers(dataset, dataset.name, dataset.root), *problems]

def _leftovers(dataset: Dataset, owner: str, *folders: Path) -> list[Problem]:
    return [Problem(owner, f'{path.relative_to(dataset.root)}: a temporary file left by a command that was killed '
                           'while writing (the file it was to replace is intact): `robodata repair` removes it')
            for folder in folders for path in leftover_temporaries(folder)]

def _verify_bag(dataset: Dataset, episode: Episode) -> list[Problem]:
    problems = _verify_links(dataset, episode)
    files = {p.name: p for p in dataset.bag_files(episode.id) if not p.is_symlink()}
    if not files and not problems:
        return [Problem(episode.id, 'no bag')]
    if episode.status == 'recording':
        return []  # still being written: nothing to compare yet
    if not episode.bag_sha256:
        return [*problems, Problem(episode.id, 'no checksums recorded for its bag')]
    for name, expected in sorted(episode.bag_sha256.items()):
        if name not in files:
            problems.append(Problem(episode.id, f'bag file {name} is missing'))
        elif file_sha256(files[name]) != expected:
            problems.append(Problem(episode.id, f'bag file {name} changed since it was recorded (sha256 mismatch)'))
    for name in sorted(set(files) - set(episode.bag_sha256)):
        problems.append(Problem(episode.id, f'bag file {name} is not in the recorded checksums'))
    return problems

def _verify_links(dataset: Dataset, episode: Episode) -> list[Problem]:
    """A bag imported with --link points at the recording where it lies: it must still be there, holding the
    content it had (checked by its content id: cheap, whatever its size)."""

    bag = dataset.bag_dir(episode.id)
    links = sorted(p for p in bag.iterdir() if p.is_symlink()) if bag.is_dir() else []
    gone = [p for p in links if not p.exists()]
    if gone:
        return [Problem(episode.id, f'bag file {p.name} links to {os.readlink(p)}, which is gone') for p in gone]
    expected = episode.source.get('content_id')
    if links and expected and content_id(links) != expected:
        return [Problem(episode.id, f'the linked recording {episode.source.get("path")} changed since it was '
                                    'imported (content id mismatch)')]
    return []


def verify_bag(path: Path) -> list[Problem]:
    """A bag with no recorded checksums (not an episode): read every message, so a damaged chunk or a cut-off
    file shows up, and name what was wrong."""
    name = str(path)
    try:
        with BagReader(path) as reader:
            listed = reader.message_count
            read = sum(1 for _ in reader.messages())
            problems = [Problem(name, note) for note in reader.notes]
            if read != listed:
                problems.append(Problem(name, f'{read} message(s) readable of {listed} listed'))
            return problems
    except BagError as err:
        return [Problem(name, ' '.join(str(err).split()))]
    except Exception as err:  # a corrupt chunk surfaces as whatever the decompressor or parser raises
        return [Problem(name, f'unreadable past some point: {type(err).__name__}: {" ".join(str(err).split())}')]
