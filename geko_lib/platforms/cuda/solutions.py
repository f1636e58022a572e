"""cuda solutions in library logic: every (GEMM type, size) -> solution of a directory, and the
check that a solution names a backend geko can run (cublaslt, triton, cuda: geko's own CUDA C++
kernels, default) with what that backend needs. The platform, the tune mode and the runtime loader read libraries through it."""

from __future__ import annotations

from pathlib import Path

from ... import library as liblogic
from .. import PlatformError
from . import families


def solutions_in(lib_dir, validate: bool = False) -> dict:
    """(GEMM type, size) -> solution dict of every library-logic file in ``lib_dir``; with
    ``validate`` every solution is checked first (errors name the file)."""
    chosen = {}
    for name, lib in liblogic.load_dir(lib_dir).items():
        if validate:
            for solution in lib.solutions:
                validate_solution(solution, source=str(Path(lib_dir) / name))
        positions = lib.solution_position()
        for size, index, _ in lib.size_entries():
            chosen[(lib.gemm_type, tuple(size))] = dict(lib.solutions[positions[index]])
    return chosen


def validate_solution(solution: dict, source: str) -> None:
    # no default Backend here (families.of has one): a library's solution must name it
    backend = solution.get("Backend")
    family = families.BY_BACKEND.get(backend)
    where = f"{source}: solution {solution.get('SolutionIndex')}"
    if family is None:
        raise PlatformError(f"{where}: Backend {backend!r} is not one of "
                            f"{', '.join(families.BY_BACKEND)}")
    needed = (family.key, *family.needs) if family.key else ()
    missing = [k for k in ("SolutionNameMin", *needed) if k not in solution]
    if missing:
        raise PlatformError(f"{where}: missing {', '.join(missing)}")
    _check_early_edge(solution, family, where)
    if family.parsed_on_load:
        try:
            family.from_params(solution)
        except family.refused as exc:
            raise PlatformError(f"{where}: {family.key}: {exc}") from None


def _check_early_edge(solution: dict, family, where: str) -> None:
    if families.EARLY_EDGE not in solution:
        return
    value = solution[families.EARLY_EDGE]
    if not family.takes_edges:
        raise PlatformError(f"{where}: {families.EARLY_EDGE} is only for {families.CUDA.name} "
                            f"kernels, not {family.name}")
    if not isinstance(value, bool):
        raise PlatformError(f"{where}: {families.EARLY_EDGE} must be true or false, not "
                            f"{value!r}")
