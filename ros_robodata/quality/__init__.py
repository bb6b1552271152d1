"""Data quality: checks streamed through each episode (live at the rig and offline), a score in [0, 1], and what
needs the whole dataset (consistency across demonstrations, success criteria, the outcome mix)."""

from ros_robodata.quality.episode import EpisodeQuality, EpisodeReport, score_of
from ros_robodata.quality.findings import ERROR, WARN, Finding
from ros_robodata.quality.score import (
    QUALITY_FILE,
    SUMMARY_FILE,
    EpisodeScore,
    ScoreRun,
    score,
    score_bag,
    score_episodes,
    score_items,
    skipped_checks,
)

__all__ = ['ERROR', 'QUALITY_FILE', 'SUMMARY_FILE', 'WARN', 'EpisodeQuality', 'EpisodeReport', 'EpisodeScore',
           'Finding', 'ScoreRun', 'score', 'score_bag', 'score_episodes', 'score_items', 'score_of', 'skipped_checks']
