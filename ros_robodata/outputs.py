"""Where a command may write: never over a recording or a dataset's own files, never over a file it did not write.

A typo in `--out` (`robodata report DATASET --out DATASET/dataset.yaml`) must not destroy data. Every command that
writes somewhere the user names asks here first: a report file, an export folder. Each refusal is one line that
names the path and what to do instead.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ros_robodata.errors import RobodataError
from ros_robodata.vocabulary import BAG_SUFFIXES

# What a dataset holds that only its own commands write (the recorder, import, set, repair, score, segment).
_DATASET_FILES = ('dataset.yaml', 'catalog.sqlite', 'catalog.sqlite-wal', 'catalog.sqlite-shm', 'audit.jsonl')
REPORT_MARK = '<meta name="generator" content="ros_robodata report">'  # in every report we write


def _resolved(path: Path) -> Path:
    """`path` with its symlinks followed as far as they exist; a loop is one error line."""
    try:
        return path.resolve(strict=False)
    except (OSError, RuntimeError) as err:  # RuntimeError: a symlink loop on Python < 3.13
        raise RobodataError(f'{path}: cannot be followed ({getattr(err, "strerror", None) or err})') from None


def dataset_root_of(path: Path) -> Path | None:
    """The dataset `path` lies in (or is), if any: the nearest folder up holding dataset.yaml and episodes/."""
    for folder in (path, *path.parents):
        if (folder / 'dataset.yaml').is_file() and (folder / 'episodes').is_dir():
            return folder
    return None


def recorded_data(path: Path) -> str | None:
    """Why `path` (resolved) is data a command must not write over, or None: a dataset's own files, anything in
    its episodes/, a bag or a storage file anywhere."""
    root = dataset_root_of(path)
    if root is not None:
        relative = path.relative_to(root)
        if relative.parts and relative.parts[0] in (*_DATASET_FILES, 'episodes'):
            return f'it is part of the dataset at {root} (its {relative.parts[0]})'
        if path == root:
            return f'it is the dataset at {root}'
    if path.suffix in BAG_SUFFIXES:
        return 'it is (or would be taken for) a bag\'s storage file'
    for folder in (path, *path.parents):
        if (folder / 'metadata.yaml').is_file() and any(p.suffix in BAG_SUFFIXES for p in folder.iterdir()):
            return f'it is inside the bag {folder}'
    return None


def check_report_file(path: Path, *, force: bool = False) -> None:
    """A report is one .html file in an existing folder, outside any recorded data, replacing only a report of
    ours (or anything with `force`)."""
    if path.suffix.lower() not in ('.html', '.htm'):
        raise RobodataError(f'{path}: a report is written to an .html file; name one (e.g. report.html)')
    target = _resolved(path)
    if not target.parent.is_dir():
        raise RobodataError(f'{path}: no folder {path.parent} to write the report into')
    if (why := recorded_data(target)) is not None:
        raise RobodataError(f'{path}: not writing a report there: {why}; name a file outside it')
    if os.path.lexists(path):
        mode = os.stat(target).st_mode if target.exists() else 0
        if not stat.S_ISREG(mode):
            raise RobodataError(f'{path}: exists and is not a regular file; name another file')
        if not force and not _is_our_report(target):
            raise RobodataError(f'{path}: exists and is not a report robodata wrote; name another file, or add '
                                '--force to replace it')


def _is_our_report(path: Path) -> bool:
    """Ours: the mark, or the page an earlier version wrote (before the mark existed)."""
    try:
        with path.open('rb') as f:
            head = f.read(65536)
    except OSError:
        return False
    return REPORT_MARK.encode() in head or (head.startswith(b'<!DOCTYPE html>') and b'by ros_robodata' in head
                                            and b'quality report</title>' in head)


def prepare_export_dir(out: Path, *, force: bool = False) -> Path:
    """Make the export folder (and its episodes/) or say in one line why not: it must not be a file, a device,
    recorded data or a dataset, and a folder that holds something other than an export of ours needs `force`."""
    target = _resolved(out)
    if (why := recorded_data(target)) is not None:
        raise RobodataError(f'{out}: not exporting there: {why}; name a folder outside it (e.g. {out.name}_frames '
                            'next to the dataset)')
    if target.exists() and not target.is_dir():
        raise RobodataError(f'{out}: exists and is not a folder; name a folder to export into')
    if (why := _foreign_manifest(target / 'manifest.json')) is not None:
        raise RobodataError(f'{out}: not exporting there: its manifest.json {why}, and an export would replace it; '
                            'name another folder')
    if target.is_dir() and not force:
        foreign = [p.name for p in target.iterdir() if p.name not in _EXPORT_NAMES and not p.name.startswith('.')]
        if foreign and not (target / 'manifest.json').is_file():
            shown = ', '.join(sorted(foreign)[:3]) + (' ...' if len(foreign) > 3 else '')
            raise RobodataError(f'{out}: holds files that are not an export of ours ({shown}); name an empty or '
                                'new folder, or add --force to export into it anyway')
    try:
        (target / 'episodes').mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise RobodataError(f'{out}: cannot create the export folder: {err.strerror or err}') from None
    if not os.access(target, os.W_OK):
        raise RobodataError(f'{out}: not writable (permission denied); name a folder you can write to')
    return target


# The format an export's manifest.json names (export/manifest.py writes it), kept here below the exporters: telling
# our exports from other folders needs no exporter.
FRAMES_FORMAT = 'ros_robodata.frames/1'
# What an export folder of ours holds at its top (manifest, episodes, the labeling tools' task files).
_EXPORT_NAMES = {'manifest.json', 'episodes', 'label_studio', 'cvat', 'coco'}


def _foreign_manifest(path: Path) -> str | None:
    """Why a manifest.json that is there is not one of our exports, or None (absent, or ours)."""
    if not os.path.lexists(path):
        return None
    if path.is_symlink() or not path.is_file():
        return 'is not a file'
    try:
        with path.open('rb') as f:
            head = f.read(4096)
    except OSError as err:
        return f'cannot be read ({err.strerror or err})'
    return None if f'"format": "{FRAMES_FORMAT}"'.encode() in head else 'is not one robodata wrote'


def check_export_outside_dataset(out: Path) -> None:
    """An export a user names goes outside every dataset: a dataset's folder is what its own commands write (its
    review queue, its report), and an export inside it would be taken for part of it."""
    target = _resolved(out)
    root = dataset_root_of(target) or next((p for p in (target, *target.parents) if (p / 'dataset.yaml').is_file()),
                                           None)
    if root is not None:
        raise RobodataError(f'{out}: not exporting there: it is inside the dataset at {root}; name a folder outside '
                            f'it (e.g. {root.parent / (root.name + "_frames")})')
