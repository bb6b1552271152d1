"""The per-episode jobs as Ray tasks: one task per episode with declared CPUs and memory, a task whose worker dies
tried once more, results gathered on this process (the only one that writes). Imported only with `--ray`."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from ros_robodata.cluster.job_types import ClusterStats, Executor, JobFailure, Timed, timed_batch
from ros_robodata.errors import RobodataError

J = TypeVar('J')
R = TypeVar('R')

ATTEMPTS = 2  # a task whose worker dies (or that raises) runs once more, then it is reported with its reason
MAX_BATCH = 32
TASKS_PER_CPU = 4
_WAIT_S = 0.2


def _ray() -> Any:
    try:
        import ray  # optional dependency: `pip install 'ros_robodata[ray]'`
    except ImportError:
        raise RobodataError("--ray needs Ray, which is not installed here: pip install 'ros_robodata[ray]' "
                            '(or pip install ray)') from None
    return ray


def connect(executor: Executor) -> tuple[Any, bool]:
    """Ray, connected to the executor's cluster; True when this call connected (and so disconnects after).

    Raises:
        RobodataError: Ray is missing, or no cluster answers at that address.
    """
    ray = _ray()
    if ray.is_initialized():
        return ray, False
    address = executor.ray
    options: dict[str, Any] = {'logging_level': logging.ERROR, 'log_to_driver': False, 'include_dashboard': False}
    if address == 'local':  # a cluster of this machine for this run: --workers CPUs (all of them when 1)
        options['num_cpus'] = executor.workers if executor.workers > 1 else os.cpu_count()
    else:
        _answers(str(address))
        options['address'] = address
        del options['include_dashboard']  # a setting of the cluster's head, not of a client
    try:
        ray.init(**options)
    except (ConnectionError, RuntimeError, ValueError) as err:
        where = 'RAY_ADDRESS or a cluster started on this machine' if address == 'auto' else address
        raise RobodataError(f'--ray {address}: no Ray cluster answers ({where}): '
                            f'{" ".join(str(err).split())[:300]}') from None
    return ray, True


def _answers(address: str, timeout_s: float = 5.0) -> None:
    """A cluster address that nothing listens on is said at once (Ray itself retries for a minute or more)."""
    if address == 'auto':
        return
    host, _, port = address.removeprefix('ray://').rpartition(':')
    if not port.isdigit():
        raise RobodataError(f'--ray {address}: not an address (host:port, ray://host:port, auto or local)')
    try:
        socket.create_connection((host or '127.0.0.1', int(port)), timeout=timeout_s).close()
    except OSError as err:
        raise RobodataError(f'--ray {address}: no Ray cluster answers there ({err.strerror or err}); start one with '
                            '`ray start --head`, or give its address') from None


def ray_results(fn: Callable[[J], R], jobs: Sequence[J], executor: Executor, stats: ClusterStats
                ) -> Iterator[tuple[int, Timed[R] | JobFailure]]:
    """Submit every job as a task, then yield (job index, result or failure) as they finish.

    Raises:
        RobodataError: see connect().
        KeyboardInterrupt: after cancelling the tasks still queued or running.
    """
    quiet = contextlib.redirect_stdout(sys.stderr)  # Ray's own notes (a worker died) stay off a --json stdout
    quiet.__enter__()
    try:
        ray, connected = connect(executor)
    except BaseException:
        quiet.__exit__(None, None, None)
        raise
    try:
        task = ray.remote(timed_batch).options(
            num_cpus=executor.ray_cpus, memory=executor.ray_memory_mb * 1024 * 1024,
            max_retries=ATTEMPTS - 1, retry_exceptions=True)
        size = executor.ray_batch or batch_size(len(jobs), int(ray.cluster_resources().get('CPU', 1)))
        chunks = [list(range(start, min(start + size, len(jobs)))) for start in range(0, len(jobs), size)]
        pending = {task.remote(fn, [jobs[i] for i in chunk]): chunk for chunk in chunks}
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=_WAIT_S)
                for ref in ready:
                    chunk = pending.pop(ref)
                    gathered = _gathered(ray, ref)
                    for n, index in enumerate(chunk):
                        yield index, gathered if isinstance(gathered, JobFailure) else gathered[n]
        except BaseException:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
    finally:
        if connected:
            ray.shutdown()
        quiet.__exit__(None, None, None)


def batch_size(jobs: int, cpus: int) -> int:
    """Episodes a task takes: one each while there are few, so every CPU stays busy to the end; more when there are
    many (about 4 tasks a CPU, at most MAX_BATCH episodes a task), so Ray's cost per task (a few ms) is shared by
    several episodes. A task whose worker dies is run again whole."""
    return max(1, min(MAX_BATCH, jobs // (max(1, cpus) * TASKS_PER_CPU)))


def _gathered(ray: Any, ref: Any) -> list[Timed[Any]] | JobFailure:
    errors = ray.exceptions
    try:
        result: list[Timed[Any]] = ray.get(ref)
        return result
    except errors.RayTaskError as err:
        cause = err.cause if getattr(err, 'cause', None) is not None else err
        return JobFailure(f'failed {ATTEMPTS} times: {type(cause).__name__}: {_line(cause)}', ATTEMPTS)
    except (errors.WorkerCrashedError, errors.NodeDiedError, errors.ObjectLostError,
            errors.TaskCancelledError) as err:
        return JobFailure(f'its Ray worker died {ATTEMPTS} times ({type(err).__name__}): {_line(err)}', ATTEMPTS)


def _line(err: BaseException) -> str:
    text = ' '.join(str(err).split())
    return text if len(text) <= 300 else text[:297] + '...'
