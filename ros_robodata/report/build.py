"""Writing a report: of a scored dataset, or of bags (or a LeRobot folder where it lies) scored in memory; the costly
visuals only for the worst, each episode drawn with its own robot's profile."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ros_robodata.capture.coverage import coverage
from ros_robodata.capture.protocol import Protocol
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.embodiments import embodiment_of, embodiments, holds_several
from ros_robodata.dataset.episode import Episode
from ros_robodata.dataset.importers.import_common import episode_id_for
from ros_robodata.dataset.targets import Filters, Item, Target, TargetLike, Work, as_target, prepare
from ros_robodata.errors import RobodataError
from ros_robodata.files import write_atomic
from ros_robodata.outputs import check_report_file
from ros_robodata.profile import Profile
from ros_robodata.quality.quality_format import QualitySummary
from ros_robodata.quality.scoring import score_items
from ros_robodata.report.coverage_section import coverage_html
from ros_robodata.report.figure import comparison_png, timeline_png
from ros_robodata.report.page import EpisodeVisuals, far_span, render_report
from ros_robodata.report.report_signals import EpisodeSource, read_signals
from ros_robodata.report.scores import ScoredEpisode, load_scores, read_events
from ros_robodata.selection.queue import read_queue
from ros_robodata.selection.queue_format import ReviewQueue

REPORT_FILE = 'report.html'
Progress = Callable[[Iterable[Any]], Iterator[Any]]


@dataclass
class ReportResult:
    """What a report run wrote, for the caller to open or hand on.

    Args:
        path: the HTML page written (one file, its figures and frames inside).
        episodes: how many episodes (or bags) the page lists.
        detailed: how many of them got figures and frames (the worst first).
        size_bytes: the page's size.
        problems: per episode, what could not be drawn or scored for the page, and why.
    """

    path: Path
    episodes: int
    detailed: int
    size_bytes: int
    problems: dict[str, str] = field(default_factory=dict)


def write_report(target: TargetLike, out: str | Path | None = None, *, profile: Profile | str | None = None,
                 filters: Filters | None = None, detail: int | None = None, workers: int = 1,
                 progress: Progress | None = None, force: bool = False, protocol: Protocol | None = None
                 ) -> ReportResult:
    """The quality report of a scored dataset (written to DATASET/report.html unless `out`), or of bags scored in
    memory (written to `out`, default ./<name>_report.html). `detail` limits the per-episode sections (timeline,
    frames) to the worst episodes, the costly part of a big dataset. `out` is never recorded data, and replaces
    only a report of ours unless `force` (outputs.check_report_file).

    Args:
        target: a Dataset, or a path to a dataset, an episode, a bag, a folder of bags or a LeRobot dataset (read
            in place: nothing is written into it).
        out: the page to write.
        profile: the robot profile; the dataset's own unless given (each episode's own in a dataset of several
            robots; required for bags; a LeRobot folder's is derived as its import derives it).
        filters: which episodes of a dataset.
        detail: how many of the worst episodes get figures and frames (all when None).
        workers: processes that score bags, and draw the detailed episodes, in parallel.
        progress: wraps the jobs to show progress.
        force: replace `out` even when robodata did not write it.
        protocol: a capture protocol whose coverage of the dataset the page shows (a heatmap).

    Raises:
        RobodataError: the target, profile or `out` cannot be used, no bag could be scored, or a protocol was given
            for bags (coverage counts a dataset's takes).
    """
    return report_work(report_target(target, profile, filters), out, filters=filters, detail=detail, workers=workers,
                       progress=progress, force=force, protocol=protocol)


def report_target(target: TargetLike, profile: Profile | str | None = None,
                  filters: Filters | None = None) -> Work:
    """What a report needs resolved: a dataset's report reads its scores from the catalog and quality.json, so
    only bags on their own, or the episodes of a LeRobot folder read where it lies, are picked (to be scored in
    memory)."""
    resolved = as_target(target, in_place=True)
    return prepare(resolved, profile, filters, pick=resolved.dataset is None, in_place=True)


def report_work(work: Work, out: str | Path | None = None, *, filters: Filters | None = None,
                detail: int | None = None, workers: int = 1, progress: Progress | None = None,
                force: bool = False, protocol: Protocol | None = None) -> ReportResult:
    """The report of what `prepare()` resolved: a dataset from its scores, bags scored in memory first."""
    if work.target.dataset is not None:
        return report_dataset(work.target.dataset, work.profile, Path(out) if out else None, filters=filters,
                              detail=detail, progress=progress, force=force, workers=workers, protocol=protocol)
    if protocol is not None:
        raise RobodataError(f'{work.target.path}: --protocol counts the takes of a dataset; {work.target.what} has '
                            'none')
    name = work.target.path.resolve().name
    path = Path(out) if out else Path.cwd() / f'{episode_id_for(work.target.path.stem)}_{REPORT_FILE}'
    if work.target.kind == 'lerobot':
        _outside(path, work.target)
    return report_items(work.items, work.profile, path, name=name, workers=workers, detail=detail, progress=progress,
                        force=force, in_place=work.target.path if work.target.kind == 'lerobot' else None)


def _outside(path: Path, target: Target) -> None:
    """A LeRobot folder is read where it lies and left as it was: the page goes elsewhere."""
    folder = target.path.resolve()
    if path.resolve() == folder or folder in path.resolve().parents:
        raise RobodataError(f'{path}: inside {target.path}, {target.what} read in place and left as it is: name an '
                            '--out outside it')


def report_dataset(dataset: Dataset, profile: Profile, out: Path | None = None, *, filters: Filters | None = None,
                   detail: int | None = None, progress: Progress | None = None, force: bool = False,
                   workers: int = 1, protocol: Protocol | None = None) -> ReportResult:
    """The report of a scored dataset, from what `robodata score` wrote (nothing is scored again), written whole (a
    crash leaves the previous one); the detailed episodes drawn in `workers` processes; with `protocol`, its coverage
    heatmap (combinations x demographic groups) after the summary."""
    path = Path(out) if out is not None else dataset.root / REPORT_FILE
    check_report_file(path, force=force)
    summary, scored = load_scores(dataset, filters)
    section = coverage_html(coverage(dataset, protocol)) if protocol is not None else None
    return render_to(path, dataset.name, summary, scored, {ep.id: dataset.bag_dir(ep.id) for ep in scored},
                     profile, detail=detail, progress=progress, review=_review_queue(dataset),
                     dataset_root=dataset.root, workers=workers, coverage=section,
                     profiles=_episode_profiles(dataset, profile))


def _episode_profiles(dataset: Dataset, profile: Profile) -> Callable[[ScoredEpisode], Profile] | None:
    """In a dataset of several robots, each episode's own profile (embodiments.py; its episode.yaml read only for
    the episodes drawn), so a Reachy's arm is drawn from a Reachy's topics; None (`profile` for all) for a dataset
    of one robot, or when `profile` is none of the dataset's (a --profile given to read them all with)."""
    if not holds_several(dataset):
        return None
    known = embodiments(dataset)
    if profile.sha256 not in {e.sha256 for e in known}:
        return None
    return lambda ep: embodiment_of(dataset, dataset.episode(ep.episode.id), known).profile


def _review_queue(dataset: Dataset) -> tuple[ReviewQueue | None, str | None]:
    """The queue `robodata select` stored, for the report's section; a queue file that is not one is a note on the
    page, not a failed report."""
    try:
        return read_queue(dataset), None
    except RobodataError as err:
        return None, f'the review queue could not be read: {" ".join(str(err).split())}'


def report_items(items: list[Item], profile: Profile, out: Path, *, name: str, workers: int = 1,
                 detail: int | None = None, progress: Progress | None = None, force: bool = False,
                 in_place: Path | None = None) -> ReportResult:
    """Score bags on their own, or the episodes of a LeRobot folder read where it lies (`in_place`), in memory
    (nothing is written beside them), then report on them into `out`."""
    check_report_file(out, force=force)
    run = score_items(items, profile, workers=workers)
    scored = [ScoredEpisode(_episode_of(i), run.scores[i.name].to_json(), list(run.events.get(i.name) or []),
                            name=i.name) for i in items if i.name in run.scores]
    if not scored:
        what = 'no episode' if in_place is not None else 'no bag'
        raise RobodataError(f'{name}: {what} could be scored: ' + '; '.join(f'{k}: {v}' for k, v in run.failed.items()))
    sources: dict[str, EpisodeSource] = {i.name: i.lerobot if i.lerobot is not None else i.bag for i in items}
    result = render_to(out, name, run.summary, scored, sources, profile, detail=detail, progress=progress,
                       workers=workers, in_place=in_place)
    result.problems.update(run.failed)
    return result


def _episode_of(item: Item) -> Episode:
    """What the page shows of an episode scored in memory: a LeRobot episode's task and outcome as its import would
    record them (complete, as the import records it); a bag on its own, only its name."""
    if item.lerobot is not None and item.episode is not None:
        return replace(item.episode, status='complete')
    return Episode(id=item.name, status='complete')


def render_to(path: Path, name: str, summary: QualitySummary, scored: list[ScoredEpisode],
              bags: dict[str, EpisodeSource], profile: Profile, *, detail: int | None = None,
              progress: Progress | None = None, review: tuple[ReviewQueue | None, str | None] | None = None,
              dataset_root: Path | None = None, workers: int = 1, coverage: str | None = None,
              profiles: Callable[[ScoredEpisode], Profile] | None = None, in_place: Path | None = None
              ) -> ReportResult:
    """Figures and frames of the worst `detail` episodes from their bags (or LeRobot episodes) drawn in `workers`
    processes, each with `profiles(episode)` (a dataset of several robots) or `profile`; the page, written whole.
    `in_place`: the LeRobot folder the episodes were read from, which the page says has no catalog."""
    ordered = sorted(scored, key=lambda s: (s.score if s.score == s.score else -1.0, s.id))
    detailed = ordered if detail is None else ordered[:max(0, detail)]
    by_id = {s.id: s for s in scored}
    jobs = []
    for ep in detailed:
        read_events(ep)
        reference = _reference_of(ep, by_id, bags)
        if reference is not None:
            read_events(reference[1])
        own = profiles(ep) if profiles is not None else profile
        theirs = profiles(reference[1]) if profiles is not None and reference is not None else own
        jobs.append((bags[ep.id], ep, own, reference, theirs))
    visuals: dict[str, EpisodeVisuals] = {}
    with ExitStack() as stack:
        if workers > 1 and len(jobs) > 1:  # the drawing is the costly part of a report: ~0.5 s an episode
            pool = stack.enter_context(ProcessPoolExecutor(max_workers=min(workers, len(jobs))))
            drawn = pool.map(_draw, jobs)
        else:
            drawn = map(_draw, jobs)
        for ep in progress(detailed) if progress else detailed:  # the bar moves as each one arrives, in order
            visuals[ep.id] = next(drawn)
    problems = {i: v.problem for i, v in visuals.items() if v.problem}
    page = render_report(name, summary, ordered, visuals, review, dataset_root, coverage, in_place)
    write_atomic(path, page)
    return ReportResult(path, len(ordered), len(detailed), path.stat().st_size, problems)


def _reference_of(ep: ScoredEpisode, by_id: dict[str, ScoredEpisode], bags: dict[str, EpisodeSource]
                  ) -> tuple[EpisodeSource, ScoredEpisode] | None:
    """The demo a consistency outlier is explained against, when it is in the report too."""
    c = ep.quality.get('consistency')
    reference = c.get('reference') if isinstance(c, dict) and c.get('outlier') is True else None
    if not isinstance(reference, str) or reference not in by_id or reference not in bags:
        return None
    return bags[reference], by_id[reference]


def _draw(job: tuple[EpisodeSource, ScoredEpisode, Profile, tuple[EpisodeSource, ScoredEpisode] | None, Profile]
          ) -> EpisodeVisuals:
    return episode_visuals(*job)


def episode_visuals(bag: EpisodeSource, ep: ScoredEpisode, profile: Profile,
                    reference: tuple[EpisodeSource, ScoredEpisode] | None = None,
                    reference_profile: Profile | None = None) -> EpisodeVisuals:
    """The figure and thumbnails of one episode (and, for a consistency outlier, its far joints against the demo it
    was compared with, read with `reference_profile`, its own robot's); a bag (or LeRobot episode) that cannot be
    read leaves a note, not a failed report."""
    what = 'the bag' if isinstance(bag, Path) else 'the LeRobot episode'
    try:
        signals = read_signals(bag, ep, profile)
    except RobodataError as err:
        return EpisodeVisuals(problem=f'could not read {what}: {" ".join(str(err).split())}')
    visuals = EpisodeVisuals(timeline_png(ep, signals, profile), signals.flagged, signals.context,
                             notes=signals.notes)
    if reference is not None:
        c = ep.quality['consistency']
        assert c is not None  # a reference is only found for a consistency outlier (_reference_of)
        joints = c.get('far_joints')
        try:
            theirs = read_signals(reference[0], reference[1], reference_profile or profile)
        except RobodataError as err:
            visuals.notes.append(f'the demo it is compared with ({reference[1].id}) could not be read: '
                                 f'{" ".join(str(err).split())}')
        else:
            visuals.comparison = comparison_png(
                signals, theirs, [str(j) for j in joints] if isinstance(joints, list) else [], reference[1].id,
                far_span(c))
    return visuals
