"""cuda solutions in library logic: every (GEMM type, size) -> solution of a directory, and the
check that a solution names a backend geko can run (cublaslt, triton, cuda: geko's own CUDA C++
kernels, default) with what that backend needs. The platform, the tune mode and the runtime loader read libraries through it."""

from __future__ import annotations

from pathlib import Path

from ... import library as liblogic
from .. import PlatformError


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
    backend = solution.get("Backend")
    needed = {"cublaslt": ("CublasLt", "CublasLtVersion"), "triton": ("Triton",),
              "cuda": ("CudaKernel",), "default": ()}.get(backend)
    if needed is None:
        raise PlatformError(f"{source}: solution {solution.get('SolutionIndex')}: Backend "
                            f"{backend!r} is not one of cublaslt, triton, cuda, default")
    missing = [k for k in ("SolutionNameMin", *needed) if k not in solution]
    if missing:
        raise PlatformError(f"{source}: solution {solution.get('SolutionIndex')}: missing "
                            f"{', '.join(missing)}")
    if backend == "cublaslt":
        from .cublaslt import AlgoConfig

        AlgoConfig.from_params(solution["CublasLt"])
    if backend == "cuda":
        from .cluster_gemm import ClusterConfig, ClusterConfigError

        try:
            ClusterConfig.from_params(dict(solution["CudaKernel"]))
        except (ClusterConfigError, TypeError, ValueError) as exc:
            raise PlatformError(f"{source}: solution {solution.get('SolutionIndex')}: "
                                f"CudaKernel: {exc}") from None
