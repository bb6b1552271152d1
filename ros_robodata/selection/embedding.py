"""A trajectory embedding per episode, so selection can spread its picks (k-center) instead of taking ten
near-identical demonstrations.

Each episode's arm joints (the profile's `robot.arm_joints`, else every joint of `joint_states`) and gripper are
resampled at POINTS instants evenly over the episode's own course, so a slower demo of the same motion lands near
the faster one. The raw vectors are kept in DATASET/review/embeddings.json keyed by the bag's checksums, so a second
`robodata select` reads no bag that did not change; selection standardizes them across the episodes it compares.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ros_robodata import untrusted
from ros_robodata.bag.reader import BagReader
from ros_robodata.cluster import Executor, JobFailure, map_jobs
from ros_robodata.errors import RobodataError
from ros_robodata.files import write_json
from ros_robodata.profile import Profile
from ros_robodata.signals import read_gripper, read_joints

POINTS = 16
CACHE_FILE = 'embeddings.json'
_FORMAT = 'ros_robodata.embeddings/1'


def trajectory_vector(bag: Path, profile: Profile) -> np.ndarray | None:
    """The episode's joints and gripper at POINTS instants of its course, one block per joint; None when the bag
    holds neither (a rig without an arm)."""
    t = profile.topics
    joint_topic = t.joint_states.topic if t.joint_states is not None else None
    gripper = t.gripper
    with BagReader(bag) as reader:
        topics = [x for x in (joint_topic, gripper.topic if gripper else None) if x and x in reader.topics]
        if not topics:
            return None
        names: list[str] = list(profile.robot.arm_joints)
        joints: list[tuple[int, list[float]]] = []
        fingers: list[tuple[int, float]] = []
        for message in reader.messages(list(dict.fromkeys(topics))):
            decode = lambda m=message: reader.decode(m)  # noqa: E731 - decoded only when the fast path cannot
            if message.topic == joint_topic:
                reading = read_joints(message.data, decode)
                if not names:
                    names = [n for n in reading.names if gripper is None or n != gripper.joint]
                index = {n: i for i, n in enumerate(reading.names)}
                if all(n in index for n in names):
                    joints.append((reading.stamp_ns, [reading.position[index[n]] for n in names]))
            if gripper is not None and message.topic == gripper.topic:
                finger = read_gripper(message.data, gripper.joint, decode)
                if finger is not None:
                    fingers.append((finger.stamp_ns, finger.position))
    blocks = []
    if joints:
        blocks.append(_resampled(np.array([s for s, _ in joints], dtype=np.int64),
                                 np.array([p for _, p in joints], dtype=float)))
    if fingers:
        blocks.append(_resampled(np.array([s for s, _ in fingers], dtype=np.int64),
                                 np.array([[p] for _, p in fingers], dtype=float)))
    return np.concatenate(blocks) if blocks else None


def _resampled(stamps: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Rows (samples x channels) at POINTS instants over their own course, channel after channel; samples that are
    not finite are left out of their channel."""
    order = np.argsort(stamps, kind='stable')
    stamps, rows = stamps[order], rows[order]
    span = float(stamps[-1] - stamps[0]) or 1.0
    course = (stamps - stamps[0]) / span
    at = np.linspace(0.0, 1.0, POINTS)
    out = []
    for channel in rows.T:
        ok = np.isfinite(channel)
        out.append(np.interp(at, course[ok], channel[ok]) if ok.any() else np.zeros(POINTS))
    return np.concatenate(out)


def bag_key(bag_sha256: dict[str, str], bag: Path, profile: Profile) -> str:
    """What a cached vector was computed from: the bag's checksums (its files' sizes and times when it has none)
    and the joints read."""
    content: Any = bag_sha256
    if not content:
        files = sorted(p for p in bag.iterdir() if p.is_file()) if bag.is_dir() else [bag]
        content = [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files]
    joints = [profile.robot.arm_joints, profile.topics.gripper.joint if profile.topics.gripper else None, POINTS]
    return hashlib.sha256(json.dumps([content, joints], sort_keys=True).encode()).hexdigest()[:32]


@dataclass(frozen=True)
class VectorJob:
    """One episode's bag for a worker (a process or a Ray task): read its trajectory into a vector."""

    episode_id: str
    bag: Path
    profile: Profile


def _vector_of(job: VectorJob) -> np.ndarray | str | None:
    """Worker: the episode's vector, None when its bag holds no trajectory, or why it cannot be read."""
    try:
        return trajectory_vector(job.bag, job.profile)
    except (RobodataError, OSError, ValueError) as err:
        return ' '.join(str(err).split())


def embeddings(episodes: Iterable[tuple[str, Path, dict[str, str]]], profile: Profile, cache_dir: Path | None,
               progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None, executor: Executor | None = None
               ) -> tuple[dict[str, np.ndarray], list[str]]:
    """(vector per episode id, notes) for (episode id, bag, bag checksums); vectors found in the cache are not
    recomputed, new ones are read (here, in local processes or as tasks of a Ray cluster: `executor`) and added to
    it (when `cache_dir` is writable). A bag that cannot be read is a note: the episode is then compared by its
    other signals only."""
    cache_path = cache_dir / CACHE_FILE if cache_dir is not None else None
    cache: dict[str, Any] = {}
    notes: list[str] = []
    if cache_path is not None and cache_path.is_file():
        try:
            data = untrusted.read_json(cache_path)
            if isinstance(data, dict) and data.get('format') == _FORMAT and isinstance(data.get('episodes'), dict):
                cache = data['episodes']
        except RobodataError:
            notes.append(f'{cache_path}: unreadable: every trajectory read from its bag again')
    out: dict[str, np.ndarray] = {}
    missing: list[tuple[VectorJob, str]] = []
    for episode_id, bag, checksums in episodes:
        key = bag_key(checksums, bag, profile)
        cached = cache.get(episode_id)
        if isinstance(cached, dict) and cached.get('key') == key and isinstance(cached.get('vector'), list):
            vector = np.array(cached['vector'], dtype=float)
            if vector.size:
                out[episode_id] = vector
            continue
        missing.append((VectorJob(episode_id, bag.absolute(), profile), key))
    changed = False
    try:
        found = map_jobs(_vector_of, [job for job, _ in missing], executor or Executor(), progress=progress)
        for (job, key), read in zip(missing, found, strict=True):
            if isinstance(read, (str, JobFailure)):
                reason = read.reason if isinstance(read, JobFailure) else read
                notes.append(f'{job.episode_id}: trajectory not read ({reason}): not used for diversity')
                continue
            cache[job.episode_id] = {'key': key,
                                     'vector': [] if read is None else [round(float(v), 6) for v in read]}
            changed = True
            if read is not None:
                out[job.episode_id] = np.array(cache[job.episode_id]['vector'])
    finally:  # what was read is kept for the next run, even when a later step stops this one
        if changed and cache_path is not None:
            _save(cache_path, cache, notes)
    return out, notes


def _save(path: Path, cache: dict[str, Any], notes: list[str]) -> None:
    try:
        path.parent.mkdir(exist_ok=True)
        write_json(path, {'format': _FORMAT, 'episodes': dict(sorted(cache.items()))}, indent=0)
    except (OSError, RobodataError) as err:
        notes.append(f'{path}: not written ({" ".join(str(err).split())}): trajectories are read again next time')
