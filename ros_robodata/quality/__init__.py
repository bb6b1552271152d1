"""Data quality: checks streamed through each episode (live at the rig and offline), a score in [0, 1], and what
needs the whole dataset (consistency across demonstrations, success criteria, the outcome mix).

Names load on first use: the recorder node imports the silence rule from quality.timing without pulling in the
image checks' OpenCV. `score()` itself is `ros_robodata.score` (here `score` is the module that defines it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ros_robodata.lazy_names import lazy_names

_EXPORTS = {
    'ERROR': 'ros_robodata.quality.findings',
    'WARN': 'ros_robodata.quality.findings',
    'Finding': 'ros_robodata.quality.findings',
    'EpisodeQuality': 'ros_robodata.quality.episode_checks',
    'EpisodeReport': 'ros_robodata.quality.episode_checks',
    'score_of': 'ros_robodata.quality.episode_checks',
    'QUALITY_FILE': 'ros_robodata.quality.scoring',
    'SUMMARY_FILE': 'ros_robodata.quality.scoring',
    'EpisodeScore': 'ros_robodata.quality.episode_score',
    'ScoreRun': 'ros_robodata.quality.scoring',
    'score_bag': 'ros_robodata.quality.scoring',
    'score_episodes': 'ros_robodata.quality.scoring',
    'score_items': 'ros_robodata.quality.scoring',
    'skipped_checks': 'ros_robodata.quality.scoring',
    'silence': 'ros_robodata.quality.timing',
}

__all__ = ['ERROR', 'QUALITY_FILE', 'SUMMARY_FILE', 'WARN', 'EpisodeQuality', 'EpisodeReport', 'EpisodeScore',
           'Finding', 'ScoreRun', 'score_bag', 'score_episodes', 'score_items', 'score_of', 'silence',
           'skipped_checks']

__getattr__ = lazy_names(__name__, _EXPORTS)


if TYPE_CHECKING:
    from ros_robodata.quality.episode_checks import EpisodeQuality, EpisodeReport, score_of
    from ros_robodata.quality.findings import ERROR, WARN, Finding
    from ros_robodata.quality.scoring import (
        QUALITY_FILE,
        SUMMARY_FILE,
        EpisodeScore,
        ScoreRun,
        score_bag,
        score_episodes,
        score_items,
        skipped_checks,
    )
    from ros_robodata.quality.timing import silence
