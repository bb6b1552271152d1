"""A real Label Studio server for the tests: the PyPI `label-studio` in .venv-labelstudio (made on first use by
tools/labelstudio_env.py), SQLite in a temporary folder, on 127.0.0.1 at a free port, serving local files from a
document root the test chooses. Annotators are simulated through its REST API, as their browsers would talk to it."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def labelstudio_python() -> Path:
    """The Label Studio venv's Python, made now if it is not there (minutes, once)."""
    done = subprocess.run([sys.executable, str(ROOT / 'tools' / 'labelstudio_env.py'), '--quiet'],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f'tools/labelstudio_env.py failed: {done.stderr[-2000:]}')
    return Path(done.stdout.strip().splitlines()[-1])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    url: str
    token: str
    admin: str
    document_root: Path
    process: subprocess.Popen[bytes]
    log: Path

    def api(self, method: str, path: str, body: Any = None) -> Any:
        """One REST call as the admin; the parsed JSON answer."""
        request = urllib.request.Request(self.url + path, method=method,
                                         data=None if body is None else json.dumps(body).encode(),
                                         headers={'Authorization': f'Token {self.token}',
                                                  'Content-Type': 'application/json'})
        with urllib.request.urlopen(request, timeout=60) as answer:
            raw = answer.read()
        return json.loads(raw) if raw else None

    def fetch(self, path: str) -> tuple[int, bytes]:
        request = urllib.request.Request(self.url + path, headers={'Authorization': f'Token {self.token}'})
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return answer.status, answer.read()
        except urllib.error.HTTPError as err:
            return err.code, b''

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=20)


def start(workdir: Path, document_root: Path, *, timeout_s: float = 300.0) -> Server:
    """Start Label Studio and wait until its API answers the admin's token."""
    python = labelstudio_python()
    port = _free_port()
    token = secrets.token_hex(20)
    admin = 'ana@robodata.test'
    env = {k: v for k, v in os.environ.items() if not k.startswith(('LABEL_STUDIO_', 'PYTHON', 'DJANGO'))}
    env.update({
        'LABEL_STUDIO_USERNAME': admin, 'LABEL_STUDIO_PASSWORD': secrets.token_hex(12),
        'LABEL_STUDIO_USER_TOKEN': token,
        'LABEL_STUDIO_LOCAL_FILES_SERVING_ENABLED': 'true',
        'LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT': str(document_root),
        'LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK': 'true',
        # the test talks to 127.0.0.1 only: no version check on PyPI, no analytics
        'LABEL_STUDIO_LATEST_VERSION_CHECK': 'false', 'LABEL_STUDIO_COLLECT_ANALYTICS': 'false',
    })
    log = workdir / 'label_studio.log'
    with log.open('wb') as out:
        process = subprocess.Popen(
            [str(python.parent / 'label-studio'), 'start', '--no-browser', '--internal-host', '127.0.0.1', '-p',
             str(port), '--data-dir', str(workdir / 'data'), '--enable-legacy-api-token'],
            stdout=out, stderr=subprocess.STDOUT, env=env, cwd=workdir, start_new_session=True)
    server = Server(f'http://127.0.0.1:{port}', token, admin, document_root, process, log)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f'Label Studio exited ({process.returncode}): {log.read_text()[-2000:]}')
        try:
            server.api('GET', '/api/current-user/whoami')
            return server
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(1.0)
    server.stop()
    raise RuntimeError(f'Label Studio did not answer within {timeout_s:.0f} s: {log.read_text()[-2000:]}')
