"""geko_lib's modules import each other without circles (imports inside functions count: a lazy
import is still a dependency), so each module can be read, and tested, above what it uses; and
imports run down the floors of docs/ARCHITECTURE.md but where they are known not to yet."""

import ast
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "geko_lib"
# circles left: leave this list shorter, never longer
KNOWN: list[set[str]] = []

# The floors of docs/ARCHITECTURE.md ("Imports run downward"), one per room (a package of
# geko_lib, or a module directly in it), top down: the launchers; the phases, the geko command's
# printing and the API modules; the job wrapper, the GPU jobs both doors run, the API's runner
# and the bench API; the campaign; the platforms; tuning and failures; library logic; the
# workload, the data structures and the benchmark file formats; the small shared modules at the
# ground. A new room is placed here when it is made.
FLOORS = {
    9: {"__init__", "cli", "launchers"},
    8: {"phases", "terminal", "search", "optim"},
    7: {"jobs", "gpu_jobs", "runner", "bench"},
    6: {"campaign", "report", "runtime", "utils"},
    5: {"platforms"},
    4: {"tuning", "failures"},
    3: {"library"},
    2: {"workload", "schemas", "bench_formats", "files", "constants"},
    1: {"gemm", "archs", "errors", "locks", "log_setup", "config_schema", "resources",
        "path_errors", "original_columns", "newer_revisions", "devices", "interrupt", "progress",
        "examples"},
}
# imports from a lower floor up, by the pair of rooms, with every (importer, imported) under
# geko_lib/ that makes it: at most 2 pairs; leave this shorter, never longer
# (docs/ARCHITECTURE.md says why each is there)
KNOWN_UP = {
    # the original's library operations run on a platform; its exports name a platform's types
    ("library", "platforms"): {
        ("library/operations.py", "platforms/__init__.py"),
        ("library/operations.py", "platforms/rocm/library_build.py"),
        ("library/operations.py", "platforms/sim.py"),
        ("library/exports/winners.py", "platforms/__init__.py"),
        ("library/exports/winners.py", "platforms/type_support.py")},
    # the original's library merge refuses another platform's campaign libraries by their
    # stamps; the exports find their index file where the campaign's layout puts it
    ("library", "campaign"): {
        ("library/operations.py", "campaign/integrity.py"),
        ("library/exports/measured.py", "campaign/layout.py")},
}


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


def _graph() -> dict[Path, set[Path]]:
    return {p: _imports(p) for p in PACKAGE.rglob("*.py")}


def _room(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def _floor(path: Path) -> int:
    return next(floor for floor, rooms in FLOORS.items() if _room(path) in rooms)


def _arrows_up() -> set[tuple[str, str]]:
    """(importer, imported) for every import from a lower floor to a higher one."""
    return {(str(a.relative_to(PACKAGE)), str(b.relative_to(PACKAGE)))
            for a, imported in _graph().items() for b in imported if _floor(b) > _floor(a)}


def _circles() -> list[set[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    graph = _graph()
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


def test_every_room_has_one_floor():
    rooms = {_room(p) for p in PACKAGE.rglob("*.py")}
    placed = [room for floor in FLOORS.values() for room in floor]
    assert sorted(placed) == sorted(rooms)


def test_imports_run_up_only_where_known():
    """The API's runner and the bench API take their leases (devices.leased), stamped tables
    (integrity.read_table) and bench rows (bench_formats.rows) from the floors below them, not
    from the workflow's job wrapper (jobs) above; the library logic and the platforms read the
    benchmark formats (bench_formats), the arch table (archs.py) and file hashes (files) below
    them, not from the bench API, the platforms or the data structures; the workload readers
    are handed a platform's limits as a value (workload.support.GemmSupport, which
    platforms.gemm_support builds), not read from the platforms' tables above them."""
    known = set().union(*KNOWN_UP.values())
    unknown = _arrows_up() - known
    assert not unknown, f"imports running up: {sorted(unknown)}"
    assert len(KNOWN_UP) <= 2
    assert all(_room(PACKAGE / a) == rooms[0] and _room(PACKAGE / b) == rooms[1]
               for rooms, pairs in KNOWN_UP.items() for a, b in pairs)


def test_the_known_imports_up_are_still_there():
    """A pair that no longer runs up leaves KNOWN_UP, so the list only shrinks."""
    gone = set().union(*KNOWN_UP.values()) - _arrows_up()
    assert not gone, f"no longer running up, drop from KNOWN_UP: {sorted(gone)}"
