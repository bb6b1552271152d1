"""Reading a profile: YAML that refuses a key given twice and reads 1e3 as a number, then the schema's checks;
every problem is one ProfileError line."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ros_robodata import untrusted
from ros_robodata.errors import ProfileError, RobodataError
from ros_robodata.paths import config_path
from ros_robodata.profile.schema import Profile
from ros_robodata.profile.validate import _at, _fields, _Invalid


class _Loader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice (PyYAML keeps the last one silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != 'tag:yaml.org,2002:merge':
                key = self.construct_object(key_node)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f'duplicate key {key!r}', key_node.start_mark
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


# YAML 1.1 reads '1e3' (no dot, or no exponent sign) as a string; users mean a number, as in YAML 1.2.
_Loader.add_implicit_resolver(
    'tag:yaml.org,2002:float',
    re.compile(r'^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$'),
    list('-+0123456789'),
)


def _yaml_problem(exc: yaml.MarkedYAMLError) -> str:
    """'line L, column C: invalid YAML: problem (context, line L0)' on one line."""
    problem = ' '.join(str(exc.problem or exc.context or 'syntax error').split())
    mark = exc.problem_mark or exc.context_mark
    at = f'line {mark.line + 1}, column {mark.column + 1}: ' if mark else ''
    if exc.problem and exc.context and exc.context_mark and exc.context_mark is not mark:
        problem += f' ({" ".join(exc.context.split())}, line {exc.context_mark.line + 1})'
    return f'{at}invalid YAML: {problem}'


def shipped_or_given(path: str | os.PathLike[str]) -> Path:
    """`path`, or the shipped profile it names when it does not exist here: `config/sim_cell.yaml` (as the README
    writes it) or `sim_cell.yaml` outside the clone resolve to the package's own config/, as `robodata sim` does."""
    given = Path(path)
    if given.exists() or given.is_absolute() or given.suffix not in ('.yaml', '.yml'):
        return given
    if len(given.parts) == 1 or (len(given.parts) == 2 and given.parts[0] == 'config'):
        try:
            return config_path(given.name)
        except RobodataError:
            pass
    return given


def load_profile(path: str | os.PathLike[str]) -> Profile:
    """Read and check the profile in `path` (a shipped profile by its name too: `shipped_or_given`); every problem
    is a one-line ProfileError, so a typo in a rig's YAML is found before a recording starts.

    Args:
        path: the profile's YAML file, or the name of a shipped one (sim_cell.yaml).

    Raises:
        ProfileError: the file cannot be read, is not YAML, or is not a valid profile (the key and why named).
    """
    path = shipped_or_given(path)
    where = os.fspath(path)
    text = untrusted.read_text(Path(path), ProfileError)
    untrusted.check_yaml(text, where, ProfileError, _Loader)
    try:
        data = yaml.load(text, Loader=_Loader)  # _Loader is a SafeLoader: no arbitrary objects
    except yaml.MarkedYAMLError as exc:
        raise ProfileError(f'{where}: {_yaml_problem(exc)}') from None
    except (yaml.YAMLError, ValueError) as exc:
        raise ProfileError(f'{where}: invalid YAML: {" ".join(str(exc).split())[:300]}') from None
    if data is None:
        raise ProfileError(f'{where}: the file is empty; expected sections robot, topics, ...')
    return profile_from_dict(data, source=path)


def profile_from_dict(data: Mapping[str, Any], source: str | os.PathLike[str] = '<dict>') -> Profile:
    """Check plain data (parsed YAML, or Profile.to_dict()) and build the Profile from it."""
    try:
        profile = Profile(**_fields(Profile, data, ''), source=Path(source), sha256='')
        _at('', profile._validate)
    except _Invalid as exc:
        where = f'{os.fspath(source)}: {exc.key}' if exc.key else os.fspath(source)
        raise ProfileError(f'{where}: {exc.reason}') from None
    content = profile.to_dict()
    for camera in content['topics']['cameras']:
        if not camera.get('pii'):  # a key added later, at its default: the hash every earlier dataset recorded stays
            camera.pop('pii', None)
        if camera.get('lux_calibration') is None:  # likewise
            camera.pop('lux_calibration', None)
    canonical = json.dumps(content, sort_keys=True, separators=(',', ':'), allow_nan=False)
    return dataclasses.replace(profile, sha256=hashlib.sha256(canonical.encode('utf-8')).hexdigest())
