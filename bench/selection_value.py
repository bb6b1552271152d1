"""Is `robodata select` worth a reviewer's time? Its queue against random picks, on simulated datasets whose truth
is known.

A dataset of simulated episodes of the cell (`write_sim_episode`, arm, gripper, wrench and command streams, no
cameras, no ROS; episode index = seed, so every 6 hold 4 planned successes, a failure and a recovery, and the
physics decides what really happened) is built in a temporary folder, with:
- mislabels on purpose: a seeded --mislabel share of episodes gets the wrong operator label (a success pressed as
  failure, a failure as success, a recovery filed as a plain success);
- injected faults: a seeded --faults share of episodes gets one fault (a wrench spike, gripper samples dropped or
  silent, the wrench silent, NaN joints) at a random time in [2 s, 6 s].
Then `robodata segment`, `robodata score` and `robodata select --budget P%` run on it as a user would.

Truth per episode: the review changes a label when the operator's label is not the physics' outcome; it catches a
wrong machine event when the segmenter's grasp, release, lift or grasp_failed events do not match the physics'
one-to-one within 0.25 s, or it reports a collision (the cell has none: a sensor artefact). An episode is a hit
when either holds. Random baselines in the same run: the expected hit share of a uniform random pick of the same
size among all episodes considered (the base rate; a mean over --draws seeded draws is printed beside it) and among
the candidates left after the filter (what ranking adds beyond filtering). Target: queue hit share >= 3x random
(all episodes) at a 10% budget. At the first budget the queue is also made with one signal's weight at 0 in turn
(label_disagrees, doubtful_events, diversity), to show what each adds.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from ros_robodata.vocabulary import (  # noqa: E402 - after the path to this tree
    COLLISION,
    FAILURE,
    GRASP,
    GRASP_FAILED,
    LIFT,
    RECOVERY,
    RELEASE,
    SUCCESS,
)

PROFILE = ROOT / 'config' / 'sim_cell.yaml'
TARGET_RATIO = 3.0
TOLERANCE_S = 0.25
START_NS = 1_700_000_000_000_000_000
# Segmenter kind -> the physics' kinds it stands for (as bench/segment_accuracy.py maps them).
TRUTH_KINDS = {GRASP: ('secured',), RELEASE: ('released',), LIFT: ('lift_off',), GRASP_FAILED: ('missed', 'dropped')}
WRONG_LABEL = {SUCCESS: FAILURE, FAILURE: SUCCESS, RECOVERY: SUCCESS}
ABLATE = ('label_disagrees', 'doubtful_events', 'diversity')  # each left out in turn at the first budget
FAULTS = (('wrench', 'spike', 0.02, 60.0), ('gripper', 'drop', 0.6, None), ('gripper', 'silent', 1.0, None),
          ('wrench', 'silent', 1.5, None), ('joint_states', 'nan', 0.2, None))


@dataclass(frozen=True)
class Spec:
    episode_id: str
    seed: int
    mislabel: bool
    fault: tuple[str, str, float, float, float | None] | None  # stream, kind, start, end, magnitude


def plan(episodes: int, mislabel: float, faults: float, seed: int) -> list[Spec]:
    rng = np.random.default_rng(seed)
    wrong = set(rng.choice(episodes, size=round(mislabel * episodes), replace=False).tolist())
    faulted = rng.choice(episodes, size=round(faults * episodes), replace=False).tolist()
    fault_of: dict[int, Any] = {}
    for i in faulted:
        stream, kind, length, magnitude = FAULTS[int(rng.integers(len(FAULTS)))]
        start = float(rng.uniform(2.0, 6.0))
        fault_of[i] = (stream, kind, round(start, 3), round(start + length, 3), magnitude)
    return [Spec(f'ep{i:03d}', seed * 1000 + i, i in wrong, fault_of.get(i)) for i in range(episodes)]


def simulate(job: tuple[Spec, str, Any]) -> tuple[str, dict]:
    """Worker: one episode's bag; returns its ground truth."""
    from ros_robodata.sim.faults import Fault
    from ros_robodata.sim.to_bag import write_sim_episode

    spec, bag, profile = job
    faults = [Fault(spec.fault[0], spec.fault[1], spec.fault[2], spec.fault[3], magnitude=spec.fault[4])] \
        if spec.fault else []
    truth = write_sim_episode(bag, profile, spec.seed, spec.seed % 6, start_ns=START_NS, faults=faults,
                              max_duration_s=20.0)
    return spec.episode_id, truth


def wrong_events(events: list[dict], truth: dict) -> list[str]:
    """What a reviewer would correct in the machine's events, against the physics."""
    out = []
    for kind, truth_kinds in TRUTH_KINDS.items():
        real = sorted(START_NS + e['t_s'] * 1e9 for e in truth['events'] if e['kind'] in truth_kinds)
        found = sorted(float(e['t_ns']) for e in events if e['kind'] == kind)
        used: set[int] = set()
        matched = 0
        for t in real:
            near = [(abs(d - t), j) for j, d in enumerate(found) if j not in used and abs(d - t) <= TOLERANCE_S * 1e9]
            if near:
                used.add(min(near)[1])
                matched += 1
        if matched < len(real):
            out.append(f'{len(real) - matched} {kind} missed')
        if matched < len(found):
            out.append(f'{len(found) - matched} {kind} wrong')
    collisions = sum(1 for e in events if e['kind'] == COLLISION)
    if collisions:
        out.append(f'{collisions} collision (none in the physics)')
    return out


def ablated(dataset: Any, budget: str, signal: str, hits: dict[str, list[str]]) -> int:
    """Hits of the same budget's queue with one signal's weight set to 0 (nothing stored): what that signal adds."""
    from ros_robodata import select_for_review
    from ros_robodata.selection.signals import WEIGHTS

    kept = WEIGHTS[signal]
    WEIGHTS[signal] = 0.0
    try:
        run = select_for_review(dataset, budget=budget, write=False)
    finally:
        WEIGHTS[signal] = kept
    return sum(1 for p in run.picks if hits[p.episode_id])


def build(root: Path, specs: list[Spec], jobs: int) -> dict[str, dict]:
    from ros_robodata.dataset import Dataset
    from ros_robodata.profile import load_profile
    from ros_robodata.sim.scripted_episodes import register_sim_episode, without_sensors

    dataset = Dataset.create(root, profile=without_sensors(load_profile(PROFILE)))
    work = [(s, str(dataset.bag_dir(s.episode_id)), dataset.profile) for s in specs]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        truths = dict(pool.map(simulate, work))
    for spec in specs:
        truth = truths[spec.episode_id]
        label = WRONG_LABEL[truth['outcome']] if spec.mislabel else truth['outcome']
        register_sim_episode(dataset, spec.episode_id, truth, label=label)
    return truths


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--episodes', type=int, default=60, help='episodes per dataset (default 60)')
    parser.add_argument('--datasets', type=int, default=2, help='datasets, each with its own seed (default 2)')
    parser.add_argument('--mislabel', type=float, default=0.1, help='share mislabelled on purpose (default 0.1)')
    parser.add_argument('--faults', type=float, default=0.1, help='share with an injected fault (default 0.1)')
    parser.add_argument('--budgets', default='10%,5%,20%', help='budgets to report (default 10%%,5%%,20%%)')
    parser.add_argument('--draws', type=int, default=2000, help='random draws per baseline (default 2000)')
    parser.add_argument('--jobs', type=int, default=2, help='processes simulating episodes (default 2)')
    parser.add_argument('--seed', type=int, default=1, help='first dataset seed (default 1)')
    args = parser.parse_args()

    from ros_robodata import score, segment, select_for_review
    from ros_robodata.dataset import Dataset

    budgets = [b.strip() for b in args.budgets.split(',') if b.strip()]
    ablations = {signal: [0, 0] for signal in ABLATE}
    totals: dict[str, list[float]] = {b: [0, 0, 0.0, 0.0, 0.0] for b in budgets}  # picks, hits, random, cand, draws
    for d in range(args.datasets):
        seed = args.seed + d
        specs = plan(args.episodes, args.mislabel, args.faults, seed)
        with tempfile.TemporaryDirectory(prefix='selection_value_') as tmp:
            root = Path(tmp) / 'ds'
            t0 = time.perf_counter()
            truths = build(root, specs, args.jobs)
            t1 = time.perf_counter()
            dataset = Dataset.open(root)
            segment(dataset)
            score(dataset, workers=args.jobs)
            t2 = time.perf_counter()
            by_id = {s.episode_id: s for s in specs}
            hits: dict[str, list[str]] = {}
            for spec in specs:
                folder = dataset.episode_dir(spec.episode_id)
                events = json.loads((folder / 'events.json').read_text())['events']
                label = dataset.episode(spec.episode_id).outcome
                why = wrong_events(events, truths[spec.episode_id])
                if label != truths[spec.episode_id]['outcome']:
                    why.insert(0, f'label {label}, physics {truths[spec.episode_id]["outcome"]}')
                hits[spec.episode_id] = why
            n = len(specs)
            base = sum(1 for w in hits.values() if w) / n
            print(f'dataset {seed}: {n} episodes ({sum(s.mislabel for s in specs)} mislabelled, '
                  f'{sum(1 for s in specs if s.fault)} with a fault), {sum(1 for w in hits.values() if w)} worth '
                  f'a review ({100 * base:.1f}%): {sum(1 for i, w in hits.items() if w and w[0].startswith("label"))} '
                  f'wrong labels, {sum(1 for w in hits.values() if any(not x.startswith("label") for x in w))} '
                  f'with a wrong machine event; simulated in {t1 - t0:.0f} s, segmented and scored in {t2 - t1:.0f} s',
                  flush=True)
            rng = np.random.default_rng(seed)
            for budget in budgets:
                t3 = time.perf_counter()
                run = select_for_review(dataset, budget=budget)
                seconds = time.perf_counter() - t3
                picked = [p.episode_id for p in run.picks]
                k = len(picked)
                got = sum(1 for e in picked if hits[e])
                candidates = [e for e in hits if e not in run.excluded]
                cand_rate = sum(1 for e in candidates if hits[e]) / len(candidates) if candidates else math.nan
                draws = np.mean([sum(1 for e in rng.choice(list(hits), size=k, replace=False) if hits[e]) / k
                                 for _ in range(args.draws)])
                print(f'  budget {budget:>4}: {k} picks, {got} hits = {100 * got / k:.1f}%; random among all '
                      f'{100 * base:.1f}% (drawn {100 * draws:.1f}%), among the {len(candidates)} candidates '
                      f'{100 * cand_rate:.1f}%; ratio {got / k / base:.2f}x all, {got / k / cand_rate:.2f}x '
                      f'candidates; select took {seconds:.1f} s; {len(run.excluded)} filtered out', flush=True)
                t = totals[budget]
                t[0] += k
                t[1] += got
                t[2] += base * k
                t[3] += cand_rate * k
                t[4] += draws * k
                if budget == budgets[0]:
                    for signal in ABLATE:
                        got_without = ablated(dataset, budget, signal, hits)
                        ablations[signal][0] += k
                        ablations[signal][1] += got_without
                        print(f'    without {signal}: {got_without} hits of {k}', flush=True)
                    for p in run.picks:
                        tag = '; '.join(hits[p.episode_id]) or 'nothing to correct'
                        fault = by_id[p.episode_id].fault
                        print(f'    {p.rank:>2}. {p.episode_id} {"HIT " if hits[p.episode_id] else "miss"} '
                              f'[{tag}]{f" (fault {fault[0]}:{fault[1]})" if fault else ""}: '
                              f'{(p.reasons() or ["-"])[0]}')
                    for e, why in sorted(run.excluded.items()):
                        print(f'    filtered {e} [{"; ".join(hits[e]) or "nothing to correct"}]: {why}')
    print('\nall datasets together:')
    for budget in budgets:
        picks, got, base, cand, draws = totals[budget]
        ratio = got / base if base else math.nan
        line = (f'  budget {budget:>4}: {int(picks)} picks, {int(got)} hits = {100 * got / picks:.1f}%; random among '
                f'all {100 * base / picks:.1f}% (drawn {100 * draws / picks:.1f}%), among candidates '
                f'{100 * cand / picks:.1f}%; ratio {ratio:.2f}x all, {got / cand:.2f}x candidates')
        if budget == '10%':
            line += f'  -> target >= {TARGET_RATIO:.0f}x random: {"met" if ratio >= TARGET_RATIO else "NOT met"}'
        print(line)
    for signal, (picks, got) in ablations.items():
        print(f'  budget {budgets[0]:>4} without {signal}: {got} hits of {picks} = {100 * got / picks:.1f}%')
    return 0


if __name__ == '__main__':
    sys.exit(main())
