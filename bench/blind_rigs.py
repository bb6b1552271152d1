"""The rigs built blind (bench/rigs/): each family's model, its datasheet profile, and its episodes as the drivers
publish them, for `segment_accuracy.py` (events against the model's physics) and the dataset-level checks (the
success verdict against the physical outcome, the review queue with labels wrong on purpose).

A family is `bench/rigs/<name>.py` (its model: `SCENARIOS`, `episode(seed, scenario)`) with `<name>.yaml` (the
profile its user wrote from the datasheet) beside it; see bench/rigs/README.md. Nothing here changes what a
model produces: its streams become messages of their types as a driver sends them, in the order they arrived.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from ros_robodata.bag.types import header, typestore
from ros_robodata.bag.writer import BagWriter
from ros_robodata.events.calibration import Priors, needs_prior, part_way_in_a_full_dataset, pool_priors
from ros_robodata.events.event import SegmentResult
from ros_robodata.events.offline import DATASET
from ros_robodata.events.segmenter import Segmenter
from ros_robodata.profile import Profile, load_profile, profile_from_dict

RIGS = Path(__file__).resolve().parent / 'rigs'
# Families run only once tuning is done (bench/README.md: held back); the rest are the working set.
# handheld_teaching was held back until stop 38, run once there and reported; it is in the working set since.
# current_sensing_bench likewise until stop 49 (run once after that stop's tuning, reported in bench/README.md).
HELD_BACK = ('conveyor_2f_counts',)
JOINT_STATE, WRENCH = 'sensor_msgs/msg/JointState', 'geometry_msgs/msg/WrenchStamped'
FLOATS = ('std_msgs/msg/Float64', 'std_msgs/msg/Float32')


def families(*, held_back: bool = False) -> list[str]:
    """The families with a model and a profile; `held_back` adds those kept for the end."""
    names = sorted(p.stem for p in RIGS.glob('*.py') if (RIGS / f'{p.stem}.yaml').exists())
    return [n for n in names if held_back or n not in HELD_BACK]


@dataclass
class Family:
    name: str
    model: ModuleType
    profile: Profile

    @property
    def scenarios(self) -> tuple[str, ...]:
        return tuple(self.model.SCENARIOS)

    def episode(self, seed: int, scenario: str) -> dict[str, Any]:
        return self.model.episode(seed, scenario)


def load(name: str) -> Family:
    spec = importlib.util.spec_from_file_location(f'blind_rig_{name}', RIGS / f'{name}.py')
    assert spec is not None and spec.loader is not None
    model = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(model)
    return Family(name, model, load_profile(RIGS / f'{name}.yaml'))


def scaled(profile: Profile, factor: float) -> Profile:
    """The profile with the gripper's (and its command's) stroke wrong by `factor`: open_position moved away from
    (factor > 1) or towards (factor < 1) closed_position, as a user who misread the datasheet's unit would."""
    data = profile.to_dict()
    gripper = data['topics']['gripper']
    for part in (gripper, gripper.get('command')):
        if part:
            part['open_position'] = part['closed_position'] + factor * (part['open_position'] - part['closed_position'])
    return profile_from_dict(data, source=f'{profile.source} (stroke x{factor:g})')


def without(profile: Profile, *, command: bool = True, wrench: bool = True) -> Profile:
    """The profile without the gripper command channel and/or the wrist wrench (what those add)."""
    data = profile.to_dict()
    if not command and data['topics'].get('gripper'):
        data['topics']['gripper']['command'] = None
    if not wrench:
        data['topics']['wrench'] = None
    return profile_from_dict(data, source=f'{profile.source} (without{"" if command else " command"}'
                                          f'{"" if wrench else " wrench"})')


# --- the streams as messages ---------------------------------------------------------------------------------------

def _received(stream: dict[str, Any]) -> np.ndarray:
    stamps = np.asarray(stream['t_ns'], dtype=np.int64)
    if 'received_ns' in stream and stream['received_ns'] is not None:
        return np.asarray(stream['received_ns'], dtype=np.int64)
    if stream['type'] in FLOATS:
        return stamps
    return stamps + 1_500_000


def messages(episode: dict[str, Any]) -> list[tuple[int, str, Any]]:
    """(received ns, topic, message) of every stream, in arrival order, as rosbags typestore messages."""
    types = typestore().types
    out: list[tuple[int, int, str, Any]] = []
    for order, (topic, s) in enumerate(sorted(episode['streams'].items())):
        received = _received(s)
        stamps = np.asarray(s['t_ns'], dtype=np.int64)
        if s['type'] == JOINT_STATE:
            n, j = np.asarray(s['position']).reshape(len(stamps), -1).shape
            position = np.asarray(s['position'], dtype=np.float64).reshape(n, j)
            velocity = None if s.get('velocity') is None else np.asarray(s['velocity'], dtype=np.float64).reshape(n, j)
            effort = None if s.get('effort') is None else np.asarray(s['effort'], dtype=np.float64).reshape(n, j)
            empty = np.zeros(0, dtype=np.float64)
            for i in range(n):
                msg = types[JOINT_STATE](header=header(int(stamps[i]), ''), name=list(s['names']),
                                         position=position[i].copy(),
                                         velocity=empty if velocity is None else velocity[i].copy(),
                                         effort=empty if effort is None else effort[i].copy())
                out.append((int(received[i]), order, topic, msg))
        elif s['type'] == WRENCH:
            vec3 = types['geometry_msgs/msg/Vector3']
            force, torque = np.asarray(s['force'], dtype=float), np.asarray(s['torque'], dtype=float)
            for i in range(len(stamps)):
                wrench = types['geometry_msgs/msg/Wrench'](force=vec3(*map(float, force[i])),
                                                           torque=vec3(*map(float, torque[i])))
                out.append((int(received[i]), order, topic,
                            types[WRENCH](header=header(int(stamps[i]), str(s.get('frame_id', ''))), wrench=wrench)))
        elif s['type'] in FLOATS:
            data = np.asarray(s['data'], dtype=float)
            for i in range(len(stamps)):
                out.append((int(received[i]), order, topic, types[s['type']](data=float(data[i]))))
        else:
            raise ValueError(f'{episode["family"]}: stream {topic} has an unknown type {s["type"]!r}')
    out.sort(key=lambda item: (item[0], item[1]))
    return [(received, topic, msg) for received, _, topic, msg in out]


def segment(episode: dict[str, Any], profile: Profile, *, msgs: list[tuple[int, str, Any]] | None = None,
            priors: Priors | None = None) -> SegmentResult:
    """The episode through the Segmenter as `robodata segment` feeds a bag's messages (in arrival order)."""
    segmenter = Segmenter(profile, priors=priors)
    for received, topic, msg in msgs if msgs is not None else messages(episode):
        if topic in segmenter.topics:
            segmenter.add_message(topic, msg, received)
    segmenter.finish()
    return segmenter.result()


def segment_all(episodes: list[dict[str, Any]], profile: Profile) -> tuple[list[SegmentResult], Priors | None]:
    """A family's episodes segmented as `robodata segment DATASET` does (ros_robodata/events/offline.py,
    segment_items): each from the profile, then the strokes pooled over all of them, and the episodes the pool
    could change segmented again from it."""
    feeds = [messages(ep) for ep in episodes]
    results = [segment(ep, profile, msgs=msgs) for ep, msgs in zip(episodes, feeds, strict=True)]
    priors = pool_priors((r.calibration for r in results), DATASET) if len(results) > 1 else None
    if priors is not None:
        results = [segment(ep, profile, msgs=msgs, priors=priors) if needs_prior(r.calibration, priors) else r
                   for ep, msgs, r in zip(episodes, feeds, results, strict=True)]
        results = [part_way_in_a_full_dataset(r, priors) for r in results]
    return results, priors


def write_bag(episode: dict[str, Any], path: Path) -> int:
    """The episode as a rosbag2 (MCAP) bag at `path`, as the rig's recorder would write it; its first arrival."""
    msgs = messages(episode)
    with BagWriter(path) as writer:
        for topic, s in sorted(episode['streams'].items()):
            writer.add_topic(topic, s['type'])
        for received, topic, msg in msgs:
            writer.write_message(topic, received, msg)
    return msgs[0][0]


# --- the truth ---------------------------------------------------------------------------------------------------

@dataclass
class Truth:
    """One episode's physics: events by kind (ns), the place-downs and let-goes, the outcome."""

    events: list[tuple[int, str]]
    outcome: str
    lets_go: list[tuple[int, int | None]] = field(default_factory=list)  # (released, placed before it or None)

    @classmethod
    def of(cls, episode: dict[str, Any]) -> Truth:
        events = [(int(t), str(k)) for t, k in episode['truth']]
        lets_go, placed = [], None
        for t, kind in events:
            if kind in ('secured', 'dropped', 'missed'):
                placed = None
            elif kind == 'placed':
                placed = t
            elif kind == 'released':
                lets_go.append((t, placed))
                placed = None
        return cls(events, str(episode['outcome']), lets_go)

    def times(self, *kinds: str) -> list[int]:
        return sorted(t for t, k in self.events if k in kinds)


def iter_episodes(family: Family, seeds: int) -> Iterator[tuple[int, str, dict[str, Any]]]:
    for scenario in family.scenarios:
        for seed in range(seeds):
            yield seed, scenario, family.episode(seed, scenario)


def finite(value: float) -> bool:
    return value == value and not math.isinf(value)


# --- a family as a dataset: the success verdict and the review queue ----------------------------------------------

@dataclass
class DatasetRun:
    """One family's episodes in a dataset, segmented and scored as a user would, with what the verdict said."""

    family: str
    outcomes: dict[str, str]  # episode id -> the physics' outcome
    verdicts: dict[str, bool | None]  # episode id -> the success verdict (None: not judged)
    mislabelled: list[str] = field(default_factory=list)
    picks: list[str] = field(default_factory=list)  # the review queue at the budget asked

    @property
    def agreeing(self) -> int:
        return sum(1 for e, v in self.verdicts.items() if v is not None and v == (self.outcomes[e] != 'failure'))


WRONG = {'success': 'failure', 'recovery': 'failure', 'failure': 'success'}


def make_dataset(family: Family, root: Path, seeds: int, *, mislabel: int = 0, seed: int = 0) -> DatasetRun:
    """A dataset of the family's episodes (each scenario x `seeds`) as bags beside their operator labels, with
    `mislabel` labels wrong on purpose (picked at random by `seed`, from episodes of each outcome)."""
    from ros_robodata.dataset import Dataset
    from ros_robodata.dataset.episode import Episode

    dataset = Dataset.create(root, profile=family.profile)
    outcomes: dict[str, str] = {}
    for s, scenario, episode in iter_episodes(family, seeds):
        episode_id = f'{scenario}-{s:02d}'
        write_bag(episode, dataset.bag_dir(episode_id))
        outcomes[episode_id] = str(episode['outcome'])
    rng = np.random.default_rng(seed)
    # Alternately a failure said success and a success said failure (the mistakes an operator makes).
    pools = [sorted(e for e, o in outcomes.items() if o == 'failure'),
             sorted(e for e, o in outcomes.items() if o != 'failure')]
    wrong: list[str] = []
    for i in range(mislabel):
        pool = [e for e in pools[i % 2] if e not in wrong] or [e for e in outcomes if e not in wrong]
        wrong.append(str(rng.choice(pool)))
    for episode_id, outcome in outcomes.items():
        label = WRONG[outcome] if episode_id in wrong else outcome
        dataset.add_episode(Episode(id=episode_id, task='pick_place', operator='bench', status='complete',
                                    outcome=label, robot=family.profile.robot.name), who='bench')
        dataset.record_checksums(episode_id, who='bench')
    return DatasetRun(family.name, outcomes, {}, wrong)


def judge(run: DatasetRun, root: Path, *, budget: int | None = None) -> DatasetRun:
    """`robodata segment`, `robodata score` (and `robodata select --budget N`) on the dataset, as a user runs them;
    the verdicts read back from each episode's quality.json."""
    import json

    from ros_robodata import score, segment, select_for_review
    from ros_robodata.dataset import Dataset

    dataset = Dataset.open(root)
    segment(dataset)
    score(dataset)
    for episode_id in run.outcomes:
        quality = json.loads((dataset.episode_dir(episode_id) / 'quality.json').read_text())
        run.verdicts[episode_id] = (quality.get('success') or {}).get('success')
    if budget is not None:
        run.picks = [p.episode_id for p in select_for_review(dataset, budget=budget).picks]
    return run
