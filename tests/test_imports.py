"""geko_lib's modules import each other without circles (imports inside functions count: a lazy
import is still a dependency), so each module can be read, and tested, above what it uses."""

import ast
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "geko_lib"
# circles left: leave this list shorter, never longer
KNOWN: list[set[str]] = []


def _module_file(parts: list[str]) -> Path | None:
    path = ROOT.joinpath(*parts)
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imports(path: Path) -> set[Path]:
    here = list(path.relative_to(ROOT).with_suffix("").parts)
    package = here[:-1]  # a module's package; an __init__'s parts end in "__init__"
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {_module_file(alias.name.split(".")) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = base + (node.module.split(".") if node.module else [])
            for alias in node.names:  # a submodule by name, else the module itself
                found.add(_module_file(module + [alias.name]) or _module_file(module))
    return {p for p in found if p is not None and PACKAGE in p.parents and p != path}


def _circles() -> list[set[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    graph = {p: _imports(p) for p in PACKAGE.rglob("*.py")}
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(str(member.relative_to(ROOT)))
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in graph:
        if node not in index:
            visit(node)
    return groups


def test_no_import_circle_but_the_known_ones():
    unknown = [group for group in _circles() if group not in KNOWN]
    assert not unknown, f"import circles: {unknown}"


def test_the_library_and_the_rocm_build_tools_import_one_way():
    assert not any("geko_lib/library/__init__.py" in group for group in _circles())
    assert not any("geko_lib/campaign/layout.py" in group for group in _circles())
