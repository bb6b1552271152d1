"""What reviewers already said of an episode, as the review loop stores it (ros_robodata.review): its verdict in
episodes/<id>/annotations.json, and whether its reviewers disagreed (review/disagreements.json).

An episode with a reviewed verdict is not asked of a person again; one whose reviewers disagreed (a disputed
verdict, or a task `robodata review agreement` flagged) goes back into the queue with their reasons. A file that
cannot be read is said in a note and read as no review, never fatal: selection must still run.
"""

from __future__ import annotations

from pathlib import Path

from ros_robodata import untrusted
from ros_robodata.dataset.annotations import DISPUTED, read_annotations
from ros_robodata.errors import RobodataError
from ros_robodata.review.agreement import DISAGREEMENTS_FILE


def reviewed_verdict(episode_dir: Path) -> tuple[str | None, str | None]:
    """(the reviewed episode verdict or None, a note when annotations.json could not be read); a disputed verdict
    is no verdict: the episode needs another look."""
    try:
        verdict = read_annotations(episode_dir).reviewed_verdict()
    except RobodataError as err:
        return None, f'{" ".join(str(err).split())}; read as not reviewed'
    return (verdict if verdict and verdict != DISPUTED else None), None


def reviewer_disagreements(review_dir: Path) -> tuple[dict[str, str], str | None]:
    """Episode id -> why its reviewers disagreed, from review/disagreements.json ({} when there is none), and a
    note when the file could not be read."""
    path = review_dir / DISAGREEMENTS_FILE
    if not path.exists():
        return {}, None
    try:
        data = untrusted.read_json(path)
    except RobodataError as err:
        return {}, f'{" ".join(str(err).split())}; reviewers read as agreeing'
    entries = data.get('episodes') if isinstance(data, dict) else None
    out = {}
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get('episode'), str):
            reasons = entry.get('reasons')
            if not isinstance(reasons, list):
                reasons = []
            out[entry['episode']] = '; '.join(str(r) for r in reasons) or 'reviewers disagree'
    return out, None
