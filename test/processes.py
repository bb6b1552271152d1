"""Helpers for tests that start commands as processes."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path


def signal_state(pid: int) -> str:
    """A process's signal mask, ignored and caught signals (from /proc), for a failure message when it did not
    react to a signal: a blocked or ignored SIGINT inherited from the test process reads differently from a hang."""
    try:
        lines = Path(f'/proc/{pid}/status').read_text().splitlines()
    except OSError as err:
        return f'(no /proc status: {err})'
    return '; '.join(line for line in lines if line.startswith(('State', 'SigBlk', 'SigIgn', 'SigCgt', 'SigPnd',
                                                                 'ShdPnd')))


def without_permission_override() -> Callable[[], None]:
    """A `preexec_fn` that makes permission bits apply to the child as they do to an ordinary user: as root, it
    drops CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from its bounding set, so the program it execs has neither;
    as another user, nothing is needed."""
    import ctypes

    def drop() -> None:
        if os.geteuid() == 0:
            libc = ctypes.CDLL(None, use_errno=True)
            for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
                if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
                    raise OSError(ctypes.get_errno(), 'prctl(PR_CAPBSET_DROP) failed')
    return drop
