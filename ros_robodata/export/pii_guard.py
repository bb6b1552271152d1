"""Cameras that film people (`pii: true` in the robot profile) stay in the dataset unless someone says otherwise.

Every export that copies camera frames out of a dataset (`export frames`, `export lerobot`, the media of
`review push`) asks `check_pii` first: a camera marked pii is refused, in one line naming it and the ways out,
unless the export was given `--allow-pii` (its frames go out as they are) or `--blur-faces` (every face in every
exported frame is blurred, which is permission enough). Either decision is one line of the dataset's audit.jsonl
(`audit_pii`): who, which cameras, where to, under which flag.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from ros_robodata.dataset.audit import append_audit
from ros_robodata.errors import ExportError
from ros_robodata.profile import Profile

__all__ = ['ALLOW_PII', 'BLUR_FACES', 'audit_pii', 'check_pii', 'pii_cameras']

ALLOW_PII = 'allow_pii'  # the audit actions
BLUR_FACES = 'blur_faces'


def pii_cameras(profile: Profile, cameras: Iterable[str] | None = None) -> list[str]:
    """The cameras among `cameras` (all of the profile's when None) that the profile marks `pii: true`.

    Args:
        profile: the robot profile.
        cameras: camera names to look at, or None for every camera of the profile.
    """
    wanted = None if cameras is None else set(cameras)
    return [c.name for c in profile.topics.cameras if c.pii and (wanted is None or c.name in wanted)]


def check_pii(profile: Profile, cameras: Sequence[str] | None, *, allow_pii: bool, blur_faces: bool) -> list[str]:
    """The pii cameras an export is about to copy; refused unless `allow_pii` or `blur_faces`.

    Args:
        profile: the robot profile.
        cameras: the cameras the export writes (None: every camera of the profile).
        allow_pii: the export was given --allow-pii.
        blur_faces: the export was given --blur-faces (faces blurred in every camera).

    Raises:
        ExportError: a camera of the export is marked pii and neither flag was given (one line: the cameras,
            and the ways out).
    """
    marked = pii_cameras(profile, cameras)
    if not marked or allow_pii or blur_faces:
        return marked
    chosen = [c.name for c in profile.topics.cameras] if cameras is None else list(cameras)
    others = [name for name in chosen if name not in marked]
    plural = len(marked) > 1
    leave_out = f'leave {"them" if plural else "it"} out with --cameras {",".join(others)}, ' if others else ''
    raise ExportError(f'camera{"s" if plural else ""} {", ".join(marked)} {"are" if plural else "is"} marked '
                      f'pii: true in the robot profile ({profile.source}): people may be recognised in '
                      f'{"their" if plural else "its"} frames, so they are not exported without --allow-pii; '
                      f'{leave_out}or blur every face with --blur-faces')


def audit_pii(dataset_root: Path, cameras: Sequence[str], out: Path, *, export: str, allow_pii: bool,
              blur_faces: bool, episodes: Sequence[str] = (), who: str | None = None) -> None:
    """One line of the dataset's audit.jsonl per permission an export of pii cameras used: `allow_pii` (the
    frames go out as recorded) and `blur_faces` (faces blurred), each with the cameras, where to and who.

    Args:
        dataset_root: the dataset the frames come from.
        cameras: the pii cameras exported.
        out: where the export goes.
        export: what kind of export (frames, lerobot, review_media).
        allow_pii: --allow-pii was given.
        blur_faces: --blur-faces was given.
        episodes: the episodes exported.
        who: who exports; None: the login name.

    Raises:
        ExportError: the audit line cannot be written (then the export does not go ahead).
    """
    if not cameras:
        return
    actions = [action for action, given in ((ALLOW_PII, allow_pii), (BLUR_FACES, blur_faces)) if given]
    for action in actions:
        try:
            append_audit(dataset_root / 'audit.jsonl', action, None, who, cameras=list(cameras),
                         out=str(Path(out).resolve()), export=export, episodes=list(episodes))
        except OSError as err:
            raise ExportError(f'{dataset_root / "audit.jsonl"}: cannot record --{action.replace("_", "-")} for '
                              f'cameras {", ".join(cameras)}: {err.strerror or err}; nothing exported') from None
