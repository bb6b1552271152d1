"""Property tests: every file robodata reads, mutated as damage, hand edits and hostile tools mutate it.

Each loader starts from a valid document that robodata (or a user, for profiles and taxonomies) writes, and
hypothesis changes one thing: a value's type, its depth, an alias that refers to itself, the text's encoding, its
size, a key dropped, bytes cut or inserted. Whatever comes, the loader either returns what it promises (typed as
its schema says) or raises the project's own error for that file, in one line naming the file. Anything else (a
TypeError from deep inside, a hang, a second line) is what a user would meet as a traceback.

The example counts are bounded (`EXAMPLES`) so `make test` stays short; `bench/fuzz_inputs.py` runs the same
classes of damage against the commands at scale.
"""

from __future__ import annotations

import io
import json
import sqlite3
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ros_robodata.bag.reader import BagReader
from ros_robodata.dataset.audit import read_audit
from ros_robodata.dataset.catalog import LIFECYCLE_STATES, Catalog, CatalogRow
from ros_robodata.dataset.dataset import Dataset
from ros_robodata.dataset.episode import Episode, read_episode
from ros_robodata.errors import ProfileError, RobodataError, TaxonomyError, one_line
from ros_robodata.events.offline import read_events_file
from ros_robodata.labeling.taxonomy import Taxonomy, load_taxonomy
from ros_robodata.profile import Profile, load_profile
from ros_robodata.profile.validate import topic_name_problem
from ros_robodata.report.scores import load_scores
from ros_robodata.vocabulary import OUTCOMES, STATUSES

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = 100  # per loader: under a minute for the whole file on 2 cores
PROPERTY = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture(scope='module')
def scored_dataset(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    """Two simulated episodes imported, segmented and scored: every sidecar a dataset holds, as robodata writes
    them."""
    from ros_robodata.cli.main import main
    from ros_robodata.sim.to_bag import write_sim_episode

    work = tmp_path_factory.mktemp('properties')
    profile = load_profile(ROOT / 'config' / 'sim_cell.yaml')
    for seed in (0, 3):
        write_sim_episode(work / 'bags' / f'demo_{seed}', profile, seed=seed, max_duration_s=2.0, cameras=False)
    sink = io.StringIO()
    with redirect_stdout(sink), redirect_stderr(sink):
        for args in (['import', str(work / 'bags'), '--dataset', str(work / 'ds'), '--profile', 'sim_cell.yaml',
                      '--task', 'pick'], ['segment', str(work / 'ds')], ['score', str(work / 'ds')]):
            assert main(args) in (0, 3), sink.getvalue()
    return Dataset.open(work / 'ds')


# -- the damage -------------------------------------------------------------------------------------------------

ODD_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=10**19, max_value=10**40),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=40),
    st.sampled_from(['', 'yes', 'no', '1e400', '-1', 'NaN', '0x10', '~', '12:30:00', '2026-12-06']))
ODD_VALUES = st.recursive(ODD_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                               st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                          max_leaves=12)


def _paths(value: Any, here: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a parsed document a value sits (the root too)."""
    yield here
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*here, key))
    elif isinstance(value, list):
        for index, child in enumerate(value[:6]):  # a few items of a long list are enough
            yield from _paths(child, (*here, index))


def _replace(document: Any, path: tuple[Any, ...], change: Callable[[Any], Any]) -> Any:
    if not path:
        return change(document)
    copy = dict(document) if isinstance(document, dict) else list(document)
    copy[path[0]] = _replace(document[path[0]], path[1:], change)
    return copy


def _dump(document: Any, kind: str) -> str:
    if kind == 'json':
        return json.dumps(document, allow_nan=True)
    return yaml.safe_dump(document, allow_unicode=True, sort_keys=False)


DEEP = 'deeply_nested_value_goes_here'


@st.composite
def damaged(draw: st.DrawFn, valid_text: str, kind: str) -> bytes:
    """One class of damage, drawn, applied to a valid document (`kind` 'yaml' or 'json')."""
    document = yaml.safe_load(valid_text) if kind == 'yaml' else json.loads(valid_text)
    places = list(_paths(document))
    damage = draw(st.sampled_from(['type', 'type', 'depth', 'alias', 'encoding', 'size', 'drop', 'cut', 'insert']))
    if damage == 'type':
        place = draw(st.sampled_from(places))
        return _dump(_replace(document, place, lambda _: draw(ODD_VALUES)), kind).encode()
    if damage == 'depth':  # written as text: a serializer would recurse as deep as the nesting
        place = draw(st.sampled_from(places))
        levels = draw(st.integers(min_value=1, max_value=3000))
        text = _dump(_replace(document, place, lambda _: DEEP), kind)
        return text.replace(f'"{DEEP}"' if kind == 'json' else DEEP, '[' * levels + '1' + ']' * levels, 1).encode()
    if damage == 'alias' and kind == 'yaml':
        form = draw(st.sampled_from(['x: &a [*a]', 'x: &a {k: *a}', 'x: &a [1, [2, *a]]', 'x: &a\n  k: *a',
                                     'x: *undefined', 'x: &a 1\ny: &a 2\nz: *a']))
        return (valid_text + '\n' + form + '\n').encode()
    if damage == 'encoding' or damage == 'alias':
        codec = draw(st.sampled_from(['utf-16', 'utf-32', 'latin-1', 'utf-8-sig', 'cp1252']))
        text = valid_text.replace(':', ': é', 1) if codec in ('latin-1', 'cp1252') else valid_text
        return text.encode(codec, errors='replace')
    if damage == 'size':
        place = draw(st.sampled_from(places))
        times = draw(st.integers(min_value=100, max_value=5_000))
        grow = (lambda v: [v] * times) if draw(st.booleans()) else (lambda v: str(v) * times)
        return _dump(_replace(document, place, grow), kind).encode()
    if damage == 'drop':
        place = draw(st.sampled_from([p for p in places if p] or [()]))
        if not place:
            return b''
        parent = _replace(document, place[:-1], lambda v: v)
        target = parent
        for step in place[:-1]:
            target = target[step]
        del target[place[-1]]
        return _dump(parent, kind).encode()
    raw = valid_text.encode()
    at = draw(st.integers(min_value=0, max_value=len(raw)))
    if damage == 'cut':
        return raw[:at]
    return raw[:at] + draw(st.binary(min_size=1, max_size=16)) + raw[at:]


# -- the judgement ----------------------------------------------------------------------------------------------


@contextmanager
def replaced(path: Path, content: bytes) -> Iterator[None]:
    """`path` holds `content` for the body, its own bytes again after."""
    original = path.read_bytes()
    path.write_bytes(content)
    try:
        yield
    finally:
        path.write_bytes(original)


def refused_in_one_line(err: RobodataError, path: Path, error: type[RobodataError]) -> None:
    message = one_line(err)  # what the command prints
    assert isinstance(err, error), f'{type(err).__name__} where {error.__name__} was expected: {message}'
    assert len(message) < 3000, message
    assert path.name in message, f'the file is not named: {message}'


def _load(loader: Callable[[], Any], path: Path, error: type[RobodataError]) -> Any:
    """The loader's result, or None when it refused in one line as its error; anything else fails the test."""
    sys.setrecursionlimit(1000)  # what Python starts with: the limits are the loaders' own, not the test's
    try:
        return loader()
    except RobodataError as err:
        refused_in_one_line(err, path, error)
        return None


# -- the loaders ------------------------------------------------------------------------------------------------

PROFILE_TEXT = (ROOT / 'config' / 'sim_cell.yaml').read_text()
TAXONOMY_TEXT = (ROOT / 'config' / 'taxonomy.yaml').read_text()


def _typed_profile(profile: Profile) -> None:
    assert isinstance(profile, Profile)
    for key, _role, spec in profile.topics.entries():  # relative names are valid ROS 2 names (a namespace)
        assert isinstance(spec.topic, str) and topic_name_problem(spec.topic) is None, (key, spec.topic)
        assert spec.rate_hz is None or (isinstance(spec.rate_hz, (int, float)) and spec.rate_hz > 0), key


def _typed_taxonomy(taxonomy: Taxonomy) -> None:
    assert isinstance(taxonomy, Taxonomy)
    assert all(isinstance(c.name, str) and isinstance(c.id, int) for c in taxonomy.classes)


# A user's own files: the valid text, how it is read, the error it must refuse damage with, what a read one holds.
USER_FILES = {
    'profile.yaml': (PROFILE_TEXT, load_profile, ProfileError, _typed_profile),
    'taxonomy.yaml': (TAXONOMY_TEXT, load_taxonomy, TaxonomyError, _typed_taxonomy),
}


@pytest.mark.parametrize('name', sorted(USER_FILES))
def test_a_damaged_profile_or_taxonomy_loads_typed_or_is_one_error_of_its_kind(tmp_path, name):
    valid, loader, error, check = USER_FILES[name]
    path = tmp_path / name

    @PROPERTY
    @given(content=damaged(valid, 'yaml'))
    def property_(content: bytes) -> None:
        path.write_bytes(content)
        result = _load(lambda: loader(path), path, error)
        if result is not None:
            check(result)

    property_()


@dataclass(frozen=True)
class DatasetFile:
    """A file inside the scored dataset, the loader that reads it and the error it must refuse damage with."""

    where: Callable[[Dataset], Path]
    kind: str  # 'yaml' or 'json'
    load: Callable[[Dataset, Path], Any]
    error: type[RobodataError]
    check: Callable[[Any], None] = lambda _: None


def _first(dataset: Dataset) -> Path:
    return dataset.episode_dir(dataset.episode_ids()[0])


def _typed_episode(episode: Episode) -> None:
    assert isinstance(episode.id, str) and episode.outcome in OUTCOMES and episode.status in STATUSES
    assert episode.start_ns is None or type(episode.start_ns) is int
    assert isinstance(episode.topics, dict) and all(isinstance(t, dict) for t in episode.topics.values())
    assert isinstance(episode.bag_sha256, dict) and all(isinstance(v, str) for v in episode.bag_sha256.values())


def _read_scores(dataset: Dataset, _path: Path) -> Any:
    return load_scores(Dataset.open(dataset.root, check_catalog=False))


def _read_metadata(_dataset: Dataset, path: Path) -> Any:
    with BagReader(path.parent) as bag:
        return sum(1 for _ in bag.messages())


DATASET_FILES = {
    'episode.yaml': DatasetFile(lambda d: _first(d) / 'episode.yaml', 'yaml',
                                lambda _d, path: read_episode(path), RobodataError, _typed_episode),
    'dataset.yaml': DatasetFile(lambda d: d.root / 'dataset.yaml', 'yaml',  # its profile snapshot is read lazily
                                lambda d, _path: Dataset.open(d.root, check_catalog=False).profile, RobodataError,
                                lambda profile: isinstance(profile, Profile)),
    'metadata.yaml': DatasetFile(lambda d: _first(d) / 'bag' / 'metadata.yaml', 'yaml', _read_metadata,
                                 RobodataError),
    'events.json': DatasetFile(lambda d: _first(d) / 'events.json', 'json',
                               lambda _d, path: read_events_file(path), RobodataError),
    'quality.json': DatasetFile(lambda d: _first(d) / 'quality.json', 'json', _read_scores, RobodataError),
    'quality_summary.json': DatasetFile(lambda d: d.root / 'quality_summary.json', 'json', _read_scores,
                                        RobodataError),
}


@pytest.mark.parametrize('name', sorted(DATASET_FILES))
def test_a_damaged_dataset_file_is_read_typed_or_named_in_one_line(scored_dataset, name):
    spec = DATASET_FILES[name]
    path = spec.where(scored_dataset)
    valid = path.read_text(encoding='utf-8')

    @PROPERTY
    @given(content=damaged(valid, spec.kind))
    def property_(content: bytes) -> None:
        with replaced(path, content):
            result = _load(lambda: spec.load(scored_dataset, path), path, spec.error)
            if result is not None:
                spec.check(result)

    property_()


def test_a_damaged_audit_log_is_read_or_its_line_named(scored_dataset):
    path = scored_dataset.audit_path
    valid = path.read_text(encoding='utf-8')
    line = valid.splitlines()[0]

    @PROPERTY
    @given(content=damaged(line, 'json'), at=st.integers(min_value=0, max_value=3))
    def property_(content: bytes, at: int) -> None:
        lines = valid.encode().splitlines()
        lines.insert(min(at, len(lines)), content)
        with replaced(path, b'\n'.join(lines) + b'\n'):
            entries = _load(lambda: list(read_audit(path)), path, RobodataError)
            if entries is not None:
                assert all(isinstance(entry, dict) for entry in entries)

    property_()


SQLITE_VALUES = st.one_of(st.none(), st.integers(min_value=-2**63, max_value=2**63 - 1),
                          st.floats(allow_nan=False), st.text(max_size=20), st.binary(max_size=8))
COLUMNS = [name for name in CatalogRow.__dataclass_fields__ if name not in ('id', 'state')]  # state: computed


@PROPERTY
@given(column=st.sampled_from(COLUMNS), value=SQLITE_VALUES)
def test_a_catalog_cell_of_any_type_is_read_typed_or_named_in_one_line(scored_dataset, column, value):
    """SQLite keeps any type in any column: every cell a hand edit can make is a typed row or one line."""
    catalog = scored_dataset.root / 'catalog.sqlite'
    with replaced(catalog, catalog.read_bytes()):
        try:
            with sqlite3.connect(catalog) as conn:
                conn.execute(f'UPDATE episodes SET {column} = ?', (value,))
        except sqlite3.IntegrityError:  # NULL in a NOT NULL column: SQLite itself refuses the edit
            assume(False)
        finally:
            conn.close()
        rows = _load(lambda: Catalog(catalog).query(), catalog, RobodataError)
        for row in rows or []:
            for name, want in (('task', str), ('outcome', str), ('message_count', int), ('size_bytes', int),
                               ('scores', dict), ('bag_sha256', dict)):
                assert isinstance(getattr(row, name), want), (name, getattr(row, name))
            for name in ('score', 'duration_s', 'review_priority'):
                assert getattr(row, name) is None or type(getattr(row, name)) is float, (name, getattr(row, name))
            for name in ('start_ns', 'stop_ns', 'review_rank'):
                assert getattr(row, name) is None or type(getattr(row, name)) is int, (name, getattr(row, name))
            assert row.state in LIFECYCLE_STATES, row.state


def test_the_damage_classes_reach_every_loader():
    """The strategies above really make each class: an alias that contains itself, another encoding, a deep
    nesting, a large file (a strategy that never drew them would pass every loader)."""
    seen: set[str] = set()

    @settings(max_examples=200, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(content=damaged(PROFILE_TEXT, 'yaml'))
    def classify(content: bytes) -> None:
        if b'&a [*a]' in content or b'&a {k: *a}' in content:
            seen.add('recursive alias')
        if content[:2] in (b'\xff\xfe', b'\xfe\xff') or content[:3] == b'\xef\xbb\xbf':
            seen.add('encoding')
        if b'[[[[[[[[[[' in content:
            seen.add('depth')
        if len(content) > 3 * len(PROFILE_TEXT):
            seen.add('size')

    classify()
    assert seen == {'recursive alias', 'encoding', 'depth', 'size'}, seen

