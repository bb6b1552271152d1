"""Releases: an immutable manifest of exactly the bytes a model is trained on, and checks against it.

`robodata release create DATASET NAME` freezes the approved episodes (optionally only those approved under one policy,
or a `--where` subset) as `releases/NAME/manifest.json`: every file of every episode with its sha256 and size, the
policy, the robot profile's hash (in a dataset of several robots, each episode's and the robots' under `profiles`),
the ros_robodata version and the audit chain's head. The manifest's own sha256 is
written beside it as `manifest.sha256`, in `sha256sum -c` format, so the release can be checked without ros_robodata;
that hash is what an export from the release (and a model trained on it) names. `croissant.json` describes the
release in Croissant 1.1 with its Responsible-AI fields. The three files are made read-only.

Why one module: create, verify, diff and list read and write one file format, the manifest; apart they would each
repeat its reading and checking.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ros_robodata import untrusted
from ros_robodata.dataset.audit import append_audit, current_user
from ros_robodata.dataset.audit_chain import verify_audit
from ros_robodata.dataset.catalog import CatalogRow
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.embodiments import Embodiment, embodiment_of, embodiments, holds_several
from ros_robodata.dataset.episode import Episode
from ros_robodata.dataset.participants import read_participants
from ros_robodata.errors import DatasetError, RobodataError
from ros_robodata.files import write_atomic
from ros_robodata.governance.approval_policy import ApprovalPolicy
from ros_robodata.governance.croissant_card import croissant_for_release
from ros_robodata.version import __version__

__all__ = ['FORMAT', 'Release', 'ReleaseChange', 'ReleaseCheck', 'ReleaseDiff', 'create_release', 'diff_releases',
           'hash_files', 'list_releases', 'read_release', 'verify_release']

FORMAT = 'ros_robodata.release/1'
RELEASES = 'releases'
MANIFEST = 'manifest.json'
MANIFEST_SHA = 'manifest.sha256'
CROISSANT = 'croissant.json'
RELEASABLE = ('approved', 'released')  # states an episode may be released from (released: already in an earlier one)
_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]{0,63}')
_CHUNK = 4 << 20


class ReleaseError(RobodataError):
    """A release that cannot be made or read: one line saying which and why."""


@dataclass(frozen=True)
class Release:
    """A release as its manifest says: its name, the manifest's sha256, and the manifest itself."""

    name: str
    sha256: str
    manifest: dict[str, Any]

    @property
    def episodes(self) -> list[str]:
        return sorted(self.manifest['episodes'])

    def to_json(self) -> dict[str, Any]:
        m = self.manifest
        return {'name': self.name, 'manifest_sha256': self.sha256, 'created': m['created'], 'who': m['who'],
                'why': m['why'], 'episodes': len(m['episodes']), 'files': sum(len(e['files'])
                                                                              for e in m['episodes'].values()),
                'bytes': sum(f['bytes'] for e in m['episodes'].values() for f in e['files'].values()),
                'policy': (m.get('policy') or {}).get('name')}


@dataclass(frozen=True)
class ReleaseChange:
    """One difference between a release and the dataset now: what (changed, missing, added, withdrawn) and where."""

    episode: str
    what: str
    file: str = ''
    detail: str = ''

    def __str__(self) -> str:
        where = f'{self.episode}/{self.file}' if self.file else self.episode
        return f'{where}: {self.what}' + (f' ({self.detail})' if self.detail else '')


@dataclass
class ReleaseCheck:
    """`release verify`: whether the manifest is the one written, and every change in the data since."""

    release: str
    manifest_ok: bool
    files: int = 0
    bytes: int = 0
    changes: list[ReleaseChange] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.manifest_ok and not self.changes

    def to_json(self) -> dict[str, Any]:
        return {'release': self.release, 'ok': self.ok, 'manifest_ok': self.manifest_ok, 'files': self.files,
                'bytes': self.bytes, 'changes': [{'episode': c.episode, 'what': c.what, 'file': c.file,
                                                  'detail': c.detail} for c in self.changes]}


@dataclass
class ReleaseDiff:
    """`release diff A B`: episodes in B and not A, in A and not B, and in both with different files."""

    a: str
    b: str
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: dict[str, list[str]] = field(default_factory=dict)  # episode -> files that differ

    def to_json(self) -> dict[str, Any]:
        return {'a': self.a, 'b': self.b, 'added': self.added, 'removed': self.removed, 'changed': self.changed}


def hash_files(paths: Iterable[Path], workers: int | None = None) -> dict[Path, tuple[str, int]]:
    """sha256 and size of each file, several at once (hashlib drops the GIL while it hashes, so the threads use
    every core, as separate `sha256sum` processes would).

    Args:
        paths: the files.
        workers: threads; None: one per core.

    Raises:
        OSError: a file cannot be read.
    """
    def one(path: Path) -> tuple[Path, tuple[str, int]]:
        with path.open('rb') as f:
            digest = hashlib.file_digest(f, 'sha256')
            return path, (digest.hexdigest(), f.tell())

    ordered = sorted(paths, key=lambda p: -p.stat().st_size)  # large first: the threads finish together
    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 2) as pool:
        return dict(pool.map(one, ordered))


def _episode_files(folder: Path) -> list[Path]:
    """Every file of an episode folder, its bag's included (a linked bag is followed: its bytes are the data)."""
    return sorted(p for p in folder.rglob('*') if p.is_file())


def _folder(dataset: Dataset, name: str) -> Path:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ReleaseError(f'release name {name!r}: use letters, digits, "_", "-", "." (up to 64, not starting with '
                           'a dot)')
    return dataset.root / RELEASES / name


def create_release(dataset: Dataset, name: str, rows: list[CatalogRow], *, policy: ApprovalPolicy | None = None,
                   where: str | None = None, who: str | None = None, why: str = '',
                   audit_head: tuple[int, str] | None = None) -> Release:
    """Freeze the approved episodes among `rows` as release `name`.

    Args:
        dataset: the dataset.
        name: the release's name (a folder under releases/; never reused).
        rows: the episodes the command's filters picked; those not approved are left out (and said so by the
            caller), with `policy` only those approved under exactly that policy text.
        policy: the approval policy the release asks for; None: any approval.
        where: the `--where` text that picked the rows, kept in the manifest.
        who: who releases (the audit); None: the current user.
        why: why, kept in the manifest and the audit.
        audit_head: (entries, sha256 of the last entry) of the audit chain before the release; None: not chained.

    Raises:
        ReleaseError: a bad or taken name, or no approved episode to release.
        DatasetError: a file cannot be read or the release cannot be written.
    """
    folder = _folder(dataset, name)
    if folder.exists():
        raise ReleaseError(f'{folder}: release {name} exists already (a release is never changed: pick a new name)')
    described = {r.id: dataset.episode(r.id) for r in rows if r.state in RELEASABLE}  # each episode.yaml read once
    chosen = [r for r in rows if r.id in described
              and (policy is None or described[r.id].decision.get('policy_sha256') == policy.sha256)]
    if not chosen:
        under = f' under policy {policy.name} ({policy.sha256[:12]})' if policy else ''
        raise ReleaseError(f'{dataset.root}: no approved episode{under} among the {len(rows)} picked: run '
                           '`robodata approve` first')
    files = {r.id: _episode_files(dataset.episode_dir(r.id)) for r in chosen}
    try:
        hashed = hash_files([p for paths in files.values() for p in paths])
    except OSError as err:
        raise DatasetError(f'{err.filename}: cannot be read for the release ({err.strerror})') from None
    # The checksums taken as each bag was written are a second witness: a bag that no longer matches them changed
    # after recording (a disk fault, an edit) and is not frozen into a release as if it were the recording.
    changed = [f'{r.id}/bag/{p.name}' for r in chosen for p in files[r.id]
               if p.parent == dataset.bag_dir(r.id) and described[r.id].bag_sha256.get(p.name, hashed[p][0])
               != hashed[p][0]]
    if changed:
        raise ReleaseError(f'{dataset.root}: {len(changed)} bag file(s) no longer match the sha256 recorded when they '
                           f'were written ({", ".join(changed[:3])}{" ..." if len(changed) > 3 else ""}): '
                           '`robodata verify` and `robodata repair` first; nothing was released')
    robots = _embodiments(dataset, {r.id: described[r.id] for r in chosen})
    episodes = {}
    for r in chosen:
        root = dataset.episode_dir(r.id)
        episodes[r.id] = {'outcome': r.outcome, 'reviewed_outcome': r.reviewed_outcome, 'score': r.score,
                          'task': r.task, 'operator': r.operator, 'robot': r.robot,
                          **({'profile_sha256': robots[r.id].sha256} if robots else {}),
                          'files': {p.relative_to(root).as_posix(): {'sha256': hashed[p][0], 'bytes': hashed[p][1]}
                                    for p in files[r.id]}}
    used = {e.name: e for e in robots.values()}  # several robots: each released episode's profile, by name
    manifest = {
        'format': FORMAT, 'name': name, 'created': time.strftime('%Y-%m-%dT%H:%M:%S%z'), 'created_ns': time.time_ns(),
        'who': who or current_user(), 'why': why, 'dataset': dataset.name, 'ros_robodata': __version__,
        'policy': policy.to_json() if policy else None, 'where': where,
        'profile_sha256': _profile_sha256(dataset, list(used.values())),
        **({'profiles': {name: e.sha256 for name, e in sorted(used.items())}} if robots else {}),
        'audit_head': {'entries': audit_head[0], 'sha256': audit_head[1]} if audit_head else None,
        'episodes': episodes,
    }
    body = (json.dumps(manifest, indent=1, sort_keys=True) + '\n').encode()
    digest = hashlib.sha256(body).hexdigest()
    card = croissant_for_release(manifest, digest, modes={r.id: r.mode for r in chosen},
                                 pii_cameras=_pii_cameras(dataset, list(used.values())),
                                 consent=_consent(dataset, {described[r.id].participant for r in chosen} - {''}),
                                 license_url=str(dataset.info.get('license') or ''))
    folder.mkdir(parents=True)
    write_atomic(folder / MANIFEST, body)
    write_atomic(folder / MANIFEST_SHA, f'{digest}  {MANIFEST}\n'.encode())
    write_atomic(folder / CROISSANT, json.dumps(card, indent=1) + '\n')
    for path in (folder / MANIFEST, folder / MANIFEST_SHA, folder / CROISSANT):
        path.chmod(0o444)
    dataset.catalog.set_release(sorted(episodes), name)
    append_audit(dataset.audit_path, 'release_create', None, who, release=name, manifest_sha256=digest,
                 episodes=len(episodes), why=why)
    return Release(name, digest, manifest)


def _embodiments(dataset: Dataset, episodes: dict[str, Episode]) -> dict[str, Embodiment]:
    """Each episode's embodiment in a dataset of several robots (the profile it was recorded with); {} otherwise."""
    if not holds_several(dataset):
        return {}
    known = embodiments(dataset)
    return {episode_id: embodiment_of(dataset, episode, known) for episode_id, episode in episodes.items()}


def _profile_sha256(dataset: Dataset, used: list[Embodiment]) -> str | None:
    """The released episodes' robot profile: the dataset's, or the one all of them were recorded with in a dataset of
    several robots (None when they are of several: the manifest's `profiles` and each episode's say which)."""
    if used:
        return used[0].sha256 if len(used) == 1 else None
    return dataset.profile.sha256 if dataset.has_profile else None


def _pii_cameras(dataset: Dataset, used: list[Embodiment]) -> list[str]:
    """The cameras marked pii in the released episodes' profiles (the dataset's, or each robot's of several)."""
    profiles = [e.profile for e in used] or ([dataset.profile] if dataset.has_profile else [])
    return list(dict.fromkeys(c.name for profile in profiles for c in profile.topics.cameras if c.pii))


def _consent(dataset: Dataset, named: set[str]) -> dict[str, str]:
    """Each of these participants and the scope of their consent (participants.yaml)."""
    people = read_participants(dataset.root)
    return {p: str(people.get(p, {}).get('consent', 'not registered')) for p in sorted(named)}


def read_release(dataset: Dataset, name: str) -> tuple[Release, bool]:
    """A release's manifest and whether its bytes still hash to the sha256 written beside it.

    Raises:
        ReleaseError: no such release (naming those there are), or a manifest that is not one.
    """
    folder = _folder(dataset, name)
    if not (folder / MANIFEST).is_file():
        have = ', '.join(r.name for r in list_releases(dataset)) or 'none yet'
        raise ReleaseError(f'{dataset.root}: no release {name} (releases: {have})')
    body = (folder / MANIFEST).read_bytes()
    digest = hashlib.sha256(body).hexdigest()
    written = (folder / MANIFEST_SHA).read_text().split()[0] if (folder / MANIFEST_SHA).is_file() else ''
    manifest = untrusted.read_json(folder / MANIFEST, ReleaseError)
    if not (isinstance(manifest, dict) and manifest.get('format') == FORMAT and isinstance(manifest.get('episodes'),
                                                                                              dict)):
        raise ReleaseError(f'{folder / MANIFEST}: not a release manifest ({FORMAT})')
    for episode_id, entry in manifest['episodes'].items():
        files = entry.get('files') if isinstance(entry, dict) else None
        if not isinstance(files, dict) or not all(isinstance(f, dict) and isinstance(f.get('sha256'), str)
                                                  and isinstance(f.get('bytes'), int) for f in files.values()):
            raise ReleaseError(f'{folder / MANIFEST}: episode {episode_id}: its files are not what a release lists')
    return Release(name, written or digest, manifest), written == digest


def verify_release(dataset: Dataset, name: str, tombstones: dict[str, dict[str, Any]] | None = None) -> ReleaseCheck:
    """Re-hash every file a release lists; name every change (a changed byte, a missing or added file, a withdrawn
    episode), whether the manifest itself is the one written, and whether the audit log up to the head the release
    recorded is unchanged.

    Args:
        dataset: the dataset.
        name: the release.
        tombstones: retired episodes (id -> when, who, why): reported as withdrawn, not as missing.

    Raises:
        ReleaseError: no such release, or a manifest that is not one.
    """
    release, manifest_ok = read_release(dataset, name)
    check = ReleaseCheck(name, manifest_ok)
    if not manifest_ok:
        check.changes.append(ReleaseChange('(manifest)', 'manifest.json changed since the release was made',
                                           MANIFEST, f'its sha256 is not the {release.sha256[:12]}... written beside '
                                           'it'))
    head = release.manifest.get('audit_head')
    if isinstance(head, dict) and isinstance(head.get('entries'), int) and isinstance(head.get('sha256'), str):
        audit = verify_audit(dataset.audit_path, head=(head['entries'], head['sha256']))
        if not audit.ok:  # the history the release was made from was rewritten since
            check.changes.append(ReleaseChange('(audit)', 'the audit log up to the release changed', 'audit.jsonl',
                                               audit.problem))
    wanted: dict[Path, tuple[str, str, int]] = {}
    for episode_id, entry in sorted(release.manifest['episodes'].items()):
        root = dataset.episode_dir(episode_id) if _safe_id(episode_id) else None
        if tombstones and episode_id in tombstones:
            t = tombstones[episode_id]
            check.changes.append(ReleaseChange(episode_id, 'withdrawn', detail=f'retired {t.get("time", "?")} by '
                                               f'{t.get("who", "?")}: {t.get("why", "")}'))
            continue
        if root is None or not root.is_dir():
            check.changes.append(ReleaseChange(episode_id, 'missing', detail='its folder is gone'))
            continue
        listed = set()
        for rel, f in sorted(entry['files'].items()):
            path = root / rel
            listed.add(path)
            if not path.is_file():
                check.changes.append(ReleaseChange(episode_id, 'missing', rel))
            else:
                wanted[path] = (episode_id, f['sha256'], f['bytes'])
        for extra in _episode_files(root):
            if extra not in listed:
                check.changes.append(ReleaseChange(episode_id, 'added since the release', extra.relative_to(root)
                                                   .as_posix()))
    try:
        hashed = hash_files(wanted)
    except OSError as err:
        raise DatasetError(f'{err.filename}: cannot be read ({err.strerror})') from None
    for path, (episode_id, sha, size) in sorted(wanted.items()):
        got_sha, got_size = hashed[path]
        check.files += 1
        check.bytes += got_size
        if got_sha != sha:
            rel = path.relative_to(dataset.episode_dir(episode_id)).as_posix()
            check.changes.append(ReleaseChange(episode_id, 'changed', rel, f'{size} bytes then, {got_size} now'
                                               if got_size != size else 'same size, different bytes'))
    check.changes.sort(key=lambda c: (c.episode, c.file))
    return check


def _safe_id(episode_id: str) -> bool:
    return bool(re.fullmatch(r'[A-Za-z0-9][A-Za-z0-9_.-]{0,127}', episode_id)) and '..' not in episode_id


def diff_releases(dataset: Dataset, a: str, b: str) -> ReleaseDiff:
    """Episodes added, removed and changed from release `a` to release `b` (by their files' sha256).

    Raises:
        ReleaseError: either release missing or not a manifest.
    """
    ea, eb = read_release(dataset, a)[0].manifest['episodes'], read_release(dataset, b)[0].manifest['episodes']
    out = ReleaseDiff(a, b, added=sorted(set(eb) - set(ea)), removed=sorted(set(ea) - set(eb)))
    for episode_id in sorted(set(ea) & set(eb)):
        fa, fb = ea[episode_id]['files'], eb[episode_id]['files']
        differ = sorted(f for f in set(fa) | set(fb)
                        if (fa.get(f) or {}).get('sha256') != (fb.get(f) or {}).get('sha256'))
        if differ:
            out.changed[episode_id] = differ
    return out


def list_releases(dataset: Dataset) -> list[Release]:
    """Every release of the dataset, oldest first (a folder that is not one is left out)."""
    root = dataset.root / RELEASES
    out = []
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        if (folder / MANIFEST).is_file() and _NAME.fullmatch(folder.name):
            try:
                out.append(read_release(dataset, folder.name)[0])
            except RobodataError:
                continue
    return sorted(out, key=lambda r: r.manifest.get('created_ns', 0))
