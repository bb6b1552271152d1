"""Capture to a protocol: protocol files (each mistake one line), take records (capture.json), and
`robodata coverage` over a small real dataset: exact counts, the order of the missing takes, JSON, the empty case."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from ros_robodata.capture import (
    CAPTURE_FILE,
    Protocol,
    TakeRecord,
    coverage,
    load_protocol,
    measurement,
    read_take,
    write_take,
)
from ros_robodata.cli.main import main
from ros_robodata.dataset import Dataset
from ros_robodata.dataset.participants import PARTICIPANTS_FILE, add_participant
from ros_robodata.errors import DatasetError, RobodataError

SMALL = {
    'name': 'small',
    'factors': {
        'distance': {'unit': 'ft', 'bins': [[3, 6], [6, 10]]},
        'expression': {'levels': ['neutral', 'smile']},
    },
    'takes_per_cell': 2,
    'camera': {'min_resolution': [1280, 720], 'min_rate_hz': 30},
    'participants': {'consent_required': True, 'per_group': 1, 'groups': {'age_group': ['18-29', '65+']}},
}


def _write(path: Path, data: Any) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding='utf-8')
    return path


def _with(**changes: Any) -> dict[str, Any]:
    return {**json.loads(json.dumps(SMALL)), **changes}


def test_the_shipped_protocols_load() -> None:
    faces = load_protocol('hri_expressions')
    assert [f.name for f in faces.factors] == ['distance', 'illuminance', 'orientation', 'expression']
    distance, lux, orientation, expression = faces.factors
    assert (distance.unit, distance.bins[0][0], distance.bins[-1][1]) == ('ft', 3, 20)
    assert (lux.unit, lux.bins[0][0], lux.bins[-1][1]) == ('lux', 10, 4000)
    assert orientation.levels == ('front', 'up', 'down', 'left', 'right')
    assert expression.levels == ('neutral', 'smile', 'anger', 'content', 'disgust', 'fear', 'sadness', 'surprise')
    assert len(faces.cells) == 4 * 4 * 5 * 8 and faces.required_takes == len(faces.cells)
    assert dict(faces.participants.groups)['age_group'] == ('18-29', '30-44', '45-64', '65+')
    gestures = load_protocol('hri_gestures')
    assert gestures.factors[0].levels == ('wave', 'point', 'come_here', 'stop', 'thumbs_up')
    assert gestures.repetition is not None and gestures.repetition.count == 5
    assert len(gestures.cells) == 20 and gestures.required_takes == 35


def test_bins_are_low_inclusive_and_the_last_holds_its_high_end(tmp_path: Path) -> None:
    distance = load_protocol(_write(tmp_path / 'p.yaml', SMALL)).factors[0]
    assert [distance.level_of(v) for v in (2.9, 3, 5.99, 6, 10, 10.01)] == [None, '3-6', '3-6', '6-10', '6-10', None]


@pytest.mark.parametrize(('change', 'expected'), [
    ({'factors': {'expression': {'levels': []}}}, 'factors.expression.levels: is empty'),
    ({'factors': {'distance': {'unit': 'ft', 'bins': [[3, 6], [5, 10]]}}},
     'factors.distance.bins[1]: [5, 10] overlaps [3, 6]'),
    ({'factors': {'distance': {'unit': 'ft', 'bins': [[6, 10], [3, 6]]}}},
     'factors.distance.bins[1]: [3, 6] comes after [6, 10]: list the bins in increasing order'),
    ({'factors': {'distance': {'unit': 'ft', 'bins': [[6, 3]]}}}, 'factors.distance.bins[0]: [6, 3]: low must be'),
    ({'factors': {'distance': {'unit': 'lx', 'bins': [[3, 6]]}}},
     "factors.distance.unit: unknown unit 'lx' (did you mean 'lux'?)"),
    ({'factors': {'distance': {'bins': [[3, 6]]}}}, 'factors.distance.unit: required with bins'),
    ({'factors': {'pose': {'level': ['a']}}}, "factors.pose.level: unknown key (did you mean 'levels'?)"),
    ({'take_per_cell': 2}, "take_per_cell: unknown key (did you mean 'takes_per_cell'?)"),
    ({'design': [{'distance': '3-6', 'expression': 'smile'}]}, 'give takes_per_cell'),
    ({'camera': {'min_rate': 30}}, "camera.min_rate: unknown key (did you mean 'min_rate_hz'?)"),
    ({'participants': {'groups': {'age_group': []}}}, 'participants.groups.age_group: is empty'),
])
def test_each_mistake_in_a_protocol_is_one_line_naming_file_and_key(tmp_path: Path, change: dict[str, Any],
                                                                     expected: str) -> None:
    data = _with(**change)
    path = _write(tmp_path / 'bad.yaml', data)
    with pytest.raises(RobodataError) as caught:
        load_protocol(path)
    message = str(caught.value)
    assert '\n' not in message
    assert message.startswith(f'{path}: {expected}'), message


@pytest.mark.parametrize(('row', 'expected'), [
    ({'distance': '3-6', 'expresion': 'smile'}, "design[0].expresion: unknown factor (did you mean 'expression'?)"),
    ({'distance': '3-6', 'expression': 'smil'}, "design[0].expression: no level 'smil' (did you mean 'smile'?)"),
    ({'distance': '3-7', 'expression': 'smile'}, "design[0].distance: no level '3-7'"),
    ({'expression': 'smile'}, "design[0]: factor 'distance' is missing"),
])
def test_a_design_names_only_factors_and_levels_that_exist(tmp_path: Path, row: dict[str, Any],
                                                           expected: str) -> None:
    data = _with(design=[row])
    del data['takes_per_cell']
    path = _write(tmp_path / 'bad.yaml', data)
    with pytest.raises(RobodataError) as caught:
        load_protocol(path)
    assert str(caught.value).startswith(f'{path}: {expected}'), str(caught.value)


def test_a_design_lists_its_combinations_in_order_with_their_takes(tmp_path: Path) -> None:
    data = _with(design=[{'distance': '6-10', 'expression': 'smile', 'takes': 3},
                         {'distance': 4, 'expression': 'neutral'}])
    del data['takes_per_cell']
    protocol = load_protocol(_write(tmp_path / 'd.yaml', data))
    assert [(c.key, c.required) for c in protocol.cells] == [('distance=6-10 expression=smile', 3),
                                                            ('distance=3-6 expression=neutral', 1)]


def test_an_unknown_shipped_protocol_says_the_close_one() -> None:
    with pytest.raises(RobodataError, match=r"protocol 'hri_expresions': .*did you mean 'hri_expressions'"):
        load_protocol('hri_expresions')


def _take(protocol: Protocol, participant: str, take: int, intended: dict[str, str | float],
          measured: dict[str, float | str | None]) -> TakeRecord:
    return {'protocol': protocol.name, 'protocol_sha256': protocol.sha256, 'participant': participant, 'take': take,
            'intended': intended,
            'measured': {name: measurement(f, measured.get(name)) for name in measured
                         if (f := protocol.factor(name)) is not None}}


def test_a_take_record_round_trips_and_a_bad_one_is_one_line(tmp_path: Path) -> None:
    protocol = load_protocol(_write(tmp_path / 'small.yaml', SMALL))
    record = _take(protocol, 'P-1', 1, {'distance': '3-6', 'expression': 'smile'},
                   {'distance': 12.0, 'expression': None})
    assert record['measured'] == {'distance': {'value': 12.0, 'verdict': 'outside'},
                                  'expression': {'value': None, 'verdict': 'not measured'}}
    folder = tmp_path / 'ep'
    folder.mkdir()
    assert read_take(folder) is None
    write_take(folder, record)
    assert read_take(folder) == record
    (folder / CAPTURE_FILE).write_text(json.dumps({**record, 'take': 0}), encoding='utf-8')
    with pytest.raises(DatasetError, match=r'capture\.json: take: expected a take number of 1 or more, got 0$'):
        read_take(folder)
    broken = {**record, 'measured': {'distance': {'value': 4, 'verdict': 'fine'}}}
    with pytest.raises(DatasetError, match=r'measured\.distance\.verdict: expected one of within, outside'):
        write_take(folder, broken)  # type: ignore[arg-type]


@pytest.fixture
def studio(tmp_path: Path, make_demo_dataset: Callable[..., Dataset]) -> tuple[Dataset, Path]:
    """Six episodes: four takes of `small` (one moved by its measurement to the next distance, one measured outside
    every bin, one by a participant without consent), one of another protocol, one without a take record."""
    protocol_path = _write(tmp_path / 'small.yaml', SMALL)
    protocol = load_protocol(protocol_path)
    dataset = make_demo_dataset(6)
    ids = dataset.episode_ids()
    takes = [
        _take(protocol, 'P-1', 1, {'distance': 4, 'expression': 'smile'}, {'distance': 4.5}),
        _take(protocol, 'P-1', 2, {'distance': '3-6', 'expression': 'smile'}, {'distance': 7.0}),
        _take(protocol, 'P-2', 1, {'distance': '6-10', 'expression': 'neutral'}, {'distance': 25.0}),
        _take(protocol, 'P-3', 1, {'distance': '3-6', 'expression': 'neutral'}, {'distance': None}),
        {**_take(protocol, 'P-1', 1, {'distance': '3-6', 'expression': 'smile'}, {}), 'protocol': 'other'},
    ]
    for episode_id, record in zip(ids, takes, strict=False):
        write_take(dataset.episode_dir(episode_id), record)
    for pid in ('P-1', 'P-2'):
        add_participant(dataset.root, pid, 'research use')
    registry = yaml.safe_load((dataset.root / PARTICIPANTS_FILE).read_text(encoding='utf-8'))
    registry['participants']['P-1']['demographics'] = {'age_group': '18-29'}
    registry['participants']['P-2']['demographics'] = {'age_group': '65+'}
    (dataset.root / PARTICIPANTS_FILE).write_text(yaml.safe_dump(registry), encoding='utf-8')
    return dataset, protocol_path


def test_coverage_counts_each_take_where_it_was_measured(studio: tuple[Dataset, Path]) -> None:
    dataset, protocol_path = studio
    result = coverage(dataset, load_protocol(protocol_path))
    assert result.takes == 4
    assert [(c.cell.key, c.captured, c.within_spec, c.missing) for c in result.cells] == [
        ('distance=3-6 expression=neutral', 1, 0, 2),  # P-3 has no consent: captured, not within spec
        ('distance=3-6 expression=smile', 1, 1, 1),
        ('distance=6-10 expression=neutral', 1, 0, 2),  # measured 25 ft: outside every bin, counted where intended
        ('distance=6-10 expression=smile', 1, 1, 1),  # intended 3-6, measured 7 ft
    ]
    assert [c.index for c in result.missing_cells()] == [0, 2, 1, 3]
    assert [(g.group, g.participants) for g in result.groups] == [('18-29', ['P-1']), ('65+', [])]
    assert result.summary() == 'takes 2/8 within spec, 6 missing; groups: age_group 65+ 0/1 participants'
    assert result.notes == ['1 take(s) of another protocol, not counted',
                            '1 take(s) by a participant without consent in participants.yaml, not within spec']
    assert [c.key for c in result.next_takes(6)] == [
        'distance=3-6 expression=neutral', 'distance=6-10 expression=neutral', 'distance=3-6 expression=neutral',
        'distance=3-6 expression=smile', 'distance=6-10 expression=neutral', 'distance=6-10 expression=smile']
    assert len(result.next_takes(50)) == 6


def test_coverage_command_next_and_json(studio: tuple[Dataset, Path], capsys: pytest.CaptureFixture[str]) -> None:
    dataset, protocol_path = studio
    assert main(['coverage', str(dataset.root), '--protocol', str(protocol_path), '--next', '3']) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == ['  1. distance=3-6 expression=neutral', '  2. distance=6-10 expression=neutral',
                                '  3. distance=3-6 expression=neutral',
                                'small: takes 2/8 within spec, 6 missing; groups: age_group 65+ 0/1 participants']
    assert 'robodata coverage: note: 1 take(s) of another protocol, not counted' in err
    assert main(['coverage', str(dataset.root), '--protocol', str(protocol_path), '--json', '--next', '2']) == 0
    data = json.loads(capsys.readouterr().out)
    assert data['takes'] == {'records': 4, 'required': 8, 'within_spec': 2, 'captured': 4, 'missing': 6}
    assert data['next'] == [{'distance': '3-6', 'expression': 'neutral'}, {'distance': '6-10', 'expression': 'neutral'}]
    assert [m['conditions'] for m in data['missing']][:2] == data['next']
    assert data['groups'] == [
        {'attribute': 'age_group', 'group': '18-29', 'participants': 1, 'target': 1, 'ids': ['P-1']},
        {'attribute': 'age_group', 'group': '65+', 'participants': 0, 'target': 1, 'ids': []}]
    assert main(['coverage', str(dataset.root), '--protocol', str(protocol_path)]) == 0
    out = capsys.readouterr().out
    assert 'missing: distance=3-6 expression=neutral  0/2' in out
    assert out.splitlines()[-1].startswith('small: takes 2/8 within spec')


def test_coverage_with_no_take_record_says_so(tmp_path: Path, make_demo_dataset: Callable[..., Dataset],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    dataset = make_demo_dataset(2)
    assert main(['coverage', str(dataset.root), '--protocol', 'hri_gestures']) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (f'{dataset.name}: no take captured to protocol hri_gestures yet (no episode has a capture.json '
                      'naming it): all 35 takes missing')
    assert out[1].startswith('hri_gestures: takes 0/35 within spec, 35 missing; groups: age_group 18-29 0/2 '
                             'participants, age_group 30-44 0/2 participants')


def test_coverage_refuses_a_bad_next_and_a_bad_protocol_in_one_line(
        tmp_path: Path, make_demo_dataset: Callable[..., Dataset], capsys: pytest.CaptureFixture[str]) -> None:
    dataset = make_demo_dataset(1)
    assert main(['coverage', str(dataset.root), '--protocol', 'hri_gestures', '--next', '0']) == 1
    assert capsys.readouterr().err == 'robodata coverage: error: --next must be at least 1\n'
    bad = _write(tmp_path / 'bad.yaml', _with(take_per_cell=1))
    assert main(['coverage', str(dataset.root), '--protocol', str(bad)]) == 1
    assert capsys.readouterr().err == (f"robodata coverage: error: {bad}: take_per_cell: unknown key (did you mean "
                                       "'takes_per_cell'?); allowed: name, description, factors, takes_per_cell, "
                                       "design, camera, participants, repetition\n")


def test_the_report_shows_the_coverage_heatmap_with_the_counts_coverage_gives(
        studio: tuple[Dataset, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dataset, protocol_path = studio
    assert main(['score', str(dataset.root), '--no-images']) == 0
    page = tmp_path / 'report.html'
    assert main(['report', str(dataset.root), '--protocol', str(protocol_path), '--out', str(page)]) == 0
    capsys.readouterr()
    section = page.read_text(encoding='utf-8').split('<section id="coverage">', 1)[1].split('</section>', 1)[0]
    assert 'small: takes' not in section and 'takes 2/8 within spec, 6 missing' in section
    header = re.findall(r'<th class="num">([^<]*)<br>([^<]*)</th>', section)
    assert header == [('age_group', '18-29'), ('age_group', '65+')]
    rows = {m[0]: m[1:] for m in re.findall(
        r'<tr><th scope="row">([^<]*)</th><td[^>]*>(\d+)/(\d+)</td><td class="num">(\d+)</td>'
        r'<td[^>]*>(\d+)</td><td[^>]*>(\d+)</td></tr>', section)}
    result = coverage(dataset, load_protocol(protocol_path))
    assert rows == {c.cell.key: (str(c.within_spec), str(c.cell.required), str(c.captured),
                                 str(c.by_group.get(('age_group', '18-29'), 0)),
                                 str(c.by_group.get(('age_group', '65+'), 0))) for c in result.cells}
    assert rows['distance=3-6 expression=smile'] == ('1', '2', '1', '1', '0')  # P-1 is 18-29
    assert 'Participants per group: age_group 18-29: 1/1 participants; age_group 65+: 0/1 participants.' in section
    assert main(['report', str(dataset.root), '--protocol', str(tmp_path / 'missing.yaml'),
                 '--out', str(tmp_path / 'other.html')]) == 1
    assert not (tmp_path / 'other.html').exists()


def test_a_take_out_of_spec_is_a_warning_in_quality_json_with_each_factors_verdict(
        tmp_path: Path, make_demo_dataset: Callable[..., Dataset]) -> None:
    from ros_robodata.capture.take_save import save_take

    protocol = load_protocol(_write(tmp_path / 'small.yaml', SMALL))
    dataset = make_demo_dataset(2)
    far, near = dataset.episode_ids()
    add_participant(dataset.root, 'P-1', 'research use')
    for episode_id, metres in ((far, 25.0), (near, 4.5)):
        record = _take(protocol, 'P-1', 1, {'distance': '3-6', 'expression': 'smile'}, {'distance': metres})
        save_take(dataset, episode_id, record, dict(record['measured']), total=8)
    assert main(['score', str(dataset.root), '--no-images']) == 0
    docs = {i: json.loads((dataset.episode_dir(i) / 'quality.json').read_text()) for i in (far, near)}
    assert docs[far]['capture'] == {'distance': 'outside'} and docs[near]['capture'] == {'distance': 'within'}
    out_of_spec = [f for f in docs[far]['findings'] if f['check'] == 'capture.out_of_spec']
    assert [f['severity'] for f in out_of_spec] == ['warn']
    message = out_of_spec[0]['message']
    assert 'distance measured 25.0' in message and 'outside the intended 3-6' in message
    assert not [f for f in docs[near]['findings'] if f['check'] == 'capture.out_of_spec']
    assert docs[far]['score'] < docs[near]['score']
