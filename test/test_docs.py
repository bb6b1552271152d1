"""The documentation as a newcomer meets it: a front page that fits in a head, a site that builds with no
warning, an option reference that is the parser's own, and every command of the front page and of the journey
pages run as written, in order, against what `robodata demo` writes (an example that no longer runs fails here).

A block titled "... (until Ctrl-C)" is started and left running, as in a terminal of its own, and stopped with
Ctrl-C (exit status 0 expected) once the next plain block is through; one titled "... (q to quit)" runs on a
terminal of its own and is quit with q then. The front page's first block (`make demo`, `make test`) is the one
not run here: `make test` is what runs this file, and `make demo` is the `robodata demo` the fixture runs."""

from __future__ import annotations

import contextlib
import os
import pty
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from ros_robodata.dataset import Dataset
from ros_robodata.profile import load_profile
from ros_robodata.sim.to_bag import write_sim_episode
from test.ros_rig import new_domain, ros_env, stop_process

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r'^```(\w+)([^\n]*)\n(.*?)^```', re.S | re.M)
SETUP_BLOCK = ('make demo    # set up on first use, then run the demo\n'
               'make test    # set up on first use, then lint and run the whole test suite\n')


@dataclass
class Block:
    lang: str
    title: str
    text: str
    said: str = ''  # what running it printed

    @property
    def commands(self) -> list[str]:
        """The block's command lines, comments and continuations resolved as a shell reads them."""
        joined = self.text.replace('\\\n', ' ')
        return [line.split('  #')[0].strip() for line in joined.splitlines()
                if line.strip() and not line.lstrip().startswith('#')]


def blocks(page: str) -> list[Block]:
    text = (ROOT / page).read_text(encoding='utf-8')
    return [Block(m[1], m[2].strip(), m[3]) for m in BLOCK.finditer(text)]


def test_the_front_page_fits_in_a_head_and_every_link_lands() -> None:
    text = (ROOT / 'README.md').read_text(encoding='utf-8')
    assert len(text.splitlines()) < 200
    links = re.findall(r'\]\(((?:docs/)[^)#]+)\)', text)
    assert len(links) >= 12
    for link in links:
        assert (ROOT / link).exists(), link
    assert blocks('README.md')[0].text == SETUP_BLOCK


def test_the_option_reference_is_the_parsers_own() -> None:
    done = subprocess.run([sys.executable, str(ROOT / 'tools' / 'cli_reference.py'), '--check'], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout[-3000:]


def test_the_site_builds_offline_with_no_warning(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, '-m', 'mkdocs', 'build', '--strict', '--site-dir', str(tmp_path / 'site')],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, 'NO_MKDOCS_2_WARNING': '1'})
    assert done.returncode == 0, done.stderr[-3000:]
    assert 'WARNING' not in done.stderr, done.stderr[-3000:]
    for page in ('index.html', 'journeys/operator/index.html', 'cli/index.html'):
        assert (tmp_path / 'site' / page).is_file(), page
    assert 'robodata export lerobot' in (tmp_path / 'site' / 'cli' / 'index.html').read_text(encoding='utf-8')


@pytest.fixture(scope='module')
def old_rig_bags(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of bags recorded elsewhere, as the journeys expect beside the demo's output."""
    folder = tmp_path_factory.mktemp('journey_bags') / 'old_rig_bags'
    profile = load_profile(ROOT / 'config' / 'sim_cell.yaml')
    for seed in (7, 8):
        write_sim_episode(folder / f'run_{seed}', profile, seed, cameras=True, image_size=(80, 60),
                          max_duration_s=6.0)
    return folder


def run_page(page: str, workspace: Path, demo: Path, bags: Path) -> list[Block]:
    """Every shell block of `page`, in order, in `workspace` (beside a copy of the demo's output and the bags):
    what a newcomer would type. Returns the blocks run."""
    shutil.copytree(demo, workspace / 'robodata_demo')
    shutil.copytree(bags, workspace / 'old_rig_bags')
    env = {**ros_env(new_domain()), 'PATH': f'{Path(sys.executable).parent}{os.pathsep}{os.environ["PATH"]}',
           'TERM': 'xterm'}
    running: list[tuple[Block, subprocess.Popen, int | None, Path | None]] = []
    ran = []
    for block in blocks(page):
        if block.lang != 'sh' or block.text == SETUP_BLOCK:
            continue
        ran.append(block)
        if 'until Ctrl-C' in block.title:
            (command,) = block.commands
            log = workspace / f'terminal_{len(ran)}.log'
            running.append((block, subprocess.Popen(shlex.split(command), cwd=workspace, env=env,
                                                    stdout=log.open('w'), stderr=subprocess.STDOUT), None, log))
            time.sleep(3.0)
            continue
        if 'q to quit' in block.title:
            (command,) = block.commands
            master, slave = pty.openpty()
            running.append((block, subprocess.Popen(shlex.split(command), cwd=workspace, env=env, stdin=slave,
                                                    stdout=slave, stderr=slave, close_fds=True), master, None))
            os.close(slave)
            threading.Thread(target=_drain, args=(master,), daemon=True).start()  # a screen nobody reads blocks
            continue
        done = subprocess.run(['bash', '-e', '-c', block.text], cwd=workspace, env=env, capture_output=True,
                              text=True, timeout=900, check=False)
        assert done.returncode == 0, f'{page}: {block.text}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}'
        block.said = done.stdout + done.stderr
        for started, process, master, log in running:
            if master is not None:  # the keys screen quits on q; Ctrl-C only if it did not
                os.write(master, b'q')
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(60)
            stop_process(process, timeout=60)  # Ctrl-C, as in its terminal
            said = log.read_text(errors='replace')[-3000:] if log is not None else ''
            assert process.returncode == 0, f'{page}: {started.text} exited {process.returncode}\n{said}'
        running = []
    return ran


def _drain(master: int) -> None:
    try:
        while os.read(master, 4096):
            pass
    except OSError:  # the screen closed
        pass


def test_the_operators_journey_runs_as_written(tmp_path: Path, demo_run: tuple[object, Path],
                                               old_rig_bags: Path) -> None:
    ran = run_page('docs/journeys/operator.md', tmp_path, demo_run[1], old_rig_bags)
    assert [b.title.split(':')[0] for b in ran] == ['title="terminal 1', 'title="terminal 3', 'title="terminal 2',
                                                    'title="afterwards"']
    dataset = Dataset.open(tmp_path / 'my_rig')
    episodes = [dataset.episode(i) for i in dataset.episode_ids()]
    assert len(episodes) == 2 and {e.status for e in episodes} == {'complete'}
    # The cell says each episode's acted time (from its start to its end), not the wait at home before it.
    said = [float(s) for s in re.findall(r'episode \d \(seed \d+\): \w+, ([0-9.]+) s', ran[2].said)]
    marked = sorted((e.marked_stop_ns - e.marked_start_ns) / 1e9 for e in episodes
                    if e.marked_stop_ns is not None and e.marked_start_ns is not None)
    assert len(said) == 2 and all(abs(a - b) < 1.0 for a, b in zip(sorted(said), marked, strict=True)), (said, marked)
    assert all(e.outcome != 'unknown' for e in episodes)  # the cell labelled them as an operator would
    assert all((dataset.episode_dir(e.id) / 'quality.json').is_file() for e in episodes)
    assert (tmp_path / 'my_rig_report.html').is_file()


def test_the_reviewers_journey_runs_as_written(tmp_path: Path, demo_run: tuple[object, Path],
                                               old_rig_bags: Path) -> None:
    run_page('docs/journeys/reviewer.md', tmp_path, demo_run[1], old_rig_bags)
    dataset = Dataset.open(tmp_path / 'robodata_demo' / 'dataset')
    assert (dataset.root / 'review' / 'queue.json').is_file()
    assert (tmp_path / 'frames' / 'manifest.json').is_file()
    assert list((tmp_path / 'frames').rglob('*label_studio*'))


def test_the_data_engineers_journey_runs_as_written(tmp_path: Path, demo_run: tuple[object, Path],
                                                    old_rig_bags: Path) -> None:
    run_page('docs/journeys/data-engineer.md', tmp_path, demo_run[1], old_rig_bags)
    dataset = Dataset.open(tmp_path / 'my_data')
    assert sorted(dataset.episode_ids()) == ['run_7', 'run_8']
    assert all((dataset.episode_dir(i) / 'events.json').is_file() for i in dataset.episode_ids())
    assert (dataset.root / 'report.html').is_file()
    assert (tmp_path / 'training_set' / 'meta' / 'info.json').is_file()


def test_the_front_pages_commands_run_as_written(tmp_path: Path, demo_run: tuple[object, Path],
                                                 old_rig_bags: Path) -> None:
    ran = run_page('README.md', tmp_path, demo_run[1], old_rig_bags)
    assert len(ran) == 5
    assert len(Dataset.open(tmp_path / 'my_rig').episode_ids()) == 2
    assert sorted(Dataset.open(tmp_path / 'my_data').episode_ids()) == ['run_7', 'run_8']
    assert (tmp_path / 'training_set' / 'meta' / 'info.json').is_file()


def test_the_data_leads_journey_runs_as_written(tmp_path: Path, demo_run: tuple[object, Path],
                                                old_rig_bags: Path) -> None:
    ran = run_page('docs/journeys/data-lead.md', tmp_path, demo_run[1], old_rig_bags)
    assert len(ran) == 5
    dataset = Dataset.open(tmp_path / 'robodata_demo' / 'dataset')
    decided = re.findall(r'policy pick_place_training: (\d+) approved, (\d+) rejected', ran[1].said)
    assert decided and int(decided[-1][0]) == len(dataset.list()) and decided[-1][1] == '0'  # the demo's are clean
    v1 = (dataset.root / 'releases' / 'v1' / 'manifest.sha256').read_text().split()[0]
    assert f'"manifest_sha256": "{v1}"' in ran[2].said  # what a model trained on the export names
    (stone,) = (dataset.root / 'tombstones').glob('*.json')  # the participant's one episode
    assert not dataset.episode_dir(stone.stem).exists()
    assert not (tmp_path / 'training_v1').exists()  # the export held the withdrawn episode: deleted whole
    assert 'WITHDRAWN' in ran[4].said and 'v1 is affected' in ran[4].said
    assert f'- {stone.stem}' in ran[4].said and '1 removed' in ran[4].said
    assert [r.id for r in dataset.list(where='state = retired')] == [stone.stem]
