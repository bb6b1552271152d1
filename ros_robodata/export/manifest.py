"""DIR/manifest.json: every episode's frames.json merged, checked against the JSON schema shipped beside it; and
whether an episode exported earlier is still current (its settings and files unchanged).

The manifest is rebuilt from the per-episode files on every run, so it never disagrees with them and a
rerun writes the same bytes (no wall-clock time inside).
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema

from ros_robodata import untrusted
from ros_robodata.dataset.episode import check_episode_id
from ros_robodata.errors import RobodataError
from ros_robodata.files import safe_path, write_json
from ros_robodata.outputs import FRAMES_FORMAT

FORMAT = FRAMES_FORMAT
MANIFEST_FILE = 'manifest.json'
FRAMES_FILE = 'frames.json'  # one per exported episode, written last: its presence means the episode is whole
EPISODE_FORMAT = 'ros_robodata.frames_episode/1'
SCHEMA_FILE = Path(__file__).with_name('manifest.schema.json')


@lru_cache(maxsize=1)
def manifest_schema() -> dict[str, Any]:
    """The shipped schema (draft 2020-12), itself checked once against its metaschema."""
    schema = json.loads(SCHEMA_FILE.read_text(encoding='utf-8'))
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def validate_manifest(data: Any) -> None:
    """RobodataError naming the first offending place (a JSON path) when `data` breaks the schema."""
    validator = jsonschema.Draft202012Validator(manifest_schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        where = '$' + ''.join(f'[{p}]' if isinstance(p, int) else f'.{p}' for p in first.absolute_path)
        more = f' (and {len(errors) - 1} more)' if len(errors) > 1 else ''
        raise RobodataError(f'manifest: {where}: {first.message}{more}')


def build_manifest(dataset: str, settings: dict[str, Any], episodes: list[dict[str, Any]]) -> dict[str, Any]:
    """The manifest from per-episode frames.json documents (sorted by episode id, frames by index)."""
    ordered = sorted(episodes, key=lambda d: d['episode_id'])
    return {
        'format': FORMAT,
        'dataset': dataset,
        'schedule': settings['schedule'],
        'sync': settings['sync'],
        'episodes': [{'episode_id': d['episode_id'], 'task': d.get('task', ''), 'outcome': d.get('outcome', ''),
                      'frames': len(d['frames']), 'unmatched': sum(1 for f in d['frames'] if f['unmatched']),
                      'missing_sensors': list(d.get('missing_sensors', []))}
                     for d in ordered],
        'frames': [frame for d in ordered for frame in sorted(d['frames'], key=lambda f: f['index'])],
    }


def write_json_atomic(path: Path, data: Any) -> None:
    """Whole or not at all: a crash leaves the previous file (or none), never half of one. Left untouched when
    it already holds these bytes, so a rerun changes nothing on disk."""
    write_json(path, data, durable=True)


def write_manifest(out_dir: Path, manifest: dict[str, Any]) -> Path:
    """Validate, then write DIR/manifest.json atomically; an invalid manifest is a bug and is not written."""
    validate_manifest(manifest)
    path = out_dir / MANIFEST_FILE
    write_json_atomic(path, manifest)
    return path


def episode_is_current(episode_dir: Path, settings: dict[str, Any]) -> dict[str, Any] | None:
    """The episode's frames.json when it was written under these settings and every file still matches."""
    try:
        doc = untrusted.read_json(episode_dir / FRAMES_FILE)
    except RobodataError:
        return None
    if not isinstance(doc, dict) or doc.get('format') != EPISODE_FORMAT or doc.get('settings') != settings:
        return None
    root = episode_dir.parent.parent
    try:
        for frame in doc['frames']:
            for entry in frame['sensors'].values():
                if _sha256_of(safe_path(root, *entry['file'].split('/'))) != entry['sha256']:
                    return None
    except (KeyError, TypeError, AttributeError, RobodataError):
        return None
    return doc


def refresh_manifest(out: Path, dataset: str, settings: dict[str, Any], docs: dict[str, dict[str, Any]] | None = None,
                     *, skip: set[str] | None = None) -> dict[str, Any]:
    """manifest.json from `docs` plus every episode exported into DIR earlier under the same settings."""
    docs = dict(docs or {})
    for folder in sorted((out / 'episodes').iterdir()) if (out / 'episodes').is_dir() else []:
        if folder.name in docs or folder.name in (skip or set()) or not folder.is_dir():
            continue
        try:
            check_episode_id(folder.name)
        except RobodataError:
            continue
        earlier = episode_is_current(folder, settings)
        if earlier is not None:
            docs[folder.name] = earlier
    manifest = build_manifest(dataset, settings, list(docs.values()))
    write_manifest(out, manifest)
    return manifest


def _sha256_of(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None
