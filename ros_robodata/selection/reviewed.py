"""Whether a human already gave an episode its verdict: read from episodes/<id>/annotations.json.

The review loop writes annotations.json (its own module owns the format); selection only needs to know whether an
episode's verdict was already reviewed, so it does not ask a person twice. This reader is deliberately small and
lenient: an absent file is no review, and a file it cannot make sense of is said in a note, never fatal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ros_robodata import untrusted
from ros_robodata.errors import RobodataError

ANNOTATIONS_FILE = 'annotations.json'
_VERDICT_KINDS = ('verdict', 'episode_verdict')


def reviewed_verdict(episode_dir: Path) -> tuple[str | None, str | None]:
    """(the latest reviewed episode verdict or None, a note when the file could not be read). Entries are taken
    from a list, or from the file's `labels` / `annotations` list; an entry counts when its `kind` is a verdict
    and it names one (`value`, `verdict` or `outcome`)."""
    path = episode_dir / ANNOTATIONS_FILE
    if not path.exists():
        return None, None
    try:
        data = untrusted.read_json(path)
    except RobodataError as err:
        return None, f'{" ".join(str(err).split())}; read as not reviewed'
    entries: Any = data
    if isinstance(data, dict):
        entries = data.get('labels', data.get('annotations', []))
    if not isinstance(entries, list):
        return None, f'{path}: no list of labels in it; read as not reviewed'
    verdict = None
    for entry in entries:
        if not isinstance(entry, dict) or entry.get('kind') not in _VERDICT_KINDS:
            continue
        value = next((entry[k] for k in ('value', 'verdict', 'outcome') if isinstance(entry.get(k), str)), None)
        if value:
            verdict = value
    return verdict, None
