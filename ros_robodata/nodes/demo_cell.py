"""The demo's simulated cell in a process of its own, as a rig's drivers are: what its scripted operator does
comes back through a pipe, for the demo to press the recorder's keys.

In the recorder's process the cell shared the GIL with the recorder's intake, the segmenter and the monitor, and
waited for it at every episode boundary (60-100 ms behind its stamps on a two-core computer).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
import time
from dataclasses import dataclass, field
from typing import Any

from ros_robodata.errors import RobodataError

_TIME_EVERY_S = 0.25  # how often the cell says where its scene is (the demo's progress line)


@dataclass(frozen=True)
class CellSettings:
    """What `robodata demo` asked of the cell."""

    profile: str
    seed: int
    episodes: int
    mode: str
    image_size: tuple[int, int]
    faults: list[Any] = field(default_factory=list)


@dataclass(frozen=True)
class CellNews:
    """One thing the cell said: 'begin' or 'done' of an episode (index, seed, truth), 'time' (the scene's clock),
    'warning' (a line for the user), 'finished' (every episode acted out) or 'error' (it could not go on)."""

    kind: str
    index: int = 0
    seed: int = 0
    truth: dict[str, Any] = field(default_factory=dict)
    time_s: float = 0.0
    text: str = ''


class CellProcess:
    """The cell running in a child process until it acted every episode out or `stop()` is called."""

    def __init__(self, settings: CellSettings) -> None:
        context = multiprocessing.get_context('spawn')  # never fork a process that runs DDS threads
        self._conn, child = context.Pipe(duplex=True)
        self._process = context.Process(target=_cell_main, args=(child, settings), name='robodata-demo-cell',
                                        daemon=True)
        self._process.start()
        child.close()

    def news(self, timeout_s: float) -> CellNews | None:
        """The cell's next news, None if it said nothing within `timeout_s`.

        Raises:
            RobodataError: the cell's process ended without saying it finished.
        """
        try:
            if self._conn.poll(timeout_s):
                news: CellNews = self._conn.recv()
                return news
        except (EOFError, OSError):
            pass
        else:
            if self._process.is_alive():
                return None
        raise RobodataError(f'the simulated cell ended (exit status {self._process.exitcode})')

    def stop(self, timeout_s: float = 10.0) -> None:
        """Ask the cell to stop publishing and end; ended by force if it does not within `timeout_s`."""
        with contextlib.suppress(OSError):  # already gone
            self._conn.send('stop')
        self._process.join(timeout_s)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(5.0)
        self._conn.close()


def _cell_main(conn: Any, settings: CellSettings) -> None:
    """The child: the cell's node on its own rclpy context, publishing until done or told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the demo's: it closes the episode, then stops this

    def say(news: CellNews) -> None:
        with contextlib.suppress(OSError):  # the demo is gone: nobody to tell
            conn.send(news)

    import rclpy

    from ros_robodata.nodes.session_node import parameters
    from ros_robodata.nodes.sim_cell_node import SimCellNode

    rclpy.init(args=[])
    node = None
    try:
        node = SimCellNode(parameter_overrides=parameters(
            profile=settings.profile, seed=settings.seed, episodes=settings.episodes, mode=settings.mode,
            image_width=settings.image_size[0], image_height=settings.image_size[1], recorder=''))
        if not node.cell.wait_for_subscribers(timeout_s=15.0):
            say(CellNews('warning', text='not every sim topic has the recorder subscribed yet'))
        told = [0.0]
        stopped = [False]

        def running() -> bool:
            now = time.monotonic()
            if now - told[0] >= _TIME_EVERY_S:
                told[0] = now
                say(CellNews('time', time_s=rig.cell.time))
                if conn.poll():
                    stopped[0] = True
            return not stopped[0]

        def on_event(event: Any, _stamp_ns: int) -> None:
            if event.kind in ('begin', 'done'):
                say(CellNews(event.kind, event.index, event.seed, dict(event.truth or {})))

        with node.cell.rig(settings.seed, settings.mode, episodes=settings.episodes,
                           faults=settings.faults or None) as rig:
            node.cell.run(rig, running, on_event, time.sleep)
        say(CellNews('finished'))
    except Exception as err:  # told to the demo as one line, which stops there
        say(CellNews('error', text=f'{type(err).__name__}: {err}'))
    finally:
        if node is not None:
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
