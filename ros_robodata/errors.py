"""Errors a user can act on.

Every error raised for bad input (a broken profile, a truncated bag, a missing topic) is a
RobodataError whose message is one line saying what, where and why. The CLI prints that line and
exits non-zero; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class RobodataError(Exception):
    """Bad input or a state the user can fix: one line, what, where, why."""


class ProfileError(RobodataError):
    """The robot profile is unreadable or invalid."""


class BagError(RobodataError):
    """A bag is missing, unreadable, truncated, or holds something we cannot decode."""


class DatasetError(RobodataError):
    """The dataset layout, catalog or an episode is missing or inconsistent."""


class RecorderError(RobodataError):
    """An operator command that cannot be done now (start while recording, stop while idle...)."""


class ExportError(RobodataError):
    """Something for another tool cannot be made: a frame OpenCV cannot encode, a scan open3d cannot write."""


class TaxonomyError(ExportError):
    """The class taxonomy file is unreadable or invalid."""


class TaskFileError(ExportError):
    """The manifest cannot be turned into labeling task files (bad path, missing file, bad name)."""


class FileWriteError(RobodataError, OSError):
    """A file could not be written (disk full, permission, a folder where the file belongs): still an OSError for
    the code that handles storage failures (the recorder), one line for the user."""


class AnnotationError(RobodataError):
    """An annotation file or a labeling tool's answer cannot be read as labels (nothing is imported from it)."""


class LabelStudioError(RobodataError):
    """Label Studio cannot be reached, refuses the token, or answers something we cannot use."""


class ReplayError(RobodataError):
    """A replay that cannot start: no such topic to play, a remap that does not parse, a start past the end."""
