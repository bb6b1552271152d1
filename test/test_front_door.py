"""The package as a Python user meets it: the "From Python" journey's example runs as written, the front door
names what it promises, and the layout keeps the core free of ROS and of the command line."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ros_robodata
from ros_robodata.dataset import Dataset
from ros_robodata.profile import load_profile
from ros_robodata.sim.to_bag import write_sim_episode

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / 'ros_robodata'


def readme_example() -> str:
    """The Python journey's example (docs/journeys/python.md), which the front page links to."""
    text = (ROOT / 'docs' / 'journeys' / 'python.md').read_text(encoding='utf-8')
    match = re.search(r'```python\n(.*?)```', text, re.S)
    assert match, 'docs/journeys/python.md has no python example'
    return match.group(1)


def test_the_readme_example_runs_as_written(tmp_path: Path, demo_run: tuple[object, Path]) -> None:
    """On a copy of what `robodata demo` writes, laid out as the example expects (robodata_demo/dataset, the
    shipped profile under config/) beside a folder of old bags; in a fresh interpreter, as a user's script."""
    _, demo = demo_run
    shutil.copytree(demo / 'dataset', tmp_path / 'robodata_demo' / 'dataset')
    (tmp_path / 'config').mkdir()
    shutil.copy(ROOT / 'config' / 'sim_cell.yaml', tmp_path / 'config')
    profile = load_profile(tmp_path / 'config' / 'sim_cell.yaml')
    dataset = Dataset.open(tmp_path / 'robodata_demo' / 'dataset')
    for seed in (7, 8):
        write_sim_episode(tmp_path / 'old_rig_bags' / f'run_{seed}', profile, seed, max_duration_s=6.0)
    result = subprocess.run([sys.executable, '-c', readme_example()], cwd=tmp_path, capture_output=True, text=True,
                            timeout=600, check=False)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == 'dataset 2 episodes of sim_cell_arm'
    assert len(lines[2].split(' ')) >= 3  # the worst scored episode: id, score, first reason
    assert all((dataset.episode_dir(i) / 'events.json').is_file() for i in dataset.episode_ids())
    assert all((dataset.episode_dir(i) / 'quality.json').is_file() for i in dataset.episode_ids())
    assert any(line.endswith('frames for labeling in frames') for line in lines)
    assert any(line.startswith('2 LeRobot episodes,') for line in lines)  # seeds 0 and 1: successes
    assert (tmp_path / 'training_set' / 'meta' / 'info.json').is_file()
    assert "'run_7'" in lines[-1] and "'run_8'" in lines[-1]
    assert sorted(p.name for p in (tmp_path / 'old_rig_bags').iterdir()) == ['run_7', 'run_8']
    assert sorted(p.name for p in (tmp_path / 'old_rig_bags' / 'run_7').iterdir()) == ['metadata.yaml', 'run_7.mcap']


def test_the_front_door_names_what_it_promises_and_loads_lazily() -> None:
    for name in ros_robodata.__all__:
        assert getattr(ros_robodata, name) is not None, name
    script = 'import sys, ros_robodata; assert "numpy" not in sys.modules and "cv2" not in sys.modules'
    assert subprocess.run([sys.executable, '-c', script], check=False).returncode == 0
    with pytest.raises(AttributeError, match='has no attribute'):
        ros_robodata.no_such_thing  # noqa: B018
    assert (PACKAGE / 'py.typed').is_file()


def _imports(path: Path) -> set[str]:
    """Modules a file imports (absolute names; relative imports resolved against the file's package)."""
    tree = ast.parse(path.read_text(encoding='utf-8'))
    package = '.'.join(path.relative_to(ROOT).with_suffix('').parts[:-1])
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit('.', node.level - 1)[0] if node.level > 1 else package
                found.add(f'{base}.{node.module}' if node.module else base)
            elif node.module:
                found.add(node.module)
    return found


def test_the_import_graph_has_no_arrow_running_upward() -> None:
    """The core never imports rclpy, the nodes or the command line; the nodes never import the command line."""
    offenders = []
    for path in sorted(PACKAGE.rglob('*.py')):
        part = path.relative_to(PACKAGE).parts[0]
        imports = _imports(path)
        if part not in ('nodes', 'cli'):
            bad = {m for m in imports if m.split('.')[0] == 'rclpy' or m.startswith(('ros_robodata.nodes',
                                                                                     'ros_robodata.cli'))}
        elif part == 'nodes':
            bad = {m for m in imports if m.startswith('ros_robodata.cli')}
        else:
            bad = set()
        offenders += [f'{path.relative_to(ROOT)} imports {m}' for m in sorted(bad)]
    assert offenders == []


def test_long_modules_say_why_at_their_top() -> None:
    """A module over ~400 lines keeps one concept that does not split well, and says so in its docstring."""
    long_ones = []
    for path in sorted(PACKAGE.rglob('*.py')):
        lines = path.read_text(encoding='utf-8').splitlines()
        if len(lines) > 420:
            doc = ast.get_docstring(ast.parse('\n'.join(lines))) or ''
            if 'Why one module' not in doc:
                long_ones.append(f'{path.relative_to(ROOT)} ({len(lines)} lines)')
    assert long_ones == []
