"""Reading YAML and JSON that a person or another tool wrote, without trusting it.

A dataset's files, a bag's metadata.yaml, a profile or a taxonomy may be damaged, edited by hand or hostile. Before
a parser builds anything, the file must be a regular file of a sane size and UTF-8 text; a YAML document must not
nest deeper than any of ours does, nor expand through aliases beyond what a real file holds (an alias bomb builds
a small graph that every walk over it expands exponentially), nor hold integers no field needs. Each refusal is one
line naming the file. PyYAML's own loaders do the rest (safe ones only: no objects).
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

from ros_robodata.errors import RobodataError

MAX_BYTES = 64 * 1024 * 1024  # no dataset, profile or sidecar file of ours comes near it
MAX_DEPTH = 64  # ours nest 6 levels at most
MAX_EXPANDED_NODES = 200_000  # what a document's aliases may expand it to (a 10-level alias bomb: 10**10)
MAX_INT_DIGITS = 19  # 2**63 has 19 digits: every integer a field of ours needs fits
_INT = re.compile(r'^[-+]?(0|[1-9][0-9_]*|0x[0-9a-fA-F_]+|0o[0-7_]+|0b[01_]+)$')
_LOADER = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)


def read_text(path: Path, error: type[RobodataError] = RobodataError, *, max_bytes: int = MAX_BYTES) -> str:
    """The UTF-8 text of a regular file, or one `error` line saying why not (missing, a FIFO or a device, a
    directory, too large, not UTF-8, unreadable)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise error(f'{path}: missing') from None
    except OSError as err:
        raise error(f'{path}: unreadable: {err.strerror or err}') from None
    if stat.S_ISDIR(info.st_mode):
        raise error(f'{path}: is a directory, expected a file') from None
    if not stat.S_ISREG(info.st_mode):  # a FIFO would block the read forever, a device never end
        raise error(f'{path}: not a regular file (a FIFO, socket or device): refusing to read it') from None
    if info.st_size > max_bytes:
        raise error(f'{path}: {info.st_size:,} bytes: larger than any such file can be ({max_bytes:,} at most)')
    try:
        with open(path, 'rb') as f:
            data = f.read(max_bytes + 1)
    except OSError as err:
        raise error(f'{path}: unreadable: {err.strerror or err}') from None
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError as err:
        raise error(f'{path}: unreadable: not UTF-8 text (bad byte at offset {err.start})') from None


def check_yaml(text: str, where: str | Path, error: type[RobodataError] = RobodataError,
               loader: type = _LOADER) -> None:
    """Refuse a YAML document that nests too deep, expands through aliases beyond MAX_EXPANDED_NODES, or holds an
    integer longer than MAX_INT_DIGITS; syntax errors are left to the loader that follows (it words them)."""
    depth = aliases = 0
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise error(f'{where}: nested deeper than {MAX_DEPTH} levels: not a file of this kind')
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
            elif isinstance(event, yaml.AliasEvent):
                aliases += 1
            elif (isinstance(event, yaml.ScalarEvent) and event.implicit[0] and _INT.match(event.value)
                  and len(event.value.lstrip('+-').replace('_', '')) > MAX_INT_DIGITS):
                line = event.start_mark.line + 1 if event.start_mark else '?'
                raise error(f'{where}: line {line}: the number {event.value[:20]}... has more digits than any '
                            'value here can hold')
    except yaml.YAMLError:
        return  # the real load reports it, with its position
    if aliases:
        _check_expansion(text, where, error, loader)


def _check_expansion(text: str, where: str | Path, error: type[RobodataError], loader: type) -> None:
    """Count the nodes the document stands for once its aliases are expanded, without expanding them: every node
    is counted once from its children's counts (the composed graph shares aliased nodes)."""
    composer = loader(text)
    try:
        root = composer.get_single_node()
    except yaml.YAMLError:
        return
    finally:
        composer.dispose()
    if root is None:
        return
    size: dict[int, int] = {}
    open_: set[int] = set()  # the nodes whose children are being counted: the path from the root
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in size:
            continue
        children = _children(node)
        if children_done or not children:
            open_.discard(id(node))
            total = 1 + sum(size[id(child)] for child in children)
            if total > MAX_EXPANDED_NODES:
                raise error(f'{where}: its aliases expand it to over {MAX_EXPANDED_NODES:,} values (an alias '
                            'bomb?): not a file of this kind')
            size[id(node)] = total
            continue
        if any(id(child) in open_ or child is node for child in children):  # `a: &a [*a]` contains itself
            raise error(f'{where}: an alias refers to a value that contains it (a recursive alias): not a file of '
                        'this kind')
        open_.add(id(node))
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in size)


def _children(node: Any) -> list[Any]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [item for pair in node.value for item in pair]
    return []


def read_yaml(path: Path, error: type[RobodataError] = RobodataError) -> Any:
    """A YAML file through every check above and the safe loader; one `error` line for anything wrong."""
    text = read_text(path, error)
    check_yaml(text, path, error)
    try:
        return yaml.load(text, Loader=_LOADER)
    except (yaml.YAMLError, ValueError, RecursionError) as err:
        raise error(f'{path}: unreadable: {" ".join(str(err).split())[:300]}') from None


def read_json(path: Path, error: type[RobodataError] = RobodataError) -> Any:
    """A JSON file (a sidecar, a manifest) as data; one `error` line when it is not readable JSON (too deep, too
    large a number, cut short)."""
    text = read_text(path, error)
    try:
        return json.loads(text)
    except RecursionError:
        raise error(f'{path}: unreadable: nested too deep to be a file of this kind') from None
    except ValueError as err:  # JSONDecodeError, and an integer over Python's 4300-digit limit
        raise error(f'{path}: unreadable: not valid JSON ({" ".join(str(err).split())[:200]})') from None
