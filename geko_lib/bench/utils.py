"""hipblaslt-bench output files (``geko.bench.utils``): parse one, parse a directory of them,
and write a results table in the same format (the sim and cuda platforms' ``.out`` files, so
one reader serves every platform)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..bench_formats import text as bench_text
from .. import original_columns
from ..errors import GekoError
from ..platforms.rocm.bench import read_bench_output

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


def format_benchmark_output(frame, platform) -> str:
    """A platform's results as hipblaslt-bench prints them: the tool's own output where the
    platform ran it (rocm), else the table in its layout with a first line saying which
    platform made the numbers (geko_lib.bench_formats.text.output_text)."""
    return bench_text.output_text(frame, platform.name, platform.measured)
