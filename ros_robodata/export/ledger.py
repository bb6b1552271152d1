"""What robodata wrote into an export folder, so a rerun never replaces labels someone put there.

Annotators edit the task files an export leaves (`coco/annotations.json` filled with boxes, a Label Studio task
file with predictions corrected). A rerun (more episodes, other settings) must not reset them. DIR/.robodata_export
.json records the sha256 of every task file robodata wrote; before a task file is replaced, the file there is
compared with that record:

- it holds what robodata last wrote (or exactly the new bytes): replaced (or left alone);
- anything else (edited since, or never written by robodata): kept untouched, the new version is written beside it
  as `<name>.new<suffix>`, and one line says so (the caller shows it);
- a folder or something other than a file is where the file belongs: nothing is written there, one line says so.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from ros_robodata import untrusted
from ros_robodata.errors import RobodataError
from ros_robodata.files import write_atomic, write_json

LEDGER_FILE = '.robodata_export.json'
_FORMAT = 'ros_robodata.export_ledger/1'


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class Ledger:
    """The task files of one export folder that robodata wrote, and what this run kept instead of replacing."""

    root: Path
    files: dict[str, str] = field(default_factory=dict)  # path relative to root -> sha256 robodata wrote
    kept: list[str] = field(default_factory=list)  # one line per file not replaced

    @classmethod
    def open(cls, root: Path) -> Ledger:
        """The folder's record; an absent or unreadable one is empty (every file there is then taken as not ours)."""
        ledger = cls(root)
        try:
            data = untrusted.read_json(root / LEDGER_FILE)
        except RobodataError:
            return ledger
        if isinstance(data, dict) and data.get('format') == _FORMAT and isinstance(data.get('files'), dict):
            ledger.files = {str(k): str(v) for k, v in data['files'].items()}
        return ledger

    def write(self, rel: str, data: bytes) -> Path | None:
        """Write root/rel unless that would replace something robodata did not write; returns the path written (the
        file, or its `.new` sibling), None when nothing could be written."""
        target = self.root / rel
        digest = _sha256(data)
        kind, detail = self._state(target, rel)
        if kind == 'blocked':
            self.kept.append(f'{rel}: {detail}: nothing written there')
            return None
        if kind == 'ours' or detail == digest:
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(target, data)
            self.files[rel] = digest
            return target
        why = 'changed since robodata wrote it' if rel in self.files else 'not written by robodata'
        sibling = target.with_name(f'{target.stem}.new{target.suffix}')
        sibling_rel = sibling.relative_to(self.root).as_posix()
        there, there_detail = self._state(sibling, sibling_rel)
        if there != 'ours' and there_detail != digest:
            self.kept.append(f'{rel}: {why}: kept; and {sibling_rel} is not robodata\'s either: this export\'s '
                             'version is not written (move them away to get it)')
            return None
        write_atomic(sibling, data)
        self.files[sibling_rel] = digest
        self.kept.append(f'{rel}: {why} (labels?): kept; this export\'s version is {sibling_rel}')
        return sibling

    def _state(self, path: Path, rel: str) -> tuple[str, str]:
        """('ours', '') when the path is free or holds what robodata wrote last; ('other', its sha256) when it holds
        anything else; ('blocked', why) when no file can be written there."""
        parent = path.parent
        while parent != self.root and not parent.exists() and not parent.is_symlink():
            parent = parent.parent
        if parent != self.root and not parent.is_dir():
            return 'blocked', f'{parent.relative_to(self.root).as_posix()} is a file, not a folder'
        if not path.exists() and not path.is_symlink():
            return 'ours', ''
        if path.is_symlink() or not path.is_file():
            return 'blocked', 'a folder or a link is there, not a file'
        try:
            current = _sha256(path.read_bytes())
        except OSError as err:
            return 'blocked', f'unreadable ({err.strerror or err})'
        return ('ours', '') if self.files.get(rel) == current else ('other', current)

    def save(self) -> None:
        write_json(self.root / LEDGER_FILE, {'format': _FORMAT, 'files': dict(sorted(self.files.items()))})
