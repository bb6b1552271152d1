"""Who may be recorded to a protocol: checked before a session records anything, so a take without valid consent
is never captured rather than captured and retired later."""

from __future__ import annotations

import datetime
from pathlib import Path

from ros_robodata.capture.protocol import Protocol
from ros_robodata.dataset.participants import PARTICIPANTS_FILE, read_participants
from ros_robodata.errors import RobodataError

__all__ = ['check_participant']


def _expiry(value: object) -> datetime.date | None:
    if isinstance(value, datetime.datetime):
        return value.date()
    if isinstance(value, datetime.date):
        return value
    try:
        return datetime.date.fromisoformat(str(value)[:10])
    except ValueError:
        return None


def check_participant(dataset_root: Path, protocol: Protocol, participant: str,
                      today: datetime.date | None = None) -> None:
    """Refuse a session whose participant may not be recorded to this protocol.

    A participant must be registered in the dataset's participants.yaml (`robodata participant add`) whenever one
    is named; when the protocol requires consent, one must be named, with a consent on record, not withdrawn and
    not expired (an `expires` date in their entry, when it has one).

    Args:
        dataset_root: the dataset's folder (it may not exist yet: then nobody is registered).
        protocol: the protocol.
        participant: the pseudonymous id ('' when none was given).
        today: the date consent is checked against; today unless given.

    Raises:
        RobodataError: one line saying who is refused and what to do.
        DatasetError: participants.yaml is unreadable.
    """
    registry = dataset_root / PARTICIPANTS_FILE
    if not participant:
        if protocol.participants.consent_required:
            raise RobodataError(f'protocol {protocol.name} requires a participant with consent on record: pass '
                                f'--participant ID (registered with `robodata participant add {dataset_root} ID '
                                '--consent ...`)')
        return
    people = read_participants(dataset_root) if dataset_root.is_dir() else {}
    person = people.get(participant)
    if person is None:
        raise RobodataError(f'participant {participant} is not registered in {registry}: `robodata participant add '
                            f'{dataset_root} {participant} --consent ...` first')
    if person.get('withdrawn'):
        raise RobodataError(f'participant {participant} withdrew consent on {person["withdrawn"]}: not recorded')
    if not protocol.participants.consent_required:
        return
    if not str(person.get('consent') or '').strip():
        raise RobodataError(f'participant {participant} has no consent on record in {registry}, which protocol '
                            f'{protocol.name} requires')
    if 'expires' in person:
        expires = _expiry(person['expires'])
        if expires is None:
            raise RobodataError(f'participant {participant}: consent expiry {person["expires"]!r} in {registry} is '
                                'not a date (YYYY-MM-DD): not recorded')
        if expires < (today or datetime.date.today()):
            raise RobodataError(f'participant {participant}: consent expired on {expires.isoformat()}, which '
                                f'protocol {protocol.name} requires: renew it with `robodata participant add`')
