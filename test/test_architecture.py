"""The shape a newcomer can see: layers written down (pyproject's import-linter contract, ARCHITECTURE.md) and
held by `lint-imports` in `make test`; here, what the contract itself cannot say."""

from __future__ import annotations

from pathlib import Path

import grimp
import tomllib

ROOT = Path(__file__).resolve().parent.parent


def _graph() -> grimp.ImportGraph:
    return grimp.build_graph('ros_robodata')


def test_no_module_imports_the_front_door():
    """`from ros_robodata import __version__` inside the package points up at everything the front door loads."""
    graph = _graph()
    up = sorted(m for m in graph.modules if 'ros_robodata' in graph.find_modules_directly_imported_by(m))
    assert up == []


def test_every_package_and_top_module_is_in_a_layer():
    """A new subpackage or module left out of the contract would be free to import anything."""
    config = tomllib.loads((ROOT / 'pyproject.toml').read_text())['tool']['importlinter']
    layered = {name.strip() for contract in config['contracts'] if contract['type'] == 'layers'
               for layer in contract['layers'] for name in layer.split('|')}
    children = {f'ros_robodata.{p.stem}' for p in (ROOT / 'ros_robodata').iterdir()
                if (p.suffix == '.py' and p.stem != '__init__') or (p / '__init__.py').is_file()}
    assert children - layered == set()
    assert layered - children == set()


def test_every_file_name_is_unique_in_the_package():
    """A name you can search for: `recorder.py` should not mean the node in one place and the core in another."""
    seen: dict[str, list[str]] = {}
    for path in sorted((ROOT / 'ros_robodata').rglob('*.py')):
        if path.name != '__init__.py':
            seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert {name: where for name, where in seen.items() if len(where) > 1} == {}


def _loops(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), counting imports inside functions too."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in graph.find_modules_directly_imported_by(module):
            if not other.startswith('ros_robodata.'):
                continue
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for module in sorted(m for m in graph.modules if m.startswith('ros_robodata.')):
        if module not in index:
            visit(module)
    return groups


def test_no_module_import_loop():
    """Two modules that import each other (even from inside a function, or only for the type checker) are one
    concept split in two, or an arrow pointing up."""
    assert _loops(_graph()) == []
