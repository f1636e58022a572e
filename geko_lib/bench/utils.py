"""hipblaslt-bench output files (``geko.bench.utils``): parse one, parse a directory of them,
and write a results table in the same format (the sim and cuda platforms' ``.out`` files, so
one reader serves every platform)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import original_columns
from ..errors import GekoError
from ..gemm import GemmProblem
from ..platforms.rocm.bench import read_bench_output

# hipblaslt-bench's columns for a result row (identity, then its timing), as it prints them
_IDENTITY = ("transA", "transB", "batch_count", "m", "n", "k", "a_type", "b_type", "c_type",
             "d_type", "compute_type")
_PERF = ("hipblaslt-Gflops", "hipblaslt-GB/s", "us")
_EXTRAS = ("norm_error", "atol", "rtol")  # verification columns, printed after the timing


def parse_benchmark_output(path) -> pd.DataFrame:
    """Every result row of one hipblaslt-bench output file (``--yaml`` run), with the printed
    columns, the solution lines and the original's column names."""
    return original_columns.add(read_bench_output(path))


def parse_benchmark_output_dir(directory, suffix: str = "") -> pd.DataFrame:
    """Every ``*<suffix>*.out`` file of a directory parsed and concatenated, in name order; the
    ``file`` column names where each row came from."""
    paths = sorted(p for p in Path(directory).glob(f"*{suffix}*.out") if p.is_file())
    if not paths:
        raise GekoError(f"{directory}: no hipblaslt-bench output (*{suffix}*.out) to parse")
    return pd.concat([parse_benchmark_output(p).assign(file=p.name) for p in paths],
                     ignore_index=True)


def _value(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def format_benchmark_output(frame: pd.DataFrame, note: str = "") -> str:
    """A results table (platform columns) as hipblaslt-bench prints it: an optional preamble,
    then per result ``[i]:header`` and its value line, then the solution lines."""
    lines = [f"# {note}"] if note else []
    for i, row in enumerate(frame.to_dict("records")):
        problem = GemmProblem.from_row(row)
        fields = {k: row[k] for k in _IDENTITY}
        fields["compute_type"] = str(fields["compute_type"]).removeprefix("c_")
        fields.update({"hipblaslt-Gflops": row.get("gflops", problem.flops / row["us"] / 1e3),
                       "hipblaslt-GB/s": row.get("gbps", problem.min_bytes / row["us"] / 1e3),
                       "us": row["us"]})
        fields.update({k: row[k] for k in _EXTRAS if k in row and not pd.isna(row[k])})
        lines.append(f"[{i}]:" + ",".join(fields))
        lines.append("    " + ",".join(_value(v) for v in fields.values()))
        if int(row.get("solution_index", -1)) >= 0:
            lines.append(f"    --Solution index: {int(row['solution_index'])}")
        for label, key in (("Solution name", "solution_name"), ("kernel name", "kernel")):
            if str(row.get(key) or ""):
                lines.append(f"    --{label}: {row[key]}")
    return "\n".join(lines) + "\n"
