"""What the per-episode jobs and their runners share: where jobs run (Executor), a job that gave no result
(JobFailure), a result with where and how long it ran (Timed), and the counts per node (ClusterStats)."""

from __future__ import annotations

import socket
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ros_robodata.cluster.remote_jobs import RemoteRoot
from ros_robodata.cluster.result_cache import ResultCache

J = TypeVar('J')
R = TypeVar('R')


@dataclass(frozen=True)
class Executor:
    """Where jobs run.

    Args:
        workers: local processes (1: in this process). Ignored with `ray`.
        ray: a Ray cluster's address (`auto`: the one this machine belongs to; `local`: start one for this run
            only), or None to stay on this machine.
        ray_cpus: CPUs each Ray task declares (the cluster schedules by them).
        ray_memory_mb: memory each Ray task declares, in MiB (a node runs no more tasks than fit).
        ray_batch: episodes a Ray task takes (0: chosen from the episodes and the cluster's CPUs).
        remote: the dataset is in object storage: each job downloads its episode's folder first.
    """

    workers: int = 1
    ray: str | None = None
    ray_cpus: float = 1.0
    ray_memory_mb: int = 512
    ray_batch: int = 0
    remote: RemoteRoot | None = None

    def result_cache(self) -> ResultCache | None:
        """Where a cluster run keeps each episode's result, so a rerun finishes only what is missing; a local run
        keeps nothing (it reruns everything, as before)."""
        return ResultCache() if self.ray is not None else None

    def describe(self) -> str:
        if self.ray is not None:
            return f'Ray cluster {self.ray}'
        return f'{self.workers} local process(es)' if self.workers > 1 else 'this process'


@dataclass(frozen=True)
class JobFailure:
    """A job that gave no result: why (one line), and how many times it was tried."""

    reason: str
    attempts: int = 1


@dataclass
class ClusterStats:
    """Per node (host name or Ray node address): jobs done and seconds spent in them, for `--json`; how many
    results came from an earlier run (`cached`) and how many jobs failed."""

    jobs: Counter[str] = field(default_factory=Counter)
    seconds: dict[str, float] = field(default_factory=dict)
    wall_s: float = 0.0
    cached: int = 0
    failed: int = 0

    def add(self, node: str, seconds: float) -> None:
        self.jobs[node] += 1
        self.seconds[node] = self.seconds.get(node, 0.0) + seconds

    def to_json(self) -> dict[str, Any]:
        return {'wall_s': round(self.wall_s, 3), 'run': sum(self.jobs.values()), 'cached': self.cached,
                'failed': self.failed,
                'nodes': {node: {'episodes': count, 'busy_s': round(self.seconds.get(node, 0.0), 3)}
                          for node, count in sorted(self.jobs.items())}}


@dataclass(frozen=True)
class Timed(Generic[R]):
    """A job's result with where and for how long it ran (what a worker sends back)."""

    value: R
    node: str
    seconds: float


def timed_call(fn: Callable[[J], R], job: J) -> Timed[R]:
    """Run one job where it lands and say where (a Ray task or a local worker process calls this)."""
    start = time.perf_counter()
    value = fn(job)
    return Timed(value, _node_name(), time.perf_counter() - start)


def timed_batch(fn: Callable[[J], R], jobs: list[J]) -> list[Timed[R]]:
    """Several jobs in one task, one after another (a Ray task of a batch: see ray_jobs.batch_size)."""
    return [timed_call(fn, job) for job in jobs]


def _node_name() -> str:
    # On a Ray worker (ray is loaded there already; importing it here would cost a local run 0.3 s a command): the
    # node's address and id, as `ray status` shows them.
    ray = sys.modules.get('ray')
    if ray is not None and ray.is_initialized():
        node_id = ray.get_runtime_context().get_node_id()
        return f'{ray.util.get_node_ip_address()} {node_id[:12]}'
    return socket.gethostname()
