"""review/queue.json, the review queue `robodata select` writes, as types (TypedDicts: JSON on disk, no runtime
cost). They describe what select writes; `read_queue` hands a file on as a ReviewQueue only after its checks, and a
reader of the entries (the report) keeps its own, since a user may have edited the file."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:  # 3.11's; the annotations below are never evaluated, so 3.10 runs this module too
    from typing import NotRequired

__all__ = ['QueueBudget', 'QueueEntry', 'QueueExcluded', 'QueueInputs', 'QueueSignal', 'ReviewQueue',
           'UncertaintyInput']


class QueueSignal(TypedDict):
    """One signal behind a pick: its value (0..1), weight, what it added to the priority, and why."""

    value: float
    weight: float
    contribution: float
    why: str


class QueueEntry(TypedDict):
    """One pick, best first."""

    rank: int
    episode_id: str
    task: str
    outcome: str
    score: float | None  # its quality score, when scored
    priority: float
    reasons: list[str]
    signals: dict[str, QueueSignal]  # by signal name, sorted


class QueueExcluded(TypedDict):
    """An episode filtered out before ranking, and why."""

    episode_id: str
    reason: str


class QueueBudget(TypedDict):
    """The budget as asked (`20`, `10%`) and the number of episodes it came to."""

    asked: str
    episodes: int


class UncertaintyInput(TypedDict):
    """The model-uncertainty file the priorities were raised by."""

    file: str
    episodes: int
    sha256: str


class QueueInputs(TypedDict):
    """What the queue was computed from: the dataset filters that were set, and select's options."""

    filters: dict[str, str | int]  # task, outcome, status (str), since_ns (int): those given
    include_reviewed: bool
    min_score: float
    uncertainty: NotRequired[UncertaintyInput]


class ReviewQueue(TypedDict):
    """review/queue.json (`SelectRun.queue`)."""

    format: str  # ros_robodata.review_queue/1
    dataset: str
    budget: QueueBudget
    considered: int
    candidates: int
    picked: int
    weights: dict[str, float]
    inputs: QueueInputs
    queue: list[QueueEntry]
    excluded: list[QueueExcluded]
    notes: list[str]
