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


LONGEST_WORD = 400  # longer than any path a user types; a value quoted back longer than this is cut in its middle


LONGEST_LINE = 1500


def one_line(message: object) -> str:
    """An error's message as one line a terminal shows whole: whitespace collapsed, and any word longer than
    LONGEST_WORD (a 20,000-character value quoted back from a hostile file) cut in its middle, and a line longer
    than LONGEST_LINE too, so the file's name before it and the way out after it stay readable."""
    words = []
    for word in str(message).split():
        if len(word) > LONGEST_WORD:
            word = f'{word[:LONGEST_WORD * 2 // 3]}...({len(word):,} characters)...{word[-LONGEST_WORD // 6:]}'
        words.append(word)
    line = ' '.join(words)
    if len(line) > LONGEST_LINE:  # a long value quoted as many words (a list of 5,000 items): keep both ends
        line = f'{line[:LONGEST_LINE * 2 // 3]} ...({len(line):,} characters)... {line[-LONGEST_LINE // 4:]}'
    return line
