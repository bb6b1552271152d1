"""Every key a robot profile can hold, with its default and what it means, read from the schema itself (the
dataclasses and the comment above each field), so `robodata profile --defaults` and the code cannot disagree."""

from __future__ import annotations

import dataclasses
import inspect
import re
import typing
from typing import Any

from ros_robodata.profile.schema import Profile

__all__ = ['REQUIRED', 'profile_keys']

REQUIRED = '(required)'
_FIELD = re.compile(r'^\s{4}(\w+)\s*:')


def _comments(cls: type) -> dict[str, str]:
    """The comment lines right above each field of a dataclass's source."""
    out: dict[str, str] = {}
    pending: list[str] = []
    try:
        lines = inspect.getsource(cls).splitlines()
    except (OSError, TypeError):
        return out
    for line in lines:
        stripped = line.strip()
        if stripped.startswith('#'):
            pending.append(stripped.lstrip('#').strip())
            continue
        match = _FIELD.match(line)
        if match and not stripped.startswith(('def ', '@')):
            comment = ' '.join(pending)
            if '#' in line.split(':', 1)[1]:  # a comment after the field on its own line
                comment = (comment + ' ' + line.split('#', 1)[1].strip()).strip()
            out.setdefault(match.group(1), comment)
        pending = []
    return out


def _dataclass_in(tp: Any) -> type | None:
    """The dataclass an annotation holds (X, X | None, list[X]); None for a plain value."""
    if dataclasses.is_dataclass(tp):
        return tp  # type: ignore[return-value]
    for arg in typing.get_args(tp):
        found = _dataclass_in(arg)
        if found is not None:
            return found
    return None


def _default(f: dataclasses.Field[Any]) -> str:
    if f.default is not dataclasses.MISSING:
        return 'null' if f.default is None else repr(f.default).lower() if isinstance(f.default, bool) else \
            str(f.default)
    if f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
        return '[]' if value == [] else '(section)' if dataclasses.is_dataclass(value) else str(value)
    return REQUIRED


def profile_keys(cls: type = Profile, prefix: str = '') -> list[tuple[str, str, str]]:
    """(dotted key, default, what it means) for every key, sections first-to-last as the schema lists them."""
    out: list[tuple[str, str, str]] = []
    hints = typing.get_type_hints(cls)
    comments = _comments(cls)
    for base in cls.__mro__[1:]:
        if dataclasses.is_dataclass(base):
            comments = {**_comments(base), **comments}
    for f in dataclasses.fields(cls):
        if not f.init or f.name in ('source', 'sha256'):
            continue
        key = f'{prefix}{f.name}'
        inner = _dataclass_in(hints[f.name])
        if inner is not None:
            is_list = typing.get_origin(hints[f.name]) is list
            out.append((key + ('[]' if is_list else ''), _default(f), comments.get(f.name, '')
                        or (inner.__doc__ or '').split('\n')[0]))
            out += profile_keys(inner, key + ('[].' if is_list else '.'))
        else:
            out.append((key, _default(f), comments.get(f.name, '')))
    return out
