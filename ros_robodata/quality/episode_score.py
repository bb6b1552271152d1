"""One episode's score as quality.json and the catalog hold it: its findings (the bag's checks plus what the
dataset-level steps added), the score in [0, 1] and its reasons, the success verdict and the consistency figures."""

from __future__ import annotations

from dataclasses import dataclass, field

from ros_robodata.dataset.catalog import CatalogScores
from ros_robodata.quality.episode_checks import EpisodeReport, score_of
from ros_robodata.quality.findings import ERROR, WARN, Finding
from ros_robodata.quality.quality_format import ConsistencyJson, QualityDoc, SuccessJson

__all__ = ['EpisodeScore', 'catalog_scores', 'num']


@dataclass
class EpisodeScore:
    episode_id: str
    task: str
    outcome: str
    report: EpisodeReport
    extra: list[Finding] = field(default_factory=list)
    success: SuccessJson | None = None
    consistency: ConsistencyJson | None = None
    fps: float | None = None  # a LeRobot episode read in place: its findings' stretches also said in frames
    capture: dict[str, str] = field(default_factory=dict)  # a take's verdict per factor (quality/take_spec.py)

    @property
    def findings(self) -> list[Finding]:
        return self.report.findings + self.extra

    @property
    def score(self) -> float:
        """In [0, 1], with what the dataset-level steps found (consistency, success, smoothness) counted in."""
        return score_of(self.findings)[0]

    @property
    def reasons(self) -> list[str]:
        """Why the score is below 1, worst first."""
        return score_of(self.findings)[1]

    def to_json(self) -> QualityDoc:
        report = self.report.to_json()
        score, reasons = score_of(self.findings)
        # The report's keys first, in their place (score, reasons and findings replaced there), then the rest.
        findings = [f.to_json(self.report.start_ns) for f in self.findings]
        if self.fps:  # frame k of a LeRobot episode is at k / fps from its first frame
            for finding in findings:
                if 'ranges_s' in finding:
                    finding['frames'] = [[round(a * self.fps), round(b * self.fps)] for a, b in finding['ranges_s']]
        return {**report, 'format': 'ros_robodata.quality/1', 'episode_id': self.episode_id, 'task': self.task,
                'outcome': self.outcome, 'score': score, 'reasons': reasons,
                'findings': findings,
                'success': self.success, 'consistency': self.consistency, 'catalog': catalog_scores(self),
                **({'capture': dict(self.capture)} if self.capture else {})}  # type: ignore[typeddict-item]


def catalog_scores(s: EpisodeScore) -> CatalogScores:
    """The catalog's score columns of an episode: finding counts, checks fired, consistency, the verdict."""
    counts: dict[str, int] = {}
    for f in s.findings:
        counts[f.severity] = counts.get(f.severity, 0) + 1
    return {'errors': counts.get(ERROR, 0), 'warnings': counts.get(WARN, 0),
            'checks': sorted({f.check for f in s.findings}),
            'consistency': s.consistency['normalized'] if s.consistency else None,
            'success_verdict': s.success['success'] if s.success else None,
            'disagrees': s.success['disagrees'] if s.success else None}


def num(value: float) -> float | None:
    """A figure as quality.json holds it: rounded to 4 places, None for NaN or nothing."""
    return None if value is None or value != value else round(float(value), 4)
