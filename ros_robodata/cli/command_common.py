"""What every command shares: what a path names (dataset.targets), the terminal (console.py), JSON output."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Iterator
from typing import Any

from ros_robodata.cluster import Executor
from ros_robodata.cluster.remote_jobs import RemoteRoot, is_store_url
from ros_robodata.console import human_bytes, progress, stderr, stdout
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.store_staging import StagedDataset
from ros_robodata.dataset.targets import Filters, Item, Target, need, profile_for, resolve, select
from ros_robodata.errors import RobodataError
from ros_robodata.vocabulary import OUTCOMES, STATUSES, parse_since

__all__ = ['EXIT_ERROR', 'EXIT_OK', 'EXIT_PARTIAL', 'TARGETS', 'Filters', 'Item', 'Target', 'add_analysis_arguments',
           'add_filters', 'add_json', 'add_ray', 'add_target', 'dataset_at', 'executor_from', 'filters_from',
           'human_bytes', 'need', 'print_json', 'profile_for', 'progress', 'resolve', 'select', 'stderr', 'stdout',
           'target_in_store']

# Exit status of every command: 0 done; 1 bad input or an error (nothing, or nothing more, was done); 2 the
# command line itself is wrong (argparse); 3 finished, but some episodes or sources failed (each said on stderr).
EXIT_OK, EXIT_ERROR, EXIT_PARTIAL = 0, 1, 3
TARGETS = 'a dataset, an episode folder (DATASET/episodes/ID), a bag, or a folder of bags'


def print_json(data: Any) -> None:
    """The document, indented, in one write (json.dump writes each token on its own: ~35,000 writes for a
    100-episode score)."""
    sys.stdout.write(json.dumps(data, indent=2, default=str) + '\n')


def print_json_line(data: Any) -> None:
    """One JSON object on one line, flushed: a progress event a supervisor reads as it comes."""
    sys.stdout.write(json.dumps(data, default=str, separators=(',', ':')) + '\n')
    sys.stdout.flush()


def add_target(p: argparse.ArgumentParser, what: str = TARGETS, metavar: str = 'TARGET') -> None:
    """The one positional argument of a command that works on a dataset, an episode or bags: always `target`."""
    p.add_argument('target', metavar=metavar, help=what, type=_given_path)


def _given_path(text: str) -> str:
    """An empty path means the working folder to the OS; nobody means that by typing ''."""
    if not text.strip():
        raise argparse.ArgumentTypeError('an empty path (give a folder or a file; "." for the working folder)')
    return text


def add_analysis_arguments(p: argparse.ArgumentParser, what: str = TARGETS) -> None:
    """What every analysis (segment, score, report, export frames) takes: TARGET, --profile, the episode filters
    and --json."""
    add_target(p, what)
    p.add_argument('--profile', help="robot profile YAML (default: the dataset's own; required for bags)")
    add_filters(p)
    add_json(p)


def add_ray(p: argparse.ArgumentParser, what: str = 'episode') -> None:
    """--ray: the per-episode work as tasks on a Ray cluster (docs/ray.md)."""
    p.add_argument('--ray', nargs='?', const='auto', metavar='ADDRESS',
                   help=f'run one task per {what} on a Ray cluster: its address (host:port, ray://host:10001), '
                        '"auto" (the default: RAY_ADDRESS or the cluster this machine joined) or "local" (a cluster '
                        'of this machine for this run, --workers CPUs); results are written here, as a local run '
                        "writes them. Needs pip install 'ros_robodata[ray]'")
    p.add_argument('--ray-memory', type=int, default=512, metavar='MIB',
                   help=f'memory each {what} task declares to the Ray scheduler, in MiB (default 512)')
    p.add_argument('--ray-batch', type=int, default=0, metavar='N',
                   help=f'{what}s a Ray task takes, one after another (default 0: one each while there are few, '
                        'up to 32 when there are many, about 4 tasks a CPU), so Ray\'s cost per task is shared')


def executor_from(args: argparse.Namespace, workers: int = 1, remote: RemoteRoot | None = None) -> Executor:
    """Where the per-episode jobs run: --ray, else `workers` local processes; `remote`: each downloads its episode
    from object storage first."""
    memory, batch = getattr(args, 'ray_memory', 512), getattr(args, 'ray_batch', 0)
    if memory < 1:
        raise RobodataError('--ray-memory must be at least 1 (MiB)')
    if batch < 0:
        raise RobodataError('--ray-batch must be 0 (chosen for you) or more')
    return Executor(workers=workers, ray=getattr(args, 'ray', None), ray_memory_mb=memory, ray_batch=batch,
                    remote=remote)


@contextlib.contextmanager
def target_in_store(args: argparse.Namespace, command: str) -> Iterator[tuple[str, RemoteRoot | None]]:
    """(the target to resolve, where its episodes are fetched from): a dataset in object storage (s3://...) is
    staged without its bags, and what the command wrote is put back when it finishes (not when it fails)."""
    if not is_store_url(args.target):
        yield args.target, None
        return
    with StagedDataset(args.target) as staged:
        yield str(staged.local), staged.remote_root()
        put = staged.push()
        stderr.print(f'robodata {command}: {len(put)} file(s) written back to {staged.url}', markup=False)


def add_json(p: argparse.ArgumentParser) -> None:
    p.add_argument('--json', action='store_true', help='print machine-readable JSON instead of text')


def add_filters(p: argparse.ArgumentParser) -> None:
    """--task, --outcome, --status, --since, --where: which episodes of a dataset; the same on every command."""
    g = p.add_argument_group('which episodes (of a dataset; discarded ones only with --status discarded)')
    g.add_argument('--task', help='only episodes of this task')
    g.add_argument('--outcome', choices=OUTCOMES, help='only episodes with this outcome')
    g.add_argument('--status', choices=STATUSES, help='only episodes with this status')
    g.add_argument('--since', metavar='WHEN', help='only episodes that started since WHEN: a time (2026-03-02, '
                                                   '2026-03-02T10:15:00Z) or a duration back from now (24h, 7d)')
    g.add_argument('--where', metavar='EXPR',
                   help='only episodes this condition on the catalog picks, e.g. --where "score < 0.8 and outcome = '
                        'success": fields (id, task, operator, mode, robot, outcome, status, state, score, duration, '
                        'start_ns, stop_ns, messages, size_bytes, reviewed, source_id, review_rank), = != < <= > >=, '
                        'in (a, b), is [not] empty, and, or, not, parentheses; quote text with spaces')


def filters_from(args: argparse.Namespace) -> Filters:
    since = getattr(args, 'since', None)
    return Filters(task=getattr(args, 'task', None), outcome=getattr(args, 'outcome', None),
                   status=getattr(args, 'status', None),
                   since_ns=None if since is None else parse_since(since, time.time_ns()),
                   where=getattr(args, 'where', None))


def dataset_at(path: str) -> Dataset:
    """The dataset a command was pointed at, or the one-line answer every command gives to anything else.

    Raises:
        RobodataError: `path` is not a dataset (saying what it is instead).
    """
    dataset = need(resolve(path), 'dataset').dataset
    assert dataset is not None  # need() made sure
    return dataset
