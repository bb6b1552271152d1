"""Helpers for tests that start commands as processes."""

from __future__ import annotations

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
