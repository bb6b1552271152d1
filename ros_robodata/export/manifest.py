"""DIR/manifest.json: every episode's frames.json merged, checked against the JSON schema shipped beside it.

The manifest is rebuilt from the per-episode files on every run, so it never disagrees with them and a
rerun writes the same bytes (no wall-clock time inside).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema

from ros_robodata.errors import RobodataError
from ros_robodata.files import write_json

FORMAT = 'ros_robodata.frames/1'
MANIFEST_FILE = 'manifest.json'
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
