"""`robodata score` on a LeRobot folder where it lies, against lerobot-doctor on the same folder in the same run
(issue 35). Target: robodata's wall time at most 2x the doctor's, with the same findings as scoring an imported copy
of the folder gives.

    .venv/bin/python bench/lerobot_in_place.py                  # bench/real_data/g1_inspire (100 real episodes)
    .venv/bin/python bench/lerobot_in_place.py FOLDER --runs 5  # any LeRobot v2.1/v3.0 folder

The folder: the Unitree G1 humanoid with Inspire hands, `YifanTian07/G1-policy-train` at `d1d3bb4` (MIT, LeRobot
v2.1, 100 episodes, 35 965 frames, data/ and meta/ only; bench/real_data/SOURCES.md and rebuild.sh). The doctor:
lerobot-doctor 0.2.0 from PyPI in a venv of the bench's own, bench/.doctor_venv (gitignored), made on the first
run (`python3 -m venv bench/.doctor_venv && bench/.doctor_venv/bin/pip install lerobot-doctor==0.2.0`).

Both are timed as a user runs them, each a fresh process from the shell (`lerobot-doctor check FOLDER`, `robodata
score FOLDER --no-images --json`: the folder has no videos), alternating, `--runs` times each, after one untimed run
of each; the median wall times are compared (the target), and the median CPU seconds printed beside (steadier on a
machine others load). Both run with their compiled bytecode kept (in a temporary PYTHONPYCACHEPREFIX, whatever
PYTHONDONTWRITEBYTECODE says), as an installed package has it: pip compiled the doctor's at install, and an
editable install of robodata compiles its modules on every run where bytecode is not written. Then
the folder is imported into a temporary dataset and scored there (the way it was checked before, timed too), and
the in-place findings are compared with the copy's, episode by episode (names mapped: the copy's g1_inspire-000012
is the folder's episode 12); the folder's files are hashed before and after (nothing written).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOCTOR_VENV = ROOT / 'bench' / '.doctor_venv'
DOCTOR = 'lerobot-doctor==0.2.0'
ROBODATA = ROOT / '.venv' / 'bin' / 'robodata'
DEFAULT = ROOT / 'bench' / 'real_data' / 'g1_inspire'
TARGET = 2.0


def doctor_exe() -> Path:
    """The doctor's command, its venv made first when missing."""
    exe = DOCTOR_VENV / 'bin' / 'lerobot-doctor'
    if not exe.is_file():
        print(f'making {DOCTOR_VENV.relative_to(ROOT)} with {DOCTOR} ...', flush=True)
        subprocess.run([sys.executable, '-m', 'venv', str(DOCTOR_VENV)], check=True)
        subprocess.run([str(DOCTOR_VENV / 'bin' / 'pip'), 'install', '-q', DOCTOR], check=True)
    return exe


CPU: dict[str, list[float]] = {}  # per command, the CPU seconds (user + system) of each run


ENV = dict(os.environ)  # with PYTHONPYCACHEPREFIX set by main()
ENV.pop('PYTHONDONTWRITEBYTECODE', None)


def timed(argv: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Wall seconds of one run (and its CPU seconds kept in CPU: on a shared machine the steadier figure)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    run = subprocess.run(argv, capture_output=True, text=True, check=False, env=ENV)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    CPU.setdefault(Path(argv[0]).name + ' ' + argv[1], []).append(cpu)
    return wall, run


def contents(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else 'dir'
            for p in sorted(root.rglob('*'))}


def findings(scored: dict[str, Any], rename: Any = None) -> dict[str, list[Any]]:
    """Per episode, its findings (check, severity, topic, message, time ranges), names mapped by `rename`."""
    out = {}
    for name, episode in scored['episodes'].items():
        text = json.dumps([[f['check'], f['severity'], f['topic'], f['message'], f.get('ranges_s')]
                           for f in episode['findings']])
        out[rename(name) if rename else name] = json.loads(rename(text) if rename else text)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('folder', nargs='?', type=Path, default=DEFAULT)
    parser.add_argument('--runs', type=int, default=3, help='timed runs of each (default 3; medians compared)')
    parser.add_argument('--workers', type=int, default=1, help="robodata score's --workers (default 1)")
    args = parser.parse_args()
    folder: Path = args.folder
    if not (folder / 'meta' / 'info.json').is_file():
        print(f'{folder}: no LeRobot dataset there (bench/real_data/rebuild.sh fetches the G1 set)')
        return 1
    exe = doctor_exe()
    before = contents(folder)
    doctor_s, robodata_s = [], []
    doctor_run = score_run = None
    bytecode = tempfile.TemporaryDirectory(prefix='lerobot_in_place_pyc_')
    ENV['PYTHONPYCACHEPREFIX'] = bytecode.name
    score = [str(ROBODATA), 'score', str(folder), '--no-images', '--json', '--workers', str(args.workers)]
    for argv in ([str(exe), 'check', str(folder)], score):  # untimed: the bytecode written, the files cached
        subprocess.run(argv, capture_output=True, check=False, env=ENV)
    for _ in range(args.runs):
        t, doctor_run = timed([str(exe), 'check', str(folder)])
        doctor_s.append(t)
        t, score_run = timed(score)
        robodata_s.append(t)
        if score_run.returncode not in (0, 3):
            print(f'robodata score failed (exit {score_run.returncode}): {score_run.stderr.strip()}')
            return 1
    assert doctor_run is not None and score_run is not None
    unchanged = contents(folder) == before
    in_place = json.loads(score_run.stdout)
    doctor_line = next((line for line in (doctor_run.stdout + doctor_run.stderr).splitlines()
                        if line.startswith('Summary:')), 'no summary line')

    with tempfile.TemporaryDirectory(prefix='lerobot_in_place_') as tmp:
        ds = Path(tmp) / 'ds'
        import_s, imported = timed([str(ROBODATA), 'import', str(folder), '--dataset', str(ds)])
        copy_s, copy_run = timed([str(ROBODATA), 'score', str(ds), '--no-images', '--json'])
        if imported.returncode or copy_run.returncode not in (0, 3):
            print(f'the imported copy could not be scored: {imported.stderr.strip()} {copy_run.stderr.strip()}')
            return 1
        copy = json.loads(copy_run.stdout)
    base = re.escape(re.sub(r'[^A-Za-z0-9_.-]+', '_', folder.name))
    rename = lambda text: re.sub(base + r'-0*(\d+)', r'episode \1', text)  # noqa: E731
    mine, theirs = findings(in_place), findings(copy, rename)
    differ = sorted(name for name in set(mine) | set(theirs) if mine.get(name) != theirs.get(name))

    doctor_median, robodata_median = statistics.median(doctor_s), statistics.median(robodata_s)
    ratio = robodata_median / doctor_median
    episodes = len(in_place['episodes'])
    print(f'{folder.name}: {episodes} episodes, {args.runs} run(s) of each, medians')
    print(f'  lerobot-doctor check: {doctor_median:.2f} s (runs {", ".join(f"{t:.2f}" for t in doctor_s)}); '
          f'exit {doctor_run.returncode}; {doctor_line.strip()}')
    runs = ', '.join(f'{t:.2f}' for t in robodata_s)
    print(f'  robodata score in place (--workers {args.workers}): {robodata_median:.2f} s (runs {runs})')
    doctor_cpu = statistics.median(CPU[f'{exe.name} check'])
    robodata_cpu = statistics.median(CPU[f'{ROBODATA.name} score'][:args.runs])
    print(f'  CPU (user + system), medians: doctor {doctor_cpu:.2f} s, robodata {robodata_cpu:.2f} s '
          f'({robodata_cpu / doctor_cpu:.2f}x)')
    print(f'  ratio {ratio:.2f}x the doctor (target at most {TARGET:.0f}x): {"MET" if ratio <= TARGET else "NOT met"}')
    print(f'  before: import {import_s:.2f} s + score {copy_s:.2f} s = {import_s + copy_s:.2f} s '
          f'({(import_s + copy_s) / doctor_median:.1f}x the doctor)')
    checks = Counter(f[0] for found in mine.values() for f in found if f[1] in ('warn', 'error'))
    print(f'  findings in place: {sum(len(f) for f in mine.values())} in {episodes} episodes; warn/error by check: '
          + (', '.join(f'{c} {n}' for c, n in checks.most_common()) or 'none'))
    print(f'  same findings as the imported copy: {"yes" if not differ else "NO"} '
          f'({len(set(mine) & set(theirs))} episodes compared'
          + (f'; differ: {", ".join(differ[:8])}' if differ else '') + ')')
    print(f'  folder unchanged: {"yes" if unchanged else "NO"}')
    bytecode.cleanup()
    return 0 if ratio <= TARGET and not differ and unchanged else 3


if __name__ == '__main__':
    sys.exit(main())
