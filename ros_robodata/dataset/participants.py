"""participants.yaml: the people recorded, by pseudonymous id, with the scope of their consent.

Episodes name a participant only by a pseudonymous id (P-0001), never by name; the registry that ties an id to its
consent is created readable by its owner alone (0600) and kept beside the data so that a withdrawal
(`robodata retire --participant ID`) can find every episode of that person. Names or contact details, if a team keeps
them, belong in its own consent records, not here.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import yaml

from ros_robodata import untrusted
from ros_robodata.errors import DatasetError

__all__ = ['PARTICIPANTS_FILE', 'add_participant', 'check_participant_id', 'read_participants', 'withdraw_participant']

PARTICIPANTS_FILE = 'participants.yaml'
_ID = re.compile(r'[A-Za-z0-9][A-Za-z0-9_-]{0,31}')


def check_participant_id(pid: str) -> str:
    """A pseudonymous id: letters, digits, '_' and '-', up to 32 (no spaces, no '@': not a name, not an address).

    Raises:
        DatasetError: anything else.
    """
    if not isinstance(pid, str) or not _ID.fullmatch(pid):
        raise DatasetError(f'participant id {pid!r}: use a pseudonym of letters, digits, "_" and "-" (e.g. P-0001), '
                           'never a name or an address')
    return pid


def read_participants(dataset_root: Path) -> dict[str, dict[str, Any]]:
    """The registry (id -> consent, registered, withdrawn); empty when there is none.

    Raises:
        DatasetError: participants.yaml is not a registry.
    """
    path = dataset_root / PARTICIPANTS_FILE
    if not path.is_file():
        return {}
    data = untrusted.read_yaml(path, DatasetError) or {}
    people = data.get('participants') if isinstance(data, dict) else None
    if not isinstance(people, dict) or not all(isinstance(v, dict) for v in people.values()):
        raise DatasetError(f'{path}: not a participant registry (participants: {{ID: {{consent: ...}}}})')
    return {str(k): v for k, v in people.items()}


def _write(dataset_root: Path, people: dict[str, dict[str, Any]]) -> None:
    path = dataset_root / PARTICIPANTS_FILE
    tmp = path.with_name(path.name + '.tmp')
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'w', encoding='utf-8') as f:
        yaml.safe_dump({'participants': people}, f, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.chmod(tmp, 0o600)  # an existing .tmp keeps its mode through O_CREAT
    os.replace(tmp, path)


def add_participant(dataset_root: Path, pid: str, consent: str) -> dict[str, Any]:
    """Register a participant (or change the scope of their consent).

    Args:
        dataset_root: the dataset's folder.
        pid: the pseudonymous id.
        consent: what they consented to (e.g. 'research use; faces may be shown to annotators').

    Raises:
        DatasetError: a bad id, an unreadable registry, or a participant who withdrew (their id is not reused).
    """
    people = read_participants(dataset_root)
    check_participant_id(pid)
    if people.get(pid, {}).get('withdrawn'):
        raise DatasetError(f'participant {pid} withdrew consent on {people[pid]["withdrawn"]}: give a new pseudonym')
    entry = {**people.get(pid, {}), 'consent': consent}
    entry.setdefault('registered', time.strftime('%Y-%m-%dT%H:%M:%S%z'))
    people[pid] = entry
    _write(dataset_root, people)
    return entry


def withdraw_participant(dataset_root: Path, pid: str) -> None:
    """Mark a participant as withdrawn (their episodes are retired by the caller).

    Raises:
        DatasetError: an unknown participant or an unreadable registry.
    """
    people = read_participants(dataset_root)
    if pid not in people:
        raise DatasetError(f'participant {pid} is not in {dataset_root / PARTICIPANTS_FILE}')
    people[pid]['withdrawn'] = time.strftime('%Y-%m-%dT%H:%M:%S%z')
    _write(dataset_root, people)
