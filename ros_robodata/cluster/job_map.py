"""One way to run the per-episode jobs of segment, score and export: serially, in `workers` local processes, or
on a Ray cluster (`--ray`). The caller gets the results in job order whichever way they ran, with a job that failed
(a worker that died twice, an error raised) as a JobFailure naming why, never an exception that loses the rest."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from functools import partial
from typing import Any, Generic, TypeVar

from ros_robodata.cluster.job_types import ClusterStats, Executor, JobFailure, Timed, timed_call
from ros_robodata.cluster.remote_jobs import run_fetched
from ros_robodata.cluster.result_cache import ResultCache, content_key
from ros_robodata.errors import RobodataError

J = TypeVar('J')
R = TypeVar('R')
T = TypeVar('T')


class _Arrivals(Generic[R]):
    """Results as they arrive, with a length, so a progress bar knows its total."""

    def __init__(self, results: Iterator[R], total: int) -> None:
        self._results, self._total = results, total

    def __len__(self) -> int:
        return self._total

    def __iter__(self) -> Iterator[R]:
        return self._results


def map_jobs(fn: Callable[[J], R], jobs: Sequence[J], executor: Executor, *,
             progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
             stats: ClusterStats | None = None, cache: ResultCache | None = None,
             key: Callable[[J], str | None] | None = None) -> list[R | JobFailure]:
    """`fn` over `jobs`, results in job order.

    Args:
        fn: a module-level function (it is pickled to the workers by reference).
        jobs: picklable jobs, one per episode.
        executor: where they run.
        progress: wraps the results as they arrive (a progress bar).
        stats: filled with jobs and seconds per node.
        cache: results of earlier runs by `key` (a job whose key is there is not run), and where new ones go.
        key: a job's content key (None: never cached).

    Raises:
        RobodataError: `--ray` without Ray installed, or a cluster that cannot be reached.
        KeyboardInterrupt: after cancelling what was still queued or running (nothing was applied yet).
    """
    stats = stats if stats is not None else ClusterStats()
    if executor.remote is not None:  # each job downloads its episode first; its key adds the store's listing
        remote = executor.remote
        fetched = [remote.wrap(job) for job in jobs]
        inner = key
        return map_jobs(partial(run_fetched, fn), fetched, replace(executor, remote=None), progress=progress,
                        stats=stats, cache=cache,
                        key=None if inner is None else lambda f: _listed_key(inner(f.job), f.listing))
    started = time.perf_counter()
    results: list[R | JobFailure] = [JobFailure('not run')] * len(jobs)
    keys = [key(job) if key is not None and cache is not None else None for job in jobs]
    found = {i: cache.get(k) for i, k in enumerate(keys) if k is not None and cache is not None}
    kept: dict[int, R] = {i: value for i, value in found.items() if value is not None}
    todo = [i for i in range(len(jobs)) if i not in kept]
    arrivals = _arrivals(fn, [jobs[i] for i in todo], executor, stats)
    stream: Iterable[tuple[int, Timed[R] | JobFailure]] = _Arrivals(
        _chain(((i, Timed(value, 'cache', 0.0)) for i, value in kept.items()),
               ((todo[n], arrived) for n, arrived in arrivals)), len(jobs))
    for index, arrived in progress(stream) if progress else stream:
        if isinstance(arrived, JobFailure):
            results[index] = arrived
            stats.failed += 1
            continue
        results[index] = arrived.value
        if index in kept:
            stats.cached += 1
            continue
        stats.add(arrived.node, arrived.seconds)
        if cache is not None and keys[index] is not None:
            cache.put(str(keys[index]), arrived.value)  # as each arrives: a stopped run keeps what it finished
    stats.wall_s = time.perf_counter() - started
    return results


def _listed_key(key: str | None, listing: Any) -> str | None:
    return None if key is None else content_key(key, listing)


def _arrivals(fn: Callable[[J], R], jobs: Sequence[J], executor: Executor, stats: ClusterStats
              ) -> Iterator[tuple[int, Timed[R] | JobFailure]]:
    if not jobs:
        return iter(())
    if executor.ray is not None:
        from ros_robodata.cluster.ray_jobs import ray_results  # optional dependency: only with --ray
        return ray_results(fn, jobs, executor, stats)
    if executor.workers > 1 and len(jobs) > 1:
        return _pool_results(fn, jobs, executor.workers)
    return ((index, _local(fn, job)) for index, job in enumerate(jobs))


def _chain(*parts: Iterable[T]) -> Iterator[T]:
    for part in parts:
        yield from part


def _local(fn: Callable[[J], R], job: J) -> Timed[R] | JobFailure:
    try:
        return timed_call(fn, job)
    except RobodataError as err:  # this job's input (an episode the store would not give): the others go on
        return JobFailure(' '.join(str(err).split()))


def _pool_results(fn: Callable[[J], R], jobs: Sequence[J], workers: int
                  ) -> Iterator[tuple[int, Timed[R] | JobFailure]]:
    from concurrent.futures import ProcessPoolExecutor  # start-up time: multiprocessing, only with --workers

    with ProcessPoolExecutor(max_workers=min(workers, len(jobs))) as pool:
        futures = [pool.submit(timed_call, fn, job) for job in jobs]
        for index, future in enumerate(futures):
            try:
                yield index, future.result()
            except RobodataError as err:
                yield index, JobFailure(' '.join(str(err).split()))
