"""Dense search (the original's ``geko.search``): ``configure`` the hipblaslt-bench rows of the
GEMMs, ``run`` them over devices (``geko_lib.runner``; one chunk: ``gpu_jobs.search``),
pick the winners. The chunking lives in ``search.chunks``, the row format in ``bench_formats.rows``.

Each GEMM of gemms.csv becomes one row asking for *all* solutions the library's heuristic can
return (``algo_method: 0``, ``requested_solution_num: -1``). Iterations come from the baseline
latency and the per-candidate time budget; slow candidates are dropped during warm-up
(``skip_slow_solution_ratio``). GEMMs are batched into chunks so thousands of GEMMs do not become
thousands of scheduler jobs.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import newer_revisions, platforms
from ..campaign import layout
from ..errors import GekoError
from ..bench_formats.rows import DEFAULT_COLD_ITERS, DEFAULT_ITERS, search_row  # noqa: F401
from .chunks import chunk_bounds, chunk_name, deal_by_cost  # noqa: F401
from ..gemm import GEMM_FIELDS
from ..bench_formats.summary import normalized



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


PROCESSED = Path(layout.SEARCH_PROCESSED).name  # in the search dir


def write_processed(search_dir, candidates: pd.DataFrame) -> pd.DataFrame:
    """``<search_dir>/processed.csv``, the original's record of the GEMMs whose search is done:
    exactly the GEMM_FIELDS columns (compute_type with its ``c_`` prefix), one row per GEMM
    that has candidates, in the order they were searched. Returns it."""
    from .. import files

    frame = normalized(candidates) if len(candidates) else candidates
    done = frame.reindex(columns=list(GEMM_FIELDS)).drop_duplicates().reset_index(drop=True)
    files.write_csv(Path(search_dir) / PROCESSED, done)
    return done


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
    chunk per device at a time, each under a lease of its device (``lock_dir=``, as a
    campaign's jobs: geko_lib.runner), every candidate kept in ``output_dir/data/<chunk>.csv``
    (a chunk an earlier run measured for the same rows, platform, library and options, whole,
    is not run again). A failed chunk's GEMMs are retried one by one (``retry``); a GEMM that
    still fails is written to ``failed_jobs.log`` and ``failed_gemms.yaml`` and skipped; the
    GEMMs searched are listed in ``processed.csv``. Returns the winners (the fastest candidate
    per GEMM)."""
    from .. import failures, gpu_jobs, runner
    from . import reuse

    if not configs:
        raise GekoError("search.run() needs configs (the rows of search.configure)")
    newer_revisions.refuse_reference_library(config)
    plat = platforms.resolve(hipblaslt_path, platform, **config)
    rows, out = list(configs), Path(output_dir)
    bounds = chunk_bounds(len(rows), max_chunk_size, len(devices))
    # where the leases are kept is no option of the measurement
    options = {key: value for key, value in config.items() if key != "lock_dir"}
    kept = reuse.StampedChunks(plat, out, reuse.provenance(plat, options, duration))
    out.mkdir(parents=True, exist_ok=True)

    def work(bound: tuple[int, int], lease) -> tuple[pd.DataFrame, list[dict]]:
        chunk = gpu_jobs.SearchChunk(chunk_name(*bound), tuple(rows[bound[0]:bound[1] + 1]),
                                     duration, retry)
        found, gone = gpu_jobs.search(chunk, plat, lease.device, out, kept)
        bar.done(len(chunk.rows), len(gone))
        return found, gone

    with runner.Bar(len(rows), "search") as bar:
        results, _ = runner.run(bounds, work, name_of=lambda bound: chunk_name(*bound),
                                namespace=plat.name, devices=devices,
                                lock_dir=config.get("lock_dir"))
    failures.write_failure_files(out, [entry for _, gone in results for entry in gone])
    frames = [found for found, _ in results if len(found)]
    if not frames:
        raise GekoError(f"dense search: every GEMM failed; see {out / failures.FAILED_JOBS}")
    candidates = pd.concat(frames, ignore_index=True)
    write_processed(output_dir, candidates)
    return winners(candidates)

