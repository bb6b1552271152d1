"""Quality checks on real recordings of embodiments nobody on the team built (issue 27): each public LeRobot
dataset imported with `robodata import` (the profile the import writes), scored with `robodata score`, and the
untouched episodes with a warning or an error counted (target: at most 5% on each dataset). Prints, per dataset,
the import and score times, the checks that warned and how often, the dataset-level patterns and lines.

    .venv/bin/python bench/quality_real.py                       # the datasets under bench/real_data/ that are there
    .venv/bin/python bench/quality_real.py DATASET_DIR [...]     # any LeRobot dataset folders
    .venv/bin/python bench/quality_real.py --held-back           # the held-back one, once, after tuning

The datasets are not vendored (bench/real_data/SOURCES.md says where each comes from; rebuild.sh fetches them).
Planted faults on these recordings and lerobot-doctor's figures beside ours are not measured here yet.
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
           str(ROOT / 'test' / 'data' / 'lerobot' / 'reachy2_apple_storage')]
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
    warned, checks, total = 0, Counter(), 0
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('datasets', nargs='*', help='LeRobot dataset folders (default: the working set present)')
    parser.add_argument('--held-back', action='store_true', help='only the held-back dataset(s)')
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
    print('\n== targets ==')
    for line, _ in lines:
        print(f'  {line}')
    print(f'targets met: {sum(ok for _, ok in lines)} of {len(lines)}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
