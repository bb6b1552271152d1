"""A dataset of many scored episodes, made in seconds, for the report at scale (test_report_pages, bench/report_scale).

A few template episodes are simulated, written as bags and scored for real (`robodata score`): their bags,
events.json and quality.json are what every synthetic episode starts from. Each synthetic episode is a folder
with the template's bag hard-linked in (copied where links cannot be made), its own episode.yaml, a quality.json
with the template's findings and a score of its own, and a catalog row; quality_summary.json and
review/queue.json are written over them as `robodata score` and `robodata select` would. Nothing is scored
again: the point is a dataset shaped like a real scored one, at a size no test could score.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

from ros_robodata.cli.main import main
from ros_robodata.dataset import Dataset
from ros_robodata.dataset.episode import Episode
from ros_robodata.profile import load_profile
from ros_robodata.sim.faults import Fault
from ros_robodata.sim.to_bag import write_sim_episode
from test.profiles import PROFILE

TASKS = ('pick_cube', 'place_cup', 'open_drawer')
OPERATORS = ('ana', 'ben', 'chen')
OUTCOMES = (('success', 0.8), ('failure', 0.12), ('recovery', 0.08))
# (template, share of the episodes, lowest score, highest score): most clean, some blurred, a few missing the LiDAR
KINDS = (('clean', 0.80, 0.90, 1.00), ('blurred', 0.15, 0.60, 0.90), ('missing', 0.05, 0.20, 0.60))


def make_templates(root: Path) -> Dataset:
    """A dataset of two short simulated episodes with cameras, the second blurred at 2-3 s, scored."""
    profile = load_profile(PROFILE)
    dataset = Dataset.create(root, profile=profile)
    for episode_id, seed, faults in (('template-a', 0, []),
                                     ('template-b', 1, [Fault('camera/wrist', 'blur', 2.0, 3.0)])):
        write_sim_episode(dataset.bag_dir(episode_id), profile, seed=seed, cameras=True, lidar=False,
                          image_size=(96, 72), faults=faults, max_duration_s=9.0)
        dataset.add_episode(Episode(id=episode_id, task=TASKS[0], operator=OPERATORS[0], status='complete',
                                    outcome='success'))
    with contextlib.redirect_stdout(io.StringIO()):  # its table: not what a test or the bench shows
        assert main(['score', str(root)]) == 0
    return dataset


def _template_quality(templates: Dataset) -> dict[str, dict[str, Any]]:
    """The three kinds of quality.json, from the two scored templates (the sim writes no LiDAR: `missing`)."""
    a = json.loads((templates.episode_dir('template-a') / 'quality.json').read_text())
    b = json.loads((templates.episode_dir('template-b') / 'quality.json').read_text())

    def keep(doc: dict[str, Any], checks: set[str]) -> dict[str, Any]:
        out = json.loads(json.dumps(doc))
        out['findings'] = [f for f in out['findings'] if f['check'] in checks]
        out['reasons'] = [r for r in out['reasons'] if any(f['message'] in r for f in out['findings'])]
        return out

    return {'clean': keep(a, set()), 'blurred': keep(b, {'image.blur'}),
            'missing': keep(a, {'completeness.missing_topic'})}


def _link_tree(source: Path, target: Path) -> None:
    target.mkdir(parents=True)
    for path in source.iterdir():
        try:
            os.link(path, target / path.name)
        except OSError:
            shutil.copy2(path, target / path.name)


def write_scored_dataset(root: Path, count: int, templates: Dataset, *, seed: int = 0,
                         queue: int = 50) -> list[str]:
    """`count` scored episodes in a new dataset at `root`; returns their ids. `queue`: episodes in review/queue.json
    (the worst, as select would mostly pick)."""
    rng = random.Random(seed)
    dataset = Dataset.create(root, profile=templates.profile)
    kinds = _template_quality(templates)
    yaml_text = (templates.episode_dir('template-a') / 'episode.yaml').read_text()
    rows, docs, ids = [], {}, []
    labels: dict[str, tuple[str, str]] = {}
    checks: dict[str, int] = {}
    outcomes = {'success': 0, 'failure': 0, 'recovery': 0, 'unknown': 0}
    base = 1_767_225_600  # 2026-01-01
    for i in range(count):
        episode_id = time.strftime('%Y%m%d-%H%M%S', time.gmtime(base + 60 * i))
        kind, low, high = next((k, lo, hi) for k, share, lo, hi in _cumulative(rng.random()))
        task, operator = rng.choice(TASKS), rng.choice(OPERATORS)
        outcome = _pick(rng.random(), OUTCOMES)
        outcomes[outcome] += 1
        template = 'template-b' if kind == 'blurred' else 'template-a'
        folder = dataset.episode_dir(episode_id)
        _link_tree(templates.bag_dir(template), folder / 'bag')
        os.link(templates.episode_dir(template) / 'events.json', folder / 'events.json')
        (folder / 'episode.yaml').write_text(
            yaml_text.replace('id: template-a', f'id: {episode_id}').replace(f'task: {TASKS[0]}', f'task: {task}')
            .replace(f'operator: {OPERATORS[0]}', f'operator: {operator}')
            .replace('outcome: success', f'outcome: {outcome}'))
        doc = dict(kinds[kind])
        doc['score'] = round(low + (high - low) * rng.random(), 3)
        errors = sum(1 for f in doc['findings'] if f['severity'] == 'error')
        fired = sorted({f['check'] for f in doc['findings']})
        for check in fired:
            checks[check] = checks.get(check, 0) + 1
        doc['catalog'] = {'errors': errors, 'warnings': len(doc['findings']) - errors, 'checks': fired,
                          'consistency': None, 'success_verdict': None, 'disagrees': None}
        (folder / 'quality.json').write_text(json.dumps(doc))
        docs[episode_id] = doc
        labels[episode_id] = (task, outcome)
        ids.append(episode_id)
        rows.append((episode_id, task, operator, 'teleop', '', outcome, 'complete', doc['start_ns'], doc['end_ns'],
                     9.0, 0, 0, doc['score'], json.dumps(doc['catalog'], sort_keys=True), '{}', time.time_ns(), ''))
    dataset.catalog.create()
    with sqlite3.connect(dataset.catalog.path) as conn:  # one transaction: a row each, as score leaves them
        conn.executemany('INSERT INTO episodes (id, task, operator, mode, robot, outcome, status, start_ns, '
                         'stop_ns, duration_s, message_count, size_bytes, score, scores, bag_sha256, updated_ns, '
                         'source_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)', rows)
    labelled = sum(v for k, v in outcomes.items() if k != 'unknown') or 1
    summary = {'format': 'ros_robodata.quality_summary/1', 'episodes': count, 'failed': {}, 'outcomes': outcomes,
               'outcome_ratios': {k: round(v / labelled, 3) for k, v in outcomes.items() if k != 'unknown'},
               'warnings': [], 'patterns': [], 'checks': dict(sorted(checks.items())), 'skipped': [],
               'mean_score': round(sum(d['score'] for d in docs.values()) / max(1, count), 3)}
    (root / 'quality_summary.json').write_text(json.dumps(summary, indent=1))
    worst = sorted(ids, key=lambda i: (docs[i]['score'], i))[:queue]
    entries = [{'rank': n + 1, 'episode_id': i, 'task': labels[i][0], 'outcome': labels[i][1],
                'score': docs[i]['score'], 'priority': round(1.0 - docs[i]['score'], 3),
                'reasons': docs[i]['reasons'][:1], 'signals': {}}
               for n, i in enumerate(worst)]
    (root / 'review').mkdir(exist_ok=True)
    (root / 'review' / 'queue.json').write_text(json.dumps({
        'format': 'ros_robodata.review_queue/1', 'dataset': dataset.name, 'budget': {'asked': str(queue),
                                                                                     'episodes': queue},
        'considered': count, 'candidates': count, 'picked': len(entries), 'weights': {},
        'inputs': {'filters': {}, 'include_reviewed': False, 'min_score': 0.0}, 'queue': entries, 'excluded': [],
        'notes': []}))
    return ids


def _cumulative(x: float) -> list[tuple[str, float, float, float]]:
    total = 0.0
    for kind, share, low, high in KINDS:
        total += share
        if x < total:
            return [(kind, share, low, high)]
    return [KINDS[0]]


def _pick(x: float, choices: tuple[tuple[str, float], ...]) -> str:
    total = 0.0
    for name, share in choices:
        total += share
        if x < total:
            return name
    return choices[0][0]


CHROMIUM = '/usr/bin/chromium'  # the Debian package tools/system_deps.sh installs


def _chromium(page: Path, profile_dir: Path, what: list[str], timeout_s: float, fragment: str = '') -> str:
    done = subprocess.run(
        [CHROMIUM, '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync',
         f'--user-data-dir={profile_dir}', *what, page.resolve().as_uri() + (f'#{fragment}' if fragment else '')],
        capture_output=True, text=True, timeout=timeout_s, check=False)
    if done.returncode != 0:
        raise RuntimeError(f'chromium could not open {page} (exit {done.returncode}): {done.stderr[-2000:]}')
    return done.stdout


def chromium_dom(page: Path, profile_dir: Path, *, fragment: str = '', timeout_s: float = 120.0) -> str:
    """The page's DOM after it loaded and its script ran, as headless Chromium renders it (what a reader sees);
    `fragment`: opened as page.html#fragment."""
    dom = _chromium(page, profile_dir, ['--dump-dom'], timeout_s, fragment)
    if not dom.strip():
        raise RuntimeError(f'chromium showed nothing of {page}')
    return dom


def chromium_screenshot(page: Path, profile_dir: Path, png: Path, *, timeout_s: float = 120.0) -> None:
    """The first screen of the page (1280x900) as Chromium paints it once the page loaded, into `png`."""
    _chromium(page, profile_dir, [f'--screenshot={png}', '--window-size=1280,900'], timeout_s)
    if not png.is_file():
        raise RuntimeError(f'chromium painted nothing of {page}')
