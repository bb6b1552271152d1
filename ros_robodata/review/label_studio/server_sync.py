"""`robodata review push` and `review pull`: a dataset's episodes to a Label Studio project and the labels back.

Push picks the episodes (`--episodes`, else the first N of the review queue review/queue.json when there is one,
else every episode), writes their media, and creates or updates the project and one task per episode (matched by
a key in the task's data, so pushing again updates and never duplicates). What went where is kept in
review/label_studio.json (URL, project, task ids: never the token). Pull fetches every task's annotations,
appends them to each episode's annotations.json (a label already there is not added again; a changed one
supersedes it), refreshes the catalog's reviewed outcome and review/disagreements.json.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ros_robodata import untrusted
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.embodiments import holds_several, profile_of
from ros_robodata.errors import DatasetError, RobodataError
from ros_robodata.export.export_plan import ExportOptions
from ros_robodata.export.pii_guard import audit_pii, check_pii
from ros_robodata.files import write_json
from ros_robodata.labeling.label_studio_labels import labels_from_tasks
from ros_robodata.labeling.taxonomy import Taxonomy
from ros_robodata.profile import Profile
from ros_robodata.review.agreement import Agreement, Thresholds, agreement, write_disagreements
from ros_robodata.review.apply import Applied, apply_labels, current_labels
from ros_robodata.review.label_studio.client import call
from ros_robodata.review.label_studio.tasks import frame_tasks, frames_config, review_config, timeline_tasks

QUEUE_FILE = 'queue.json'
STATE_FILE = 'label_studio.json'


def review_dir(dataset: Dataset) -> Path:
    return dataset.root / 'review'


def queue_episodes(dataset: Dataset) -> list[str] | None:
    """The review queue's episode ids in rank order, None when there is no queue file.

    Read leniently (the queue's writer is `robodata select`): a list, or an object with `queue` / `episodes`,
    of ids or of objects naming the episode under `episode`, `episode_id` or `id`."""
    path = review_dir(dataset) / QUEUE_FILE
    if not path.exists():
        return None
    data = untrusted.read_json(path, DatasetError)
    if isinstance(data, dict):
        data = data.get('queue', data.get('episodes'))
    if not isinstance(data, list):
        raise DatasetError(f'{path}: not a review queue (a list of episodes, or an object with a queue list)')
    out = []
    for n, entry in enumerate(data):
        episode = entry if isinstance(entry, str) else next(
            (entry.get(k) for k in ('episode', 'episode_id', 'id') if isinstance(entry, dict) and entry.get(k)), None)
        if not isinstance(episode, str):
            raise DatasetError(f'{path}: entry {n} names no episode')
        out.append(episode)
    return out


def choose_episodes(dataset: Dataset, *, episodes: Sequence[str] | None, queue: int | None) -> tuple[list[str], str]:
    """(episode ids to push, one line saying where they came from)."""
    known = dataset.episode_ids()
    if episodes:
        missing = [e for e in episodes if e not in known]
        if missing:
            raise DatasetError(f'{dataset.root}: no episode {missing[0]}')
        return list(dict.fromkeys(episodes)), f'{len(set(episodes))} episode(s) named with --episodes'
    if queue is not None and queue <= 0:
        raise RobodataError('--queue must be a positive number of episodes')
    ranked = queue_episodes(dataset)
    if ranked is None:
        chosen = known if queue is None else known[:queue]
        return chosen, (f'no review queue ({review_dir(dataset) / QUEUE_FILE}): pushing '
                        + ('every episode' if queue is None else f'the first {len(chosen)} episode(s) by id')
                        + f' ({len(chosen)})')
    unknown = [e for e in ranked if e not in known]
    if unknown:
        raise DatasetError(f'{review_dir(dataset) / QUEUE_FILE}: names episode {unknown[0]}, which is not in the '
                           'dataset (run `robodata select` again)')
    chosen = ranked if queue is None else ranked[:queue]
    return chosen, f'the first {len(chosen)} of the review queue ({len(ranked)} ranked)'


@dataclass
class PushResult:
    project_id: int
    project_created: bool
    created: list[str]
    updated: list[str]
    unchanged: list[str]
    skipped: dict[str, str]
    chosen_from: str
    frames: dict[str, Any] = field(default_factory=dict)  # the frames project's answer, when --frames

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _pii_of(dataset: Dataset, chosen: Sequence[str], cameras: Sequence[str], *, allow_pii: bool,
            blur_faces: bool) -> list[str]:
    """The pii cameras the media of `chosen` copies, each episode's own robot profile asked (check_pii: refused
    without allow_pii or blur_faces); in a dataset of several robots `cameras` names each robot's among them.

    Raises:
        ExportError: a pii camera without allow_pii or blur_faces.
    """
    if not dataset.has_profile:
        return []
    profiles: dict[str, Profile] = {dataset.profile.sha256: dataset.profile}
    several = holds_several(dataset)
    if several:
        known = set(dataset.episode_ids())
        profiles = {p.sha256: p for p in (profile_of(dataset, dataset.episode(e)) for e in chosen if e in known)}
    out: list[str] = []
    for profile in profiles.values():
        own = [c for c in cameras if c in {cam.name for cam in profile.topics.cameras}] if several else list(cameras)
        if cameras and not own:
            continue
        out.extend(c for c in check_pii(profile, own or None, allow_pii=allow_pii, blur_faces=blur_faces)
                   if c not in out)
    return out


def push(dataset: Dataset, *, url: str, project: str, token: str, taxonomy: Taxonomy, media_dir: Path,
         document_root: Path | None = None, episodes: Sequence[str] | None = None, queue: int | None = None,
         every_ns: int = 200_000_000, frames_every_ns: int | None = None,
         progress: Callable[[Iterable[Any]], Iterator[Any]] | None = None, cameras: Sequence[str] = (),
         allow_pii: bool = False, blur_faces: bool = False) -> PushResult:
    """Push episodes to the Label Studio project (see the module docstring).

    Args:
        dataset: the dataset the episodes are in.
        url: the Label Studio server.
        project: the project's title (created when absent).
        token: the API token.
        taxonomy: the classes the labeling configs offer.
        media_dir: where the videos (and frame images) Label Studio plays are written.
        document_root: the server's local-files document root, holding `media_dir` (default: `media_dir`).
        episodes: these episodes; None: the review queue (the first `queue`), else every episode.
        queue: how many of the review queue.
        every_ns: one video frame every this many ns of the reference camera.
        frames_every_ns: also one image task every this many ns, in the project "NAME frames"; None: none.
        progress: wraps the episodes to show progress.
        cameras: the profile cameras whose frames become media; empty: all (the first is the video's).
        allow_pii: cameras marked `pii: true` go out as recorded (written to the dataset's audit.jsonl).
        blur_faces: every face in the media is blurred (pii cameras go out too, audited the same way).

    Raises:
        DatasetError: no episode to push, or none has camera frames.
        ExportError: a camera marked `pii: true` without allow_pii or blur_faces (nothing written).
        RobodataError: the media folder is outside the document root, or an option cannot be used.
        LabelStudioError: the server cannot be reached or refuses the push.
    """
    chosen, chosen_from = choose_episodes(dataset, episodes=episodes, queue=queue)
    if not chosen:
        raise DatasetError(f'{dataset.root}: no episode to push')
    media = ExportOptions(cameras=tuple(cameras), allow_pii=allow_pii, blur_faces=blur_faces)
    pii = _pii_of(dataset, chosen, cameras, allow_pii=allow_pii, blur_faces=blur_faces)
    media_dir = media_dir.resolve()
    document_root = (document_root or media_dir).resolve()
    if not media_dir.is_relative_to(document_root):
        raise RobodataError(f'{media_dir}: the media folder must be inside the document root {document_root}')
    if pii:  # the permission on record before a frame is written
        audit_pii(dataset.root, pii, media_dir, export='review_media', allow_pii=allow_pii, blur_faces=blur_faces,
                  episodes=chosen)
    specs, skipped = timeline_tasks(dataset, chosen, media_dir=media_dir, document_root=document_root,
                                    every_ns=every_ns, taxonomy=taxonomy, progress=progress, media=media)
    if not specs:
        raise DatasetError(f'{dataset.root}: none of the {len(chosen)} episode(s) has camera frames to review')
    answer = call({'op': 'push', 'url': url, 'project': project, 'label_config': review_config(taxonomy),
                   'storage_path': str(media_dir),
                   'tasks': [{'key': s['key'], 'data': s['data'], 'predictions': s['predictions']} for s in specs]},
                  token)
    by_key = {s['key']: s['episode'] for s in specs}
    _remember(dataset, url, project, answer, by_key, media_dir)
    result = PushResult(int(answer['project_id']), bool(answer['project_created']),
                        [by_key[k] for k in answer['created']], [by_key[k] for k in answer['updated']],
                        [by_key[k] for k in answer['unchanged']], skipped, chosen_from)
    if frames_every_ns is not None:
        pushed = [s['episode'] for s in specs]
        frame_specs = frame_tasks(dataset, pushed, media_dir=media_dir / 'frames', document_root=document_root,
                                  every_ns=frames_every_ns, media=media)
        frames = call({'op': 'push', 'url': url, 'project': frames_project(project),
                       'label_config': frames_config(taxonomy), 'storage_path': str(media_dir / 'frames'),
                       'tasks': [{'key': s['key'], 'data': s['data'], 'predictions': []} for s in frame_specs]},
                      token)
        _remember(dataset, url, frames_project(project), frames, {s['key']: s['key'] for s in frame_specs},
                  media_dir / 'frames')
        result.frames = {'project': frames_project(project), 'project_id': frames['project_id'],
                         'created': len(frames['created']), 'updated': len(frames['updated']),
                         'unchanged': len(frames['unchanged'])}
    return result


def frames_project(project: str) -> str:
    """The title of the project holding an episode project's frame tasks."""
    return f'{project} frames'


def _remember(dataset: Dataset, url: str, project: str, answer: dict[str, Any], by_key: dict[str, str],
              media_dir: Path) -> None:
    """review/label_studio.json: per project, where each episode's task is (no token, ever)."""
    path = review_dir(dataset) / STATE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    state: dict[str, Any] = {}
    if path.is_file():
        try:
            loaded = untrusted.read_json(path)
            state = loaded if isinstance(loaded, dict) else {}
        except RobodataError:
            state = {}
    projects = state.setdefault('projects', {})
    entry = projects.get(f'{url} {project}') or {}
    tasks = dict(entry.get('tasks') or {})
    tasks.update({by_key[k]: v for k, v in answer['task_ids'].items() if k in by_key})
    new_entry = {'url': url, 'project': project, 'project_id': answer['project_id'], 'media': str(media_dir),
                 'tasks': dict(sorted(tasks.items()))}
    if {k: v for k, v in entry.items() if k != 'pushed'} != new_entry:
        new_entry['pushed'] = time.strftime('%Y-%m-%dT%H:%M:%S%z')
        projects[f'{url} {project}'] = new_entry
        state['format'] = 'ros_robodata.label_studio'
        write_json(path, state)


@dataclass
class PullResult:
    applied: Applied
    tasks: int
    agreement: Agreement
    disagreements: Path
    skipped: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {'tasks': self.tasks, **self.applied.to_json(), 'skipped': self.skipped,
                'flagged': [t.to_json() for t in self.agreement.flagged], 'disagreements': str(self.disagreements)}


def pull(dataset: Dataset, *, url: str, project: str, token: str, thresholds: Thresholds | None = None,
         who: str | None = None) -> PullResult:
    """Pull every annotation of the project into the dataset (see the module docstring)."""
    answer = call({'op': 'pull', 'url': url, 'project': project}, token)
    frames = call({'op': 'pull', 'url': url, 'project': frames_project(project), 'optional': True}, token)
    known = set(dataset.episode_ids())
    tasks, skipped = [], {}
    of_frames = [dict(t, project=frames_project(project)) for t in frames.get('tasks') or ()]
    for task in [*answer['tasks'], *of_frames]:
        episode = (task.get('data') or {}).get('episode_id')
        dataset_name = (task.get('data') or {}).get('dataset')
        if dataset_name not in (None, dataset.name) or episode not in known:
            skipped[str(task.get('id'))] = f'episode {episode!r} of dataset {dataset_name!r} is not in this dataset'
            continue
        tasks.append(task)
    labels: dict[str, list[Any]] = {}
    for title in (project, frames_project(project)):
        mine = [t for t in tasks if t.get('project', project) == title]
        for episode, found in labels_from_tasks(mine, project=title, where=f'{url} project {title!r}').items():
            labels.setdefault(episode, []).extend(found)
    applied = apply_labels(dataset, labels, who=who, source={'tool': 'label_studio', 'url': url, 'project': project})
    result = agreement(current_labels(dataset), thresholds)
    path = write_disagreements(review_dir(dataset), result)
    return PullResult(applied, len(tasks), result, path, skipped)
