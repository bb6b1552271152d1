"""What `robodata score` writes, as types: an episode's quality.json and the dataset's quality_summary.json.

JSON on disk, so these are TypedDicts: no runtime cost, and mypy checks the keys where the documents are built and
read. They describe what robodata writes; a reader of a file a user may have edited keeps its own checks and hands
the document on as one of these only after them. `*_ns` are header stamps; `*_s` are seconds from the episode's
time origin (bag/time_origin.py), except the trim points (TrimPoints).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:  # the annotations below are never evaluated, so nothing here is imported at run time: 3.10 has
    # no NotRequired, and the dataset package is not to load with every check that makes a Finding
    from typing import NotRequired

    from ros_robodata.dataset.catalog import CatalogScores

__all__ = ['ConsistencyJson', 'CriterionJson', 'EpisodeMetrics', 'FindingJson', 'PatternJson', 'QualityDoc',
           'QualitySummary', 'ReportJson', 'SuccessJson', 'TopicMetrics', 'TrimPoints']


class FindingJson(TypedDict):
    """One finding (`Finding.to_json`): a figure is None where it is NaN or infinite (nothing measured)."""

    check: str
    severity: str  # info | warn | error
    topic: str
    message: str
    value: float | None
    threshold: float | None
    count: int
    stretches: int
    ranges_ns: list[list[int]]  # [start, end] header stamps
    ranges_s: NotRequired[list[list[float]]]  # the same from the episode's start, when it is known
    frames: NotRequired[list[list[int]]]  # a LeRobot episode read in place: the same as frame indices (s x fps)


class TopicMetrics(TypedDict):
    """How one topic of the profile arrived."""

    count: int
    rate_hz: float | None
    expected_hz: float | None  # the profile's; None: not judged
    lost: int
    mean_latency_ms: float | None


class TrimPoints(TypedDict, total=False):
    """Idle at the very start or end of the episode, as trim points: s from the first joint sample (JointMotion.trim),
    not from the episode's time origin."""

    start_s: float
    end_s: float


class EpisodeMetrics(TypedDict):
    """An episode's figures (`EpisodeReport.metrics`). A camera's are its frame count and image statistics keyed by
    name (`CameraWatch.stats`, each rounded; None for NaN)."""

    duration_s: float
    topics: dict[str, TopicMetrics]
    smoothness_ldlj: float | None
    idle_s: float | None
    trim: TrimPoints
    peak_force_n: float | None
    cameras: dict[str, dict[str, float | None]]
    sync_skew_ms: dict[str, float | None]
    undecodable: NotRequired[dict[str, str]]  # per topic, why its messages could not be read


class ReportJson(TypedDict):
    """What the checks of one episode found (`EpisodeReport.to_json`): the first keys of quality.json."""

    score: float
    reasons: list[str]
    start_ns: int | None
    end_ns: int | None
    findings: list[FindingJson]
    metrics: EpisodeMetrics


class CriterionJson(TypedDict):
    """One success criterion: passed, failed, or None when it could not be evaluated."""

    name: str
    passed: bool | None
    detail: str


class SuccessJson(TypedDict):
    """The success verdict from the events and signals, against the operator's label (quality/success.py)."""

    success: bool | None
    disagrees: bool
    message: str
    criteria: list[CriterionJson]


class ConsistencyJson(TypedDict):
    """How the episode moves against the other demonstrations of its task (quality/consistency.py); a figure is
    None where it is NaN (too few demonstrations)."""

    distance: float | None
    normalized: float | None
    robust_z: float | None
    outlier: bool
    medoid: str
    reference: str | None
    far_joints: list[str]
    far_span: list[float] | None  # [from, to] as fractions of its course
    idle_joints: list[str]
    rest_offsets: dict[str, float]  # idle joints resting away from the task's usual pose
    far_phase: NotRequired[str | None]  # an outlier's: the subtask it was in where it differs most


class QualityDoc(ReportJson):
    """quality.json (`EpisodeScore.to_json`): the checks' report with what the dataset-level steps added."""

    format: str  # ros_robodata.quality/1
    episode_id: str
    task: str
    outcome: str
    success: SuccessJson | None
    consistency: ConsistencyJson | None
    catalog: CatalogScores
    capture: NotRequired[dict[str, str]]  # a take captured to a protocol: its verdict per factor (take_spec.py)


class PatternJson(TypedDict):
    """One warning that holds in most episodes of a dataset (`Pattern.to_json`)."""

    check: str
    topic: str
    subject: str
    episodes: list[str]
    of: int
    example: str
    beyond: list[str]
    message: str


class QualitySummary(TypedDict):
    """quality_summary.json (`ScoreRun.summary`): the dataset-level view of one scoring run."""

    format: str  # ros_robodata.quality_summary/1
    episodes: int
    failed: dict[str, str]
    outcomes: dict[str, int]
    outcome_ratios: dict[str, float]
    warnings: list[str]
    patterns: list[PatternJson]
    mean_score: float | None
    checks: dict[str, int]
    skipped: list[str]
