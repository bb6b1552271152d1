"""The segmenter on real teleoperation recordings: public LeRobot datasets converted to bags (lerobot_to_bag.py),
segmented with profiles written from each robot's public documentation (nominal ranges, never read off the
data), against reference events taken from the command channel.

The reference rule (bench/README.md; written for issue 26 before the segmenter's changes were run on it), on the
measured gripper and its command, both as fractions of the command's own range in the episode (its 2nd to 98th
percentile, the same scale for both channels: the reference judges the whole recording, so it needs no profile
range, and an operator's command travels from open to closed in every pick): the reference grasp is the first
frame from which, for 0.3 s, the command stays at least 10% of the range more closed than the fingers while the
fingers move less than 2% of the range a frame (the operator squeezes, the object holds the fingers open); the
reference release is the first frame after it where the command is less than 5% more closed than the fingers (the
operator lets go). An episode passes
when the segmenter's first `grasp` and the first `release` after it lie within 0.3 s of those: each episode
segmented alone, and the imported dataset segmented as `robodata segment DATASET --profile` does (the strokes
pooled over its episodes). An episode with no
reference grasp (the arm followed held nothing the command rule can see: one arm of a bimanual set, a tool thinner
than a tenth of the stroke) is counted apart: the share is over the episodes with a reference grasp, and for the
others the bench says how many the segmenter found a grasp in. Target: at least 90% of the episodes pass.

    .venv/bin/python bench/segment_real.py                         # the vendored Reachy 2 recording
    .venv/bin/python bench/segment_real.py DATASET_DIR:PROFILE ...  # any LeRobot dataset with its profile
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]

from lerobot_to_bag import convert  # noqa: E402

from ros_robodata.bag.reader import BagReader  # noqa: E402
from ros_robodata.dataset import Dataset  # noqa: E402
from ros_robodata.events.event import SegmentResult  # noqa: E402
from ros_robodata.events.offline import segment, segment_bag  # noqa: E402
from ros_robodata.profile import Profile, load_profile  # noqa: E402
from ros_robodata.signals import read_gripper  # noqa: E402
from ros_robodata.vocabulary import GRASP, RELEASE  # noqa: E402

TOLERANCE_S = 0.3
TARGET_SHARE = 0.9
# The rule's constants, in fractions of the profile's open..closed range and in stamp time.
PRESS, LET_GO, STILL, HOLD_NS = 0.10, 0.05, 0.02, 300_000_000
DEFAULT = [f'{ROOT / "test/data/lerobot/reachy2_apple_storage"}:{ROOT / "bench/profiles/reachy2_apple_storage.yaml"}']


def _command_range(finger: list[float], command: list[float]) -> tuple[list[float], list[float]]:
    """Both channels as fractions of the command's 2nd..98th percentile range (0 closed, 1 open)."""
    if not command:
        return finger, command
    low, high = (float(v) for v in np.percentile(command, [2, 98]))
    if high - low <= 0:
        return finger, command
    return [(v - low) / (high - low) for v in finger], [(v - low) / (high - low) for v in command]


def reference(bag: Path, profile: Profile) -> tuple[int | None, int | None]:
    """(grasp, release) stamps by the rule above, from the measured gripper and its command in the bag."""
    gripper = profile.topics.gripper
    assert gripper is not None and gripper.command is not None and gripper.command.joint is not None
    command = gripper.command

    def fraction(value: float, open_at: float, closed_at: float) -> float:  # 0 closed .. 1 open
        return (value - closed_at) / (open_at - closed_at)

    frames: dict[int, list[float]] = {}
    with BagReader(bag) as reader:
        for message in reader.messages([gripper.topic, command.topic]):
            decode = lambda m=message: reader.decode(m)  # noqa: E731
            if message.topic == gripper.topic:
                finger = read_gripper(message.data, gripper.joint, decode)
                if finger is not None:
                    frames.setdefault(finger.stamp_ns, [math.nan, math.nan])[0] = fraction(
                        finger.position, gripper.open_position, gripper.closed_position)
            if message.topic == command.topic:
                cmd = read_gripper(message.data, command.joint, decode)
                if cmd is not None:
                    frames.setdefault(cmd.stamp_ns, [math.nan, math.nan])[1] = fraction(
                        cmd.position, command.open_position, command.closed_position)
    stamps = [t for t in sorted(frames) if not any(math.isnan(v) for v in frames[t])]
    finger, cmd = _command_range([frames[t][0] for t in stamps], [frames[t][1] for t in stamps])
    grasp = release = None
    held_since = None  # the first frame of the current run of pressed, still frames
    for i, t in enumerate(stamps):
        pressed = finger[i] - cmd[i] >= PRESS and i > 0 and abs(finger[i] - finger[i - 1]) < STILL
        held_since = (held_since if held_since is not None else t) if pressed else None
        if held_since is not None and t - held_since >= HOLD_NS * 0.95:
            grasp = held_since
            break
    if grasp is not None:
        release = next((t for t, f, c in zip(stamps, finger, cmd, strict=True) if t > grasp and f - c < LET_GO), None)
    return grasp, release


def _first_pair(result: SegmentResult) -> tuple[int | None, int | None]:
    """The first grasp and the first release after it."""
    grasp = next((e.stamp_ns for e in result.events if e.kind == GRASP), None)
    release = next((e.stamp_ns for e in result.events
                    if e.kind == RELEASE and grasp is not None and e.stamp_ns > grasp), None)
    return grasp, release


def _passes(ref: tuple[int | None, int | None], found: tuple[int | None, int | None]) -> bool:
    return all(r is not None and f is not None and abs(r - f) <= TOLERANCE_S * 1e9 for r, f in zip(ref, found,
                                                                                                  strict=True))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('datasets', nargs='*', default=DEFAULT, help='DATASET_DIR:PROFILE_YAML pairs')
    args = parser.parse_args()
    passed = pooled_passed = total = idle = idle_grasped = 0
    with tempfile.TemporaryDirectory(prefix='robodata_real_') as tmp:
        for n, pair in enumerate(args.datasets):
            dataset, _, profile_path = pair.rpartition(':')
            profile = load_profile(profile_path)
            bags = convert(Path(dataset), Path(tmp) / str(n))
            # As a user runs it on the imported dataset: `robodata segment DATASET --profile PROFILE` (each episode
            # from the profile, the strokes pooled, the episodes the pool could change segmented again).
            run = segment(str(Path(tmp) / str(n)), profile=profile)
            imported = Dataset.open(Path(tmp) / str(n))
            by_bag = {str(imported.bag_dir(name)): result for name, result in run.results.items()}
            print(f'== {dataset} ({len(bags)} episodes, profile {profile_path}; as a dataset: '
                  f'{len(run.repeated)} segmented again from the pool, {run.priors.describe() if run.priors else "-"})'
                  ' ==')
            print(f'{"episode":12} {"ref grasp":>9} {"grasp":>7} {"ref release":>11} {"release":>8}  '
                  f'{"|dt| grasp":>10} {"|dt| release":>12}  pass  {"dataset":7}  events')
            for bag in bags:
                ref = reference(bag, profile)
                result = segment_bag(bag, profile)
                start = result.start_ns or 0
                grasp, release = _first_pair(result)
                in_dataset = by_bag.get(str(bag))

                def s(t: int | None, start: int = start) -> str:
                    return '-' if t is None else f'{(t - start) / 1e9:.3f}'

                def dt(a: int | None, b: int | None) -> float | None:
                    return None if a is None or b is None else abs(a - b) / 1e9

                errors = (dt(grasp, ref[0]), dt(release, ref[1]))
                if ref[0] is None:  # nothing the rule can see was held: counted apart
                    ok = grasp is None
                    pooled_ok = in_dataset is not None and _first_pair(in_dataset)[0] is None
                    idle += 1
                    idle_grasped += grasp is not None
                else:
                    ok = _passes(ref, (grasp, release))
                    pooled_ok = in_dataset is not None and _passes(ref, _first_pair(in_dataset))
                    passed += ok
                    pooled_passed += pooled_ok
                    total += 1
                kinds = ', '.join(e.kind for e in result.events)
                episode = bag.parent.name.rsplit('-', 1)[-1]  # the LeRobot episode index
                print(f'{episode:12} {s(ref[0]):>9} {s(grasp):>7} {s(ref[1]):>11} {s(release):>8}  '
                      f'{"-" if errors[0] is None else f"{errors[0]:.3f}":>10} '
                      f'{"-" if errors[1] is None else f"{errors[1]:.3f}":>12}  {"yes" if ok else "NO":4}  '
                      f'{"yes" if pooled_ok else "NO":7}  {kinds}')
                for warning in result.warnings:
                    print(f'  warning: {warning}')
    for what, count in (('each episode alone', passed), ('as a dataset (robodata segment)', pooled_passed)):
        share = count / total if total else 0.0
        verdict = 'met' if share >= TARGET_SHARE else 'NOT met'
        print(f'\n{what}: episodes with grasp and release within {TOLERANCE_S} s of the command rule: {count} of '
              f'{total} ({100 * share:.0f}%) (target >= {100 * TARGET_SHARE:.0f}%): {verdict}')
    print(f'episodes with no reference grasp (counted apart): {idle}, of which the segmenter found a grasp in '
          f'{idle_grasped} (each alone)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
