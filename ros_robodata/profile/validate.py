"""How a profile is checked: a small validator that walks the schema's type annotations, and the rules a value
must pass beyond its type. Every problem is an _Invalid naming the dotted key at fault and the reason, which
load_profile turns into one line: FILE: key: reason."""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
import types
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar, Union, cast, get_args, get_origin, get_type_hints

T = TypeVar('T')


class _Invalid(Exception):
    """A value broke a rule; `key` is the dotted key at fault, relative to where it is caught."""

    def __init__(self, reason: str, key: str = '') -> None:
        super().__init__(reason)
        self.reason = reason
        self.key = key


def _join(path: str, key: str) -> str:
    """Dotted key of `key` under `path`; list indexes ('[2]') attach without a dot."""
    if not path or not key:
        return path or key
    return f'{path}{key}' if key.startswith('[') else f'{path}.{key}'


def _rule(check: Callable[[Any], None]) -> dict[str, Any]:
    """Field metadata: the value must pass `check` (each item, for a list; not called on null)."""
    return {'check': check}


# Profile fields that are not read from the file but computed from it.
_DERIVED = {'derived': True}


def _positive(value: float) -> None:
    if value <= 0:
        raise _Invalid(f'must be greater than 0, got {value:g}')


def _non_negative(value: float) -> None:
    if value < 0:
        raise _Invalid(f'must be 0 or more, got {value:g}')


def _fraction(value: float) -> None:
    if not 0 <= value < 1:
        raise _Invalid(f'must be a fraction from 0 up to (not including) 1, got {value:g}')


def _non_blank(value: str) -> None:
    if not value.strip():
        raise _Invalid('must not be empty')


def _file_safe_name(value: str) -> None:
    """Camera and LiDAR names become role names and file names, so keep them plain."""
    if not re.fullmatch(r'[a-z0-9_]+', value):
        raise _Invalid(f'{value!r} is not a valid name: use lowercase letters, digits and _ only')


def topic_name_problem(name: str) -> str | None:
    """Why `name` is not a valid ROS 2 topic name, or None if it is."""
    if not name:
        return 'it is empty'
    if not (name[0] in '/~' or (name[0].isascii() and name[0].isalpha())):
        return "it must start with '/', '~' or a letter"
    bad = sorted(set(re.sub(r'[A-Za-z0-9_/~{}]', '', name)))
    if bad:
        return f'character {bad[0]!r} is not allowed (only letters, digits, _ / ~ {{}})'
    if '//' in name:
        return "it contains '//'"
    if name.endswith('/'):
        return "it ends with '/'"
    if '~' in name[1:]:
        return "'~' is only allowed as the first character"
    if name.startswith('~') and len(name) > 1 and name[1] != '/':
        return "'~' must be followed by '/'"
    if any(token[:1].isdigit() for token in name.split('/')):
        return 'a part of the name starts with a digit'
    if re.search(r'[{}]', re.sub(r'\{[A-Za-z0-9_]+\}', '', name)):
        return "unbalanced '{' or '}'"
    return None


def _topic_name(value: str) -> None:
    problem = topic_name_problem(value)
    if problem:
        raise _Invalid(f'{value!r} is not a valid ROS 2 topic name: {problem}')


def _message_type(value: str) -> None:
    if not re.fullmatch(r'[a-z][a-z0-9_]*/msg/[A-Z][A-Za-z0-9]*', value):
        raise _Invalid(f"expected a message type like 'sensor_msgs/msg/JointState', got {value!r}")


def _show(value: object) -> str:
    """A value as the user wrote it in YAML, short enough for a one-line error."""
    if value is None:
        return 'null'
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, Mapping):
        return 'a mapping'
    if isinstance(value, list):
        return 'a list'
    text = repr(value) if isinstance(value, (str, int, float)) else str(value)
    return text if len(text) <= 60 else text[:57] + '...'


def _is_optional(tp: Any) -> bool:
    return get_origin(tp) in (Union, types.UnionType) and type(None) in get_args(tp)


def _is_container(tp: Any) -> bool:
    return get_origin(tp) is list or dataclasses.is_dataclass(tp)


def _scalar(tp: Any, value: object) -> Any:
    """Check a YAML scalar against a plain type: bool is never a number, float is never an int."""
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Invalid(f'expected a number, got {_show(value)}')
        if not math.isfinite(value):
            raise _Invalid(f'expected a finite number, got {_show(value)}')
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Invalid(f'expected a whole number, got {_show(value)}')
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise _Invalid(f'expected true or false, got {_show(value)}')
        return value
    if tp is str:
        if not isinstance(value, str):
            raise _Invalid(f'expected a string, got {_show(value)}')
        return value
    raise TypeError(f'profile schema uses an unsupported type: {tp!r}')


def _convert(tp: Any, value: object, key: str, check: Callable[[Any], None] | None) -> Any:
    """Value checked against annotation `tp` (and `check`), with nested mappings built."""
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        inner = [arg for arg in get_args(tp) if arg is not type(None)]
        if len(inner) != 1:
            raise TypeError(f'profile schema supports only `X | None` unions, not {tp!r}')
        if value is None and _is_optional(tp):
            return None
        return _convert(inner[0], value, key, check)
    if origin is list:
        if not isinstance(value, list):
            raise _Invalid(f'expected a list, got {_show(value)}', key)
        (item_tp,) = get_args(tp)
        return [_convert(item_tp, item, f'{key}[{i}]', check) for i, item in enumerate(value)]
    if origin is Literal:
        allowed = get_args(tp)
        if not isinstance(value, str) or value not in allowed:
            choices = ', '.join(repr(a) for a in allowed)
            raise _Invalid(f'expected one of {choices}, got {_show(value)}', key)
        result: Any = value
    elif dataclasses.is_dataclass(tp):
        result = _build(cast('type[Any]', tp), value, key)  # an annotation: the dataclass, never an instance
    else:
        result = _at(key, _scalar, tp, value)
    if check is not None:
        _at(key, check, result)
    return result


def _at(key: str, fn: Callable[..., T], *args: Any) -> T:
    """Call `fn`; an _Invalid it raises gets `key` put in front of its own key."""
    try:
        return fn(*args)
    except _Invalid as exc:
        raise _Invalid(exc.reason, _join(key, exc.key)) from None


def _fields(cls: type, data: object, path: str) -> dict[str, Any]:
    """Keyword arguments for `cls` from a mapping, with unknown, missing and mistyped keys refused."""
    schema = {f.name: f for f in dataclasses.fields(cls) if not f.metadata.get('derived')}
    if not isinstance(data, Mapping):
        raise _Invalid(f'expected a mapping with keys {", ".join(schema)}; got {_show(data)}', path)
    for key in data:
        if not isinstance(key, str):
            raise _Invalid(f'keys must be strings, got {_show(key)}', path)
        if key not in schema:
            close = difflib.get_close_matches(key, list(schema), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ''
            raise _Invalid(f'unknown key{hint}; allowed: {", ".join(schema)}', _join(path, key))
    hints = get_type_hints(cls)
    values: dict[str, Any] = {}
    for name, f in schema.items():
        key = _join(path, name)
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        if name not in data:
            if not has_default:
                raise _Invalid('required key is missing', key)
            continue
        value = data[name]
        if value is None and has_default and _is_container(hints[name]):
            continue  # a section or list left empty (all entries commented out) keeps its default
        values[name] = _convert(hints[name], value, key, f.metadata.get('check'))
    return values


def _build(cls: type[T], data: object, path: str) -> T:
    obj = cls(**_fields(cls, data, path))
    validate = getattr(obj, '_validate', None)
    if validate is not None:
        _at(path, validate)
    return obj


def _no_repeats(key: str, values: list[str], what: str, suffix: str = '') -> None:
    seen: set[str] = set()
    for i, value in enumerate(values):
        if value in seen:
            raise _Invalid(f'{what} {value!r} is listed twice', f'{key}[{i}]{suffix}')
        seen.add(value)
