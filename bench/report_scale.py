"""What `robodata report` costs on a big dataset: the page's size, the time to build it, and the time headless
Chromium takes to open it, for 1,000 and 10,000 scored episodes (issue 37: under 20 MiB, built in under 60 s,
opened in under 3 s at 10,000).

The datasets are synthetic but shaped like real scored ones (test/report_sidecars.py): two short simulated
episodes with cameras are written as bags and scored for real; every synthetic episode hard-links one of their
bags and gets its own episode.yaml, quality.json (the template's findings, a score of its own: 80% clean, 15%
with a blurred wrist camera, 5% missing a topic), catalog row, and the dataset a quality_summary.json and a
review queue. The report reads those sidecars (nothing is scored again) and draws the --detail worst episodes
from their bags, as it would on a real dataset.

Each report is built by `robodata report DATASET --json` in a fresh process, as a user runs it, and again with
`--episodes 0` to split the time into reading the sidecars (grows with the dataset) and drawing the detailed
episodes (grows with --detail). Headless Chromium opens the page twice: `--screenshot` times the first screen
painted once the page loaded (what a reader waits for: the target), `--dump-dom` the whole DOM after the page's
script drew the table, serialised and handed over (an upper bound: it writes the 8 MiB of embedded frames back out).
The same calls on a one-line page are the baseline (Chromium's own start-up), measured in the same run, best of
--repeats each. The growth line gives the bytes per episode row and per detailed section, read from the page.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from test.report_sidecars import chromium_dom, chromium_screenshot, make_templates, write_scored_dataset  # noqa: E402

TARGET_MIB, TARGET_BUILD_S, TARGET_OPEN_S = 20.0, 60.0, 3.0


def _open_s(page: Path, profile: Path, repeats: int) -> tuple[float, float]:
    """Best of `repeats`: Chromium's seconds to paint the page's first screen, and to hand over its whole DOM."""
    paint = dom = float('inf')
    for _ in range(repeats):
        start = time.perf_counter()
        chromium_screenshot(page, profile, profile.parent / 'first_screen.png')
        paint = min(paint, time.perf_counter() - start)
        start = time.perf_counter()
        chromium_dom(page, profile)
        dom = min(dom, time.perf_counter() - start)
    return paint, dom


def _parts(page: Path) -> tuple[int, int]:
    """Bytes of the embedded rows (every episode) and of the detailed sections."""
    data = page.read_bytes()
    start = data.index(b'id="episode-rows"')
    rows = data.index(b'</script>', start) - start
    first = data.find(b'<section class="episode"')
    sections = data.index(b'</main>') - first if first >= 0 else 0
    return rows, sections


def _report(root: Path, detail: int, workers: int, out: Path | None) -> tuple[float, dict[str, Any]]:
    """`robodata report` in a fresh process, as a user runs it: its seconds and its --json."""
    command = [sys.executable, '-m', 'ros_robodata.cli.main', 'report', str(root), '--json', '--episodes',
               str(detail), '--workers', str(workers), *(['--out', str(out)] if out else [])]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f'{root}: robodata report failed (exit {done.returncode}): {done.stderr[-1000:]}')
    return seconds, json.loads(done.stdout)


def _verdict(ok: bool) -> str:
    return 'met' if ok else 'NOT MET'


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--episodes', type=int, nargs='+', default=[1000, 10_000], help='dataset sizes')
    parser.add_argument('--detail', type=int, default=100, help="report's --episodes (the default as shipped)")
    parser.add_argument('--workers', type=int, default=1, help="report's --workers (drawing processes)")
    parser.add_argument('--repeats', type=int, default=3, help='Chromium opens per page (best of)')
    parser.add_argument('--keep', action='store_true', help='keep the datasets (printed) for a look')
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix='report_scale_'))
    try:
        templates = make_templates(work / 'templates')
        blank = work / 'blank.html'
        blank.write_text('<!DOCTYPE html><html><body><p>blank</p></body></html>\n')
        base_paint, base_dom = _open_s(blank, work / 'chromium', args.repeats)
        print(f'Chromium on a one-line page (its start-up, the baseline): painted in {base_paint:.2f} s, '
              f'DOM in {base_dom:.2f} s')
        for count in args.episodes:
            root = work / f'ds{count}'
            start = time.perf_counter()
            write_scored_dataset(root, count, templates)
            made = time.perf_counter() - start
            plain, _ = _report(root, 0, args.workers, work / 'plain.html')
            build, result = _report(root, args.detail, args.workers, None)
            mib = result['size_bytes'] / 2**20
            paint, dom = _open_s(Path(result['path']), work / 'chromium', args.repeats)
            print(f'{count} episodes (sidecars written in {made:.1f} s), {result["detailed"]} in detail: '
                  f'{mib:.1f} MiB [target < {TARGET_MIB:.0f}: {_verdict(mib < TARGET_MIB)}], '
                  f'built in {build:.1f} s [target < {TARGET_BUILD_S:.0f}: {_verdict(build < TARGET_BUILD_S)}], '
                  f'first screen painted by Chromium in {paint:.2f} s ({paint - base_paint:+.2f} s on the baseline) '
                  f'[target < {TARGET_OPEN_S:.0f}: {_verdict(paint < TARGET_OPEN_S)}], whole DOM drawn and handed '
                  f'over in {dom:.2f} s ({dom - base_dom:+.2f} s) [{_verdict(dom < TARGET_OPEN_S)}]')
            print(f'  build: {plain:.1f} s reading the sidecars and writing the page (--episodes 0), the rest '
                  f'drawing the {result["detailed"]} detailed episodes from their bags')
            rows, sections = _parts(Path(result['path']))
            per_section = sections / max(1, result['detailed'])
            print(f'  growth: {rows / count:.0f} bytes per episode row ({rows / 2**20:.2f} MiB of rows), '
                  f'{per_section / 1024:.0f} KiB per detailed section ({sections / 2**20:.1f} MiB); every episode '
                  f'in detail would be about {count * per_section / 2**20:.0f} MiB')
            if args.keep:
                print(f'  kept: {root}')
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
