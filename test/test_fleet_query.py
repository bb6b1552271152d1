"""`robodata query` as a data lead uses it over two rigs' datasets whose files are known: the success rate per rig
per week is what the catalogs count, grasp durations are what events.json says, findings are quality.json's; a
dataset not yet segmented or scored says which tables are empty and why; wrong SQL is one line and exit 2; the
query reads no file; docs/query.md runs as written against the demo."""

from __future__ import annotations

import csv
import datetime
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ros_robodata import Dataset, score, segment
from ros_robodata.cli.main import main
from ros_robodata.dataset.fleet_query import COLUMNS, NEED_EXTRA
from ros_robodata.profile import Profile, load_profile, profile_from_dict
from ros_robodata.sim.faults import Fault
from ros_robodata.sim.scripted_episodes import add_sim_episode, without_sensors
from test.profiles import PROFILE
from test.test_docs import blocks, run_page

ROOT = Path(__file__).resolve().parent.parent
WEEK_NS = 7 * 24 * 3600 * 10**9
T0_NS = 1_700_000_000_000_000_000  # 2023-11-14, a Tuesday: week 46


def _rig_profile(name: str) -> Profile:
    data = without_sensors(load_profile(PROFILE)).to_dict()
    data['robot']['name'] = name
    return profile_from_dict(data, source=f'test rig {name}')


@pytest.fixture(scope='module')
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two rigs' datasets, segmented and scored: cell_a over two weeks (seed 2 a failure), cell_b one week (seed 4
    a failure), one episode with NaN joints from 2.0 to 2.3 s for a finding to count."""
    base = tmp_path_factory.mktemp('fleet')
    a = Dataset.create(base / 'cell_a', profile=_rig_profile('cell_a'))
    for seed, start in ((0, T0_NS), (1, T0_NS + 3600 * 10**9), (2, T0_NS + 7200 * 10**9), (3, T0_NS + WEEK_NS)):
        faults = [Fault('joint_states', 'nan', 2.0, 2.3)] if seed == 1 else []
        add_sim_episode(a, f'a{seed}', seed, start_ns=start, max_duration_s=14.0, faults=faults)
    b = Dataset.create(base / 'cell_b', profile=_rig_profile('cell_b'))
    for seed in (4, 5):
        add_sim_episode(b, f'b{seed}', seed, start_ns=T0_NS, max_duration_s=14.0)
    for dataset in (a, b):
        segment(dataset)
        score(dataset)
    return a.root, b.root


def _query(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, object, str]:
    code = main(['query', *map(str, args)])
    out, err = capsys.readouterr()
    return code, json.loads(out) if code == 0 and '--json' in args else out, err


def test_success_rate_per_rig_per_week_is_what_the_catalogs_count(fleet: tuple[Path, Path],
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    code, rows, err = _query(capsys, *fleet, '--json', '--sql',
                             "SELECT rig, strftime(start_time, '%G-W%V') AS week, count(*) AS episodes, "
                             "avg((outcome = 'success')::int) AS success_rate, sum((outcome = 'success')::int) AS n "
                             'FROM episodes GROUP BY ALL ORDER BY rig, week')
    assert code == 0, err
    expected: dict[tuple[str, str], list[str]] = {}
    for root in fleet:
        dataset = Dataset.open(root)
        for row in dataset.list():
            assert row.start_ns is not None
            year, week, _ = datetime.datetime.fromtimestamp(row.start_ns / 1e9, datetime.timezone.utc).isocalendar()
            expected.setdefault((dataset.profile.robot.name, f'{year}-W{week:02d}'), []).append(row.outcome)
    assert [(r['rig'], r['week']) for r in rows] == sorted(expected)
    assert [(r['rig'], r['week']) for r in rows] == [('cell_a', '2023-W46'), ('cell_a', '2023-W47'),
                                                     ('cell_b', '2023-W46')]
    for r in rows:
        outcomes = expected[(r['rig'], r['week'])]
        assert r['episodes'] == len(outcomes)
        assert r['n'] == outcomes.count('success')  # DuckDB's sum (a HUGEINT) comes out a plain integer
        assert r['success_rate'] == pytest.approx(outcomes.count('success') / len(outcomes))
    assert 'failure' in expected[('cell_a', '2023-W46')]  # seed 2: the rate is not trivially 1


def test_grasp_durations_are_what_events_json_says(fleet: tuple[Path, Path],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, rows, err = _query(capsys, *fleet, '--json', '--sql',
                             "SELECT dataset, episode_id, t_ns, duration_s, ended_by FROM events WHERE kind = 'grasp' "
                             'ORDER BY dataset, episode_id, t_ns')
    assert code == 0, err
    expected = []
    for root in fleet:
        dataset = Dataset.open(root)
        for episode_id in dataset.episode_ids():
            events = sorted(json.loads((dataset.episode_dir(episode_id) / 'events.json').read_text())['events'],
                            key=lambda e: e['t_ns'])
            for n, e in enumerate(events):
                if e['kind'] == 'grasp':
                    end = next((x for x in events[n + 1:] if x['kind'] in ('grasp', 'release', 'grasp_failed')), None)
                    ended = end is not None and end['kind'] != 'grasp'
                    expected.append({'dataset': dataset.name, 'episode_id': episode_id, 't_ns': e['t_ns'],
                                     'duration_s': (end['t_ns'] - e['t_ns']) / 1e9 if ended else None,
                                     'ended_by': end['kind'] if ended else None})
    assert rows == expected
    assert len(expected) >= 5 and sum(r['duration_s'] is not None for r in expected) >= 4
    assert all(0.5 < r['duration_s'] < 14 for r in expected if r['duration_s'] is not None)


def test_findings_by_check_are_quality_jsons(fleet: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, rows, err = _query(capsys, *fleet, '--json', '--sql',
                             'SELECT check_name, severity, count(*) AS n FROM findings GROUP BY ALL')
    assert code == 0, err
    expected: Counter[tuple[str, str]] = Counter()
    for root in fleet:
        for quality in root.glob('episodes/*/quality.json'):
            expected.update((f['check'], f['severity']) for f in json.loads(quality.read_text())['findings'])
    assert {(r['check_name'], r['severity']): r['n'] for r in rows} == dict(expected)
    assert expected[('motion.nan', 'error')] == 1  # the NaN joints of a1, at 2.0 s as the fault was put there
    code, rows, err = _query(capsys, *fleet, '--json', '--sql',
                             "SELECT dataset, rig, episode_id, t_s FROM findings WHERE check_name = 'motion.nan'")
    assert code == 0 and rows == [{'dataset': 'cell_a', 'rig': 'cell_a', 'episode_id': 'a1', 't_s': 2.0}], err


def test_the_table_csv_and_parquet_hold_the_same_rows(fleet: tuple[Path, Path], tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    sql = "SELECT dataset, rig, name, round(duration_s, 3) AS s FROM subtasks WHERE name = 'grasp' ORDER BY ALL"
    code, text, err = _query(capsys, *fleet, '--sql', sql)
    assert code == 0, err
    lines = str(text).splitlines()
    assert lines[0].split() == ['dataset', 'rig', 'name', 's'] and lines[-1].endswith('row(s)')
    n = int(lines[-1].split()[0])
    assert n == len(lines) - 2 >= 5 and all(line.split()[2] == 'grasp' for line in lines[1:-1])
    assert main(['query', *map(str, fleet), '--sql', sql, '--csv', str(tmp_path / 'g.csv')]) == 0
    with (tmp_path / 'g.csv').open() as f:
        written = list(csv.DictReader(f))
    assert len(written) == n and {r['rig'] for r in written} == {'cell_a', 'cell_b'}
    assert main(['query', *map(str, fleet), '--sql', sql, '--parquet', str(tmp_path / 'g.parquet')]) == 0
    assert pq.read_table(tmp_path / 'g.parquet').to_pylist() == [{**r, 's': float(r['s'])} for r in written]
    capsys.readouterr()
    # an existing file is replaced only with --force; a dataset's own files never
    assert main(['query', *map(str, fleet), '--sql', 'SELECT 1 AS x', '--csv', str(tmp_path / 'g.csv')]) == 1
    assert 'exists' in capsys.readouterr().err and len((tmp_path / 'g.csv').read_text().splitlines()) == n + 1
    assert main(['query', *map(str, fleet), '--sql', 'SELECT 1 AS x', '--csv', str(fleet[0] / 'audit.jsonl'),
                 '--force']) == 1
    assert 'part of the dataset' in capsys.readouterr().err


def test_a_dataset_not_yet_segmented_or_scored_says_which_tables_are_empty_and_why(
        make_demo_dataset, capsys: pytest.CaptureFixture[str]) -> None:
    fresh = make_demo_dataset(3, name='fresh')
    code, rows, err = _query(capsys, fresh.root, '--json', '--sql',
                             'SELECT (SELECT count(*) FROM episodes) AS e, (SELECT count(*) FROM events) AS v, '
                             '(SELECT count(*) FROM findings) AS f')
    assert code == 0 and rows == [{'e': 3, 'v': 0, 'f': 0}]
    assert (f'fresh: events empty: no episode has events.json yet (`robodata segment {fresh.root}` writes it)'
            in err)
    assert f'fresh: findings empty: no episode has quality.json yet (`robodata score {fresh.root}` writes it)' in err
    code, _, err = _query(capsys, fresh.root, '--sql', 'SELECT count(*) FROM episodes')
    assert code == 0 and err == ''  # the sidecars of tables not named are not read, nor said


def test_an_unreadable_sidecar_leaves_out_its_episode_and_says_so(fleet: tuple[Path, Path], tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    import shutil
    copy = tmp_path / 'cell_b'
    shutil.copytree(fleet[1], copy)
    (copy / 'episodes' / 'b5' / 'events.json').write_text('{"events": [{"kind": "grasp"}]}')
    code, rows, err = _query(capsys, copy, '--json', '--sql', 'SELECT DISTINCT episode_id FROM events')
    assert code == 0 and rows == [{'episode_id': 'b4'}]
    assert 'events leave out 1 episode(s) whose events.json cannot be read: b5 (not what robodata segment writes' \
        in err


def test_wrong_sql_is_one_line_and_exit_2(fleet: tuple[Path, Path], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    for sql, said in (('SELEC 1', 'Parser Error: syntax error at or near "SELEC"'),
                      ('SELECT nope FROM events', 'Binder Error: Referenced column "nope" not found'),
                      ('SELECT * FROM episode', 'Catalog Error: Table with name episode does not exist!'),
                      (' ', 'no SQL statement given')):
        code = main(['query', *map(str, fleet), '--sql', sql, '--csv', str(tmp_path / 'out.csv')])
        out, err = capsys.readouterr()
        assert code == 2 and out == '' and len(err.splitlines()) == 1 and said in err, (sql, err)
        assert err.startswith('robodata query: error: ')
    assert not (tmp_path / 'out.csv').exists()


def test_the_query_reads_no_file(fleet: tuple[Path, Path], tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    secret = tmp_path / 'secret.csv'
    secret.write_text('a\n1\n')
    for sql in (f"SELECT * FROM read_csv('{secret}')", f"COPY (SELECT 1) TO '{tmp_path / 'x.csv'}'",
                f"ATTACH '{fleet[0] / 'catalog.sqlite'}' AS c", 'SET enable_external_access = true'):
        code, _, err = _query(capsys, *fleet, '--sql', sql)
        assert code == 2 and len(err.splitlines()) == 1, (sql, err)
    assert not (tmp_path / 'x.csv').exists()


def test_without_duckdb_it_says_how_to_install_it(fleet: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, 'duckdb', None)  # as if not installed: importing it raises ImportError
    code, _, err = _query(capsys, *fleet, '--sql', 'SELECT 1')
    assert code == 1 and err.strip() == f'robodata query: error: {NEED_EXTRA}'
    assert 'pip install ros_robodata[query]' in err


def test_the_same_dataset_twice_and_names_that_clash(fleet: tuple[Path, Path], tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _query(capsys, fleet[0], fleet[1], fleet[0], '--sql', 'SELECT 1')
    assert code == 1 and 'the same dataset given twice' in err
    other = Dataset.create(tmp_path / 'x' / 'cell_a', name='cell_a', profile=_rig_profile('cell_c'))
    code, rows, err = _query(capsys, fleet[0], other.root, '--json', '--sql',
                             'SELECT DISTINCT dataset, rig FROM episodes ORDER BY rig')
    assert code == 0 and rows == [{'dataset': str(fleet[0]), 'rig': 'cell_a'}]  # the empty one has no rows
    assert f'{other.root}: no episode in its catalog' in err


def test_without_a_query_it_lists_the_tables(fleet: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, described, err = _query(capsys, *fleet, '--json')
    assert code == 0, err
    assert {view: d['columns'] for view, d in described.items()} == {
        view: dict(columns) for view, columns in COLUMNS.items()}
    assert described['episodes']['rows'] == 6
    events = sum(len(json.loads(p.read_text())['events']) for root in fleet
                 for p in root.glob('episodes/*/events.json'))
    assert described['events']['rows'] == events > 0


def test_the_documented_tables_are_the_built_ones() -> None:
    page = (ROOT / 'docs' / 'query.md').read_text(encoding='utf-8')
    for view, columns in COLUMNS.items():
        (line,) = [line for line in page.splitlines() if line.startswith(f'| `{view}` |')]
        documented = re.findall(r'`(\w+)`', line.split('|')[3])
        assert [c for c in documented if c in dict(columns)] == [c for c, _ in columns if c not in ('dataset', 'rig')]


def test_the_query_page_runs_as_written(tmp_path: Path, demo_run: tuple[object, Path]) -> None:
    from ros_robodata.sim.to_bag import write_sim_episode

    bags = tmp_path / 'bags'
    profile = load_profile(ROOT / 'config' / 'sim_cell.yaml')
    for seed in (7, 8):
        write_sim_episode(bags / f'run_{seed}', profile, seed, cameras=True, image_size=(80, 60), max_duration_s=6.0)
    workspace = tmp_path / 'workspace'
    workspace.mkdir()
    ran = run_page('docs/query.md', workspace, demo_run[1], bags)
    assert len(ran) == 8
    demo = Dataset.open(workspace / 'robodata_demo' / 'dataset')
    rates = re.findall(r'sim_cell_arm\s+dataset\s+(\d{4}-W\d\d)\s+(\d+)\s+(\d+)\s+([0-9.]+)', ran[2].said)
    rows = demo.list(status='complete')
    assert [(int(n), int(s)) for _, n, s, _ in rates] == [
        (len(rows), sum(r.outcome == 'success' for r in rows))]
    assert (workspace / 'grasp_durations.csv').is_file()
    (python,) = [b for b in blocks('docs/query.md') if b.lang == 'python']
    done = subprocess.run([sys.executable, '-c', python.text], cwd=workspace, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"'kind': 'grasp', 'n': \d+", done.stdout), done.stdout
