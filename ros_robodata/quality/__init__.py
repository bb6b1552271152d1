"""Data quality: checks streamed through each episode (live at the rig and offline), a score in [0, 1], and what
needs the whole dataset (consistency across demonstrations, success criteria, the outcome mix).

Names load on first use: the recorder node imports the silence rule from quality.timing without pulling in the
image checks' OpenCV. `score()` itself is `ros_robodata.score` (here `score` is the module that defines it).
"""

from __future__ import annotations

import importlib as _importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    'ERROR': 'ros_robodata.quality.findings',
    'WARN': 'ros_robodata.quality.findings',
    'Finding': 'ros_robodata.quality.findings',
    'EpisodeQuality': 'ros_robodata.quality.episode',
    'EpisodeReport': 'ros_robodata.quality.episode',
    'score_of': 'ros_robodata.quality.episode',
    'QUALITY_FILE': 'ros_robodata.quality.score',
    'SUMMARY_FILE': 'ros_robodata.quality.score',
    'EpisodeScore': 'ros_robodata.quality.score',
    'ScoreRun': 'ros_robodata.quality.score',
    'score_bag': 'ros_robodata.quality.score',
    'score_episodes': 'ros_robodata.quality.score',
    'score_items': 'ros_robodata.quality.score',
    'skipped_checks': 'ros_robodata.quality.score',
    'silence': 'ros_robodata.quality.timing',
}

__all__ = ['ERROR', 'QUALITY_FILE', 'SUMMARY_FILE', 'WARN', 'EpisodeQuality', 'EpisodeReport', 'EpisodeScore',
           'Finding', 'ScoreRun', 'score_bag', 'score_episodes', 'score_items', 'score_of', 'silence',
           'skipped_checks']


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from ros_robodata.quality.episode import EpisodeQuality, EpisodeReport, score_of
    from ros_robodata.quality.findings import ERROR, WARN, Finding
    from ros_robodata.quality.score import (
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
