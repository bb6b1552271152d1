"""The rig computer's settings that decide whether camera and LiDAR frames reach the recorder.

Checked once when the recorder starts. Each finding carries the exact command that fixes it, after the
ROS 2 DDS tuning guide (docs.ros.org, "DDS tuning information"): large messages travel as IP fragments
over UDP between machines, and through a shared-memory segment on one machine, and both have limits
that a VGA camera at 30 Hz exceeds on a stock Linux. Reading the settings needs no privilege.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ros_robodata.errors import RobodataError
from ros_robodata.paths import config_path
from ros_robodata.record.dds_peers import ShmParticipant

PROFILE_ENV = ('FASTRTPS_DEFAULT_PROFILES_FILE', 'FASTDDS_DEFAULT_PROFILES_FILE')
RIG_PROFILE = 'dds/fastdds_rig.xml'
SOCKET_BUFFER = 4 * 2**20  # what config/dds/fastdds_rig.xml asks for each UDP socket
IPFRAG_HIGH_THRESH = 128 * 2**20  # the tuning guide's value: room to reassemble many frames at once
IPFRAG_TIME_S = 3  # the tuning guide's value: drop a frame that lost a fragment fast, freeing room
SHM_NEEDED = 4 * 64 * 2**20  # four participants (cameras, arm, recorder, monitor) with the profile's 64 MiB segment
DEFAULT_SHM_SEGMENT = 512 * 2**10  # Fast DDS's default shared-memory segment; a bigger message cannot use it


@dataclass(frozen=True)
class HostFinding:
    """One setting too low for the rig's load, and how to raise it."""

    setting: str
    found: str
    wanted: str
    command: str

    def __str__(self) -> str:
        return f'{self.setting} is {self.found}, camera and LiDAR load needs {self.wanted}: {self.command}'


def read_sysctl(name: str) -> int | None:
    """A kernel setting as /proc/sys shows it (net.core.rmem_max), or None where it cannot be read."""
    try:
        return int(Path('/proc/sys', *name.split('.')).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def shm_free_bytes() -> int | None:
    try:
        return shutil.disk_usage('/dev/shm').free
    except OSError:
        return None


def check_host(
    large_messages: bool,
    *,
    sysctl: Callable[[str], int | None] = read_sysctl,
    shm_free: Callable[[], int | None] = shm_free_bytes,
    environ: Mapping[str, str] | None = None,
) -> list[HostFinding]:
    """The settings too low for a load with camera or LiDAR topics (large_messages); none without them."""
    if not large_messages:
        return []
    env = os.environ if environ is None else environ
    findings = []
    for name in ('net.core.rmem_max', 'net.core.wmem_max'):
        value = sysctl(name)
        if value is not None and value < SOCKET_BUFFER:
            findings.append(HostFinding(name, _size(value), f'>= {_size(SOCKET_BUFFER)}',
                                        f'sudo sysctl -w {name}={SOCKET_BUFFER}'))
    value = sysctl('net.ipv4.ipfrag_high_thresh')
    if value is not None and value < IPFRAG_HIGH_THRESH:
        findings.append(HostFinding('net.ipv4.ipfrag_high_thresh', _size(value), f'>= {_size(IPFRAG_HIGH_THRESH)}',
                                    f'sudo sysctl -w net.ipv4.ipfrag_high_thresh={IPFRAG_HIGH_THRESH}'))
    value = sysctl('net.ipv4.ipfrag_time')
    if value is not None and value > IPFRAG_TIME_S:
        findings.append(HostFinding('net.ipv4.ipfrag_time', f'{value} s', f'<= {IPFRAG_TIME_S} s',
                                    f'sudo sysctl -w net.ipv4.ipfrag_time={IPFRAG_TIME_S}'))
    free = shm_free()
    if free is not None and free < SHM_NEEDED:
        findings.append(HostFinding('/dev/shm free space', _size(free), f'>= {_size(SHM_NEEDED)}',
                                    'in a container: docker run --shm-size=1g (or --ipc=host); else '
                                    'sudo mount -o remount,size=1G /dev/shm'))
    if env.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp').startswith('rmw_fastrtps') \
            and not any(env.get(name) for name in PROFILE_ENV):
        findings.append(HostFinding('Fast DDS profile', 'the default (512 KiB shared-memory segment)',
                                    'a segment that holds several frames',
                                    f'start the camera and LiDAR drivers (and this recorder) with '
                                    f'{PROFILE_ENV[0]}={_rig_profile()}'))
    return findings


def _rig_profile() -> str:
    try:
        return str(config_path(RIG_PROFILE))
    except RobodataError:
        return f'<ros_robodata share>/config/{RIG_PROFILE}'


def frame_loss_advice(topic: str, mean_bytes: float, participants: list[ShmParticipant] | None,
                      own_pids: frozenset[int] = frozenset()) -> str | None:
    """What to tell once when a topic with messages too large for the default segment loses some: the DDS profile
    only where a participant on this computer has a segment too small for them (`participants`, as
    `shm_participants` reads them; this recorder's own in `own_pids` aside), else that the profile is not the cause.

    Args:
        topic: The topic losing messages.
        mean_bytes: Its messages' mean size.
        participants: This computer's Fast DDS participants, or None where they cannot be read.
        own_pids: This recorder's processes.
    """
    if mean_bytes <= DEFAULT_SHM_SEGMENT:
        return None
    size = _size(int(mean_bytes))
    if participants is None:
        return (f'{topic} is losing messages of {size}; the cause is not known here (this computer\'s DDS '
                f'participants cannot be read). If its driver runs on Fast DDS\'s defaults, see docs/recording.md, '
                '"Losing nothing on a busy rig"')
    small = [p for p in participants if p.pid not in own_pids and p.segment_bytes < 2 * mean_bytes]
    if small:
        named = '; '.join(f'pid {p.pid} ({p.command}): {_size(p.segment_bytes)}' for p in small[:4])
        return (f'{topic} is losing messages of {size}, and Fast DDS participants on this computer have a '
                f'shared-memory segment too small for them ({named}), so those frames go as UDP fragments: restart '
                f'the one that is its driver with {PROFILE_ENV[0]}={_rig_profile()} (the publisher\'s side decides; '
                f'see docs/recording.md, "Losing nothing on a busy rig")')
    return (f'{topic} is losing messages of {size}, and no DDS profile change will help on this computer: every '
            f'Fast DDS participant here already has a shared-memory segment that holds them. The cause is not known '
            f'here: this computer short of CPU (see `top`), or its driver on another computer (then the network)')


def _size(n: int) -> str:
    for unit, scale in (('GiB', 2**30), ('MiB', 2**20), ('KiB', 2**10)):
        if n >= scale:
            return f'{n / scale:.0f} {unit}' if n % scale == 0 else f'{n / scale:.1f} {unit}'
    return f'{n} B'
