"""The demo's ROS side: the recorder, the segmenter and the quality monitor in this process, the simulated cell in
a process of its own, as a rig's drivers are.

The recorder, the live segmenter and the quality monitor are spun as `robodata session` spins them (each node on an
executor and a thread of its own); the sim cell publishes on real DDS from a child process, paced to the wall clock,
and tells this one what its scripted operator does. Sharing one interpreter, the cell waited for the GIL at every
episode boundary (the segmenter's replay, the monitor's summary) and sent its messages 60-100 ms late: the bags were
right to say so, and a demo on a two-core computer scored 0.90 for it. The scripted operator starts each episode,
acts it out, labels it with the outcome it knows from the physics and stops it; the ground truth is written next to
the episode as ground_truth.json.
Afterwards the offline steps run: every episode is segmented (events.json) and scored (quality.json), and the
dataset gets its HTML report (report.html).
`robodata demo` (ros_robodata/cli/demo_cmd.py) runs it.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import rclpy
from rclpy.signals import SignalHandlerOptions
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ros_robodata.console import real_console, stderr, stdout
from ros_robodata.dataset import Dataset, is_dataset
from ros_robodata.errors import RecorderError, RobodataError
from ros_robodata.events.offline import segment_episode
from ros_robodata.nodes.demo_cell import CellProcess, CellSettings
from ros_robodata.nodes.node_runtime import make_executor, spin_apart, still_spinning
from ros_robodata.nodes.quality_monitor_node import QualityMonitorNode
from ros_robodata.nodes.recorder_node import RecorderNode
from ros_robodata.nodes.segmenter_node import SegmenterNode
from ros_robodata.nodes.session_node import parameters
from ros_robodata.paths import config_path
from ros_robodata.quality.scoring import score_episodes
from ros_robodata.report import report_dataset

TASK = 'pick_place_cube'
OPERATOR = 'scripted'
_STOP_TIMEOUT_S = 60.0
_SHOWN = ('grasp', 'lift', 'release', 'grasp_failed')


def profile_path() -> Path:
    """config/sim_cell.yaml, wherever the package is installed."""
    return config_path('sim_cell.yaml')


def run_demo(args: argparse.Namespace, image_size: tuple[int, int]) -> int:
    """Record args.episodes episodes into args.out/dataset and print the summary."""
    # Discovery stays on this machine unless the user chose otherwise; the domain is the environment's.
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    return _Demo(args, out / 'dataset', image_size).run()


def _terminate(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt  # SIGTERM closes the running episode as interrupted, as Ctrl-C does


def _stop(recorder: Any, patience_s: float = 10.0) -> None:
    """Stop the episode as an operator would: a computer so busy that this process heard the cell's start and end
    together gets a stop within the recorder's shortest episode refused as a double press; press again after it.

    Raises:
        RecorderError: still refused after `patience_s`.
    """
    deadline = time.monotonic() + patience_s
    while True:
        try:
            recorder.request_stop()
            return
        except RecorderError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.1)


class _Demo:
    def __init__(self, args: argparse.Namespace, dataset_root: Path, image_size: tuple[int, int]) -> None:
        self.args, self.dataset_root, self.image_size = args, dataset_root, image_size
        self.rows: list[dict[str, Any]] = []
        self.report: Path | None = None
        self._stopped: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def _on_transition(self, transition: Any) -> None:
        if transition.kind in ('stop', 'discard'):
            with self._lock:
                event = self._stopped.setdefault(transition.episode.id, threading.Event())
            event.set()

    def _stop_event(self, episode_id: str) -> threading.Event:
        with self._lock:
            return self._stopped.setdefault(episode_id, threading.Event())

    def run(self) -> int:



        args = self.args
        profile = str(profile_path())
        # The executors share the GIL with the writer's reply thread: keep turns short (as the recorder).
        sys.setswitchinterval(0.0005)
        # Ctrl-C stays a KeyboardInterrupt in the main thread; the recorder is closed below, then ROS.
        rclpy.init(args=[], signal_handler_options=SignalHandlerOptions.NO)
        signal.signal(signal.SIGTERM, _terminate)
        recorder = segmenter = monitor = None
        cell: CellProcess | None = None
        spinning = threading.Event()
        spinners: list[threading.Thread] = []
        interrupted = False
        t_start = time.monotonic()
        try:
            recorder = RecorderNode(parameter_overrides=parameters(
                profile=profile, dataset=str(self.dataset_root), task=TASK, operator=OPERATOR, mode=args.mode))
            recorder.recorder.add_transition_listener(self._on_transition)  # after the node's own announcement
            segmenter = SegmenterNode(parameter_overrides=parameters(profile=profile))
            monitor = QualityMonitorNode(parameter_overrides=parameters(profile=profile))
            # The recorder alone on its executor: the segmenter's replay of the pre-roll at a start must not hold
            # its intake (the bag's receive times would say every topic came late at once).
            executor = make_executor()
            executor.add_node(recorder)
            spinning.set()

            def spin() -> None:
                while spinning.is_set() and rclpy.ok():
                    executor.spin_once(timeout_sec=0.1)

            spinners = [threading.Thread(target=spin, name='recorder-executor', daemon=True)]
            spinners[0].start()
            spinners += spin_apart([segmenter, monitor], spinning.is_set)
            gc.collect()
            gc.freeze()
            cell = CellProcess(CellSettings(profile, args.seed, args.episodes, args.mode, self.image_size,
                                            list(getattr(args, 'faults', None) or [])))
            self._episodes(recorder, cell)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            if recorder is not None:
                episode = recorder.recorder.close('interrupted')
                if episode is not None:
                    stderr.print(f'robodata demo: episode {episode.id} closed as {episode.status}')
            if cell is not None:
                cell.stop()
            spinning.clear()
            busy = still_spinning(spinners, 10.0)
            if busy:
                stderr.print(f'robodata demo: {", ".join(sorted(busy))} still busy after 10 s: left to the exit')
            for made in (recorder, segmenter, monitor):
                if made is not None and f'{made.get_name()}-executor' not in busy:
                    made.destroy_node()
            if rclpy.ok() and not busy:
                rclpy.shutdown()
        if not interrupted:
            self._offline()
        self._summary(time.monotonic() - t_start, interrupted)
        if interrupted:
            raise KeyboardInterrupt
        return 0

    def _episodes(self, recorder: Any, cell: CellProcess) -> None:
        """The scripted operator at the keys: the cell acts out episode after episode on one timeline (sim/rig.py);
        each is started when its script begins, labelled with the outcome the physics gives and stopped.

        Raises:
            RobodataError: the cell could not go on (said in one line).
        """
        args = self.args
        dataset = Dataset.open(self.dataset_root)
        columns = (TextColumn('{task.description}'), BarColumn(), TextColumn('{task.completed}/{task.total}'),
                   TimeElapsedColumn())
        pending: list[dict[str, Any]] = []
        with Progress(*columns, console=real_console(stderr), transient=False) as progress:
            overall = progress.add_task('episodes', total=args.episodes)
            while True:
                news = cell.news(timeout_s=1.0)
                if news is None:
                    continue
                label = f'episode {news.index + 1}/{args.episodes} (seed {news.seed})'
                if news.kind == 'begin':
                    episode_id = recorder.recorder.request_start(TASK, OPERATOR, args.mode)
                    pending.append({'id': episode_id, 'label': f'{label} {episode_id}'})
                    progress.update(overall, description=f'{label} {episode_id}: recording')
                elif news.kind == 'done':
                    row = pending[-1]
                    recorder.recorder.request_outcome(news.truth['outcome'], f'scripted operator (seed {news.seed})')
                    _stop(recorder.recorder)
                    row['truth'] = news.truth
                    self.rows.append(row)
                    progress.update(overall, advance=1, description=f'{label}: {news.truth["outcome"]}')
                elif news.kind == 'time' and pending and 'truth' not in pending[-1]:
                    progress.update(overall, description=f'{pending[-1]["label"]}: {news.time_s:4.1f} s')
                elif news.kind == 'warning':
                    stderr.print(f'[yellow]robodata demo: {news.text}[/]')
                elif news.kind == 'error':
                    raise RobodataError(f'the simulated cell stopped: {news.text}')
                elif news.kind == 'finished':
                    break
            for row in self.rows:
                if not self._stop_event(row['id']).wait(_STOP_TIMEOUT_S):
                    raise RobodataError(f'episode {row["id"]}: the recorder did not close it within '
                                        f'{_STOP_TIMEOUT_S:g} s')
                row['truth']['episode_id'] = row['id']
                path = dataset.episode_dir(row['id']) / 'ground_truth.json'
                path.write_text(json.dumps(row['truth'], indent=2) + '\n')
            progress.update(overall, description='episodes recorded')

    def _offline(self) -> None:
        """The offline steps: events.json, then quality.json and the catalog scores, for every episode."""
        dataset = Dataset.open(self.dataset_root)
        profile = dataset.profile
        for row in self.rows:
            try:
                row['events'] = segment_episode(dataset, row['id'], profile).events
            except RobodataError as err:
                stderr.print(f'[yellow]robodata demo: {row["id"]}: cannot segment: {err}[/]')
        ids = [row['id'] for row in self.rows]
        try:
            run = score_episodes(dataset, profile, ids, workers=2)
        except RobodataError as err:
            stderr.print(f'[yellow]robodata demo: cannot score the episodes: {err}[/]')
            return
        for row in self.rows:
            if row['id'] in run.scores:
                row['score'] = run.scores[row['id']]
            elif row['id'] in run.failed:
                stderr.print(f'[yellow]robodata demo: {row["id"]}: cannot score: {run.failed[row["id"]]}[/]')
        try:
            self.report = report_dataset(dataset, profile).path
        except RobodataError as err:
            stderr.print(f'[yellow]robodata demo: cannot write the report: {err}[/]')

    def _summary(self, wall_s: float, interrupted: bool) -> None:
        if not is_dataset(self.dataset_root):
            return
        dataset = Dataset.open(self.dataset_root)
        table = Table(title=f'robodata demo: {len(self.rows)} episode(s) in {wall_s:.0f} s'
                            f'{" (interrupted)" if interrupted else ""}')
        for name, justify in (('episode', 'left'), ('outcome', 'left'), ('status', 'left'), ('duration s', 'right'),
                              ('messages', 'right'), ('issues found', 'right'), ('score', 'right'),
                              ('events', 'left')):
            table.add_column(name, justify=justify)  # type: ignore[arg-type]
        ids = [row['id'] for row in self.rows]
        events = {row['id']: row.get('events') for row in self.rows}
        scored = {row['id']: row.get('score') for row in self.rows}
        if interrupted:  # the episode Ctrl-C closed is in the catalog, not in rows
            closed = [i for i in dataset.episode_ids() if dataset.episode(i).status == 'interrupted']
            ids += [i for i in closed if i not in ids][-1:]
        for episode in (dataset.episode(i) for i in ids):
            if episode.marked_start_ns and episode.marked_stop_ns:
                duration = f'{(episode.marked_stop_ns - episode.marked_start_ns) / 1e9:.1f}'
            else:
                duration = '-'
            messages = sum(int(t.get('count', 0)) for t in episode.topics.values())
            found = events.get(episode.id)
            shown = ', '.join(e.kind for e in found if e.kind in _SHOWN) if found is not None else '-'
            score = scored.get(episode.id)
            # Issues: what the quality checks found (each finding once), or the recorder's losses if unscored.
            issues = str(len(score.findings)) if score is not None else str(episode.loss.get('total_lost', 0))
            score_text = f'{score.to_json()["score"]:.2f}' if score is not None else '-'
            table.add_row(episode.id, episode.outcome, episode.status, duration, str(messages), issues, score_text,
                          shown)
        stdout.print(table)
        stdout.print(f'dataset: {self.dataset_root.resolve()}')
        if self.report is not None:
            stdout.print(f'report:  {self.report.resolve()}')
