"""Quality checks on real recordings of embodiments nobody on the team built (issue 27): each public LeRobot
dataset imported with `robodata import` (the profile the import writes), scored with `robodata score`, and the
untouched episodes with a warning or an error counted (target: at most 5% on each dataset). Prints, per dataset,
the import and score times, the checks that warned and how often, the dataset-level patterns and lines.

    .venv/bin/python bench/quality_real.py                       # the datasets under bench/real_data/ that are there
    .venv/bin/python bench/quality_real.py DATASET_DIR [...]     # any LeRobot dataset folders
    .venv/bin/python bench/quality_real.py --held-back           # the held-back one, once, after tuning

    .venv/bin/python bench/quality_real.py --faults          # + faults planted in the humanoid's episodes

With `--faults`, a copy of the G1 humanoid dataset (LeRobot v2.1, one parquet file per episode) gets 20 faults
planted before import, 4 of each kind, one per episode, each in a 3 s window after the first second: `frozen` (the
state repeats one sample for 3 s while the action moves on; the stuck check needs over 2 s), `dropped` (15
consecutive frames removed), `nan` (one joint NaN for 3 frames), `spike` (one arm joint off by 0.5 rad for one
frame), `clock_back` (the timestamps step back 0.5 s, the rest of the episode shifted); the other 80 stay untouched.
A fault counts as caught when its episode has a warn or error finding of a check that names it (frozen:
motion.stuck_joint or timing.repeated_sample; dropped: timing.gap; nan: motion.nan; spike: motion.velocity_jump;
clock_back: timing.stamp_backwards or timing.clock_jump). Target: recall >= 0.95 per kind, and the untouched
episodes' false alarms as above. With lerobot-doctor 0.2.0 in bench/.doctor_venv (python3 -m venv bench/.doctor_venv
&& bench/.doctor_venv/bin/pip install lerobot-doctor==0.2.0), its findings on the same folder are printed beside.

The datasets are not vendored (bench/real_data/SOURCES.md says where each comes from; rebuild.sh fetches them).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ros_robodata.cli.main import main as robodata  # noqa: E402

REAL = ROOT / 'bench' / 'real_data'
# Embodiments: a humanoid with two dexterous hands, a bimanual arm pair, a single low-cost arm, a Reachy 2.
WORKING = ['g1_inspire', 'bi_so101_clean_desk', 'so101_robothon_pickplace', 'so101_record_test',
           str(ROOT / 'test' / 'data' / 'lerobot' / 'reachy2_apple_storage'), 'dexhands_open_50']
HELD_BACK = ['piper_grape_plate']
TARGET = 0.05


def _folder(name: str) -> Path:
    path = Path(name)
    return path if path.is_absolute() or path.exists() else REAL / name


def judge(folder: Path, work: Path) -> tuple[str, bool]:
    """Import and score one dataset; print what warned. Returns the verdict line and whether it was met."""
    target = work / folder.name
    t0 = time.perf_counter()
    code = robodata(['import', str(folder), '--dataset', str(target)])
    t1 = time.perf_counter()
    code = code or robodata(['score', str(target), '--no-images'])
    t2 = time.perf_counter()
    if code:
        return f'{folder.name}: import or score failed (exit {code})', False
    warned, total = 0, 0
    checks: Counter[str] = Counter()
    for path in sorted((target / 'episodes').glob('*/quality.json')):
        total += 1
        findings = [f for f in json.loads(path.read_text())['findings'] if f['severity'] in ('warn', 'error')]
        warned += bool(findings)
        checks.update(f'{f["severity"]} {f["check"]}' for f in findings)
    summary = json.loads((target / 'quality_summary.json').read_text())
    print(f'\n== {folder.name}: {total} episodes; import {t1 - t0:.1f} s, score {t2 - t1:.1f} s ==')
    for check, n in checks.most_common():
        print(f'  {n:4} episode(s): {check}')
    for line in summary.get('warnings', []):
        print(f'  dataset: {line}')
    share = warned / total if total else float('nan')
    met = total > 0 and share <= TARGET
    return (f'{folder.name}: untouched episodes with a warn/error finding {warned} of {total} ({share:.0%}) '
            f'(target <= {TARGET:.0%}): {"met" if met else "NOT met"}'), met


FAULTS = ('frozen', 'dropped', 'nan', 'spike', 'clock_back')
CAUGHT_BY = {'frozen': ('motion.stuck_joint', 'timing.repeated_sample'), 'dropped': ('timing.gap',),
             'nan': ('motion.nan',), 'spike': ('motion.velocity_jump',),
             'clock_back': ('timing.stamp_backwards', 'timing.clock_jump')}
PLANTED_PER_KIND = 4


def plant(source: Path, out: Path, seed: int = 27) -> dict[int, str]:
    """A copy of a LeRobot v2.1 dataset with faults planted in 4 episodes per kind; returns episode -> kind."""
    import shutil

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    shutil.copytree(source, out)
    files = sorted((out / 'data').glob('*/episode_*.parquet'))
    rng = np.random.default_rng(seed)
    chosen = rng.choice(len(files), size=PLANTED_PER_KIND * len(FAULTS), replace=False)
    planted: dict[int, str] = {}
    fps = json.loads((out / 'meta' / 'info.json').read_text())['fps']
    for k, index in enumerate(sorted(int(i) for i in chosen)):
        kind = FAULTS[k % len(FAULTS)]
        path = files[index]
        table = pq.read_table(path)
        state = np.array(table.column('observation.state').to_pylist(), dtype=np.float32)
        stamps = np.array(table.column('timestamp').to_pylist(), dtype=np.float64)
        keep = np.ones(len(stamps), dtype=bool)
        start = int(fps) + int(rng.integers(0, max(1, len(stamps) - 5 * int(fps))))
        window = slice(start, start + 3 * int(fps))
        if kind == 'frozen':
            state[window] = state[start]
        elif kind == 'dropped':
            keep[start:start + 15] = False
        elif kind == 'nan':
            state[start:start + 3, int(rng.integers(0, state.shape[1]))] = np.nan
        elif kind == 'spike':
            state[start, int(rng.integers(0, 14))] += 0.5  # one arm joint (the first 14 are the arms)
        elif kind == 'clock_back':
            stamps[start:] -= 0.5
        columns = {name: table.column(name) for name in table.column_names}
        columns['observation.state'] = pa.array(state.tolist(), type=table.schema.field('observation.state').type)
        columns['timestamp'] = pa.array(stamps.astype(np.float32))
        pq.write_table(pa.table(columns).filter(pa.array(keep)), path)
        planted[int(path.stem.split('_')[-1])] = kind
    return planted


def judge_faults(folder: Path, work: Path) -> list[tuple[str, bool]]:
    """Plant faults in a copy of `folder`, import and score it, and count which were caught."""
    faulty = work / f'{folder.name}_faults'
    planted = plant(folder, faulty)
    target = work / f'{folder.name}_faults_ds'
    if robodata(['import', str(faulty), '--dataset', str(target)]) or robodata(['score', str(target), '--no-images']):
        return [(f'{folder.name} with faults: import or score failed', False)]
    caught: Counter[str] = Counter()
    alarms = clean = 0
    for path in sorted((target / 'episodes').glob('*/quality.json')):
        index = int(path.parent.name.rsplit('-', 1)[-1])
        findings = [f for f in json.loads(path.read_text())['findings'] if f['severity'] in ('warn', 'error')]
        kind = planted.get(index)
        if kind is None:
            clean += 1
            alarms += bool(findings)
        elif any(f['check'] in CAUGHT_BY[kind] for f in findings):
            caught[kind] += 1
    print(f'\n== {folder.name} with {len(planted)} planted faults ==')
    lines = []
    for kind in FAULTS:
        n = sum(1 for k in planted.values() if k == kind)
        recall = caught[kind] / n if n else float('nan')
        print(f'  {kind:11} caught {caught[kind]} of {n}')
        lines.append((f'{folder.name} planted {kind}: caught {caught[kind]} of {n} (recall {recall:.2f}) '
                      f'(target >= 0.95): {"met" if recall >= 0.95 else "NOT met"}', recall >= 0.95))
    share = alarms / clean if clean else float('nan')
    lines.append((f'{folder.name} with faults: untouched episodes with a warn/error finding {alarms} of {clean} '
                  f'({share:.0%}) (target <= {TARGET:.0%}): {"met" if share <= TARGET else "NOT met"}',
                  share <= TARGET))
    doctor(faulty, planted)
    return lines


def doctor(folder: Path, planted: dict[int, str]) -> None:
    """lerobot-doctor 0.2.0 (a peer, in a venv of its own) on the same folder, its output as it prints it."""
    import subprocess

    exe = ROOT / 'bench' / '.doctor_venv' / 'bin' / 'lerobot-doctor'
    if not exe.exists():
        print('  lerobot-doctor: not installed in bench/.doctor_venv: its figures are not printed')
        return
    t0 = time.perf_counter()
    run = subprocess.run([str(exe), 'check', str(folder)], capture_output=True, text=True, timeout=600, check=False)
    print(f'  lerobot-doctor 0.2.0 on the same folder: exit {run.returncode}, {time.perf_counter() - t0:.1f} s; '
          f'planted: {sorted(planted.items())}')
    for line in (run.stdout + run.stderr).splitlines()[:60]:
        print(f'    | {line}')


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('datasets', nargs='*', help='LeRobot dataset folders (default: the working set present)')
    parser.add_argument('--held-back', action='store_true', help='only the held-back dataset(s)')
    parser.add_argument('--faults', action='store_true', help='also plant faults in the humanoid dataset')
    args = parser.parse_args()
    names = args.datasets or (HELD_BACK if args.held_back else WORKING)
    folders = [_folder(n) for n in names]
    absent = [f for f in folders if not (f / 'meta' / 'info.json').is_file()]
    for folder in absent:
        print(f'{folder}: not here (bench/real_data/rebuild.sh fetches it): left out')
    lines = []
    with tempfile.TemporaryDirectory(prefix='robodata_quality_real_') as tmp:
        for folder in folders:
            if folder not in absent:
                lines.append(judge(folder, Path(tmp)))
        humanoid = REAL / 'g1_inspire'
        if args.faults and (humanoid / 'meta' / 'info.json').is_file():
            lines += judge_faults(humanoid, Path(tmp))
    print('\n== targets ==')
    for line, _ in lines:
        print(f'  {line}')
    print(f'targets met: {sum(ok for _, ok in lines)} of {len(lines)}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
