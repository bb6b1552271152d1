"""The project's class taxonomy: one YAML file that every labeling export takes its classes from.

Label Studio, CVAT and COCO each want the class list in their own shape; keeping one checked source
(`config/taxonomy.yaml`) means the three never drift apart, and a typo (a duplicate class, a color
that is not #rrggbb, a label kind no tool knows) stops the export with one line naming the file,
the entry and the reason instead of surfacing later as a broken labeling project.

File format::

    version: 1
    name: my_taxonomy
    classes:
      - name: manipulation/grasp        # slash path; parents ('manipulation') are implied
        id: 2                           # optional stable integer >= 1 (COCO category id)
        color: '#e6194b'                # optional; derived from the path when missing
        description: fingers closing on the object
        kinds: [temporal, tag]          # bbox, polygon, keypoints, temporal, tag; [] = group only
        keypoints: [tip_left, tip_right] # optional, for kind keypoints (COCO keypoint names)
        skeleton: [[1, 2]]              # optional, 1-based pairs of keypoints (COCO skeleton)
        attributes:                     # optional context a label of it carries (see below)
          - name: gaze
            values: [eye_contact, looking_away]
            default: eye_contact        # optional; the first value unless given
            description: where the participant looks

Classes are hierarchical by their slash path. A child may be listed without its parent: the parent
is implied. A listed class with no kinds is a group heading, never offered as a label.

COCO rendering (the hierarchy rendered as COCO supercategory where COCO can hold it): COCO has one
level of supercategory, so a class `a/b/c` becomes a category with supercategory `a` (its first
segment; a one-segment class is its own supercategory, as COCO's 'person' is) and name `c` (its
last segment) when no other class in the taxonomy ends in the same segment, else the whole path
joined with '.' (`a.b.c`). Segments cannot contain '.', so the names stay unique. Only classes with
a spatial kind (bbox, polygon, keypoints) become COCO categories: COCO has no place for temporal
segments or image tags. Ids: explicit ids are kept; classes without one are numbered after the
largest explicit id, in file order, so give ids to classes whose numbers must never change.

Attributes are the context of a label (a smile with eye contact is not a smile looking away): each is one choice
among its `values`, set per label (per region in Label Studio, a mutable select in CVAT, so it may change along a
span or a track). A class carries its own attributes and those of its listed ancestors (an attribute on
`hri/expression` applies to every expression; a child's attribute of the same name replaces its ancestor's).
Optional: a taxonomy without attributes reads and exports as before.
"""

from __future__ import annotations

import colorsys
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ros_robodata import untrusted
from ros_robodata.errors import TaxonomyError

KINDS = ('bbox', 'polygon', 'keypoints', 'temporal', 'tag')
SPATIAL_KINDS = ('bbox', 'polygon', 'keypoints')
FORMAT_VERSION = 1

_SEGMENT = re.compile(r'[A-Za-z0-9][A-Za-z0-9_-]*')
_COLOR = re.compile(r'#[0-9a-fA-F]{6}')
_ENTRY_KEYS = ('name', 'id', 'color', 'description', 'kinds', 'keypoints', 'skeleton', 'attributes')
_ATTRIBUTE_KEYS = ('name', 'values', 'default', 'description')


@dataclass(frozen=True)
class TaxonomyAttribute:
    """A label's context: one of `values`, `default` unless the annotator says otherwise."""

    name: str
    values: tuple[str, ...]
    default: str
    description: str = ''
_TOP_KEYS = ('version', 'name', 'classes')


@dataclass(frozen=True)
class TaxonomyClass:
    """One class: its slash path, stable id, display color and the label kinds it takes."""

    path: str
    id: int
    color: str
    description: str = ''
    kinds: tuple[str, ...] = ()
    keypoints: tuple[str, ...] = ()
    skeleton: tuple[tuple[int, int], ...] = ()
    attributes: tuple[TaxonomyAttribute, ...] = ()  # its own; `Taxonomy.attributes_of` adds its ancestors'

    @property
    def segments(self) -> tuple[str, ...]:
        """The path split on '/', so callers need not re-parse it."""
        return tuple(self.path.split('/'))

    @property
    def name(self) -> str:
        """Last path segment: what a human calls the class."""
        return self.segments[-1]

    @property
    def parent(self) -> str | None:
        """Path of the parent class (listed or implied), None at the top."""
        return '/'.join(self.segments[:-1]) or None


@dataclass(frozen=True)
class Taxonomy:
    """The checked class list, in file order, with the renderings the export tools need."""

    name: str
    classes: tuple[TaxonomyClass, ...]
    source: str = '<memory>'
    _by_path: dict[str, TaxonomyClass] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._by_path.update((c.path, c) for c in self.classes)

    def __contains__(self, path: object) -> bool:
        return path in self._by_path

    def get(self, path: str) -> TaxonomyClass:
        """The class at `path`; a TaxonomyError names the taxonomy when it has none."""
        try:
            return self._by_path[path]
        except KeyError:
            raise TaxonomyError(f'{self.source}: no class {path!r}') from None

    def attributes_of(self, path: str) -> tuple[TaxonomyAttribute, ...]:
        """The attributes a label of `path` carries: its listed ancestors' (outermost first), then its own; a
        nearer one replaces an outer one of the same name."""
        cls = self.get(path)
        chain = ['/'.join(cls.segments[:depth]) for depth in range(1, len(cls.segments))]
        found: dict[str, TaxonomyAttribute] = {}
        for ancestor in chain:
            if ancestor in self._by_path:
                found.update((a.name, a) for a in self._by_path[ancestor].attributes)
        found.update((a.name, a) for a in cls.attributes)
        return tuple(found.values())

    def parents(self) -> list[str]:
        """Every ancestor path (listed or implied), in first-seen order, for tools that show a tree."""
        seen: dict[str, None] = {}
        for cls in self.classes:
            for depth in range(1, len(cls.segments)):
                seen.setdefault('/'.join(cls.segments[:depth]))
        return list(seen)

    def leaves(self) -> list[TaxonomyClass]:
        """Listed classes that no other listed class descends from."""
        inner = set(self.parents())
        return [c for c in self.classes if c.path not in inner]

    def with_kind(self, kind: str) -> list[TaxonomyClass]:
        """Classes offered for one label kind, in file order."""
        if kind not in KINDS:
            raise TaxonomyError(f'{self.source}: unknown label kind {kind!r} (expected one of {", ".join(KINDS)})')
        return [c for c in self.classes if kind in c.kinds]

    def coco_name(self, path: str) -> str:
        """COCO category name of `path`: last segment if no other class ends in it, else the dotted path."""
        cls = self.get(path)
        clashes = sum(1 for other in self.classes if other.name == cls.name)
        return cls.name if clashes == 1 else '.'.join(cls.segments)

    def coco_category(self, path: str) -> dict[str, Any]:
        """COCO category dict of `path` (id, name, supercategory; keypoints and skeleton when declared)."""
        cls = self.get(path)
        category: dict[str, Any] = {'id': cls.id, 'name': self.coco_name(path), 'supercategory': cls.segments[0]}
        if 'keypoints' in cls.kinds and cls.keypoints:
            category['keypoints'] = list(cls.keypoints)
            category['skeleton'] = [list(pair) for pair in cls.skeleton]
        return category

    def coco_categories(self) -> list[dict[str, Any]]:
        """Categories of every class with a spatial kind, in file order: what COCO can hold."""
        return [self.coco_category(c.path) for c in self.classes if any(k in c.kinds for k in SPATIAL_KINDS)]


def default_color(path: str) -> str:
    """A stable, readable color for a class without one, so reruns and tools agree."""
    digest = hashlib.sha256(path.encode()).digest()
    hue = int.from_bytes(digest[:2], 'big') / 65536.0
    r, g, b = colorsys.hls_to_rgb(hue, 0.5, 0.75)
    return f'#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}'


# -- loading -----------------------------------------------------------------------------------


class _DuplicateKey(Exception):
    """A mapping in the YAML repeats a key (PyYAML would silently keep the last one)."""


class _StrictLoader(getattr(yaml, 'CSafeLoader', yaml.SafeLoader)):  # type: ignore[misc]
    """The safe loader (libyaml's: a taxonomy may list tens of thousands of classes) refusing duplicate keys."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            raise _DuplicateKey(f'line {key_node.start_mark.line + 1}: duplicate key {key!r}')
        seen.add(key)
    return yaml.constructor.SafeConstructor.construct_mapping(loader, node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_taxonomy(path: str | Path) -> Taxonomy:
    """Read and check a taxonomy file; any problem is one TaxonomyError line naming file and entry."""
    path = Path(path)
    text = untrusted.read_text(path, TaxonomyError)
    untrusted.check_yaml(text, path, TaxonomyError, _StrictLoader)
    try:
        data = yaml.load(text, Loader=_StrictLoader)
    except _DuplicateKey as exc:
        raise TaxonomyError(f'{path}: {exc}') from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, 'problem_mark', None)
        where = f'line {mark.line + 1}: ' if mark is not None else ''
        problem = getattr(exc, 'problem', None) or 'not valid YAML'
        raise TaxonomyError(f'{path}: {where}{problem}') from None
    return parse_taxonomy(data, source=str(path))


def parse_taxonomy(data: Any, *, source: str = '<memory>') -> Taxonomy:
    """Check an already-parsed taxonomy document (the YAML's top-level mapping)."""
    if not isinstance(data, Mapping):
        raise TaxonomyError(f'{source}: expected a mapping with version, name and classes')
    unknown = [k for k in data if k not in _TOP_KEYS]
    if unknown:
        raise TaxonomyError(f'{source}: unknown key {unknown[0]!r} (expected {", ".join(_TOP_KEYS)})')
    if data.get('version', FORMAT_VERSION) != FORMAT_VERSION:
        raise TaxonomyError(f'{source}: version {data.get("version")!r} is not supported (expected {FORMAT_VERSION})')
    name = data.get('name', Path(source).stem)
    if not isinstance(name, str) or not name:
        raise TaxonomyError(f'{source}: name must be a non-empty string')
    entries = data.get('classes')
    if not isinstance(entries, list) or not entries:
        raise TaxonomyError(f'{source}: classes must be a non-empty list')

    parsed: list[dict[str, Any]] = []
    seen_paths: dict[str, int] = {}
    seen_ids: dict[int, str] = {}
    for index, entry in enumerate(entries):
        fields = _parse_entry(entry, f'{source}: classes[{index}]')
        where = f'{source}: classes[{index}] {fields["path"]!r}'
        if fields['path'] in seen_paths:
            raise TaxonomyError(f'{where}: duplicate class (first at classes[{seen_paths[fields["path"]]}])')
        seen_paths[fields['path']] = index
        if fields['id'] is not None:
            if fields['id'] in seen_ids:
                raise TaxonomyError(f'{where}: duplicate id {fields["id"]} (also {seen_ids[fields["id"]]!r})')
            seen_ids[fields['id']] = fields['path']
        parsed.append(fields)

    next_id = max(seen_ids, default=0) + 1
    classes: list[TaxonomyClass] = []
    for fields in parsed:
        if fields['id'] is None:
            fields['id'] = next_id
            next_id += 1
        if fields['color'] is None:
            fields['color'] = default_color(fields['path'])
        classes.append(TaxonomyClass(**fields))
    return Taxonomy(name=name, classes=tuple(classes), source=source)


def _parse_entry(entry: Any, where: str) -> dict[str, Any]:
    """One checked class entry as TaxonomyClass keyword arguments (id and color may be None)."""
    if isinstance(entry, str):
        entry = {'name': entry}
    if not isinstance(entry, Mapping):
        raise TaxonomyError(f'{where}: expected a mapping with at least a name')
    raw_path = entry.get('name')
    if not isinstance(raw_path, str):
        raise TaxonomyError(f'{where}: name must be a slash path such as object/cube')
    where = f'{where} {raw_path!r}'
    for key in entry:
        if key not in _ENTRY_KEYS:
            raise TaxonomyError(f'{where}: unknown key {key!r} (expected {", ".join(_ENTRY_KEYS)})')
    segments = raw_path.split('/')
    bad = next((s for s in segments if not _SEGMENT.fullmatch(s)), None)
    if bad is not None:
        raise TaxonomyError(f'{where}: bad path segment {bad!r} (letters, digits, _ and -, separated by /)')

    class_id = entry.get('id')
    if class_id is not None and (isinstance(class_id, bool) or not isinstance(class_id, int) or class_id < 1):
        raise TaxonomyError(f'{where}: id must be an integer >= 1, got {class_id!r}')
    color = entry.get('color')
    if color is not None and (not isinstance(color, str) or not _COLOR.fullmatch(color)):
        raise TaxonomyError(f'{where}: bad color {color!r} (expected #rrggbb)')
    description = entry.get('description', '') or ''
    if not isinstance(description, str):
        raise TaxonomyError(f'{where}: description must be a string')
    kinds = _string_list(entry.get('kinds', []), where, 'kinds')
    for kind in kinds:
        if kind not in KINDS:
            raise TaxonomyError(f'{where}: unknown label kind {kind!r} (expected one of {", ".join(KINDS)})')
    if len(set(kinds)) != len(kinds):
        raise TaxonomyError(f'{where}: kinds lists a kind twice')
    keypoints = _string_list(entry.get('keypoints', []), where, 'keypoints')
    if keypoints and 'keypoints' not in kinds:
        raise TaxonomyError(f'{where}: keypoints are named but kinds has no keypoints')
    if len(set(keypoints)) != len(keypoints):
        raise TaxonomyError(f'{where}: a keypoint name is repeated')
    skeleton = _skeleton(entry.get('skeleton', []), len(keypoints), where)
    attributes = _attributes(entry.get('attributes', []), where)
    return {
        'path': raw_path,
        'id': class_id,
        'color': color.lower() if color else None,
        'description': description.strip(),
        'kinds': tuple(kinds),
        'keypoints': tuple(keypoints),
        'skeleton': skeleton,
        'attributes': attributes,
    }


def _attributes(value: Any, where: str) -> tuple[TaxonomyAttribute, ...]:
    """A class's attributes, or one line naming the attribute and what is wrong with it."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise TaxonomyError(f'{where}: attributes must be a list of {{name, values}}')
    out: list[TaxonomyAttribute] = []
    for k, item in enumerate(value):
        at = f'{where}: attributes[{k}]'
        if not isinstance(item, Mapping) or not isinstance(item.get('name'), str):
            raise TaxonomyError(f'{at}: expected a mapping with a name and values')
        at = f'{at} {item["name"]!r}'
        unknown = [key for key in item if key not in _ATTRIBUTE_KEYS]
        if unknown:
            raise TaxonomyError(f'{at}: unknown key {unknown[0]!r} (expected {", ".join(_ATTRIBUTE_KEYS)})')
        if not _SEGMENT.fullmatch(item['name']):
            raise TaxonomyError(f'{at}: bad name (letters, digits, _ and -)')
        if any(a.name == item['name'] for a in out):
            raise TaxonomyError(f'{at}: listed twice')
        values = _string_list(item.get('values'), at, 'values')
        if not values:
            raise TaxonomyError(f'{at}: values must list at least one value')
        bad = next((v for v in values if not _SEGMENT.fullmatch(v)), None)
        if bad is not None:
            raise TaxonomyError(f'{at}: bad value {bad!r} (letters, digits, _ and -)')
        if len(set(values)) != len(values):
            raise TaxonomyError(f'{at}: a value is repeated')
        default = item.get('default', values[0])
        if default not in values:
            raise TaxonomyError(f'{at}: default {default!r} is not one of its values')
        description = item.get('description', '') or ''
        if not isinstance(description, str):
            raise TaxonomyError(f'{at}: description must be a string')
        out.append(TaxonomyAttribute(item['name'], tuple(values), default, description.strip()))
    return tuple(out)


def _string_list(value: Any, where: str, key: str) -> list[str]:
    """A list of non-empty strings, or a one-line error naming the key."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise TaxonomyError(f'{where}: {key} must be a list of names')
    return list(value)


def _skeleton(value: Any, n_points: int, where: str) -> tuple[tuple[int, int], ...]:
    """COCO skeleton pairs, 1-based indexes into the class's keypoints."""
    if value is None:
        return ()
    pairs: list[tuple[int, int]] = []
    if not isinstance(value, list):
        raise TaxonomyError(f'{where}: skeleton must be a list of [a, b] keypoint numbers')
    for pair in value:
        ok = isinstance(pair, list) and len(pair) == 2 and all(_is_index(v, n_points) for v in pair)
        if not ok:
            raise TaxonomyError(f'{where}: bad skeleton pair {pair!r} (1-based keypoint numbers up to {n_points})')
        pairs.append((pair[0], pair[1]))
    return tuple(pairs)


def _is_index(value: Any, n_points: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= n_points
