"""Dense search: the hipblaslt-bench rows of every search chunk, and picking the winners.

Each GEMM of gemms.csv becomes one row asking for *all* solutions the library's heuristic can
return (``algo_method: 0``, ``requested_solution_num: -1``). Iterations come from the baseline
latency and the per-candidate time budget; slow candidates are dropped during warm-up
(``skip_slow_solution_ratio``). GEMMs are batched into chunks so thousands of GEMMs do not become
thousands of scheduler jobs.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from . import platforms
from .errors import GekoError
from .gemm import GEMM_FIELDS, scale_type_for
from .summary import normalized

DEFAULT_ITERS, DEFAULT_COLD_ITERS = 100, 20


def chunk_bounds(n_gemms: int, chunk_size: int, n_devices: int = 1) -> list[tuple[int, int]]:
    """[first, last] GEMM positions of each chunk: at most chunk_size GEMMs each, a multiple of
    the device count of them (while there are enough GEMMs) and sizes differing by at most one,
    so devices finish together instead of one device running a short last chunk alone."""
    if n_gemms <= 0:
        return []
    devices = max(n_devices, 1)
    rounds = math.ceil(n_gemms / (max(chunk_size, 1) * devices))
    n_chunks = min(n_gemms, rounds * devices)
    base, extra = divmod(n_gemms, n_chunks)
    bounds, start = [], 0
    for i in range(n_chunks):
        size = base + (1 if i < extra else 0)
        bounds.append((start, start + size - 1))
        start += size
    return bounds


def chunk_name(first: int, last: int) -> str:
    return f"gemms_{first}" if first == last else f"gemms_{first}-{last}"


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
    if latency_us and latency_us > 0:
        row["iters"] = row["cold_iters"] = math.ceil(duration * 1e6 / latency_us)
        row["skip_slow_solution_ratio"] = 0.6 if latency_us > 20 else 0.3
    else:
        row["iters"], row["cold_iters"] = iters, cold_iters
        big = row["M"] > 2048 and row["N"] > 2048 and row["K"] > 1024
        row["skip_slow_solution_ratio"] = 0.6 if big else 0.3
    return row


def baseline_latencies(gemms: pd.DataFrame, summary: pd.DataFrame) -> list[float | None]:
    """The baseline time (us) of every GEMM of gemms.csv, None where none was measured."""
    latency = {}
    if "us" in summary:
        keys = list(GEMM_FIELDS)
        latency = {tuple(r[k] for k in keys): r["us"] for r in summary.to_dict("records")}
    return [latency.get(tuple(g[k] for k in GEMM_FIELDS)) for g in gemms.to_dict("records")]


def search_rows(gemms: pd.DataFrame, summary: pd.DataFrame, duration: float,
                rotating_mb: int) -> list[dict]:
    return [search_row(g, us, duration, rotating_mb)
            for g, us in zip(gemms.to_dict("records"), baseline_latencies(gemms, summary))]


def deal_by_cost(rows: list, latencies: list[float | None],
                 bounds: list[tuple[int, int]]) -> list:
    """``rows`` reordered so that each chunk of ``bounds`` gets a like mix of long and short
    GEMMs: rows dealt to the chunks in snake order of decreasing baseline latency (a chunk of
    all the largest GEMMs would otherwise keep one device busy long after the others), each
    chunk keeping the rows' original order. Without latencies the order is unchanged."""
    if not bounds or any(us is None for us in latencies):
        return list(rows)
    sizes = [last - first + 1 for first, last in bounds]
    chunks: list[list[int]] = [[] for _ in bounds]
    by_cost = sorted(range(len(rows)), key=lambda i: (-float(latencies[i]), i))
    turn, step = 0, 1
    for i in by_cost:
        while len(chunks[turn]) == sizes[turn]:  # full chunks are skipped
            turn, step = _next_turn(turn, step, len(chunks))
        chunks[turn].append(i)
        turn, step = _next_turn(turn, step, len(chunks))
    return [rows[i] for chunk in chunks for i in sorted(chunk)]


def _next_turn(turn: int, step: int, n: int) -> tuple[int, int]:
    """The next chunk in snake order 0, 1, .., n-1, n-1, .., 0, 0, 1, .."""
    if 0 <= turn + step < n:
        return turn + step, step
    return turn, -step


def winners(candidates: pd.DataFrame) -> pd.DataFrame:
    """The fastest candidate of every GEMM (ties: the lower solution index). Where the platform
    marks candidates ``eligible`` (measured side by side and numerically checked), only those
    can win."""
    if "eligible" in candidates.columns:
        eligible = candidates["eligible"].astype(str).str.lower().isin(("true", "1", "1.0"))
        candidates = candidates[eligible]
    ordered = candidates.sort_values(["us", "solution_index"], kind="stable")
    best = ordered.drop_duplicates(subset=list(GEMM_FIELDS), keep="first")
    return best.sort_values(["m", "n", "batch_count", "k"], kind="stable").reset_index(drop=True)


# --- the original's API: configure the search rows, run them over devices -------------------

def configure(df: pd.DataFrame, duration: float = 0.04, iters: int = DEFAULT_ITERS,
              cold_iters: int = DEFAULT_COLD_ITERS, rotating: int = 512, beta: bool = False,
              flush: bool = False) -> list[dict]:
    """One dense-search row per unique GEMM of ``df`` (a summary, gemms.csv, or any table with
    the GEMM columns, M/N/K or m/n/k): every solution the heuristic returns, iterations filling
    ``duration`` seconds per candidate where the table has the GEMM's time (``us``), else
    ``iters``/``cold_iters``."""
    frame = normalized(df.rename(columns={"M": "m", "N": "n", "K": "k"}))
    for column in ("scaleA", "scaleB"):
        if column not in frame:
            frame[column] = 0
    unique = frame.drop_duplicates(subset=list(GEMM_FIELDS), keep="first")
    latencies = unique["us"].tolist() if "us" in unique else [None] * len(unique)
    return [search_row(g, us, duration, rotating, iters, cold_iters, beta, flush)
            for g, us in zip(unique.to_dict("records"), latencies)]


def run(hipblaslt_path=None, configs=None, output_dir="workdir/search", devices=(0,),
        max_chunk_size: int = 25, retry: bool = True, *, platform=None,
        duration: float | None = None, **config) -> pd.DataFrame:
    """Dense search of ``configs`` (search.configure's rows) over ``devices``: chunks of at most
    ``max_chunk_size`` GEMMs (``output_dir/gemms_<a>-<b>.yaml``, their results ``.out``), one
    chunk per device at a time, every candidate kept in ``output_dir/data/<chunk>.csv`` (a
    chunk done by an earlier run is not run again). A failed chunk's GEMMs are retried one by
    one (``retry``); a GEMM that still fails is written to ``failed_jobs.log`` and
    ``failed_gemms.yaml`` and skipped. Returns the winners (the fastest candidate per GEMM)."""
    from . import search_runner

    if not configs:
        raise GekoError("search.run() needs configs (the rows of search.configure)")
    plat = platforms.resolve(hipblaslt_path, platform, **config)
    candidates = search_runner.run_chunks(plat, list(configs), Path(output_dir), list(devices),
                                          max_chunk_size, retry, duration)
    return winners(candidates)
