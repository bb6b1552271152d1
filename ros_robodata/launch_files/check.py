"""Static checks of ROS 2 launch XML files.

`ros2 launch` cannot be installed here, so our launch files would otherwise first run on a rig, in
front of an operator. This reads them the way launch_xml does (without running anything) and
reports what would fail there: malformed XML, an undescribed argument, a node executable that is
not installed, a package file that does not exist, an undeclared `$(var x)`, an unknown
substitution. `$(find-pkg-share ros_robodata)` stands for the package's source folder.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

PACKAGE = 'ros_robodata'
OWN_SHARE = f'$(find-pkg-share {PACKAGE})'
DIRNAME = '$(dirname)'

# What ROS 2 Jazzy's launch and launch_ros expose to XML (`@expose_substitution`).
KNOWN_SUBSTITUTIONS = frozenset({
    'anon', 'command', 'dirname', 'filename', 'env', 'var', 'find-exec', 'eval', 'equals', 'not-equals',
    'if', 'not', 'and', 'or', 'any', 'all', 'launch_log_dir', 'log_dir',
    'find-pkg-prefix', 'find-pkg-share', 'exec-in-pkg', 'param',
})
# Argument counts (min, max) where they are fixed and the arguments are plain words.
ARITY = {
    'var': (1, 2), 'env': (1, 2), 'find-pkg-share': (1, 1), 'find-pkg-prefix': (1, 1),
    'dirname': (0, 0), 'filename': (0, 0), 'find-exec': (1, 1), 'exec-in-pkg': (2, 2),
}
_NAME = re.compile(r'[A-Za-z][A-Za-z0-9_-]*')
_INSTALL_PROGRAMS = re.compile(r'install\s*\(\s*PROGRAMS\b', re.IGNORECASE)
_INSTALL_SHARE = re.compile(r'install\s*\(\s*DIRECTORY\s+([^)]*?)\s+DESTINATION\s+share/\$\{PROJECT_NAME\}',
                            re.IGNORECASE)


@dataclass(frozen=True)
class Substitution:
    """One `$(kind args...)` found in an attribute value; nested ones are found separately."""

    kind: str
    args: tuple[str, ...]
    text: str


def find_substitutions(value: str) -> tuple[list[Substitution], list[str]]:
    """Every `$(...)` in `value`, nested ones included, and what is malformed about them."""
    found: list[Substitution] = []
    problems: list[str] = []
    for start in (m.start() for m in re.finditer(r'\$\(', value)):
        if start and value[start - 1] == '\\':
            continue  # `\$(` is literal text in launch_xml's grammar
        end = _closing_paren(value, start + 2)
        if end is None:
            problems.append(f'unterminated substitution in "{value}"')
            continue
        body = value[start + 2:end]
        name = _NAME.match(body)
        if name is None or (body[name.end():] and not body[name.end():].startswith(' ')):
            problems.append(f'malformed substitution $({body})')
            continue
        found.append(Substitution(name.group(), tuple(_split_args(body[name.end():].strip())), value[start:end + 1]))
    return found, problems


def _closing_paren(text: str, begin: int) -> int | None:
    depth = 1
    for i in range(begin, len(text)):
        if text[i] == '(':
            depth += 1
        elif text[i] == ')':
            depth -= 1
            if depth == 0:
                return i
    return None


def _split_args(text: str) -> list[str]:
    """Split on spaces outside quotes and nested substitutions, as the launch grammar does."""
    args: list[str] = []
    current, depth, quote = '', 0, ''
    for char in text:
        if quote:
            quote = '' if char == quote else quote
        elif char in '\'"':
            quote = char
        elif char == '(':
            depth += 1
        elif char == ')':
            depth -= 1
        elif char == ' ' and depth == 0:
            if current:
                args.append(current)
            current = ''
            continue
        current += char
    if current:
        args.append(current)
    return args


def check_launch_file(path: Path | str, package_root: Path | str) -> list[str]:
    """What is wrong with one launch file; an empty list means nothing found."""
    path, root = Path(path), Path(package_root)
    try:
        launch = ET.parse(path).getroot()
    except ET.ParseError as err:
        return [f'not well-formed XML: {err}']
    except OSError as err:
        return [f'cannot read: {err.strerror}']
    if launch.tag != 'launch':
        return [f'root element is <{launch.tag}>, not <launch>']
    include_args = {id(arg) for include in launch.iter('include') for arg in include.findall('arg')}
    declarations = [arg for arg in launch.iter('arg') if id(arg) not in include_args]
    declared = {el.get('name', '') for el in [*declarations, *launch.iter('let')]}
    return [
        *_check_args(launch, declarations),
        *_check_nodes(launch, root),
        *_check_params(launch),
        *_check_substitutions(launch, declared),
        *_check_paths(launch, path, root),
    ]


def check_all(package_root: Path | str) -> dict[Path, list[str]]:
    """Every `launch/*.launch.xml` of the package and its problems."""
    root = Path(package_root)
    return {path: check_launch_file(path, root) for path in sorted((root / 'launch').glob('*.launch.xml'))}


def find_package_root(start: Path | str) -> Path | None:
    """The nearest folder at or above `start` whose package.xml names this package."""
    start = Path(start).resolve()
    for folder in [start, *start.parents]:
        manifest = folder / 'package.xml'
        if manifest.is_file():
            try:
                if ET.parse(manifest).getroot().findtext('name', '').strip() == PACKAGE:
                    return folder
            except ET.ParseError:
                pass
    return None


def _describe(el: ET.Element) -> str:
    attrs = ''.join(f' {key}="{el.get(key)}"' for key in ('name', 'pkg', 'exec', 'file') if el.get(key) is not None)
    return f'<{el.tag}{attrs}>'


def _check_args(launch: ET.Element, declarations: list[ET.Element]) -> list[str]:
    """Declared arguments are what `ros2 launch -s` shows an operator: each needs a description."""
    problems = []
    for arg in declarations:
        if not arg.get('name'):
            problems.append('<arg> without a name')
        elif not (arg.get('description') or '').strip():
            problems.append(f'{_describe(arg)} has no description')
    for include in launch.iter('include'):
        for arg in include.findall('arg'):
            if not arg.get('name') or arg.get('value') is None:
                problems.append(f'{_describe(arg)} inside {_describe(include)} needs name and value')
    return problems


def _check_nodes(launch: ET.Element, root: Path) -> list[str]:
    """Our nodes run as `lib/ros_robodata/<exec>`, which CMakeLists.txt installs from scripts/."""
    problems = []
    ours = False
    for node in launch.iter('node'):
        executable = node.get('exec')
        if not executable:
            problems.append(f'{_describe(node)} has no exec')
            continue
        if node.get('pkg') != PACKAGE or '$(' in executable:
            continue
        ours = True
        script = root / 'scripts' / executable
        if not script.is_file():
            problems.append(f'{_describe(node)}: no scripts/{executable} in the package to install')
        elif not os.access(script, os.X_OK):
            problems.append(f'{_describe(node)}: scripts/{executable} is not executable (chmod +x)')
    if ours and not _installs_scripts(root):
        problems.append('CMakeLists.txt does not install scripts/* with install(PROGRAMS ...): nodes would not run')
    return problems


def _installs_scripts(root: Path) -> bool:
    try:
        cmake = (root / 'CMakeLists.txt').read_text(encoding='utf-8')
    except OSError:
        return False
    return bool(_INSTALL_PROGRAMS.search(cmake)) and 'scripts/' in cmake


def _check_params(launch: ET.Element) -> list[str]:
    """launch_ros wants name with value (or nested params), or from (a parameter file)."""
    problems = []
    for param in launch.iter('param'):
        name, value, nested = param.get('name'), param.get('value'), param.findall('param')
        if param.get('from') is not None:
            if not param.get('from'):
                problems.append('<param from=""> names no file')
        elif not name:
            problems.append('<param> needs name and value, or from')
        elif value is None and not nested:
            problems.append(f'{_describe(param)} has no value')
        elif value is not None and nested:
            problems.append(f'{_describe(param)} has both a value and nested <param>s')
    return problems


def _check_substitutions(launch: ET.Element, declared: set[str]) -> list[str]:
    problems: list[str] = []
    for el in launch.iter():
        for attr, value in el.attrib.items():
            where = f'{_describe(el)} {attr}="{value}"'
            found, malformed = find_substitutions(value)
            problems.extend(f'{where}: {problem}' for problem in malformed)
            for sub in found:
                if sub.kind not in KNOWN_SUBSTITUTIONS:
                    problems.append(f'{where}: unknown substitution $({sub.kind})')
                    continue
                low, high = ARITY.get(sub.kind, (0, None))
                if len(sub.args) < low or (high is not None and len(sub.args) > high):
                    wanted = str(low) if low == high else f'{low} or {high}' if high == low + 1 else f'{low}..{high}'
                    problems.append(f'{where}: {sub.text} takes {wanted} argument(s), not {len(sub.args)}')
                elif sub.kind == 'var' and len(sub.args) == 1 and '$(' not in sub.args[0]:
                    name = sub.args[0].strip('\'"')
                    if name not in declared:
                        problems.append(f'{where}: $(var {name}) but no <arg> or <let> declares {name}')
    return problems


def _check_paths(launch: ET.Element, path: Path, root: Path) -> list[str]:
    """Values that start at our share folder or at this file's folder must name installed files."""
    problems = []
    for el in launch.iter():
        for attr, value in el.attrib.items():
            if el.tag == 'include' and attr == 'file' and '$(' not in value:
                problems.append(f'{_describe(el)}: a literal path resolves against the working directory; '
                                f'use {OWN_SHARE}/launch/... or {DIRNAME}/...')
                continue
            for prefix, base in ((OWN_SHARE, root), (DIRNAME, path.parent)):
                if value.startswith(prefix) and '$(' not in value[len(prefix):]:
                    problem = _package_file_problem(base, value[len(prefix):], root)
                    if problem:
                        problems.append(f'{_describe(el)} {attr}="{value}": {problem}')
    return problems


def _package_file_problem(base: Path, rest: str, root: Path) -> str | None:
    target = (base / rest.lstrip('/')).resolve()
    try:
        relative = target.relative_to(root.resolve())
    except ValueError:
        return 'points outside the package'
    if not target.exists():
        return f'{relative.as_posix()} does not exist in the package'
    installed = _share_entries(root)
    if relative.parts and relative.parts[0] not in installed:
        return f'{relative.parts[0]}/ is not installed to share/{PACKAGE} by CMakeLists.txt'
    return None


def _share_entries(root: Path) -> set[str]:
    """Top-level names CMakeLists.txt installs to share/<package> (ament installs package.xml)."""
    try:
        cmake = (root / 'CMakeLists.txt').read_text(encoding='utf-8')
    except OSError:
        return {'package.xml'}
    return {'package.xml', *(name.rstrip('/') for m in _INSTALL_SHARE.finditer(cmake) for name in m.group(1).split())}
