"""Talking to Label Studio: the token, the Python that has label-studio-sdk, one request per call.

The SDK runs in its own venv (see sdk_bridge.py); this side finds that Python, hands it the request on stdin and
the token in its environment, and turns its answer or its one-line error into ours. The token is read from the
environment (LABEL_STUDIO_API_KEY, or ROBODATA_LABEL_STUDIO_TOKEN) or from a file, never from the command line; it
is never written into the dataset, printed or logged (an error message holding it gets it scrubbed).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

from ros_robodata.errors import LabelStudioError

TOKEN_ENVS = ('LABEL_STUDIO_API_KEY', 'ROBODATA_LABEL_STUDIO_TOKEN')
PYTHON_ENV = 'ROBODATA_LABEL_STUDIO_PYTHON'
BRIDGE = Path(__file__).with_name('sdk_bridge.py')
_REPO_VENV = Path(__file__).resolve().parents[3] / '.venv-labelstudio' / 'bin' / 'python'


def read_token(token_file: str | Path | None = None) -> str:
    """The API token: from `token_file` when given, else the environment; one line saying where to put it."""
    if token_file is not None:
        path = Path(token_file)
        try:
            mode = path.stat().st_mode
            token = path.read_text(encoding='utf-8').strip()
        except (OSError, UnicodeDecodeError) as err:
            raise LabelStudioError(f'{path}: cannot read the token file ({getattr(err, "strerror", None) or err})') \
                from None
        if not stat.S_ISREG(mode):
            raise LabelStudioError(f'{path}: the token file is not a regular file')
        if not token or len(token.split()) != 1:
            raise LabelStudioError(f'{path}: the token file must hold the token alone on one line')
        return token
    for name in TOKEN_ENVS:
        token = os.environ.get(name, '').strip()
        if token:
            return token
    raise LabelStudioError(f'no Label Studio token: set {TOKEN_ENVS[0]} in the environment or pass --token-file FILE '
                           '(a token is never taken on the command line)')


def sdk_python() -> str:
    """The Python that can import label_studio_sdk: $ROBODATA_LABEL_STUDIO_PYTHON, the repository's
    .venv-labelstudio, or this one if it has the SDK."""
    chosen = os.environ.get(PYTHON_ENV)
    if chosen:
        if not Path(chosen).is_file():
            raise LabelStudioError(f'{PYTHON_ENV}={chosen}: no such file')
        return chosen
    if _REPO_VENV.is_file():
        return str(_REPO_VENV)
    try:
        # Optional dependency: label-studio-sdk (usually in .venv-labelstudio): does this Python have it?
        import label_studio_sdk  # noqa: F401
    except ImportError:
        raise LabelStudioError('label-studio-sdk is not installed: run `make labelstudio` (it makes .venv-labelstudio)'
                               f' or set {PYTHON_ENV} to a Python that has it') from None
    return sys.executable


def call(request: dict[str, Any], token: str, *, timeout_s: float = 600.0) -> dict[str, Any]:
    """Run one bridge request; LabelStudioError (token scrubbed) when Label Studio or the SDK says no."""
    env = {k: v for k, v in os.environ.items() if k not in TOKEN_ENVS}
    env['ROBODATA_LABEL_STUDIO_TOKEN'] = token
    env.pop('PYTHONPATH', None)  # the SDK's venv must not see our packages (other numpy, other OpenCV)
    try:
        done = subprocess.run([sdk_python(), str(BRIDGE)], input=json.dumps(request), capture_output=True,
                              text=True, env=env, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise LabelStudioError(f'{request.get("url")}: Label Studio did not answer within {timeout_s:.0f} s') from None
    except OSError as err:
        raise LabelStudioError(f'cannot run the label-studio-sdk Python ({err.strerror or err})') from None
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    try:
        answer = json.loads(lines[-1]) if lines else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        tail = ' '.join(done.stderr.split()[-40:]).replace(token, '<token>')
        raise LabelStudioError(f'the label-studio-sdk bridge failed (exit {done.returncode}): {tail[-300:]}')
    if 'error' in answer:
        raise LabelStudioError(str(answer['error']).replace(token, '<token>'))
    return answer
