"""hipblaslt-bench YAML rows that every platform's dense search shares (the chunk files of
``search/``), and the original's iteration counts where no latency is known.

The rocm platform writes them for hipblaslt-bench as they are; the sim and cuda platforms read
the GEMM of each row and run their own search.
"""

from __future__ import annotations

import math
from pathlib import Path

from .. import files
from ..gemm import GemmProblem, scale_type_for

DEFAULT_ITERS, DEFAULT_COLD_ITERS = 100, 20  # the original's counts when no latency is known


def iterations(duration: float | None, latency_us: float | None,
               defaults: tuple[int, int] = (DEFAULT_ITERS, DEFAULT_COLD_ITERS)) -> tuple[int, int]:
    """(iters, cold_iters): enough calls to fill ``duration`` seconds at the expected latency,
    the same count for both (as the original); the defaults when either is unknown."""
    if duration and duration > 0 and latency_us and latency_us > 0 and math.isfinite(latency_us):
        n = max(1, math.ceil(duration * 1e6 / latency_us))
        return n, n
    return defaults


def baseline_duration(config: dict) -> float | None:
    """Seconds per phase the baseline is timed for: ``bench_duration`` where ``bench_timing``
    is ``duration`` (the original's --bench: a probe, then that long per phase), else None
    (the original's search/tune baseline: fixed iteration counts, 100 timed and 20 cold)."""
    return float(config["bench_duration"]) if config.get("bench_timing") == "duration" else None


def search_row(gemm: dict, latency_us: float | None, duration: float, rotating_mb: int,
               iters: int = DEFAULT_ITERS, cold_iters: int = DEFAULT_COLD_ITERS,
               beta: bool = False, flush: bool = False) -> dict:
    """One dense-search row (hipblaslt-bench YAML keys) for a GEMM of gemms.csv."""
    row = {"function": "matmul", "transA": gemm["transA"], "transB": gemm["transB"],
           "M": int(gemm["m"]), "N": int(gemm["n"]), "K": int(gemm["k"]),
           "batch_count": int(gemm["batch_count"]),
           "scaleA": int(gemm.get("scaleA", 0)), "scaleB": int(gemm.get("scaleB", 0)),
           "a_type": gemm["a_type"], "b_type": gemm["b_type"], "c_type": gemm["c_type"],
           "d_type": gemm["d_type"], "scale_type": scale_type_for(gemm["compute_type"]),
           "compute_type": gemm["compute_type"], "alpha": 1.0, "beta": 1.0 if beta else 0.0,
           "flush": bool(flush), "rotating": rotating_mb, "use_gpu_timer": True,
           "print_kernel_info": True, "initialization": "trig_float", "algo_method": 0,
           "requested_solution_num": -1}
    row["iters"], row["cold_iters"] = iterations(duration, latency_us, (iters, cold_iters))
    if latency_us and latency_us > 0:
        row["skip_slow_solution_ratio"] = 0.6 if latency_us > 20 else 0.3
    else:
        big = row["M"] > 2048 and row["N"] > 2048 and row["K"] > 1024
        row["skip_slow_solution_ratio"] = 0.6 if big else 0.3
    return row


def problems_in_rows(path) -> list[GemmProblem]:
    """Unique problems of a YAML file of hipblaslt-bench rows, in order."""
    return unique_problems(files.load_yaml(Path(path).read_text()) or [])


def unique_problems(rows) -> list[GemmProblem]:
    """The problems of hipblaslt-bench rows, each once, in order (a GEMM may have several rows)."""
    return list(dict.fromkeys(GemmProblem.from_row(row) for row in rows))
