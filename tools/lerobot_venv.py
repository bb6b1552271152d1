"""Make .venv-lerobot/ in the repository: LeRobot's own dataset reader (lerobot 0.4.x, torch on the CPU) beside, not
in, the project's .venv, whose pins torch would clash with. Used by the test that loads our export with
LeRobotDataset; a second run with nothing changed does nothing.

    python3.11 tools/lerobot_venv.py        # prints the venv's python

LeRobot decodes videos with torchcodec, which links the system's FFmpeg (libavcodec 4..8): on Debian/Ubuntu it is
installed with apt when missing and the user may, otherwise the message says what to install.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / '.venv-lerobot'
REQUIREMENTS = ROOT / 'tools' / 'lerobot_requirements.txt'
LEROBOT = 'lerobot==0.4.4'
FFMPEG_APT = ['libavcodec59', 'libavformat59', 'libavutil57', 'libswscale6', 'libswresample4', 'libavdevice59',
              'libavfilter8']


def _stamp() -> str:
    return hashlib.sha256(REQUIREMENTS.read_bytes() + LEROBOT.encode()).hexdigest()


def _have_ffmpeg() -> bool:
    out = subprocess.run(['ldconfig', '-p'], capture_output=True, text=True, check=False).stdout
    return 'libavutil.so.' in out


def _ffmpeg() -> None:
    if _have_ffmpeg():
        return
    if os.geteuid() == 0 and shutil.which('apt-get'):
        env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
        subprocess.run(['apt-get', 'update', '-qq'], check=False, env=env)
        subprocess.run(['apt-get', 'install', '-y', '-qq', *FFMPEG_APT], check=True, env=env)
    if not _have_ffmpeg():
        raise RuntimeError('tools/lerobot_venv.py: FFmpeg shared libraries (libavutil) not found; torchcodec needs '
                           f'them (Debian/Ubuntu: apt-get install {" ".join(FFMPEG_APT)})')


def ensure() -> Path:
    """The venv's python, made or brought up to date first."""
    python = VENV / 'bin' / 'python'
    stamp = VENV / '.robodata-lerobot'
    _ffmpeg()
    if python.exists() and stamp.is_file() and stamp.read_text() == _stamp():
        return python
    started = time.monotonic()
    if not python.exists():
        subprocess.run([sys.executable, '-m', 'venv', str(VENV)], check=True)
    pip = [str(python), '-m', 'pip', '--disable-pip-version-check', 'install', '-q']
    subprocess.run([*pip, '-r', str(REQUIREMENTS)], check=True)
    subprocess.run([*pip, '--no-deps', LEROBOT], check=True)
    stamp.write_text(_stamp())
    print(f'tools/lerobot_venv.py: {VENV.name} made in {time.monotonic() - started:.0f} s', file=sys.stderr)
    return python


if __name__ == '__main__':
    try:
        print(ensure())
    except (RuntimeError, subprocess.CalledProcessError) as err:
        raise SystemExit(str(err)) from None
