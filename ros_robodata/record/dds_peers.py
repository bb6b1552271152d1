"""Which Fast DDS participants run on this computer, and how large a message their shared-memory segment holds.

A camera frame larger than its publisher's shared-memory segment cannot go through it: it goes as UDP fragments
instead, and that is where a stock Fast DDS loses frames under load. Whether the publisher has a large segment
is therefore what decides if the rig's DDS profile is the fix. Fast DDS leaves it readable, without privilege:
each participant's segment is a file `/dev/shm/fastrtps_<id>` (its size the segment's), and the live owner holds
an exclusive flock on the companion `fastrtps_<id>_el` file, which `/proc/locks` lists by inode and process id. A
segment nobody locks is left over from a process that died.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ['ShmParticipant', 'shm_participants']


@dataclass(frozen=True)
class ShmParticipant:
    """A live Fast DDS participant on this computer: its process, and what its shared-memory segment holds."""

    pid: int
    segment_bytes: int
    command: str  # the process's command line, shortened, for the operator to recognise the driver


def shm_participants(shm_dir: str | Path = '/dev/shm', proc_dir: str | Path = '/proc') -> list[ShmParticipant] | None:
    """The live participants on this computer, by process id; None where this cannot be read (not Linux, no
    /dev/shm, a sandbox hiding /proc/locks)."""
    shm, proc = Path(shm_dir), Path(proc_dir)
    try:
        lock_lines = (proc / 'locks').read_text().splitlines()
        entries = list(os.scandir(shm))
    except OSError:
        return None
    owner_of: dict[int, int] = {}  # inode -> pid holding a flock on it
    for line in lock_lines:
        fields = line.split()
        # '1: FLOCK  ADVISORY  WRITE 20090 00:1b:103590 0 EOF' (a blocked waiter's line has '->' after the number)
        if len(fields) >= 6 and fields[1] == 'FLOCK' and fields[4].isdigit():
            inode = fields[5].rsplit(':', 1)[-1]
            if inode.isdigit():
                owner_of[int(inode)] = int(fields[4])
    sizes = {e.name: e for e in entries if e.name.startswith('fastrtps_') and not e.name.startswith('fastrtps_port')}
    found = []
    for name, entry in sizes.items():
        if not name.endswith('_el') or name[:-3] not in sizes:
            continue
        try:
            pid = owner_of.get(entry.inode())
            segment = sizes[name[:-3]].stat().st_size
        except OSError:  # gone while looking
            continue
        if pid is not None:
            found.append(ShmParticipant(pid, segment, _command(proc, pid)))
    return sorted(found, key=lambda p: p.pid)


def _command(proc: Path, pid: int) -> str:
    try:
        words = (proc / str(pid) / 'cmdline').read_bytes().split(b'\0')
    except OSError:
        return '?'
    text = ' '.join(w.decode(errors='replace') for w in words if w)
    return text if len(text) <= 80 else text[:77] + '...'
