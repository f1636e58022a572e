"""Workload logs (``geko.bench.log``): parse a log into its rows, update rows into
hipblaslt-bench input, and summarize which GEMMs cost the most time (summary.csv, gemms.csv)."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import pandas as pd
import yaml

from ..bench_formats import rows as bench_rows, summary
from .. import files, original_columns, platforms, workload
from ..errors import GekoError
from ..gemm import normalize_compute_type, scale_type_for
from ..library.logic import dump_rows
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)

# what update() writes into every row unless told otherwise (the original's defaults)
UPDATE_DEFAULTS = {"iters": bench_rows.DEFAULT_ITERS, "cold_iters": bench_rows.DEFAULT_COLD_ITERS,
                   "rotating": 512, "use_gpu_timer": True,
                   "print_kernel_info": True, "initialization": "trig_float"}
_DROPPED = ("solution_index", "algo_method")  # a benchmark row lets the library choose


def records(frame: pd.DataFrame) -> list[dict]:
    """Rows as dicts without the cells a row does not have (NaN)."""
    return [{k: v for k, v in row.items() if not (isinstance(v, float) and math.isnan(v))}
            for row in frame.to_dict("records")]


def read(log_file) -> list[dict]:
    """The rows of a workload file as written (the original's ``log.read``): a YAML list of
    mappings; a YAML file with a mangled ``: ,`` pair is read after the original's cleanup.
    ``parse`` is what normalizes and checks them."""
    text = Path(log_file).read_text()
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return yaml.safe_load(workload.cleanup_mangled_pairs(text))


def verify_output(latency_file, bench_file) -> bool:
    """Whether ``latency_file`` (a hipblaslt-bench output) is complete and answers exactly
    ``bench_file``'s GEMMs (the original's check before reusing a cached output): it parses,
    has one result per input row, and every input GEMM is among its results."""
    from .bench import covers
    from .utils import parse_benchmark_output

    try:
        results = parse_benchmark_output(latency_file)
        problems = bench_rows.problems_in_rows(bench_file)
    except (OSError, GekoError, ValueError):
        return False
    return len(results) == len(problems) and covers(results, problems)


def parse(log_file, as_df: bool = True, *, platform: str | None = None,
          arch: str | None = None):
    """A workload (mask-64 log, its CSV, mask-32 bench lines) as canonical rows: a DataFrame,
    or with ``as_df=False`` a list of dicts. Refuses bad input naming file, line and field,
    types ``platform``'s library or ``arch`` cannot run included."""
    frame = workload.read(log_file, support=platforms.gemm_support(platform), arch=arch)
    return frame if as_df else records(frame)


def update(data, duration: float | None = None, iters: int = UPDATE_DEFAULTS["iters"],
           cold_iters: int = UPDATE_DEFAULTS["cold_iters"],
           rotating: int = UPDATE_DEFAULTS["rotating"], flush: bool | None = None,
           beta: float | None = None, use_gpu_timer: bool = True,
           print_kernel_info: bool = True, initialization: str = "trig_float"):
    """Workload rows made hipblaslt-bench input: ``function``, ``initialization``, the ``c_``
    compute type, ``scaleA``/``scaleB`` (0) and ``scale_type`` where missing; no solution
    index or algo method; ``rotating`` MB, GPU timer and kernel info; ``flush`` and ``beta``
    where given. Iterations fill ``duration`` seconds where a row's latency (``us``) is known,
    else ``iters``/``cold_iters``. Returns what it was given (DataFrame or list of dicts)."""
    rows = records(data) if isinstance(data, pd.DataFrame) else [dict(r) for r in data]
    out = []
    for row in rows:
        row.setdefault("function", "matmul")
        row.setdefault("initialization", initialization)
        row["compute_type"] = normalize_compute_type(row["compute_type"])
        row.setdefault("scaleA", 0)
        row.setdefault("scaleB", 0)
        row.setdefault("scale_type", scale_type_for(row["compute_type"]))
        for key in _DROPPED:
            row.pop(key, None)
        if not row.get("aux_type") or row.get("use_e") in (False, None):
            row.pop("aux_type", None)
        if flush is not None:
            row["flush"] = bool(flush)
        if beta is not None:
            row["beta"] = float(beta)
        row.update(rotating=rotating, use_gpu_timer=use_gpu_timer,
                   print_kernel_info=print_kernel_info)
        row["iters"], row["cold_iters"] = bench_rows.iterations(duration, row.get("us"),
                                                                (iters, cold_iters))
        out.append(row)
    return pd.DataFrame(out) if isinstance(data, pd.DataFrame) else out


def summarize(hipblaslt_path=None, log_file=None, output_dir="workdir", keep_thr: float = 0.0,
              device: int = 0, *, platform=None, duration: float | None = None,
              **config) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Where the workload's GEMM time goes: ``(summary_df, unique_df)``, written to
    ``output_dir/summary.csv`` and ``gemms.csv``. With ``keep_thr > 0`` (a percent of GEMM
    time) the workload is benchmarked first (``<log stem>.yaml`` and its output ``.out`` in
    output_dir, as the original) and GEMMs below the threshold are dropped; with 0 nothing
    runs and the summary is the GEMMs and their call counts. A GEMM of a type the platform or
    the ``arch`` keyword cannot run is refused before anything runs."""
    from .bench import run as bench_run
    if log_file is None:
        raise TypeError("summarize() needs log_file")
    output_dir = Path(output_dir)
    frame = parse(log_file, platform=platforms.requested_name(hipblaslt_path, platform),
                  arch=config.get("arch"))
    baseline = None
    if keep_thr > 0:
        plat = platforms.resolve(hipblaslt_path, platform, **config)
        stem = Path(log_file).stem
        bench_file = dump_rows(update(records(frame)), output_dir / f"{stem}.yaml")
        baseline = bench_run(bench_file=bench_file, output_file=output_dir / f"{stem}.out",
                             device=device, platform=plat, duration=duration)
    table, unique = summary.summarize(frame, baseline, keep_thr)
    table = original_columns.add(table)
    files.write_csv(output_dir / "summary.csv", table)
    files.write_csv(output_dir / "gemms.csv", unique)
    log.info("Saved CSV summary in '%s'", output_dir / "summary.csv")
    log.info("Found %d unique GEMMs after filtering", len(unique))
    log.info("Saved unique GEMMs in '%s'", output_dir / "gemms.csv")
    return table, unique
