"""Who gets the CPU first at the rig: the middleware's receive threads, then our intake, then the rest.

A driver publishing reliable with a history of 10 at 500 Hz cannot repair a message its subscriber did not take
within 20 ms. What must run within that time is the DDS receive threads (C++, no GIL); everything of ours can
wait, since the subscription's own history (seconds deep) and the recorder's outbox hold what arrives. Raising a
priority needs privileges, lowering one does not, so everything of ours runs lower: on Linux a niceness is a
thread's own, and threads and processes inherit it from the thread that creates them. Elsewhere this does nothing.
"""

from __future__ import annotations

import os
import threading

INTAKE_NICENESS = 5  # the recorder's Python threads: the executor taking messages, the outbox sender
WRITER_NICENESS = 10  # the episode writer process (compression, disk)
ANALYSIS_NICENESS = 10  # the quality monitor's frame worker (decoding and judging camera frames)
NICENESS_ENV = 'ROBODATA_NICENESS'  # 'off' leaves every thread as it starts (for measuring)
# The niceness this process started with (`nice -n 3 robodata record` gives 3; a child process, that of the thread
# that started it): read once, before any thread of ours is lowered.
BASE = os.getpriority(os.PRIO_PROCESS, 0) if hasattr(os, 'getpriority') else 0


def lower_this_thread(niceness: int) -> None:
    """The calling thread (and the threads and processes it creates from now on) run `niceness` below BASE."""
    if os.environ.get(NICENESS_ENV, '').strip().lower() == 'off' or not hasattr(os, 'setpriority'):
        return
    try:
        tid = threading.get_native_id()
        if os.getpriority(os.PRIO_PROCESS, tid) < BASE + niceness:
            os.setpriority(os.PRIO_PROCESS, tid, min(19, BASE + niceness))
    except OSError:  # a platform or sandbox that refuses: run at the priority we have
        pass
