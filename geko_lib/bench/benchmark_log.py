"""The updated benchmark log of the original's workdir: ``<log>.yaml`` and ``<log>.out``.

The original benchmarks the workload by writing the log's rows, updated with the keys
hipblaslt-bench needs (``initialization``, ``rotating``, ``use_gpu_timer``,
``print_kernel_info``, iteration counts), as ``<workdir>/<log stem>.yaml`` and running
hipblaslt-bench on it into ``<workdir>/<log stem>.out``. geko's baseline runs one job per device
(``baseline/parts/``); once merged, the same two files are written in the workdir: the rows, with
the iteration counts that fill ``bench_duration`` seconds at the measured latency (what a rerun of
that file by hand with ``hipblaslt-bench --yaml <log>.yaml`` needs), and the measured results in
hipblaslt-bench's layout (:mod:`geko_lib.bench_formats.text`).
"""

from __future__ import annotations

import pandas as pd

from . import log as bench_log
from ..gemm import GEMM_FIELDS, normalize_compute_type

LATENCY_KEYS = {"M": "m", "N": "n", "K": "k"}


def _key(row: dict) -> tuple:
    fields = {LATENCY_KEYS.get(k, k): v for k, v in row.items()}
    fields["compute_type"] = normalize_compute_type(fields["compute_type"])
    return tuple(fields.get(c, 0) if c in ("scaleA", "scaleB") else fields[c]
                 for c in GEMM_FIELDS)


def updated_rows(workload_rows: list[dict], baseline: pd.DataFrame, duration: float,
                 rotating_mb: int) -> list[dict]:
    """The workload's rows updated as ``geko_lib.bench.log.update`` does (the original's
    keys), with iteration counts that fill ``duration`` seconds at the latency the baseline
    measured (the original's defaults where it timed none)."""
    latency = {_key(r): float(r["us"]) for r in baseline.to_dict("records")}
    timed = [{k: v for k, v in row.items() if k != "us"} | {"us": latency.get(_key(row))}
             for row in workload_rows]
    updated = bench_log.update(timed, duration=duration, rotating=int(rotating_mb))
    return [{k: v for k, v in row.items() if k != "us"} for row in updated]
