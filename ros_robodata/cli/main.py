"""`robodata`: the command line. Works with or without ROS installed."""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from ros_robodata.errors import RobodataError, one_line
from ros_robodata.files import STORAGE_ERRNOS, write_cause
from ros_robodata.version import __version__

# Each command module, the function that adds its parser(s), and the commands it adds, in `robodata --help`'s
# order. A command's module (and what it imports: PyAV, OpenCV, governance, export) is loaded only when that
# command runs: every command starts in a fraction of the time loading all of them took. A test holds the names
# to what the modules add.
COMMANDS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ('info_cmd', 'add_parser', ('info',)),
    ('dataset_cmds', 'add_parsers', ('init', 'list', 'set', 'verify', 'catalog')),
    ('import_cmd', 'add_parser', ('import',)),
    ('repair_cmd', 'add_parser', ('repair',)),
    ('episodes_cmd', 'add_parser', ('episodes',)),
    ('merge_cmd', 'add_parser', ('merge',)),
    ('profile_cmd', 'add_parser', ('profile',)),
    ('launch_cmd', 'add_parser', ('check-launch',)),
    ('record_cmd', 'add_parser', ('record',)),
    ('keys_cmd', 'add_parser', ('keys',)),
    ('demo_cmd', 'add_parser', ('demo',)),
    ('sim_cmd', 'add_parser', ('sim',)),
    ('segment_cmd', 'add_parser', ('segment',)),
    ('score_cmd', 'add_parser', ('score',)),
    ('report_cmd', 'add_parser', ('report',)),
    ('select_cmd', 'add_parser', ('select',)),
    ('replay_cmd', 'add_parser', ('replay',)),
    ('export_cmd', 'add_parser', ('export',)),
    ('review_cmd', 'add_parsers', ('review', 'annotations')),
    ('approve_cmd', 'add_parser', ('approve',)),
    ('release_cmd', 'add_parser', ('release',)),
    ('retire_cmd', 'add_parsers', ('retire', 'participant')),
    ('audit_cmd', 'add_parser', ('audit',)),
    ('session_cmd', 'add_parser', ('session',)),
    ('session_cmd', 'add_monitor_parser', ('monitor',)),
    ('coverage_cmd', 'add_parser', ('coverage',)),
    ('calibrate_cmd', 'add_parser', ('calibrate',)),
    ('query_cmd', 'add_parser', ('query',)),
)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: every command's, or with `only` (a command's name) that command's alone (the
    rest of the top level as it is: `--help`, `--version`, the usage line)."""
    parser = argparse.ArgumentParser(
        prog='robodata',
        description='Record, check and curate robot demonstrations as rosbag2 episodes.',
        epilog='Exit status: 0 done; 1 bad input or an error (one line on stderr: what, where, why); 2 the command '
               'line is wrong; 3 finished, but some episodes or sources failed (each named on stderr); 130 '
               'interrupted (what was finished is kept).',
    )
    parser.add_argument('--version', action='version', version=f'ros_robodata {__version__}')
    sub = parser.add_subparsers(dest='command', metavar='COMMAND', required=True)
    for module, adder, names in COMMANDS:
        if only is None or only in names:
            getattr(importlib.import_module(f'ros_robodata.cli.{module}'), adder)(sub)
    return parser


def _innermost(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub)command's own parser that `args` went through: `score`, `export frames`."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = action.choices.get(getattr(args, action.dest, None) or '')
            if chosen is not None:
                return _innermost(chosen, args)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    if 'numpy' not in sys.modules:  # a fresh process: before NumPy starts OpenBLAS
        # No OpenBLAS thread pool unless the user asks for one (OPENBLAS_NUM_THREADS): no check multiplies
        # matrices, yet its idle threads cost a scoring run 0.2 s of CPU (--workers parallelises by processes).
        os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')
    words = list(sys.argv[1:] if argv is None else argv)
    command = words[0] if words and any(words[0] in names for _, _, names in COMMANDS) else None
    parser = build_parser(command)  # `--help`, `--version`, a mistyped command: all of them
    args, unknown = parser.parse_known_args(words)
    if unknown:  # said by the command that was given them, with its usage (`score --workrs`)
        _innermost(parser, args).error(f'unrecognized arguments: {" ".join(unknown)}')
    previous = _stop_on_sigterm()
    # A dataset holds people's data: what robodata writes is readable by the owner's group at most (a stricter
    # umask of the user's own is kept); restored on the way out, for a caller that runs main() in its process.
    user_umask = os.umask(0o027)
    os.umask(user_umask | 0o027)
    try:
        return int(args.func(args) or 0)
    except RobodataError as err:
        # The contract is one line, whatever a library put into the message.
        print(f'robodata {args.command}: error: {one_line(err)}', file=sys.stderr)
        return 1
    except OSError as err:
        if err.errno not in STORAGE_ERRNOS:
            raise
        # A disk that filled or a mount that is read-only where no writer said it first: still one line, the path
        # and the cause (each writer removes its own temporaries on the way out).
        where = f'{err.filename}: ' if err.filename else ''
        verb = 'cannot read or write' if err.errno in (errno.EACCES, errno.EPERM) else 'cannot write'  # either
        print(f'robodata {args.command}: error: {where}{verb}: {write_cause(err)}', file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f'robodata {args.command}: interrupted', file=sys.stderr)
        if _TERMINATED:
            # Killed by a scheduler: what it was writing is cleaned up by now; skip the interpreter's teardown,
            # which frees every object the command built (seconds for a 100,000-class taxonomy), so `kill` ends
            # it within a second whatever it was reading.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(130)
        return 130
    except BrokenPipeError:
        return 0
    finally:
        os.umask(user_umask)
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


_TERMINATED: list[int] = []  # the SIGTERM that stopped this command, once one has


def _stop_on_sigterm() -> Any:
    """`kill` (how a scheduler or a shell script stops a command) ends it as Ctrl-C does: what it was writing is
    cleaned up, what it finished is kept, exit 130. The node commands put their own handler over this one; a
    worker process forked from here falls back to the default (the parent stops it)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    # A signal mask inherited blocked (from a parent's thread that had them blocked) would hold Ctrl-C and kill
    # pending forever: a command is always stoppable.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    owner = os.getpid()

    def interrupt(signum: int, _frame: object) -> None:
        if os.getpid() != owner:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        _TERMINATED.append(signum)
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, interrupt)


if __name__ == '__main__':
    sys.exit(main())
