"""One library from both cuda modes: per GEMM the fastest verified of the dense search's final
library, the tune mode's Triton kernel and the cuBLASLt default, measured side by side.

``bench/bench_h200.py --combined-out DIR`` feeds it the timings of one run (every candidate
timed with the same operands, replays interleaved, each checked against the float32 reference)
and writes DIR as library logic that ``geko_lib.runtime.load`` dispatches.
"""

from __future__ import annotations

import math
from pathlib import Path

from ... import library as liblogic
from ...gemm import GemmProblem, GemmType

DEFAULT = {"SolutionNameMin": "cublaslt_heuristic_default", "Backend": "default"}


def fastest(candidates: list[tuple[float, dict | None]]) -> tuple[float, dict] | None:
    """The fastest (us, solution) of the candidates that ran and passed the check (``us`` is
    NaN otherwise); ties keep the earlier candidate. None if none ran."""
    ran = [(us, i, sol) for i, (us, sol) in enumerate(candidates)
           if sol is not None and us == us and math.isfinite(us)]
    if not ran:
        return None
    us, _, solution = min(ran, key=lambda r: (r[0], r[1]))
    return us, solution


def write(chosen: list[tuple[GemmProblem, dict, float]], out_dir, arch: str = "h200"
          ) -> list[Path]:
    """One library-logic file per GEMM type of ``chosen`` (problem, solution, GFLOP/s)."""
    from .platform import CudaPlatform, SearchSettings

    platform = CudaPlatform(SearchSettings(), arch=arch)
    by_type: dict[GemmType, list] = {}
    for problem, solution, gflops in chosen:
        by_type.setdefault(problem.type, []).append((problem, solution, gflops))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for gemm_type, entries in sorted(by_type.items()):
        lib = liblogic.build(platform.library_template(gemm_type, entries), entries,
                             key=lambda solution: solution["SolutionNameMin"])
        paths.append(liblogic.dump(lib, out / liblogic.file_name(arch, gemm_type)))
    return paths
