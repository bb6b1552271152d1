"""Simulated episodes straight into a dataset, without ROS: for tests and benchmarks that need a dataset whose truth
is known (the physics' outcome and events beside what the operator labelled and the tools found)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.episode import Episode
from ros_robodata.profile import Profile, profile_from_dict
from ros_robodata.sim.faults import Fault
from ros_robodata.sim.to_bag import write_sim_episode

TRUTH_FILE = 'ground_truth.json'  # as the demo writes it; never read by the tools


def without_sensors(profile: Profile) -> Profile:
    """The profile with its cameras and LiDARs left out: a simulated episode without rendering is a second, not
    twenty, and the quality checks then do not call the missing streams an error."""
    data = profile.to_dict()
    data['topics'].pop('cameras', None)
    data['topics'].pop('lidars', None)
    return profile_from_dict(data, source=f'{profile.source} (cameras and LiDARs left out)')


def add_sim_episode(dataset: Dataset, episode_id: str, seed: int, *, label: str | None = None,
                    task: str = 'pick_cube', faults: Sequence[Fault] = (), max_duration_s: float = 20.0,
                    start_ns: int = 1_700_000_000_000_000_000, **cell_options: Any) -> dict[str, Any]:
    """Simulate episode `seed` (episode index = seed) into the dataset as `episode_id`, labelled `label` (default:
    the physics' outcome, as an attentive operator would), with its ground truth beside it; returns the truth."""
    truth = write_sim_episode(dataset.bag_dir(episode_id), dataset.profile, seed, start_ns=start_ns,
                              faults=list(faults), max_duration_s=max_duration_s, **cell_options)
    register_sim_episode(dataset, episode_id, truth, label=label, task=task)
    return truth


def register_sim_episode(dataset: Dataset, episode_id: str, truth: dict[str, Any], *, label: str | None = None,
                         task: str = 'pick_cube') -> None:
    """Make a bag already simulated into the episode's bag folder (write_sim_episode, perhaps in another process)
    an episode: episode.yaml labelled `label` (default: the physics' outcome), checksums, ground_truth.json."""
    dataset.add_episode(Episode(id=episode_id, task=task, operator='sim', status='complete',
                                outcome=label or truth['outcome'], robot=dataset.profile.robot.name,
                                start_ns=truth.get('start_ns')), who='sim')
    dataset.record_checksums(episode_id, who='sim')
    (dataset.episode_dir(episode_id) / TRUTH_FILE).write_text(json.dumps(truth, indent=1) + '\n')
