"""`--where`: the episodes a query picks from a real dataset (exactly those), the one line a query that does not
parse gives (with the column it stopped at), hostile text that never becomes SQL, and the commands that take it."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ros_robodata.cli.main import main
from ros_robodata.dataset import Dataset
from ros_robodata.dataset.episode_query import MAX_DEPTH, MAX_LENGTH, MAX_SQL_NESTING, compile_query
from ros_robodata.dataset.targets import Filters, Target, select_rows, why_none
from ros_robodata.errors import DatasetError, RobodataError
from ros_robodata.profile import load_profile
from test.conftest import SIM_CELL_PROFILE, _record_demo_episode

INJECTED_TASK = "x' OR '1'='1"

# id: (task, operator, mode, outcome, status, joint messages, score, reviewed verdict)
EPISODES = {
    'ep_a': ('pick_cube', 'ana', 'teleop', 'success', 'complete', 50, 0.95, ''),
    'ep_b': ('pick_cube', 'ben', 'teleop', 'failure', 'complete', 50, 0.4, 'failure'),
    'ep_c': ('stack cups', 'ana', 'kinesthetic', 'recovery', 'complete', 50, 0.75, ''),
    'ep_d': ('pick_cube', 'ana', 'teleop', 'success', 'complete', 200, None, ''),
    'ep_e': ('stack', 'ana', 'teleop', 'unknown', 'discarded', 50, 0.1, ''),
    'ep_f': ("it's", 'cleo', 'teleop', 'success', 'interrupted', 50, 0.85, 'success'),
    'ep_g': (INJECTED_TASK, 'ana', 'teleop', 'failure', 'complete', 50, 0.5, ''),
}


def _build(root: Path) -> Dataset:
    dataset = Dataset.create(root, name='queries', profile=load_profile(SIM_CELL_PROFILE))
    for episode_id, (task, operator, mode, outcome, status, messages, score, verdict) in EPISODES.items():
        _record_demo_episode(dataset, episode_id=episode_id, task=task, operator=operator, mode=mode,
                             outcome=outcome, status=status, joint_messages=messages)
        if score is not None:
            dataset.catalog.set_scores(episode_id, score, {})
        if verdict:
            dataset.catalog.set_reviewed_outcome(episode_id, verdict)
    dataset.catalog.set_review({'ep_c': (1, 0.9, 'low score'), 'ep_b': (2, 0.5, 'failure')}, {})
    return dataset


@pytest.fixture(scope='module')
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    """Seven episodes, read by every test of this module and changed by none."""
    return _build(tmp_path_factory.mktemp('queries') / 'ds')


def picked(dataset: Dataset, where: str, **filters: str) -> list[str]:
    return [row.id for row in select_rows(dataset, Filters(where=where, **filters))]


def catalog_dump(dataset: Dataset) -> list[str]:
    with sqlite3.connect(dataset.catalog.path) as conn:
        return list(conn.iterdump())


def run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(('where', 'expected'), [
    ('outcome = success', 'a d f'),
    ('outcome == success', 'a d f'),
    ('outcome != success', 'b c g'),  # ep_e (unknown) is discarded: hidden
    ('score < 0.8', 'b c g'),
    ('score <= 0.5', 'b g'),
    ('score > 0.85', 'a'),
    ('score >= 0.85', 'a f'),
    ('score = 0.4', 'b'),
    ('score != 0.4', 'a c d f g'),  # ep_d has no score: it is not 0.4
    ('not score < 0.8', 'a d f'),  # nor is it below 0.8
    ('score is empty', 'd'),
    ('score is not empty and outcome = success', 'a f'),
    ("task = 'stack cups'", 'c'),
    ('task = "it\'s"', 'f'),
    ("task = 'it''s'", 'f'),
    ('task in (pick_cube, "stack cups")', 'a b c d'),
    ('task not in (pick_cube)', 'c f g'),
    ('operator = ben or mode = kinesthetic', 'b c'),
    ('(outcome = success or outcome = recovery) and score > 0.8', 'a f'),
    ('outcome = success or outcome = recovery and score > 0.8', 'a d f'),  # and binds tighter than or
    ('not (task = pick_cube) and not outcome = failure', 'c f'),
    ('not not task = pick_cube', 'a b d'),
    ('OUTCOME = success AND Score > 0.9', 'a'),
    ('duration > 0.2', 'd'),
    ('duration_s < 200ms', 'a b c f g'),
    ('messages > 100', 'd'),
    ('message_count = 52 and size_bytes > 0', 'a b c f g'),
    ('reviewed = failure', 'b'),
    ('reviewed_outcome is not empty', 'b f'),
    ('review_rank = 1', 'c'),
    ('review_rank <= 2', 'b c'),
    ('review_rank is empty and outcome = success', 'a d f'),
    ('status = interrupted', 'f'),
    ('status = discarded', 'e'),  # naming discarded shows it
    ('status in (complete, discarded) and task = stack', 'e'),
    ('status != complete', 'f'),  # does not name discarded: ep_e stays hidden
    ('status != discarded', 'a b c d f g'),
    ('id >= ep_d', 'd f g'),  # ids compare alphabetically
    ('episode = ep_c', 'c'),
    ('robot = sim_cell_arm and start_ns = 1700000000000000000', 'a b c d f g'),
    ('start_ns >= 2023-11-14 and stop_ns < 2023-11-15T00:00:00Z', 'a b c d f g'),
    ('start_ns < 2023-11-14', ''),
    ('start_ns < 2300-01-01 and start_ns > 0001-01-01T00:00:00+14:00', 'a b c d f g'),  # past 64-bit integers
    ('messages < 99999999999999999999999 and size_bytes > -99999999999999999999', 'a b c d f g'),
    ('source_id is empty', 'a b c d f g'),
    (f'task = "{INJECTED_TASK}"', 'g'),  # the text is a value, matched as it is written
    ("task = 'x'' OR ''1''=''1'", 'g'),
    ('task = -1 or score = -1', ''),
])
def test_each_construct_picks_exactly_the_expected_episodes(dataset: Dataset, where: str, expected: str) -> None:
    assert picked(dataset, where) == [f'ep_{x}' for x in expected.split()]


def test_where_adds_to_the_other_filters(dataset: Dataset) -> None:
    assert picked(dataset, 'score < 0.9', task='pick_cube') == ['ep_b']
    assert picked(dataset, 'score < 0.9', status='discarded') == ['ep_e']
    assert picked(dataset, 'task = stack', outcome='unknown') == []  # ep_e, discarded: hidden as without --where
    assert [r.id for r in dataset.list(where='score > 0.9')] == ['ep_a']  # the Python API takes it too


@pytest.mark.parametrize(('where', 'column', 'said'), [
    ('scroe < 0.8', 1, "no field 'scroe' (did you mean score?): the fields are id, task, operator"),
    ('task = pick and outcom = success', 17, "no field 'outcom' (did you mean outcome?)"),
    ('outcome = great', 11, "outcome 'great' is not one of success, failure, recovery, unknown"),
    ('status = done', 10, "status 'done' is not one of recording, complete"),
    ('mode = remote', 8, "mode 'remote' is not one of teleop"),
    ('reviewed = maybe', 12, "reviewed 'maybe' is not one of success, failure, recovery, unusable, disputed"),
    ('outcome < success', 9, 'outcome is a label: compare it with =, !=, in or is empty, not <'),
    ('score < high', 9, "score takes a number, not 'high'"),
    ('duration > long', 12, "duration takes a number of seconds or a duration (30s, 2min), not 'long'"),
    ('start_ns > yesterday', 12, 'start_ns takes a number (ns since the epoch) or a time'),
    ('score < 1e999', 9, "'1e999' is too large a number"),
    ('task = pick cube', 13, "expected and, or or the end of the query, found 'cube' (text with spaces is quoted"),
    ('(score < 0.8', 13, "expected ')' to close the '(' at column 1, found the end of the query"),
    ('score < 0.8)', 12, "')' closes no '('"),
    ('score <> 1', 7, "'<>' is written != here"),
    ('score ! 1', 7, "'!' alone is no comparison"),
    ('task = "pick', 8, 'the text opened with " here is never closed'),
    ('task =', 7, "expected a value after 'task =', found the end of the query"),
    ('task = in', 8, "expected a value after 'task =', found 'in' (quote a value that is a keyword"),
    ('task in pick', 9, "expected '(' after in, found 'pick'"),
    ('task in (a b)', 12, "expected ',' or ')' in the list of task values, found 'b'"),
    ('task not pick', 10, "expected in after 'task not', found 'pick'"),
    ('score is nothing', 10, "expected empty after 'score is', found 'nothing'"),
    ('score', 6, 'expected = != < <= > >=, in or is empty after score, found the end of the query'),
    ('0.8 > score', 1, "expected a field (id, task, operator"),
    ('and task = x', 1, "expected a field (id, task, operator"),
    ('task = x\n; y', 10, "';' has no meaning in a query"),
])
def test_a_query_that_does_not_parse_is_one_line_naming_the_column(where: str, column: int, said: str) -> None:
    with pytest.raises(RobodataError) as caught:
        Filters(where=where)  # before any work: the filters are made first
    message = str(caught.value)
    assert '\n' not in message
    assert message.startswith(f"--where {where.replace(chr(10), ' ')!r}: column {column}: ")
    assert said in message


@pytest.mark.parametrize(('where', 'said'), [
    ('', "--where: empty: give a condition such as 'score < 0.8 and outcome = success'"),
    ('   ', '--where: empty'),
    ('task = ' + 'x' * MAX_LENGTH, f'characters, more than {MAX_LENGTH:,}'),
    ('(' * 5000, 'characters, more than'),
    ('(' * (MAX_DEPTH + 1) + 'score < 1' + ')' * (MAX_DEPTH + 1),
     f"column {MAX_DEPTH + 1} (at '(score < 1{')' * 10}'): nested deeper than {MAX_DEPTH} (parentheses and not)"),
    ('not ' * 40 + 'score < 1', f'nest more than {MAX_SQL_NESTING} levels'),
    ('task = "a\x00b"', 'the quoted text holds a control character'),
    ('task = \udcff', 'not text (a lone surrogate character)'),
])
def test_empty_huge_deep_and_hostile_text_is_one_line(where: str, said: str) -> None:
    with pytest.raises(RobodataError) as caught:
        compile_query(where)
    assert '\n' not in str(caught.value) and said in str(caught.value)


def test_nesting_up_to_the_limit_works(dataset: Dataset) -> None:
    deep = '(' * MAX_DEPTH + 'score > 0.9' + ')' * MAX_DEPTH
    assert picked(dataset, deep) == ['ep_a']
    odd = 'not ' * (MAX_SQL_NESTING - 1) + 'score > 0.9'  # each not nests its condition once more in the SQL
    assert picked(dataset, odd) == ['ep_b', 'ep_c', 'ep_d', 'ep_f', 'ep_g']
    assert picked(dataset, ' or '.join(['id = ep_a'] * 150)) == ['ep_a']  # a long flat query is fine too


@pytest.mark.parametrize('opener', ['(', 'not (', 'id = ep_a or (', 'id = ep_a and not (', 'not (id = ep_b or ',
                                    'id = ep_a and (id = ep_b or not (', 'id = ep_a and (id = ep_b or (('])
def test_the_deepest_query_accepted_runs_and_one_deeper_is_one_line(dataset: Dataset, opener: str) -> None:
    """The shapes that fill SQLite's parser stack fastest: the deepest accepted runs on the catalog (no "parser
    stack overflow"), the next is refused in one line."""
    def nested(n: int) -> str:
        return opener * n + 'score not in (1, 2) and task is not empty' + ')' * (opener.count('(') * n)

    n = 1
    while True:
        try:
            rows = picked(dataset, nested(n))
        except RobodataError as err:
            assert '\n' not in str(err) and 'nested' in str(err)
            break
        assert set(rows) <= set(EPISODES)
        n += 1
    assert opener.count('(') * (n - 1) >= 10  # parentheses, far past what anyone writes


@pytest.mark.parametrize(('where', 'said'), [
    ('1=1; DROP TABLE episodes', "--where '1=1; DROP TABLE episodes': column 4: ';' has no meaning in a query"),
    ('score < 0.8 or 1=1 --', "--where 'score < 0.8 or 1=1 --': column 16: expected a field (id, task"),
    ('id; DROP', "--where 'id; DROP': column 3: ';' has no meaning in a query"),
    ('task = x; DELETE FROM episodes', 'column 9: \';\' has no meaning'),
    ("task = '' or 1 = 1", "column 14: expected a field"),
    ('score < 1 union select id from meta', "column 11: expected and, or or the end of the query, found 'union'"),
    ('task = x /* comment */', "column 11: '*' has no meaning in a query"),
    ('status = complete) or (1 = 1', "column 18: ')' closes no '('"),
    ('"id" = ep_a', "column 1: expected a field (id, task"),
    ('sqlite_master = x', "column 1: no field 'sqlite_master'"),
])
def test_sql_is_refused_in_one_line_and_the_catalog_is_unchanged(
        dataset: Dataset, capsys: pytest.CaptureFixture[str], where: str, said: str) -> None:
    before = catalog_dump(dataset)
    code, out, err = run(capsys, 'list', dataset.root, '--where', where)
    assert code == 1 and out == ''
    assert err.count('\n') == 1 and err.startswith('robodata list: error: --where ')
    assert said in err
    assert catalog_dump(dataset) == before
    assert len(dataset.list()) == len(EPISODES)


def test_injected_quotes_are_a_literal_match(dataset: Dataset, capsys: pytest.CaptureFixture[str]) -> None:
    before = catalog_dump(dataset)
    for where in (f'task = "{INJECTED_TASK}"', "task = 'x'' OR ''1''=''1'"):
        code, out, _ = run(capsys, 'list', dataset.root, '--where', where, '--json')
        assert code == 0
        assert [row['id'] for row in json.loads(out)] == ['ep_g']
    code, out, _ = run(capsys, 'list', dataset.root, '--where', "task = 'x' OR '1'='1'", '--json')
    assert code == 1 or json.loads(out) == []  # 'x' or a text where a field belongs: never every episode
    assert catalog_dump(dataset) == before


def test_robodata_list_takes_where(dataset: Dataset, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, 'list', dataset.root, '--where', 'score < 0.8 and outcome = failure')
    assert code == 0, err
    listed = [line.split()[0] for line in out.splitlines() if line.startswith('ep_')]
    assert listed == ['ep_b', 'ep_g']
    code, out, _ = run(capsys, 'list', dataset.root, '--where', 'score > 2')
    assert code == 0 and 'no episode matches these filters' in out
    code, _, err = run(capsys, 'list', dataset.root, '--where', 'scroe > 2')
    assert code == 1 and err.count('\n') == 1 and '(did you mean score?)' in err
    with pytest.raises(SystemExit):
        main(['list', '--help'])
    out = capsys.readouterr().out
    assert '--where EXPR' in out and 'score < 0.8 and outcome =' in out


def test_robodata_score_takes_where(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dataset = _build(tmp_path / 'ds')
    code, _, err = run(capsys, 'score', dataset.root, '--where', 'scroe < 0.8')
    assert code == 1 and err.count('\n') == 1 and "no field 'scroe' (did you mean score?)" in err
    assert not list(dataset.root.glob('episodes/*/quality.json'))  # refused before any work
    code, _, err = run(capsys, 'score', dataset.root, '--where', 'score > 2')
    assert code == 1 and err.count('\n') == 1
    assert ("nothing to score: no episode matches --where 'score > 2' (the dataset has 7 episode(s), 1 of them "
            'discarded)') in err
    code, out, err = run(capsys, 'score', dataset.root, '--where', 'outcome = success and task = pick_cube',
                         '--json')
    assert code == 0, err
    assert sorted(json.loads(out)['episodes']) == ['ep_a', 'ep_d']
    assert sorted(p.parent.name for p in dataset.root.glob('episodes/*/quality.json')) == ['ep_a', 'ep_d']


def test_why_none_says_what_the_query_matched(dataset: Dataset) -> None:
    target = Target('dataset', dataset.root, dataset)
    assert why_none(target, Filters(where='score > 2')) == ("no episode matches --where 'score > 2' (the dataset has "
                                                            '7 episode(s), 1 of them discarded)')
    assert why_none(target, Filters(where='score < 0.2')) == (
        "the 1 episode(s) --where 'score < 0.2' matches are all discarded (status = discarded in the query, or "
        '--status discarded, picks them)')
    assert why_none(target, Filters(task='stack cups', where='score > 0.9')) == (
        "no episode has task 'stack cups' and matches --where 'score > 0.9'")


def test_bags_on_their_own_have_no_catalog_to_query(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    write_demo_bag: Callable[..., dict[str, int]]) -> None:
    write_demo_bag(tmp_path / 'bags' / 'take_1')
    code, _, err = run(capsys, 'score', tmp_path / 'bags', '--profile', SIM_CELL_PROFILE, '--where', 'score < 1')
    assert code == 1 and err.count('\n') == 1
    assert '--task, --outcome, --status and --where pick episodes of a dataset; a folder of bags has none' in err


def test_a_column_the_catalog_lacks_is_one_line(tmp_path: Path) -> None:
    """An older catalog opened as it is (read-only media cannot gain the newer columns)."""
    dataset = _build(tmp_path / 'ds')
    with sqlite3.connect(dataset.catalog.path) as conn:
        conn.execute('ALTER TABLE episodes DROP COLUMN review_rank')
    old = Dataset.open(dataset.root, check_catalog=False)
    assert [r.id for r in old.list(where='score > 0.9')] == ['ep_a']
    with pytest.raises(DatasetError) as caught:
        old.list(where='review_rank = 1')
    message = str(caught.value)
    assert '\n' not in message
    assert message.startswith(f'{dataset.catalog.path}: --where reads review_rank, a column this catalog does not '
                              'have')
    assert f'robodata catalog rebuild {dataset.root}' in message


# -- fuzz: whatever is typed, a query or one line, quickly --------------------------------------------------------

PROPERTY = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])
PIECES = ['score', 'task', 'outcome', 'status', 'id', 'duration', 'start_ns', 'scroe', 'state', '=', '==', '!=', '<',
          '<=', '>', '>=', '<>', '!', 'and', 'or', 'not', 'in', 'is', 'empty', '(', ')', ',', "'", '"', "'a b'",
          '"x""y"', '0.8', '-1', '1e999', '9' * 25, '30s', '2026-03-02', '2300-01-01', '0001-01-01T00:00:00+14:00',
          'success', 'discarded', 'pick_cube', ';', '--', '/*', 'DROP', '\x00', '\n', '\udcff', 'é', '∞', '1' * 30, '.',
          '+', '?']


def _compile_or_fail(text: str) -> None:
    try:
        query = compile_query(text)
    except RobodataError as err:
        assert '\n' not in str(err)
    else:
        assert query.sql.count('?') == len(query.params)
    assert min(_seconds(text) for _ in range(2)) < 0.1  # the better of two: a garbage collection is not the parser


def _seconds(text: str) -> float:
    started = time.perf_counter()
    with contextlib.suppress(RobodataError):
        compile_query.__wrapped__(text)  # not the cache's answer
    return time.perf_counter() - started


@PROPERTY
@given(st.text(max_size=MAX_LENGTH + 50))
def test_any_text_compiles_or_is_one_line(text: str) -> None:
    _compile_or_fail(text)


@PROPERTY
@given(st.lists(st.sampled_from(PIECES), max_size=60), st.sampled_from([' ', '', '  ']))
def test_any_soup_of_query_words_compiles_or_is_one_line(dataset: Dataset, pieces: list[str], glue: str) -> None:
    text = glue.join(pieces)
    _compile_or_fail(text)
    try:
        rows = picked(dataset, text)
    except RobodataError as err:
        assert '\n' not in str(err)
    else:
        assert set(rows) <= set(EPISODES)
