"""Launch files and node executables, checked statically (`ros2 launch` is not installable here).

Every shipped launch file must pass the checker, and the checker must catch each defect in a
broken copy, so a pass means something.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from ros_robodata.cli.main import main
from ros_robodata.launch_files.check import check_all, check_launch_file, find_package_root, find_substitutions

ROOT = Path(__file__).resolve().parents[1]
LAUNCH_FILES = sorted((ROOT / 'launch').glob('*.launch.xml'))
SCRIPTS = sorted(p for p in (ROOT / 'scripts').iterdir() if not p.name.startswith('.'))
RECORD = 'record.launch.xml'


# -- what ships ------------------------------------------------------------------------------------


def test_the_package_ships_launch_files_and_scripts():
    assert RECORD in [p.name for p in LAUNCH_FILES]
    assert {'recorder', 'keys'} <= {p.name for p in SCRIPTS}
    assert not (ROOT / 'launch' / '.keep').exists()
    assert not (ROOT / 'scripts' / '.keep').exists()


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda p: p.name)
def test_every_shipped_launch_file_passes(path):
    assert check_launch_file(path, ROOT) == []


def test_check_all_covers_every_launch_file():
    assert check_all(ROOT) == {path: [] for path in LAUNCH_FILES}


def test_record_launch_declares_the_recorder_arguments_and_passes_them_on():
    launch = ET.parse(ROOT / 'launch' / RECORD).getroot()
    args = {arg.get('name'): arg for arg in launch.findall('arg')}
    assert set(args) == {'profile', 'dataset', 'task', 'operator', 'mode', 'delete_discarded', 'min_episode_s',
                         'use_sim_time'}
    assert args['profile'].get('default') == '$(find-pkg-share ros_robodata)/config/sim_cell.yaml'
    assert args['dataset'].get('default') == 'robodata_dataset'
    assert args['mode'].get('default') == 'teleop'
    assert [c.get('value') for c in args['mode'].findall('choice')] == ['teleop', 'kinesthetic']
    assert args['use_sim_time'].get('default') == 'false'
    # launch_ros parses a substituted value as YAML: an empty one is no valid parameter.
    assert all(arg.get('default') for arg in args.values())
    (node,) = launch.findall('node')
    assert node.attrib == {'pkg': 'ros_robodata', 'exec': 'recorder', 'name': 'recorder', 'output': 'screen'}
    assert {p.get('name'): p.get('value') for p in node.findall('param')} == {name: f'$(var {name})' for name in args}


def test_package_xml_declares_what_launch_files_need():
    depends = {el.text for el in ET.parse(ROOT / 'package.xml').getroot().findall('exec_depend')}
    assert {'launch_xml', 'launch_ros', 'rclpy'} <= depends


@pytest.mark.parametrize('script', SCRIPTS, ids=lambda p: p.name)
def test_every_script_is_an_executable_launcher_of_an_existing_node_module(script):
    assert os.access(script, os.X_OK), f'{script.name} is not executable'
    source = script.read_text(encoding='utf-8')
    assert source.startswith('#!/usr/bin/env python3\n')
    imports = [node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)]
    targets = [node.module for node in imports if node.module and node.module.startswith('ros_robodata.nodes.')]
    assert targets == [f'ros_robodata.nodes.{script.name}_node']
    assert any(alias.name == 'main' for node in imports for alias in node.names)
    module = ROOT / 'ros_robodata' / 'nodes' / f'{script.name}_node.py'
    assert module.is_file(), f'{script.name} imports {targets[0]}, but {module} does not exist'
    functions = {n.name for n in ast.parse(module.read_text(encoding='utf-8')).body if isinstance(n, ast.FunctionDef)}
    assert 'main' in functions


def test_cmake_installs_the_scripts_as_programs():
    cmake = (ROOT / 'CMakeLists.txt').read_text(encoding='utf-8')
    assert '/scripts/*' in cmake and 'install(PROGRAMS' in cmake
    assert 'DESTINATION lib/${PROJECT_NAME}' in cmake  # where `ros2 run` looks


# -- the checker catches each defect -----------------------------------------------------------------


@pytest.fixture
def package(tmp_path: Path) -> Path:
    """A copy of the package's launch-relevant files, to break one thing at a time."""
    root = tmp_path / 'ros_robodata'
    root.mkdir()
    for name in ('package.xml', 'CMakeLists.txt'):
        shutil.copy2(ROOT / name, root / name)
    for name in ('launch', 'scripts', 'config'):
        shutil.copytree(ROOT / name, root / name)
    return root


def _edit(root: Path, change: Callable[[ET.Element], None], name: str = RECORD) -> Path:
    path = root / 'launch' / name
    tree = ET.parse(path)
    change(tree.getroot())
    tree.write(path, encoding='unicode')
    return path


def _arg(launch: ET.Element, name: str) -> ET.Element:
    return next(arg for arg in launch.findall('arg') if arg.get('name') == name)


def _add_param(launch: ET.Element, **attrib: str) -> None:
    ET.SubElement(launch.find('node'), 'param', attrib)


def test_an_unbroken_copy_passes(package):
    assert check_all(package) == {package / 'launch' / path.name: [] for path in LAUNCH_FILES}


def test_malformed_xml(package):
    path = package / 'launch' / RECORD
    path.write_text(path.read_text(encoding='utf-8').replace('</launch>', ''), encoding='utf-8')
    (problem,) = check_launch_file(path, package)
    assert problem.startswith('not well-formed XML: ')


def test_a_root_that_is_not_launch(package):
    path = package / 'launch' / RECORD
    path.write_text('<roslaunch><arg name="x" description="y"/></roslaunch>', encoding='utf-8')
    assert check_launch_file(path, package) == ['root element is <roslaunch>, not <launch>']


@pytest.mark.parametrize('description', [None, '', '   '])
def test_an_argument_without_description(package, description):
    def change(launch: ET.Element) -> None:
        arg = _arg(launch, 'task')
        del arg.attrib['description']
        if description is not None:
            arg.set('description', description)

    assert check_launch_file(_edit(package, change), package) == ['<arg name="task"> has no description']


def test_include_arguments_need_no_description_but_a_value(package):
    def change(launch: ET.Element) -> None:
        include = ET.SubElement(launch, 'include', file='$(find-pkg-share ros_robodata)/launch/other.launch.xml')
        ET.SubElement(include, 'arg', name='task', value='$(var task)')
        ET.SubElement(include, 'arg', name='mode', default='teleop')

    (package / 'launch' / 'other.launch.xml').write_text(
        '<launch><arg name="task" description="t"/><arg name="mode" description="m"/></launch>', encoding='utf-8')
    assert check_launch_file(_edit(package, change), package) == [
        '<arg name="mode"> inside <include file="$(find-pkg-share ros_robodata)/launch/other.launch.xml"> '
        'needs name and value',
    ]


def test_an_exec_that_does_not_exist(package):
    path = _edit(package, lambda launch: launch.find('node').set('exec', 'nope'))
    (problem,) = check_launch_file(path, package)
    assert 'no scripts/nope' in problem and 'exec="nope"' in problem


def test_a_script_that_is_not_executable(package):
    (package / 'scripts' / 'recorder').chmod(0o644)
    (problem,) = check_launch_file(package / 'launch' / RECORD, package)
    assert 'scripts/recorder is not executable' in problem


def test_scripts_that_cmake_does_not_install(package):
    cmake = package / 'CMakeLists.txt'
    cmake.write_text(cmake.read_text(encoding='utf-8').replace('install(PROGRAMS', 'message(STATUS'), encoding='utf-8')
    (problem,) = check_launch_file(package / 'launch' / RECORD, package)
    assert 'install(PROGRAMS' in problem


def test_other_packages_nodes_are_not_looked_for_here(package):
    def change(launch: ET.Element) -> None:
        ET.SubElement(launch, 'node', pkg='rviz2', exec='rviz2')

    assert check_launch_file(_edit(package, change), package) == []


def test_a_profile_path_that_does_not_exist(package):
    path = _edit(package, lambda launch: _arg(launch, 'profile').set(
        'default', '$(find-pkg-share ros_robodata)/config/nope.yaml'))
    (problem,) = check_launch_file(path, package)
    assert problem.endswith('config/nope.yaml does not exist in the package')


def test_a_package_file_that_is_not_installed_to_share(package):
    (package / 'notes').mkdir()
    (package / 'notes' / 'profile.yaml').write_text('robot: {name: x}\n', encoding='utf-8')
    path = _edit(package, lambda launch: _arg(launch, 'profile').set(
        'default', '$(find-pkg-share ros_robodata)/notes/profile.yaml'))
    (problem,) = check_launch_file(path, package)
    assert problem.endswith('notes/ is not installed to share/ros_robodata by CMakeLists.txt')


def test_includes_must_resolve(package):
    def change(launch: ET.Element) -> None:
        ET.SubElement(launch, 'include', file='$(dirname)/missing.launch.xml')
        ET.SubElement(launch, 'include', file='launch/record.launch.xml')
        ET.SubElement(launch, 'include', file='$(dirname)/../../outside.launch.xml')
        ET.SubElement(launch, 'include', file='$(find-pkg-share nav2_bringup)/launch/x.launch.py')  # not ours

    problems = check_launch_file(_edit(package, change), package)
    assert len(problems) == 3
    assert problems[0].endswith('launch/missing.launch.xml does not exist in the package')
    assert 'literal path resolves against the working directory' in problems[1]
    assert problems[2].endswith('points outside the package')


def test_an_undeclared_var(package):
    path = _edit(package, lambda launch: _add_param(launch, name='extra', value='$(var nope)'))
    assert check_launch_file(path, package) == [
        '<param name="extra"> value="$(var nope)": $(var nope) but no <arg> or <let> declares nope',
    ]


def test_vars_from_let_with_a_default_or_nested_pass(package):
    def change(launch: ET.Element) -> None:
        launch.insert(0, ET.Element('let', name='robot', value='sim_cell'))
        _add_param(launch, name='a', value='$(var robot)')
        _add_param(launch, name='b', value='$(var not_declared fallback)')
        _add_param(launch, name='c', value="$(eval '$(var mode)' == 'teleop')")

    assert check_launch_file(_edit(package, change), package) == []


def test_an_unknown_substitution_and_a_wrong_arity(package):
    def change(launch: ET.Element) -> None:
        _add_param(launch, name='a', value='$(find-package-share ros_robodata)/config/sim_cell.yaml')
        _add_param(launch, name='b', value='$(find-pkg-share)')

    problems = check_launch_file(_edit(package, change), package)
    assert len(problems) == 2
    assert problems[0].endswith('unknown substitution $(find-package-share)')
    assert problems[1].endswith('$(find-pkg-share) takes 1 argument(s), not 0')


def test_params_need_name_and_value_or_from(package):
    def change(launch: ET.Element) -> None:
        _add_param(launch, name='no_value')
        _add_param(launch, value='no_name')
        _add_param(launch, **{'from': '$(find-pkg-share ros_robodata)/config/sim_cell.yaml'})
        nested = ET.SubElement(launch.find('node'), 'param', name='group')
        ET.SubElement(nested, 'param', name='leaf', value='1')

    assert check_launch_file(_edit(package, change), package) == [
        '<param name="no_value"> has no value',
        '<param> needs name and value, or from',
    ]


def test_find_substitutions():
    found, problems = find_substitutions("$(eval '$(var a)' == 'b') \\$(not one) $(env HOME /tmp)")
    assert [(s.kind, s.args) for s in found] == [
        ('eval', ("'$(var a)'", '==', "'b'")), ('var', ('a',)), ('env', ('HOME', '/tmp')),
    ]
    assert problems == []
    assert find_substitutions('$(var a')[1] == ['unterminated substitution in "$(var a"']
    assert find_substitutions('$(var.a)')[1] == ['malformed substitution $(var.a)']


def test_find_package_root(package):
    assert find_package_root(package / 'launch' / RECORD) == package.resolve()
    assert find_package_root(package.parent) is None


# -- robodata check-launch ---------------------------------------------------------------------------


def test_cli_checks_the_package_around_the_working_directory(capsys, monkeypatch):
    monkeypatch.chdir(ROOT / 'config')
    assert main(['check-launch']) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == [f'{path}: ok' for path in LAUNCH_FILES]


def test_cli_lists_problems_and_exits_1(capsys, package):
    _edit(package, lambda launch: _add_param(launch, name='extra', value='$(var nope)'))
    assert main(['check-launch', str(package)]) == 1
    out = capsys.readouterr().out.splitlines()
    problem = f'{package / "launch" / RECORD}: <param name="extra"> value="$(var nope)": ' \
              '$(var nope) but no <arg> or <let> declares nope'
    assert problem in out
    assert out[-1] == f'1 problem(s) in 1 of {len(LAUNCH_FILES)} launch file(s)'
    assert main(['check-launch', '--json', str(package / 'launch' / RECORD)]) == 1
    assert list(json.loads(capsys.readouterr().out).values()) == [[problem.split(': ', 1)[1]]]


@pytest.mark.parametrize('case', ['missing', 'empty', 'outside'])
def test_cli_bad_input_gives_one_error_line(capsys, tmp_path, case):
    target = {'missing': tmp_path / 'nope.launch.xml', 'empty': ROOT / 'msg', 'outside': tmp_path}[case]
    if case == 'outside':
        (tmp_path / 'x.launch.xml').write_text('<launch/>', encoding='utf-8')
    assert main(['check-launch', str(target)]) == 1
    err = capsys.readouterr().err
    assert err.startswith('robodata check-launch: error: ') and err.count('\n') == 1


def _declared_parameters(module: Path) -> set[str]:
    """Names a node module declares with nodes.node_runtime.declare(self, 'name', ...), plus ROS's own use_sim_time."""
    names = {'use_sim_time'}
    for call in ast.walk(ast.parse(module.read_text(encoding='utf-8'))):
        if (isinstance(call, ast.Call) and getattr(call.func, 'id', None) == 'declare' and len(call.args) >= 2
                and isinstance(call.args[1], ast.Constant)):
            names.add(call.args[1].value)
    return names


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda p: p.name)
def test_every_parameter_a_launch_file_sets_is_one_the_node_declares(path):
    for node in ET.parse(path).getroot().iter('node'):
        if node.get('pkg') != 'ros_robodata':
            continue
        declared = _declared_parameters(ROOT / 'ros_robodata' / 'nodes' / f'{node.get("exec")}_node.py')
        given = {p.get('name') for p in node.findall('param')}
        assert given <= declared, f'{path.name}: {node.get("exec")} declares no {sorted(given - declared)}'


def test_session_launch_runs_what_robodata_session_runs():
    launch = ET.parse(ROOT / 'launch' / 'session.launch.xml').getroot()
    nodes = {node.get('exec'): {p.get('name'): p.get('value') for p in node.findall('param')}
             for node in launch.iter('node')}
    assert set(nodes) == {'recorder', 'segmenter', 'quality_monitor', 'shot_list'}
    # Both read the same rig description, on the same clock (the shot list, capturing to a protocol, reads none).
    assert {params['profile'] for exe, params in nodes.items() if exe != 'shot_list'} == {'$(var profile)'}
    assert {params['use_sim_time'] for params in nodes.values()} == {'$(var use_sim_time)'}
    record = ET.parse(ROOT / 'launch' / RECORD).getroot()
    assert {a.get('name') for a in launch.findall('arg')} == {a.get('name') for a in record.findall('arg')} | {
        'protocol', 'participant', 'illuminance_topic', 'range_topic', 'camera_topic', 'camera_info_topic',
        'lux_calibration'}


def test_sim_launch_runs_what_robodata_sim_runs():
    from ros_robodata.cli.main import build_parser
    from ros_robodata.cli.sim_cmd import sim_parameters

    launch = ET.parse(ROOT / 'launch' / 'sim_cell.launch.xml').getroot()
    (node,) = launch.iter('node')
    given = {p.get('name') for p in node.findall('param')}
    args = build_parser().parse_args(['sim', '--fault', 'camera/scene:silent:3:6', '--image-size', '64x48'])
    params = sim_parameters(args)
    assert set(params) == given
    assert (params['faults'], params['image_width'], params['image_height']) == ('camera/scene:silent:3:6', 64, 48)
