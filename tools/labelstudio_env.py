#!/usr/bin/env python3
"""Make (or find up to date) `.venv-labelstudio/` in the repository: the Label Studio server and label-studio-sdk.

They pin numpy, OpenCV and Django below what the project's .venv holds, so they get a venv of their own, inside
the repository (git-ignored), from the pinned tools/labelstudio-requirements.txt. A second run with the same
requirements does nothing. Prints the venv's Python on the last line. Used by `make labelstudio` and by the test
fixture that starts a real Label Studio server; `robodata review push/pull` find the SDK there.

    python3.11 tools/labelstudio_env.py [--quiet]
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / '.venv-labelstudio'
REQUIREMENTS = ROOT / 'tools' / 'labelstudio-requirements.txt'
STAMP = VENV / '.robodata-requirements-sha256'


def python() -> Path:
    return VENV / 'bin' / 'python'


def ensure(quiet: bool = False) -> Path:
    """The venv's Python, after creating or updating the venv when the requirements changed."""
    wanted = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    if python().exists() and STAMP.is_file() and STAMP.read_text().strip() == wanted:
        return python()
    if not python().exists():
        venv.EnvBuilder(with_pip=True, clear=False).create(VENV)
    pip = [str(python()), '-m', 'pip', '--disable-pip-version-check']
    if not quiet:
        print(f'installing Label Studio into {VENV} (first use: a few minutes)', file=sys.stderr)
    subprocess.run([*pip, 'install', '-q', '-r', str(REQUIREMENTS)], check=True)
    STAMP.write_text(wanted + '\n')
    return python()


if __name__ == '__main__':
    print(ensure(quiet='--quiet' in sys.argv))
