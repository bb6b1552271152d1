"""`robodata verify` on a bag that belongs to no dataset: no checksums to compare, so every message is read."""

from __future__ import annotations

from pathlib import Path

from ros_robodata.dataset.dataset import Problem

__all__ = ['verify_bag']


def verify_bag(path: Path) -> list[Problem]:
    """A bag with no recorded checksums (not an episode): read every message, so a damaged chunk or a cut-off
    file shows up, and name what was wrong."""
    from ros_robodata.bag.reader import BagReader
    from ros_robodata.errors import BagError

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
