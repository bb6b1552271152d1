"""Consistency across demonstrations (issue 20): does DTW consistency flag bad copies and leave good demos alone?

Datasets: the simulated cell (MuJoCo, teleop, successful episodes only), a built bimanual humanoid (two 7-joint
arms, only the right one working, the idle arm's rest pose drifting through the session, 30 Hz, 10 s demos) and
real recordings: test/data/demos/fr3_stack_cubes.npz (a Franka FR3 stacking cubes, Apache-2.0, in the repository) and
bench/real_demos/*.npz (a UR5e taught by hand and a bimanual teleop rig, no licence: made locally by make_npz.py, see
bench/real_demos/README.md; absent ones are said and skipped).
Each trial adds to a dataset's demos planted bad copies of randomly chosen demos (time reversed; the moving arm
frozen for the middle half; a 0.4 rad detour on the two most moving joints for 30% of the course; the moving
joints permuted; a wrong object position: the arm reaching 0.3 rad off on its two most moving joints from 15% to
60% of the course) and harmless variants (replayed at half and at 1.6x speed; a constant 0.15 rad on an idle
joint, where the arm has one). Prints per dataset and kind how many were flagged, the real demos flagged, the
Spearman rho of the value against length and recording order, and the time for the task's whole DTW.

    .venv/bin/python bench/consistency_detection.py            # all datasets, 4 trials each
    .venv/bin/python bench/consistency_detection.py --trials 2 --only humanoid
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ros_robodata.quality.consistency import dataset_consistency, resample_trajectory

HERE = Path(__file__).resolve().parent
BAD = ('reversed', 'frozen', 'detour', 'permuted', 'wrong_object')
HARMLESS = ('slower', 'faster', 'idle_offset')
UNLICENSED = ('lingzu_open50', 'ur5e_kinesthetic_task1')  # made locally only


@dataclass
class Demos:
    name: str
    names: list[str]
    gripper: list[str]
    episodes: list[tuple[np.ndarray, np.ndarray]]  # (t seconds, samples x joints) in recording order
    rad_per_unit: float = 1.0  # 1 for rad; pi/180 for degrees


# -- datasets ------------------------------------------------------------------------------------------------

def sim_cell(count: int) -> Demos:
    from ros_robodata.sim import sim_samples as S
    from ros_robodata.sim.cell import SimCell

    episodes = []
    seed = 0
    while len(episodes) < count:
        if seed % 6 not in (2, 4):  # of every 6 seeds one fails and one recovers: real inconsistency, left out
            rows: dict[str, list] = {'t': [], 'q': []}
            grip = (np.array([0.0]), np.array([[0.0]]))
            g_t, g_q = [], []
            with SimCell(seed, seed, 'teleop', streams=[S.JOINT_STATES, S.GRIPPER]) as cell:
                while not cell.finished:
                    for s in cell.step_until(cell.time + 0.1):
                        if s.stream == S.JOINT_STATES:
                            rows['t'].append(s.stamp)
                            rows['q'].append(list(s.data.position))
                        else:
                            g_t.append(s.stamp)
                            g_q.append(s.data.position[0])
            t = np.array(rows['t'])
            grip = (np.array(g_t), np.array(g_q))
            finger = np.interp(t, *grip)
            episodes.append((t - t[0], np.column_stack([np.array(rows['q']), finger])))
        seed += 1
    return Demos('sim_cell', [f'joint{j}' for j in range(1, 7)] + ['finger_joint'], ['finger_joint'], episodes)


def humanoid(count: int, rng: np.random.Generator) -> Demos:
    """Two 7-joint arms at 30 Hz, ~10 s demos of one pick: the right arm reaches, grasps, carries and places; the
    left arm rests, its rest pose drifting slowly through the session (a few hundredths of a rad)."""
    home = np.array([0.0, -0.3, 0.0, -1.2, 0.0, 0.2, 0.0])
    reach = np.array([0.5, -0.9, 0.2, -0.6, 0.3, -0.2, 0.1])
    place = np.array([-0.4, -0.8, -0.2, -0.7, -0.2, -0.1, -0.3])
    rest = np.array([0.0, 0.3, 0.0, -1.4, 0.0, 0.1, 0.0])
    drift = np.zeros(7)
    episodes = []
    for _ in range(count):
        drift += rng.normal(0, 0.006, 7)
        duration = rng.uniform(8.0, 12.0)
        t = np.arange(0, duration, 1 / 30)
        u = t / t[-1]
        u = u + rng.uniform(-0.25, 0.25) * np.sin(2 * np.pi * u) / (2 * np.pi)  # the operator's own tempo
        spot = rng.normal(0, 0.05, 7)  # the object is never in quite the same place
        waypoints = np.array([home, reach + spot, reach + spot + [0, 0.25, 0, 0.2, 0, 0, 0], place + spot / 2,
                              home])
        seg = np.clip(u * (len(waypoints) - 1), 0, len(waypoints) - 1 - 1e-9)
        i = seg.astype(int)
        blend = (1 - np.cos(np.pi * (seg - i))) / 2
        right = waypoints[i] + (waypoints[i + 1] - waypoints[i]) * blend[:, None] + rng.normal(0, 0.004, (len(t), 7))
        left = rest + drift + rng.normal(0, 0.002, (len(t), 7))
        closed = ((u > 0.3) & (u < 0.72)).astype(float)
        gripper = np.convolve(closed, np.ones(9) / 9, mode='same') * 0.9 + rng.normal(0, 0.005, len(t))
        episodes.append((t, np.column_stack([left, right, gripper])))
    names = [f'left_arm_{j}' for j in range(1, 8)] + [f'right_arm_{j}' for j in range(1, 8)] + ['right_gripper']
    return Demos('humanoid', names, ['right_gripper'], episodes)


def real(path: Path) -> Demos:
    data = np.load(path, allow_pickle=False)
    names = [str(n) for n in data['names']]
    gripper = [str(g) for g in np.atleast_1d(data['gripper']) if str(g)] if 'gripper' in data else []
    units = str(data['units']) if 'units' in data else 'rad'
    episodes = []
    i = 0
    while f't_{i}' in data:
        episodes.append((np.asarray(data[f't_{i}'], dtype=float), np.asarray(data[f'q_{i}'], dtype=float)))
        i += 1
    return Demos(path.stem, names, gripper, episodes, math.pi / 180 if units.startswith('deg') else 1.0)


# -- planted copies ------------------------------------------------------------------------------------------

def moving_joints(demos: Demos) -> tuple[list[int], list[int]]:
    """Arm columns by how much they move within demos, most first; and the idle ones."""
    arm = [j for j, n in enumerate(demos.names) if n not in demos.gripper]
    spread = np.median([np.std(q[:, arm], axis=0) for _, q in demos.episodes], axis=0)
    order = [arm[k] for k in np.argsort(-spread)]
    most = spread.max()
    moving = [arm[k] for k in np.argsort(-spread) if spread[k] >= 0.1 * most]
    return moving, [j for j in order if j not in moving]


def bump(u: np.ndarray, begin: float, end: float) -> np.ndarray:
    inside = (u >= begin) & (u <= end)
    out = np.zeros_like(u)
    out[inside] = (1 - np.cos(2 * np.pi * (u[inside] - begin) / (end - begin))) / 2
    return out


def plant(kind: str, t: np.ndarray, q: np.ndarray, demos: Demos, rng: np.random.Generator
          ) -> tuple[np.ndarray, np.ndarray] | None:
    moving, idle = moving_joints(demos)
    q = q.copy()
    u = (t - t[0]) / (t[-1] - t[0])
    rad = 1 / demos.rad_per_unit  # 1 rad in the dataset's units
    if kind == 'reversed':
        return t, q[::-1].copy()
    if kind == 'frozen':
        held = np.searchsorted(u, 0.25)
        middle = (u >= 0.25) & (u <= 0.75)
        q[np.ix_(middle, moving)] = q[held, moving]
        return t, q
    if kind == 'detour':
        start = rng.uniform(0.1, 0.6)
        for j in moving[:2]:
            q[:, j] += 0.4 * rad * bump(u, start, start + 0.3)
        return t, q
    if kind == 'permuted':
        q[:, moving] = q[:, moving[1:] + moving[:1]]
        return t, q
    if kind == 'wrong_object':
        shift = np.clip((u - 0.1) / 0.1, 0, 1) * np.clip((0.65 - u) / 0.1, 0, 1)
        for j, sign in zip(moving[:2], (1, -1), strict=False):
            q[:, j] += sign * 0.3 * rad * shift
        return t, q
    if kind == 'slower':
        return t * 2.0, q
    if kind == 'faster':
        return t / 1.6, q
    if kind == 'idle_offset':
        if not idle:
            return None
        q[:, idle[0]] += 0.15 * rad
        return t, q
    raise ValueError(kind)


# -- measuring -----------------------------------------------------------------------------------------------

def spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def judge(demos: Demos, trials: int, rng: np.random.Generator) -> dict:
    base = {f'demo{k:03d}': ('task', resample_trajectory(np.round(t * 1e9).astype(np.int64), q))
            for k, (t, q) in enumerate(demos.episodes)}
    kw = {'names': demos.names, 'gripper': demos.gripper}
    started = time.perf_counter()
    clean = dataset_consistency(base, **kw)
    seconds = time.perf_counter() - started
    lengths = np.array([t[-1] - t[0] for t, _ in demos.episodes])
    values = np.array([clean[k].normalized for k in base])
    flagged_clean = [k for k, c in clean.items() if c.outlier]
    counts = {kind: [0, 0] for kind in BAD + HARMLESS}
    examples = []
    clean_in_trials = [0, 0]
    for _ in range(trials):
        data = dict(base)
        planted = {}
        for kind in BAD + HARMLESS:
            k = int(rng.integers(len(demos.episodes)))
            copy = plant(kind, *demos.episodes[k], demos, rng)
            if copy is None:
                continue
            name = f'{kind}_of_demo{k:03d}'
            data[name] = ('task', resample_trajectory(np.round(copy[0] * 1e9).astype(np.int64), copy[1]))
            planted[name] = kind
        result = dataset_consistency(data, **kw)
        for name, kind in planted.items():
            counts[kind][1] += 1
            counts[kind][0] += result[name].outlier
            if result[name].outlier and len(examples) < 6:
                c = result[name]
                examples.append(f'{name}: z {c.robust_z:.1f}, {c.normalized:.2f}x: {c.explanation()}')
        clean_in_trials[0] += sum(result[k].outlier for k in base)
        clean_in_trials[1] += len(base)
    # How big the planted detour is against the demos' own spread: the RMS difference over the arm's moving joints
    # from each demo to its nearest other demo, on the same course points (no warping).
    moving, _ = moving_joints(demos)
    course = np.array([resample_trajectory(np.round(t * 1e9).astype(np.int64), q[:, moving], 100)
                       for t, q in demos.episodes])
    gaps = np.sqrt(((course[:, None] - course[None]) ** 2).mean(axis=(2, 3)))
    np.fill_diagonal(gaps, np.inf)
    spread = float(np.median(gaps.min(axis=1))) * demos.rad_per_unit
    detour = 0.4 * math.sqrt(2 * 0.375 / len(moving))  # in its 30%: two joints, a raised cosine (mean square 3/8)
    # Whether longer demos really move more: then a value that follows length follows the demos, not the clock.
    path = np.array([np.abs(np.diff(q[:, moving], axis=0)).sum() for _, q in demos.episodes])
    rho_path = spearman(path, lengths)
    return {'n': len(base), 'seconds': seconds, 'spread_rad': spread, 'detour_rad': detour, 'rho_path': rho_path,
            'counts': counts,
            'flagged_clean': flagged_clean,
            'clean_in_trials': clean_in_trials, 'rho_length': spearman(values, lengths),
            'rho_order': spearman(values, np.arange(len(values))), 'examples': examples,
            'idle': clean[next(iter(clean))].idle_joints}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--trials', type=int, default=4, help='planted sets per dataset (default 4)')
    parser.add_argument('--sim', type=int, default=30, help='simulated cell demos (default 30)')
    parser.add_argument('--humanoid', type=int, default=100, help='built humanoid demos (default 100)')
    parser.add_argument('--only', nargs='*', help='dataset names to run')
    parser.add_argument('--seed', type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)

    makers = {'sim_cell': lambda: sim_cell(args.sim), 'humanoid': lambda: humanoid(args.humanoid, rng)}
    vendored = sorted((HERE.parent / 'test' / 'data' / 'demos').glob('*.npz'))
    local = sorted((HERE / 'real_demos').glob('*.npz'))
    for path in vendored + local:
        makers[path.stem] = lambda path=path: real(path)
    missing = sorted(set(UNLICENSED) - {p.stem for p in local})
    if missing:
        print(f'not here: {", ".join(missing)} (no licence, so not in the repository: bench/real_demos/README.md '
              'says how to make them with make_npz.py)')
    total_bad, total_harmless, total_clean = [0, 0], [0, 0], [0, 0]
    real_clean = [0, 0]
    for name, make in makers.items():
        if args.only and name not in args.only:
            continue
        demos = make()
        r = judge(demos, args.trials, rng)
        print(f'\n== {name}: {r["n"]} demos, {len(demos.names)} columns, idle arm joints: '
              f'{", ".join(r["idle"]) or "none"}')
        print(f'   nearest-demo spread: {r["spread_rad"]:.3f} rad RMS per moving joint; the planted detour adds '
              f'{r["detour_rad"]:.3f} rad RMS where it is ({r["detour_rad"] / r["spread_rad"]:.1f}x)')
        print(f'   DTW over the whole task: {r["seconds"]:.3f} s for {r["n"]} demos '
              f'(median length {np.median([t[-1] for t, _ in demos.episodes]):.1f} s)')
        for kind in BAD + HARMLESS:
            hit, of = r['counts'][kind]
            if of:
                print(f'   {"bad" if kind in BAD else "harmless":<8} {kind:<13} flagged {hit}/{of}')
                bucket = total_bad if kind in BAD else total_harmless
                bucket[0] += hit
                bucket[1] += of
        flagged = len(r['flagged_clean'])
        print(f'   own demos flagged: {flagged}/{r["n"]} alone, {r["clean_in_trials"][0]}/{r["clean_in_trials"][1]} '
              f'with the planted copies  {" ".join(r["flagged_clean"][:5])}')
        print(f'   Spearman rho of the value: against length {r["rho_length"]:+.2f}, against recording order '
              f'{r["rho_order"]:+.2f}; the demos\' own path length against their length {r["rho_path"]:+.2f}')
        for line in r['examples'][:3]:
            print(f'   e.g. {line}')
        total_clean[0] += r['clean_in_trials'][0]
        total_clean[1] += r['clean_in_trials'][1]
        if name not in ('sim_cell', 'humanoid'):
            real_clean[0] += r['clean_in_trials'][0]
            real_clean[1] += r['clean_in_trials'][1]

    def rate(pair: list[int]) -> str:
        return f'{pair[0]}/{pair[1]} ({pair[0] / pair[1]:.0%})' if pair[1] else 'none'

    print('\n== overall')
    print(f'   planted bad copies flagged: {rate(total_bad)} (target >= 75%)')
    print(f'   harmless variants flagged: {rate(total_harmless)} (target <= 10%)')
    print(f'   own demos flagged: {rate(total_clean)}; real demos: {rate(real_clean)} (target <= 5%)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
