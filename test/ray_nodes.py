"""A Ray cluster of this machine for tests and benches: a head and more nodes of one CPU each, token
authentication on, every file of theirs under one short temporary folder, and a stop that ends only its own
processes (`ray stop` would end every Ray process of the user: another test's or bench's cluster too)."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return int(s.getsockname()[1])


class RayNodes:
    """`nodes` Ray nodes of `cpus` CPUs each on this machine; `address` and `env` (the token, a cache folder of
    its own, PATH with the venv's `ray`) are what a driver needs."""

    def __init__(self, nodes: int = 2, cpus: int = 1, extra_env: dict[str, str] | None = None) -> None:
        self.root = Path(tempfile.mkdtemp(prefix='rr', dir='/tmp'))  # short: Ray's socket paths live under it
        token = self.root / 'token'
        token.write_text(secrets.token_hex(32))
        self.env = {**os.environ, 'RAY_AUTH_MODE': 'token', 'RAY_AUTH_TOKEN_PATH': str(token),
                    'XDG_CACHE_HOME': str(self.root / 'cache'), 'RAY_USAGE_STATS_ENABLED': '0',
                    'PATH': f'{BIN}{os.pathsep}{os.environ.get("PATH", "")}', **(extra_env or {})}
        port = free_port()
        self.address = f'127.0.0.1:{port}'
        ray = str(BIN / 'ray')
        try:
            subprocess.run([ray, 'start', '--head', f'--num-cpus={cpus}', f'--port={port}',
                            f'--temp-dir={self.root / "ray"}', '--include-dashboard=false', '--disable-usage-stats'],
                           env=self.env, check=True, capture_output=True, timeout=180)
            for _ in range(nodes - 1):
                subprocess.run([ray, 'start', f'--address={self.address}', f'--num-cpus={cpus}',
                                '--disable-usage-stats'], env=self.env, check=True, capture_output=True, timeout=180)
        except BaseException:
            self.stop()
            raise

    def _own_pids(self) -> list[int]:
        """Processes that name this cluster's folder or port on their command line (head, nodes, agents)."""
        mine = []
        marks = (str(self.root).encode(), self.address.encode())
        for entry in Path('/proc').iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                cmdline = (entry / 'cmdline').read_bytes()
            except OSError:
                continue
            if any(mark in cmdline for mark in marks):
                mine.append(int(entry.name))
        return mine

    def task_pids(self, title: str = 'ray::timed_batch') -> list[int]:
        """This cluster's worker processes running a task of `title` (Ray sets a worker's title to its task's);
        a worker of this cluster carries its token path in its environment."""
        pids = []
        mark = str(self.root).encode()
        for entry in Path('/proc').iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if (entry / 'cmdline').read_bytes().startswith(title.encode()) and \
                        mark in (entry / 'environ').read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
        return pids

    def stop(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in self._own_pids():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + 10
            while self._own_pids() and time.monotonic() < deadline:
                time.sleep(0.2)
        shutil.rmtree(self.root, ignore_errors=True)
