"""The updated benchmark log of the original's workdir: ``<log>.yaml`` and ``<log>.out``.

The original benchmarks the workload by writing the log's rows, updated with the keys
hipblaslt-bench needs (``initialization``, ``rotating``, ``use_gpu_timer``,
``print_kernel_info``, iteration counts), as ``<workdir>/<log stem>.yaml`` and running
hipblaslt-bench on it into ``<workdir>/<log stem>.out``. geko's baseline runs one job per device
(``baseline/parts/``); once merged, the same two files are written in the workdir: the rows, with
the iteration counts that fill ``bench_duration`` seconds at the measured latency (what a rerun of
that file by hand with ``hipblaslt-bench --yaml <log>.yaml`` needs), and the measured results in
hipblaslt-bench's layout (:mod:`geko_lib.bench_text`).
"""

from __future__ import annotations

import math

import pandas as pd

from .gemm import GEMM_FIELDS, normalize_compute_type

DEFAULT_ITERS, DEFAULT_COLD_ITERS = 100, 20  # the original's update() without a latency
LATENCY_KEYS = {"M": "m", "N": "n", "K": "k"}


def _key(row: dict) -> tuple:
    fields = {LATENCY_KEYS.get(k, k): v for k, v in row.items()}
    fields["compute_type"] = normalize_compute_type(fields["compute_type"])
    return tuple(fields.get(c, 0) if c in ("scaleA", "scaleB") else fields[c]
                 for c in GEMM_FIELDS)


def updated_rows(workload_rows: list[dict], baseline: pd.DataFrame, duration: float,
                 rotating_mb: int) -> list[dict]:
    """The workload's rows with the original's benchmark keys; ``iters`` = ``cold_iters`` =
    ceil(duration / latency) where the baseline timed the GEMM, else 100 / 20."""
    latency = {_key(r): float(r["us"]) for r in baseline.to_dict("records")}
    out = []
    for row in workload_rows:
        us = latency.get(_key(row))
        iters = math.ceil(duration * 1e6 / us) if us and us > 0 and duration > 0 else None
        updated = {"function": "matmul", **row}
        updated.setdefault("initialization", "trig_float")
        updated |= {"rotating": int(rotating_mb), "use_gpu_timer": True,
                    "print_kernel_info": True,
                    "iters": iters or DEFAULT_ITERS, "cold_iters": iters or DEFAULT_COLD_ITERS}
        out.append(updated)
    return out
