"""Bad input as a careless or hostile user brings it (issue 21's findings, each a regression case): one clear line,
exit status 1, no traceback, no hang, and nothing in the dataset changed."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ros_robodata.cli.main import main
from ros_robodata.errors import RobodataError
from ros_robodata.labeling.taxonomy import load_taxonomy
from ros_robodata.untrusted import MAX_EXPANDED_NODES, check_yaml, read_json, read_yaml
from test.processes import without_permission_override

BOMB = ('a: &a ["x","x","x","x","x","x","x","x","x","x"]\n'
        + ''.join(f'{chr(98 + i)}: &{chr(98 + i)} [{",".join(["*" + chr(97 + i)] * 10)}]\n' for i in range(8)))


@contextmanager
def within(seconds: int) -> Iterator[None]:
    """Fail, rather than hang the suite, when the body runs over `seconds`."""
    def expire(_signum: int, _frame: object) -> None:
        raise TimeoutError(f'still running after {seconds} s')

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str]:
    """`robodata ARGS` in-process: it ends in a status a script can act on (0 done, 1 refused, 3 done but not all
    of it), and a refusal is one `robodata COMMAND: error: ` line on stderr with nothing on stdout."""
    with within(20):
        code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert code in (0, 1, 3), (code, out, err)
    if code == 1:
        one_line(err, str(args[0]))
        assert out == '', out
    return code, err


def one_line(err: str, command: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f'robodata {command}: error: '), err
    return lines[0]


def digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob('*')) if p.is_file()}


# -- the loaders themselves ------------------------------------------------------------------------------------


def test_an_alias_bomb_is_refused_before_anything_walks_it(tmp_path):
    path = tmp_path / 'bomb.yaml'
    path.write_text(BOMB)
    with within(5), pytest.raises(RobodataError, match=f'expand it to over {MAX_EXPANDED_NODES:,}'):
        read_yaml(path)


@pytest.mark.parametrize('text', ['a: &a [*a]\n', 'b: &b {x: *b}\n', 'c: &c [1, [2, *c]]\n'])
def test_a_recursive_alias_is_one_line_not_a_hang(tmp_path, capsys, text):
    """A value that contains itself (found by a fuzz campaign: `robodata profile` and every command taking a
    profile or a taxonomy hung on it) is refused at once, in every loader."""
    path = tmp_path / 'p.yaml'
    path.write_text(text)
    with within(5), pytest.raises(RobodataError, match='a recursive alias'):
        read_yaml(path)
    with within(5):
        assert main(['profile', str(path)]) == 1
    assert 'a recursive alias' in capsys.readouterr().err
    with within(5), pytest.raises(RobodataError, match='a recursive alias'):
        load_taxonomy(path)
    with within(10):  # the recorder needed SIGKILL on it: now refused before any node starts
        assert main(['record', '--profile', str(path), '--dataset', str(tmp_path / 'ds')]) == 1
    assert 'a recursive alias' in one_line(capsys.readouterr().err, 'record')
    assert not (tmp_path / 'ds').exists()


def test_a_few_aliases_as_people_write_them_are_fine(tmp_path):
    path = tmp_path / 'anchors.yaml'
    path.write_text('defaults: &d {rate_hz: 100, qos: auto}\na: *d\nb: *d\n')
    assert read_yaml(path) == {'defaults': {'rate_hz': 100, 'qos': 'auto'}, 'a': {'rate_hz': 100, 'qos': 'auto'},
                               'b': {'rate_hz': 100, 'qos': 'auto'}}


@pytest.mark.parametrize('text, says', [
    ('a: ' + '[' * 100 + ']' * 100 + '\n', 'nested deeper than 64 levels'),
    ('a: ' + '[' * 5000 + ']' * 5000 + '\n', 'exceeded maximum nesting depth'),  # libyaml's own limit, worded
    ('n: ' + '9' * 5000 + '\n', 'has more digits than any value here can hold'),
])
def test_deep_nesting_and_absurd_numbers_are_one_line(tmp_path, text, says):
    path = tmp_path / 'x.yaml'
    path.write_text(text)
    with within(5), pytest.raises(RobodataError, match=says):
        read_yaml(path)


def test_not_utf8_a_fifo_and_a_directory_are_named(tmp_path):
    bad = tmp_path / 'latin1.yaml'
    bad.write_bytes('name: caf\xe9\n'.encode('latin-1'))
    with pytest.raises(RobodataError, match=r'latin1\.yaml: unreadable: not UTF-8 text'):
        read_yaml(bad)
    fifo = tmp_path / 'pipe.yaml'
    os.mkfifo(fifo)
    with within(5), pytest.raises(RobodataError, match=r'pipe\.yaml: not a regular file'):
        read_yaml(fifo)
    with pytest.raises(RobodataError, match='is a directory'):
        read_yaml(tmp_path)


def test_json_too_deep_or_with_a_huge_number_is_one_line(tmp_path):
    deep = tmp_path / 'deep.json'
    deep.write_text('[' * 100_000 + ']' * 100_000)
    with pytest.raises(RobodataError, match='nested too deep'):
        read_json(deep)
    huge = tmp_path / 'huge.json'
    huge.write_text('{"score": ' + '9' * 5000 + '}')
    with pytest.raises(RobodataError, match='not valid JSON'):
        read_json(huge)


def test_check_yaml_leaves_syntax_errors_to_the_loader_that_words_them(tmp_path):
    assert check_yaml('a: [unclosed\n', 'x.yaml') is None  # no error here: the real load names line and column
    path = tmp_path / 'x.yaml'
    path.write_text('a: [unclosed\n')
    with pytest.raises(RobodataError, match=r'x\.yaml: unreadable: while parsing a flow sequence.* line 1, column 4'):
        read_yaml(path)


# -- the commands ----------------------------------------------------------------------------------------------

Breaker = Callable[[Path], Path]


def _bomb_in(name: str) -> Breaker:
    """An alias bomb under an allowed key of the dataset's `name` file."""
    def apply(root: Path) -> Path:
        path = next(root.rglob(name))
        path.write_text(path.read_text() + 'notes_bomb:\n' + ''.join('  ' + line + '\n' for line in BOMB.splitlines()))
        return root
    return apply


def _latin1(name: str) -> Breaker:
    def apply(root: Path) -> Path:
        path = next(root.rglob(name))
        path.write_bytes(path.read_bytes() + '# caf\xe9\n'.encode('latin-1'))
        return root
    return apply


def _bag(root: Path) -> Path:
    return next(root.glob('episodes/*/bag'))


@pytest.mark.parametrize('command, breaker, target, says', [
    (['info'], _bomb_in('dataset.yaml'), lambda root: root, 'dataset.yaml: its aliases expand it'),
    (['list'], _bomb_in('dataset.yaml'), lambda root: root, 'dataset.yaml: its aliases expand it'),
    (['info'], _bomb_in('metadata.yaml'), _bag, 'metadata.yaml: its aliases expand it'),
    (['score'], _bomb_in('metadata.yaml'), _bag, 'metadata.yaml: its aliases expand it'),
    (['info'], _latin1('metadata.yaml'), _bag, 'metadata.yaml: unreadable: not UTF-8 text'),
    (['info'], _latin1('dataset.yaml'), lambda root: root, 'dataset.yaml: unreadable: not UTF-8 text'),
], ids=['info-dataset-bomb', 'list-dataset-bomb', 'info-metadata-bomb', 'score-metadata-bomb',
        'info-metadata-latin1', 'info-dataset-latin1'])
def test_hostile_dataset_files_are_one_line_fast_and_change_nothing(tmp_path, capsys, make_demo_dataset, command,
                                                                   breaker, target, says, sim_cell_profile_path):
    root = breaker(make_demo_dataset(1).root)
    before = digest(root)
    extra = ['--profile', sim_cell_profile_path] if command == ['score'] else []
    code, err = run(capsys, *command, target(root), *extra)
    line = one_line(err, command[0])
    assert code == 1 and says in line
    assert digest(root) == before


def test_verify_names_an_episode_yaml_bomb_among_its_findings(tmp_path, capsys, make_demo_dataset):
    root = _bomb_in('episode.yaml')(make_demo_dataset(1).root)
    before = digest(root)
    with within(20):
        code = main(['verify', str(root)])
    out, err = capsys.readouterr()
    episode_id = next(root.glob('episodes/*')).name
    assert code == 1 and f'FAIL {episode_id}: ' in out and 'episode.yaml: its aliases expand it' in out, out
    assert one_line(err, 'verify') == 'robodata verify: error: 1 problem(s) in 1 of 1 checked (listed on stdout)'
    assert digest(root) == before


def test_catalog_rebuild_with_a_5000_digit_number_is_one_line(tmp_path, capsys, make_demo_dataset):
    root = make_demo_dataset(1).root
    episode_yaml = next(root.rglob('episode.yaml'))
    episode_yaml.write_text(episode_yaml.read_text().replace('stop_ns:', 'stop_ns: ' + '9' * 5000 + '\nold_stop_ns:'))
    before = episode_yaml.read_bytes()
    with within(20):
        code = main(['catalog', 'rebuild', str(root)])
    out, err = capsys.readouterr()
    assert code == 3, out + err  # done, but not all of it: the rest of the catalog is rebuilt
    # the broken episode is skipped and named, the command does not die on it
    skipped = f'skipped episodes/{episode_yaml.parent.name}: episode.yaml unreadable: {episode_yaml}: line '
    assert skipped in out and 'more digits than any value here can hold' in out and '1 folder(s) skipped' in out, out
    (verdict,) = err.strip().splitlines()
    assert verdict.startswith('robodata catalog: ') and '1 episode folder(s) left out' in verdict, err
    assert episode_yaml.read_bytes() == before  # skipped, not rewritten


def test_a_fifo_as_profile_or_taxonomy_does_not_hang(tmp_path, capsys, make_demo_dataset):
    fifo = tmp_path / 'profile.yaml'
    os.mkfifo(fifo)
    code, err = run(capsys, 'profile', fifo)
    assert code == 1 and 'not a regular file' in one_line(err, 'profile')
    root = make_demo_dataset(1).root
    code, err = run(capsys, 'export', 'frames', root, '--out', tmp_path / 'out', '--tasks', 'label_studio',
                    '--taxonomy', fifo)
    assert code == 1 and 'not a regular file' in one_line(err, 'export')


def test_a_huge_number_in_a_profile_is_one_line(tmp_path, capsys):
    profile = tmp_path / 'p.yaml'
    text = (Path(__file__).resolve().parents[1] / 'config' / 'sim_cell.yaml').read_text()
    profile.write_text(text.replace('silent_after_s: 1.0', 'silent_after_s: ' + '9' * 400))
    code, err = run(capsys, 'profile', profile)
    assert code == 1 and 'more digits' in one_line(err, 'profile')


def test_events_json_of_the_wrong_shape_is_named_by_score_and_export(tmp_path, capsys, make_demo_dataset):
    root = make_demo_dataset(1).root
    events = next(root.glob('episodes/*')) / 'events.json'
    events.write_text('{"events": [{"kind": "grasp"}], "timeline": "nope"}')
    code, err = run(capsys, 'export', 'frames', root, '--out', tmp_path / 'out', '--around-events', 'grasp',
                    '--window', '0.5s')
    assert code == 3 and 'events.json' in err and 'integer t_ns' in err  # the episode failed, named; the run went on
    (line,) = err.strip().splitlines()
    assert line.startswith(f'robodata export: {events.parent.name}: {events}: ') and 'robodata segment' in line, err


# -- damaged bags: read up to (and past) the damage, on every path --------------------------------------------


@pytest.fixture(scope='module')
def multi_chunk_bag(tmp_path_factory) -> Path:
    """A sim episode with small camera images: a dozen MCAP chunks, each with its CRC."""
    from ros_robodata.profile import load_profile
    from ros_robodata.sim.to_bag import write_sim_episode

    bag = tmp_path_factory.mktemp('multi') / 'bag'
    write_sim_episode(bag, load_profile(PROFILE), seed=0, max_duration_s=4.0, cameras=True, image_size=(160, 120))
    return bag


PROFILE = Path(__file__).resolve().parents[1] / 'config' / 'sim_cell.yaml'


def _damaged_copy(bag: Path, tmp_path: Path, change: Callable[[bytearray], None]) -> Path:
    import shutil

    copy = tmp_path / 'damaged'
    shutil.copytree(bag, copy)
    mcap = next(copy.glob('*.mcap'))
    data = bytearray(mcap.read_bytes())
    change(data)
    mcap.write_bytes(bytes(data))
    return copy


def _flip_inside_a_chunk(data: bytearray) -> None:
    at = len(data) * 2 // 5
    data[at:at + 64] = bytes(b ^ 0xFF for b in data[at:at + 64])


def test_our_bags_carry_chunk_crcs_that_an_independent_reader_checks(multi_chunk_bag):
    from mcap.reader import make_reader

    with next(multi_chunk_bag.glob('*.mcap')).open('rb') as f:
        reader = make_reader(f, validate_crcs=True)
        crcs = [index.chunk_start_offset for index in reader.get_summary().chunk_indexes]
        assert len(crcs) > 3
        assert sum(1 for _ in reader.iter_messages()) > 1000


def test_a_flipped_chunk_is_found_by_every_reader_and_only_its_messages_are_lost(multi_chunk_bag, tmp_path, capsys):
    from ros_robodata.bag.reader import BagReader

    with BagReader(multi_chunk_bag) as reader:
        total = reader.message_count
    damaged = _damaged_copy(multi_chunk_bag, tmp_path, _flip_inside_a_chunk)
    with BagReader(damaged) as reader:
        kept = sum(1 for _ in reader.messages())
        assert not reader.complete and 'Chunk checksum mismatch' in reader.notes[0]
    assert total * 0.8 < kept < total  # one chunk of a dozen is lost, not everything after it
    for command in (['segment', damaged, '--profile', PROFILE], ['score', damaged, '--profile', PROFILE]):
        code, err = run(capsys, *command)
        assert code == 0 and 'is damaged' in err and 'robodata repair' in err
    with within(20):
        assert main(['verify', str(damaged)]) == 1
    assert 'Chunk checksum mismatch' in capsys.readouterr().out
    code, _ = run(capsys, 'repair', damaged, '--profile', PROFILE)
    assert code == 0
    with BagReader(damaged) as reader:
        assert reader.complete and reader.message_count == kept
    assert (damaged / 'damaged').is_dir()  # the original, untouched


@pytest.mark.parametrize('where', ['first record', 'middle'])
def test_a_record_length_past_the_end_of_the_file_is_damage_not_a_memory_error(multi_chunk_bag, tmp_path, capsys,
                                                                              where):
    import struct

    def bogus(data: bytearray) -> None:
        at = 9 if where == 'first record' else len(data) // 3
        data[at:at + 8] = struct.pack('<Q', 85_761_906_966_642)

    damaged = _damaged_copy(multi_chunk_bag, tmp_path, bogus)
    # 'bag.mcap is ...', not 'damaged' alone: the folder is called that
    says = ('bag.mcap is damaged or truncated (a length in it claims more than the file holds)'
            if where == 'first record' else 'bag.mcap is damaged (ReaderError: Chunk checksum mismatch.)')
    # at the first record nothing is readable: segment has no gripper topic to work on and refuses
    expected = {'info': 0, 'segment': 1 if where == 'first record' else 0, 'score': 0}
    for command in (['info', damaged], ['segment', damaged, '--profile', PROFILE],
                    ['score', damaged, '--profile', PROFILE]):
        with within(30):
            code = main([str(a) for a in command])
        out, err = capsys.readouterr()
        assert 'MemoryError' not in out + err
        assert code == expected[command[0]], (command, code, out, err)
        if code == 1:
            assert says in one_line(err, command[0]) and out == '', (out, err)
        elif command[0] == 'info' and where == 'first record':
            assert says in out, out
        elif command[0] == 'info':  # info reads the summary at the end of the file, which is whole
            assert '/joint_states' in out, out
        else:  # read up to and past the damage: one note, and the results on stdout
            (note,) = err.strip().splitlines()
            assert note.startswith(f'robodata {command[0]}: ') and says in note and out, (out, err)


def test_a_wrench_of_1e300_newton_is_scored_not_a_crash(tmp_path, capsys):
    """Garbage in a readable message (a damaged chunk without a CRC, another tool's bug): huge, not a traceback."""
    from ros_robodata.quality.contact import WrenchWatch

    watch = WrenchWatch('/wrist/wrench', 200.0)
    assert watch.add(1, (1e300, 1e300, 1e300)) == ['contact.force_limit']
    assert watch.peak_n > 1e300


# -- inputs are never outputs ----------------------------------------------------------------------------------


@pytest.mark.parametrize('out', ['dataset.yaml', 'episodes/{id}/bag/bag.mcap', 'episodes/{id}/report.html',
                                 'catalog.sqlite', 'episodes/{id}/bag/x.html'])
def test_report_never_writes_over_a_dataset_or_a_recording(tmp_path, capsys, make_demo_dataset, out):
    root = make_demo_dataset(1).root
    assert main(['score', str(root)]) in (0, 3)
    capsys.readouterr()
    episode_id = next(root.glob('episodes/*')).name
    before = digest(root)
    target = root / out.format(id=episode_id)
    code, err = run(capsys, 'report', root, '--out', target)
    assert code == 1 and str(target) in one_line(err, 'report')
    assert digest(root) == before


def test_report_replaces_its_own_report_but_not_another_file_without_force(tmp_path, capsys, make_demo_dataset):
    root = make_demo_dataset(1).root
    main(['score', str(root)])
    capsys.readouterr()
    mine = tmp_path / 'r.html'
    assert run(capsys, 'report', root, '--out', mine)[0] == 0
    assert run(capsys, 'report', root, '--out', mine)[0] == 0  # a report of ours: replaced
    notes = tmp_path / 'notes.html'
    notes.write_text('<html>my notes</html>')
    code, err = run(capsys, 'report', root, '--out', notes)
    assert code == 1 and 'add --force' in one_line(err, 'report') and notes.read_text() == '<html>my notes</html>'
    assert run(capsys, 'report', root, '--out', notes, '--force')[0] == 0


@pytest.mark.parametrize('case', ['dataset root', 'episodes folder', 'a file', 'below a file', 'symlink loop',
                                  'a folder of other things'])
def test_export_refuses_an_out_folder_that_is_data_or_not_a_folder(tmp_path, capsys, make_demo_dataset, case):
    root = make_demo_dataset(1).root
    (tmp_path / 'file.txt').write_text('x')
    (tmp_path / 'loop').symlink_to(tmp_path / 'loop')
    (tmp_path / 'stuff').mkdir()
    (tmp_path / 'stuff' / 'thesis.pdf').write_text('x')
    out = {'dataset root': root, 'episodes folder': root / 'episodes' / 'frames', 'a file': tmp_path / 'file.txt',
           'below a file': tmp_path / 'file.txt' / 'frames', 'symlink loop': tmp_path / 'loop' / 'frames',
           'a folder of other things': tmp_path / 'stuff'}[case]
    before = digest(root)
    code, err = run(capsys, 'export', 'frames', root, '--out', out, '--tasks', 'none')
    assert code == 1 and str(out) in one_line(err, 'export')
    assert digest(root) == before
    if case == 'a folder of other things':
        code, _ = run(capsys, 'export', 'frames', root, '--out', out, '--tasks', 'none', '--force')
        assert code != 1 and (out / 'episodes').is_dir() and (out / 'thesis.pdf').read_text() == 'x'


# -- half-done changes, read-only datasets ---------------------------------------------------------------------


@pytest.mark.parametrize('broken', ['audit is a directory', 'catalog is garbage'])
def test_set_changes_nothing_when_its_audit_line_or_catalog_cannot_be_written(tmp_path, capsys, make_demo_dataset,
                                                                             broken):
    root = make_demo_dataset(1).root
    episode = next(root.glob('episodes/*'))
    if broken == 'audit is a directory':
        (root / 'audit.jsonl').unlink(missing_ok=True)
        (root / 'audit.jsonl').mkdir()
    else:
        (root / 'catalog.sqlite').write_bytes(b'not a database at all' * 100)
    before = (episode / 'episode.yaml').read_bytes()
    code, err = run(capsys, 'set', episode, '--outcome', 'success')
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert (episode / 'episode.yaml').read_bytes() == before  # not changed without its audit line
    assert not list(root.rglob('.*.tmp'))


def test_a_read_only_dataset_can_be_read(tmp_path, capsys, make_demo_dataset, monkeypatch):
    """As root the permission bits do not stop writes, so a read-only medium is simulated for the catalog."""
    root = make_demo_dataset(1).root
    before = digest(root)
    monkeypatch.setattr('ros_robodata.dataset.catalog.os.access', lambda path, mode: False)
    for command in (['info', root], ['list', root]):
        code, err = run(capsys, *command)
        assert code == 0, err
    with within(20):
        assert main(['verify', str(root)]) == 0
    capsys.readouterr()
    code, err = run(capsys, 'set', next(root.glob('episodes/*')), '--outcome', 'success')
    assert code == 1 and 'read-only' in one_line(err, 'set')
    assert digest(root) == before


def test_an_audit_log_with_a_broken_line_is_named_not_a_traceback(tmp_path, make_demo_dataset):
    from ros_robodata.dataset.audit import read_audit
    from ros_robodata.errors import DatasetError

    root = make_demo_dataset(1).root
    entries = len(list(read_audit(root / 'audit.jsonl')))
    with (root / 'audit.jsonl').open('a') as f:  # a write cut short by a crash, as the last line: not an entry yet
        f.write('{"time": "cut sho\n')
    assert len(list(read_audit(root / 'audit.jsonl'))) == entries
    with (root / 'audit.jsonl').open('a') as f:  # an entry after it that does not say the line before was cut
        f.write('{"time": "2026-12-07T10:00:00+0000", "action": "set_outcome", "episode": null}\n')
    with pytest.raises(DatasetError, match=rf'audit\.jsonl: line {entries + 1} is not an audit entry'):
        list(read_audit(root / 'audit.jsonl'))


def test_export_options_that_make_no_sense_are_refused(tmp_path, capsys, make_demo_dataset):
    root = make_demo_dataset(1).root
    for options, says in ((['--around-events', 'bogus', '--window', '1s'], 'bogus is not an event kind'),
                          (['--every-n', '1000000000000000000000000000000'], '--every-n must be from 1 to')):
        code, err = run(capsys, 'export', 'frames', root, '--out', tmp_path / 'out', '--tasks', 'none', *options)
        assert code == 1 and says in one_line(err, 'export')


# -- the fuzz suite's fast subset ------------------------------------------------------------------------------


def test_a_seeded_sample_of_the_fuzz_suite_finds_no_traceback_hang_or_damage():
    """bench/fuzz_inputs.py at a size the suite can afford: 30 seeded cases across every family of damage."""
    import importlib.util

    spec = importlib.util.spec_from_file_location('fuzz_inputs', Path(__file__).resolve().parents[1] / 'bench'
                                                  / 'fuzz_inputs.py')
    fuzz_inputs = importlib.util.module_from_spec(spec)
    sys.modules['fuzz_inputs'] = fuzz_inputs  # dataclasses look their module up there
    spec.loader.exec_module(fuzz_inputs)
    result = fuzz_inputs.fuzz(30, seed=7, limit_s=20.0, quiet=True)
    assert result['cases'] == 30
    assert (result['tracebacks'], result['runs over the limit'], result['dataset files damaged'],
            result['other exits']) == (0, 0, 0, 0), result['problems']
    assert result['clean one-line errors'] > 5 and result['handled (exit 0 or 3)'] > 5  # both kinds were tried
    assert result['peak memory of any case (MiB)'] < 1024


@pytest.mark.parametrize('command, where', [
    (['repair'], 'episode.yaml'), (['set', '--outcome', 'success'], 'episode.yaml'),
    (['score'], 'quality.json'), (['info'], 'metadata.yaml'), (['list'], 'dataset.yaml')])
def test_a_folder_where_a_file_belongs_is_one_line(tmp_path, capsys, make_demo_dataset, command, where):
    root = make_demo_dataset(1).root
    episode = next(root.glob('episodes/*'))
    path = {'episode.yaml': episode / 'episode.yaml', 'events.json': episode / 'events.json',
            'quality.json': episode / 'quality.json', 'metadata.yaml': episode / 'bag' / 'metadata.yaml',
            'dataset.yaml': root / 'dataset.yaml'}[where]
    path.unlink(missing_ok=True)
    path.mkdir()
    target = episode if command[0] in ('set', 'segment') else (episode / 'bag' if where == 'metadata.yaml' else root)
    before = digest(root)
    with within(30):
        code = main([command[0], str(target), *command[1:]])
    out, err = capsys.readouterr()
    # each command needs that file (to read it, or to write it): refused in one line naming the folder in its way
    assert code == 1 and out == '', (code, out, err)
    assert f'{path}: ' in one_line(err, command[0]), err
    assert digest(root) == before and path.is_dir() and not any(path.iterdir())  # nothing written, nothing moved


def _without_crcs(bag: Path) -> Callable[[bytearray], None]:
    """Another tool's bag: the same chunks with CRC 0 ("not computed"), then the start of one chunk's zstd stream
    flipped, which no decompressor reads past. (Bytes flipped in the middle of a chunk land in a stored block of
    camera pixels: without a CRC nothing can notice them, and every message still decodes.)"""
    from mcap.reader import make_reader

    with next(bag.glob('*.mcap')).open('rb') as f:
        indexes = make_reader(f).get_summary().chunk_indexes

    def change(data: bytearray) -> None:
        for index in indexes:
            data[index.chunk_start_offset + 33:index.chunk_start_offset + 37] = bytes(4)
        at = len(data) * 2 // 5
        hit = next(i for i in indexes if i.chunk_start_offset <= at < i.chunk_start_offset + i.chunk_length)
        # past the chunk's opcode, length, times, size, CRC, compression name and records length
        start = hit.chunk_start_offset + 41 + len(hit.compression) + 8
        data[start:start + 64] = bytes(b ^ 0xFF for b in data[start:start + 64])
    return change


def test_a_damaged_chunk_without_a_crc_is_damage_on_every_path(multi_chunk_bag, tmp_path, capsys):
    """rosbags and older writers leave chunk CRCs at 0: the damage shows as a decompression error (ZstdError on
    the fast path, issue 21) and must read as a damaged bag, not a traceback."""
    damaged = _damaged_copy(multi_chunk_bag, tmp_path, _without_crcs(multi_chunk_bag))
    for command in (['info', damaged], ['segment', damaged, '--profile', PROFILE],
                    ['score', damaged, '--profile', PROFILE],
                    ['export', 'frames', damaged, '--profile', PROFILE, '--out', tmp_path / 'frames', '--tasks',
                     'none']):
        with within(30):
            code = main([str(a) for a in command])
        out, err = capsys.readouterr()
        assert code == 0 and 'damaged' in out + err, (command, out, err)  # read past the damage: done
        if command[0] in ('segment', 'score', 'export'):  # the decompression error worded as damage, in one note
            (note,) = err.strip().splitlines()
            who = 'export' if command[0] == 'export' else command[0]
            assert note.startswith(f'robodata {who}: ') and 'bag.mcap is damaged (ZstdError: ' in note, err
            assert 'the rest was read; run `robodata repair`' in note and out, (out, err)
        else:  # info reads only the summary, whole here
            assert 'ZstdError' not in out + err, (command, out, err)
    frames = json.loads(next((tmp_path / 'frames' / 'episodes').glob('*/frames.json')).read_text())
    assert len(frames['bag_notes']) == 1 and 'is damaged (ZstdError: ' in frames['bag_notes'][0]


@pytest.mark.parametrize('where', ['dataset.yaml', 'metadata.yaml'])
def test_yaml_nested_thousands_deep_is_one_line_from_info(tmp_path, capsys, make_demo_dataset, where):
    """RecursionError in `info` on a bag and on a dataset (issue 21)."""
    root = make_demo_dataset(1).root
    path = next(root.rglob(where))
    path.write_text(path.read_text() + 'deep: ' + '[' * 5000 + ']' * 5000 + '\n')
    before = digest(root)
    target = root if where == 'dataset.yaml' else path.parent
    code, err = run(capsys, 'info', target)
    assert code == 1 and where in one_line(err, 'info')
    assert digest(root) == before


def test_a_time_past_int64_in_quality_json_is_named_by_report(tmp_path, capsys, make_demo_dataset):
    """OverflowError drawing the timeline (found by fuzz_inputs, seed 33): a start_ns no bag can hold is a file
    robodata did not write, said in one line."""
    root = make_demo_dataset(1).root
    assert main(['score', str(root)]) == 0
    quality = next(root.glob('episodes/*/quality.json'))
    doc = json.loads(quality.read_text())
    doc['start_ns'] = int('9' * 25)
    quality.write_text(json.dumps(doc))
    capsys.readouterr()
    code, err = run(capsys, 'report', root, '--out', tmp_path / 'report.html')
    line = one_line(err, 'report')
    assert code == 1 and 'quality.json' in line and "'start_ns' holds int" in line and 'robodata score' in line
    assert not (tmp_path / 'report.html').exists()


def test_a_broken_sidecar_is_named_by_report_and_listed_past(tmp_path, capsys, make_demo_dataset):
    """JSONDecodeError in `list` on a broken sidecar (issue 21): list reads the catalog and goes on, report needs
    the sidecar and says which one and what to run."""
    root = make_demo_dataset(1).root
    episode = next(root.glob('episodes/*'))
    assert main(['score', str(root)]) == 0
    (episode / 'quality.json').write_text('{"score": 0.9, "checks": [')
    capsys.readouterr()
    code, err = run(capsys, 'list', root)
    assert code == 0
    code, err = run(capsys, 'report', root, '--out', tmp_path / 'report.html')
    line = one_line(err, 'report')
    assert code == 1 and 'quality.json' in line and 'robodata score' in line


def test_an_unreadable_episode_is_named_by_catalog_rebuild_and_list(tmp_path, capsys, make_demo_dataset):
    """catalog rebuild skips an episode whose episode.yaml is wrong (exit 3: done, but not all of it), and `list`
    then says a folder is missing from the catalog instead of "no episode yet"."""
    root = make_demo_dataset(1).root
    episode_yaml = next(root.glob('episodes/*/episode.yaml'))
    episode_yaml.write_text(episode_yaml.read_text().replace('outcome: ', 'outcome: [x]\nold_outcome: '))
    with within(20):
        code = main(['catalog', 'rebuild', str(root)])
    out, _ = capsys.readouterr()
    assert code == 3 and 'episode.yaml unreadable' in out and '1 folder(s) skipped' in out
    with within(20):
        code = main(['list', str(root)])
    out = capsys.readouterr().out
    assert code == 0 and 'no episode yet' not in out and '1 folder(s) under episodes/ not in the catalog' in out, out


def test_a_taxonomy_of_20000_classes_loads_in_linear_time(tmp_path):
    """8,000 classes took 33 s (quadratic, issue 21): a hang guard, not a timing target (bench has the figure)."""
    from ros_robodata.labeling.taxonomy import load_taxonomy

    path = tmp_path / 'taxonomy.yaml'
    path.write_text('classes:\n' + ''.join(f'  - name: class_{i}\n' for i in range(20_000)))
    with within(20):
        taxonomy = load_taxonomy(path)
    assert len(taxonomy.classes) == 20_000


def test_temporary_files_of_a_killed_command_are_cleared_by_repair_and_named_by_verify(tmp_path, capsys,
                                                                                      make_demo_dataset):
    """A SIGKILL between write and rename leaves `.episode.yaml.tmp`: verify names it, repair removes it, and
    the file it was meant to replace is untouched."""
    root = make_demo_dataset(1).root
    episode = next(root.glob('episodes/*'))
    leftovers = [episode / '.episode.yaml.tmp', root / '.dataset.yaml.tmp', episode / '.quality.json.tmp']
    for path in leftovers:
        path.write_text('half a fi')
    before = (episode / 'episode.yaml').read_bytes()
    with within(30):
        code = main(['verify', str(root)])
    out = capsys.readouterr().out
    assert code == 1 and '.episode.yaml.tmp' in out and 'robodata repair' in out, out
    with within(30):
        assert main(['repair', str(root)]) == 0
    out = capsys.readouterr().out
    assert not any(path.exists() for path in leftovers) and 'temporary file' in out, out
    assert (episode / 'episode.yaml').read_bytes() == before
    with within(30):
        assert main(['verify', str(root)]) == 0


def test_sigterm_stops_an_offline_command_without_leaving_temporary_files(tmp_path, make_demo_dataset):
    """`kill` (SIGTERM) is how a job scheduler stops `robodata score`: it ends as Ctrl-C does (exit 130), with its
    temporary files removed, whenever it lands."""
    import subprocess
    import time

    root = make_demo_dataset(2).root
    robodata = Path(sys.executable).with_name('robodata')
    for delay in (0.8, 1.6, 2.4):
        process = subprocess.Popen([str(robodata), 'score', str(root)], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
        # 130: stopped as Ctrl-C would; 0: done before the signal; -SIGTERM: still starting Python (nothing written)
        assert process.returncode in (0, 130, -signal.SIGTERM), err
        assert 'Traceback' not in out + err
        assert not list(root.rglob('.*.tmp'))
        if process.returncode == 130:
            assert 'interrupted' in err


@pytest.mark.parametrize('sidecar, edit', [
    ('quality_summary.json', lambda data: {**data, 'checks': {'completeness.missing_topic': 'text'}}),
    ('quality.json', lambda data: {**data, 'findings': [{'check': 'x', 'ranges_ns': [[1, 'soon']]}]}),
    ('quality.json', lambda data: {**data, 'success': 'yes'}),
], ids=['summary-check-count-is-text', 'finding-range-is-text', 'success-is-text'])
def test_report_names_a_sidecar_of_the_wrong_shape(tmp_path, capsys, make_demo_dataset, sidecar, edit):
    """Fuzz case 705 (seed 1): a count that is text in quality_summary.json was a TypeError in report."""
    import json

    root = make_demo_dataset(1).root
    assert main(['score', str(root)]) == 0
    path = next(root.rglob(sidecar))
    path.write_text(json.dumps(edit(json.loads(path.read_text()))))
    capsys.readouterr()
    code, err = run(capsys, 'report', root, '--out', tmp_path / 'report.html')
    line = one_line(err, 'report')
    assert code == 1 and sidecar in line and 'not what robodata score writes' in line and 'robodata score' in line


@pytest.mark.parametrize('command', [['list'], ['info'], ['verify'], ['select', '--dry-run']])
def test_a_catalog_row_whose_json_column_is_garbage_is_one_line(make_demo_dataset, capsys, command):
    """A catalog edited by hand (or damaged): the episode and the column named, and the way out."""
    import sqlite3

    dataset = make_demo_dataset(2)
    first = dataset.episode_ids()[0]
    with sqlite3.connect(dataset.root / 'catalog.sqlite') as conn:
        conn.execute("UPDATE episodes SET scores = ? WHERE id = ?", ('{not json', first))
    conn.close()
    with within(30):
        assert main([*command, str(dataset.root)]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert f'episode {first}: its scores column is not what robodata writes' in err
    assert '`robodata catalog rebuild`' in err
    assert main(['catalog', 'rebuild', str(dataset.root)]) == 0
    assert main(['list', str(dataset.root)]) == 0


@pytest.mark.parametrize('field, value, command, code', [
    ('bag_sha256', 'abc123', ['verify'], 1),
    ('topics', 3, ['catalog', 'rebuild'], 3),
    ('start_ns', 'yesterday', ['verify'], 1),
])
def test_an_episode_yaml_field_of_the_wrong_type_is_named(make_demo_dataset, capsys, field, value, command, code):
    """episode.yaml edited by hand (`bag_sha256: abc123`, `topics: 3`): the file and the field named, no traceback."""
    import yaml

    dataset = make_demo_dataset(2)
    first = dataset.episode_ids()[0]
    path = dataset.episode_dir(first) / 'episode.yaml'
    data = yaml.safe_load(path.read_text())
    data[field] = value
    path.write_text(yaml.safe_dump(data))
    with within(30):
        assert main([*command, str(dataset.root)]) == code
    out, err = capsys.readouterr()
    said = ' '.join((out + err).split())  # verify reports it as a FAIL line, rebuild as skipped
    assert f'{field}: expected' in said and first in said, said
    (verdict,) = err.strip().splitlines()  # and the verdict on stderr, one line
    assert verdict.startswith(f'robodata {command[0]}: ') and ('1 of 2 checked' in verdict or
                                                                '1 episode folder(s) left out' in verdict), verdict


def test_an_empty_path_is_refused_and_creates_nothing(tmp_path, capsys, monkeypatch):
    """`init ''` created a dataset in the working folder (the OS reads '' as '.'): an empty path is refused for
    every command that takes a target, before anything is made."""
    monkeypatch.chdir(tmp_path)
    for argv in (['init', ''], ['list', ' '], ['score', '']):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert err.strip().splitlines()[-1].endswith('an empty path (give a folder or a file; "." for the working '
                                                     'folder)'), err
    assert list(tmp_path.iterdir()) == []


def test_a_simulated_camera_larger_than_its_render_buffer_is_one_line(tmp_path, capsys):
    assert main(['demo', '--image-size', '100000x100000', '--out', str(tmp_path / 'd')]) == 1
    err = capsys.readouterr().err
    assert err.strip() == "robodata demo: error: --image-size '100000x100000': at most 1280x960 (the simulated " \
        "cameras' render buffer)"
    assert not (tmp_path / 'd').exists()


def test_a_demo_out_that_is_a_file_is_one_line(tmp_path, capsys):
    taken = tmp_path / 'notes.txt'
    taken.write_text('mine')
    assert main(['demo', '--out', str(tmp_path / 'a'), '--out', str(taken)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f'robodata demo: error: --out {taken}: a file is there; the demo writes a folder (OUT/dataset): '
                   'give another path']
    assert taken.read_text() == 'mine' and not (tmp_path / 'a').exists()


@pytest.mark.parametrize('column, value, said', [
    ('score', 'abc', "its score column holds text ('abc')"),
    ('duration_s', 'long', "its duration_s column holds text ('long')"),
    ('start_ns', b'\x00', 'its start_ns column holds bytes'),
    ('message_count', 1.5, "its message_count column holds a fraction ('1.5')"),
    ('review_priority', 'high', "its review_priority column holds text ('high')"),
])
def test_a_catalog_column_of_the_wrong_type_is_one_line(make_demo_dataset, capsys, column, value, said):
    """SQLite keeps any type in any column: a hand edit (`score = 'abc'`) is named, episode and column, by every
    command that lists the catalog, and `catalog rebuild` is the way out."""
    import sqlite3

    dataset = make_demo_dataset(2)
    first = dataset.episode_ids()[0]
    with sqlite3.connect(dataset.root / 'catalog.sqlite') as conn:
        conn.execute(f'UPDATE episodes SET {column} = ? WHERE id = ?', (value, first))
    conn.close()
    for command in (['list'], ['info'], ['verify']):
        with within(30):
            assert main([*command, str(dataset.root)]) == 1
        line = one_line(capsys.readouterr().err, command[0])
        assert f"episode '{first}': {said}" in line and '`robodata catalog rebuild`' in line, line
    assert main(['catalog', 'rebuild', str(dataset.root)]) == 0
    capsys.readouterr()
    assert main(['list', str(dataset.root), '--json']) == 0
    assert first in capsys.readouterr().out


def test_the_file_system_root_is_not_searched_for_bags(capsys):
    """`robodata info /` walked into /proc and failed on a process's cwd: the root is refused by name."""
    code, err = run(capsys, 'info', '/')
    assert code == 1
    assert one_line(err, 'info') == ('robodata info: error: /: the root of the file system, not a dataset, an episode '
                                     'or a bag: name the folder that holds them')


def _robodata_as_user(*args: object) -> tuple[int, str]:
    import subprocess

    robodata = Path(sys.executable).with_name('robodata')
    done = subprocess.run([str(robodata), *map(str, args)], capture_output=True, text=True, timeout=120,
                          preexec_fn=without_permission_override())
    return done.returncode, done.stderr


def test_folders_the_user_may_not_read_or_write_are_one_line(tmp_path, make_demo_dataset):
    """A dataset in a folder the user cannot list, `init` where they cannot write, `repair` of a truncated bag in a
    read-only episode folder: one line each naming the path and the cause, and nothing changed."""
    locked = tmp_path / 'locked'
    locked.mkdir()
    make_demo_dataset(1, path=locked / 'ds')
    locked.chmod(0o000)
    read_only = tmp_path / 'read_only'
    read_only.mkdir(mode=0o555)
    dataset = make_demo_dataset(1, path=tmp_path / 'ds')
    episode = dataset.episode_dir(dataset.episode_ids()[0])
    mcap = next((episode / 'bag').glob('*.mcap'))
    with mcap.open('r+b') as f:
        f.truncate(mcap.stat().st_size * 2 // 3)
    for folder in (episode / 'bag', episode):
        folder.chmod(0o555)
    before = digest(dataset.root)
    try:
        code, err = _robodata_as_user('info', locked / 'ds')
        assert code == 1 and one_line(err, 'info').endswith('cannot read or write: permission denied'), err
        assert str(locked) in err
        code, err = _robodata_as_user('init', read_only / 'ds')
        assert code == 1 and one_line(err, 'init') == (f'robodata init: error: {read_only / "ds"}: cannot read or '
                                                       'write: permission denied')
        assert list(read_only.iterdir()) == []
        code, err = _robodata_as_user('repair', dataset.root)
        assert code == 3 and 'not repairable' in err and len(err.strip().splitlines()) == 1, err
        assert digest(dataset.root) == before
    finally:
        locked.chmod(0o755)
        for folder in (episode, episode / 'bag'):
            folder.chmod(0o755)


def test_sigterm_stops_a_command_whatever_it_is_reading(tmp_path, make_demo_dataset):
    """A scheduler's `kill` while `export frames` reads a 100,000-class taxonomy (seconds of YAML): the command
    stops where the signal lands, says so, and leaves no temporary file."""
    import subprocess
    import time

    root = make_demo_dataset(1).root
    taxonomy = tmp_path / 'big.yaml'
    taxonomy.write_text('version: 1\nname: big\nclasses:\n' + ''.join(
        f'  - name: group{i // 100}/class{i}\n    id: {i + 1}\n    kinds: [bbox]\n' for i in range(100_000)))
    robodata = Path(sys.executable).with_name('robodata')
    waits = []
    for delay in (1.0, 2.5, 4.0, 5.5):
        process = subprocess.Popen([str(robodata), 'export', 'frames', str(root), '--out', str(tmp_path / 'frames'),
                                    '--tasks', 'label_studio', '--taxonomy', str(taxonomy)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        sent = time.monotonic()
        process.send_signal(signal.SIGTERM)
        err = process.communicate(timeout=60)[1]
        waits.append(time.monotonic() - sent)
        assert process.returncode == 130 and err.strip() == 'robodata export: interrupted', err
        assert not list(tmp_path.rglob('*.tmp')) and not list(root.rglob('.*.tmp'))
    # the 1 s figure is measured by bench/fuzz_inputs.py (its SIGTERM family); here: stopped, not run to its end
    assert max(waits) < 5.0, [round(w, 2) for w in waits]


@pytest.mark.parametrize('command', ['segment', 'list', 'score'])
def test_a_time_past_the_calendar_is_one_line(make_demo_dataset, capsys, command):
    """`--since 999...9` (50 digits) overflowed the platform's time_t when the command said what matched nothing."""
    root = make_demo_dataset(1).root
    code, err = run(capsys, command, root, '--since', '9' * 50)
    assert code == 1
    assert one_line(err, command).startswith(f"robodata {command}: error: --since: '{'9' * 50}' is neither a duration")
