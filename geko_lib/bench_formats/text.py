"""Result tables as hipblaslt-bench prints them: the ``.out`` files of the original's layout.

The original keeps hipblaslt-bench's own output beside every benchmark input (``<log>.out`` in
the workdir, ``search/<GEMM>.out``). Where a platform ran that tool (rocm), the result table
it returns names the tool's output file (``frame.attrs[TOOL_OUTPUT]``) and the ``.out`` files
are that output as the tool printed it (:func:`output_text`). sim and cuda run no
hipblaslt-bench at all, so theirs are written from the tables in hipblaslt-bench's block
layout, which the original's parser (and geko's ``platforms.rocm.bench.read_bench_output``)
read back::

    <one preamble line: which platform made the numbers>
    [0]:transA,transB,batch_count,m,n,k,...,hipblaslt-Gflops,hipblaslt-GB/s,us
        T,N,1,4096,16,4096,...,512.3,130.1,20.5
        --Solution index: 3000123
        --Solution name:  Cijk_...
        --kernel name:    Cijk_...
    Winner:
    [2]:...                                   (after the candidates of a GEMM, when several)
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..gemm import GEMM_FIELDS

PERF = (("gflops", "hipblaslt-Gflops"), ("gbps", "hipblaslt-GB/s"), ("us", "us"))
TOOL_OUTPUT = "tool_output"  # frame.attrs key: the file the tool printed the results into
_PREAMBLE = "geko {platform} platform results ({what}), in hipblaslt-bench's layout"


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _block(position: int, header: list[str], row: dict) -> list[str]:
    values = [_cell(row.get(c, "")) for c in GEMM_FIELDS] + \
        [_cell(row.get(ours, "")) for ours, _ in PERF]
    return [f"[{position}]:" + ",".join(header), "    " + ",".join(values),
            f"    --Solution index: {row.get('solution_index', '')}",
            f"    --Solution name:  {row.get('solution_name', '')}",
            f"    --kernel name:    {row.get('kernel', '')}"]


def table_rows(frame: pd.DataFrame) -> list[dict]:
    """``frame.to_dict("records")``'s rows (Python scalars, NaN kept), built column by column:
    a search's candidates table has tens of thousands of rows, and pandas' records loop cost
    seconds of a campaign's CPU there."""
    columns = list(frame.columns)
    return [dict(zip(columns, values))
            for values in zip(*(frame[c].tolist() for c in columns))]


def format_results(frame: pd.DataFrame, preamble: str) -> str:
    """Every row of ``frame`` (results-table columns) as one hipblaslt-bench block
    (``format_rows``)."""
    return format_rows(table_rows(frame), preamble)


def format_rows(rows: list[dict], preamble: str) -> str:
    """Every row (results-table columns) as one hipblaslt-bench block, GEMM by GEMM in the
    rows' order; a GEMM with several candidates ends with ``Winner:`` and the block of its
    fastest one, as hipblaslt-bench marks the solution it would pick."""
    header = list(GEMM_FIELDS) + [theirs for _, theirs in PERF]
    lines = [preamble]
    keys = [tuple(r.get(c) for c in GEMM_FIELDS) for r in rows]
    by_gemm: dict[tuple, list[dict]] = {}
    for key, row in zip(keys, rows):
        by_gemm.setdefault(key, []).append(row)
    for candidates in by_gemm.values():
        for position, row in enumerate(candidates):
            lines += _block(position, header, row)
        if len(candidates) > 1:
            best = min(range(len(candidates)), key=lambda i: float(candidates[i]["us"]))
            lines.append("Winner: ")
            lines += _block(best, header, candidates[best])
    return "\n".join(lines) + "\n"


def preamble(platform_name: str, measured: bool) -> str:
    what = "measured" if measured else "model predictions, not measurements"
    return _PREAMBLE.format(platform=platform_name, what=what)


def with_tool_output(frame: pd.DataFrame, path) -> pd.DataFrame:
    """``frame`` naming ``path``, the output the tool printed its rows into."""
    frame.attrs[TOOL_OUTPUT] = str(path)
    return frame


def output_text(frame: pd.DataFrame, platform_name: str, measured: bool) -> str:
    """The ``.out`` text of a platform's results: the tool's own output where it ran one (the
    file ``frame.attrs[TOOL_OUTPUT]`` names), else the table rendered in its layout."""
    path = frame.attrs.get(TOOL_OUTPUT)
    if path:
        return Path(path).read_text(errors="replace")
    return format_results(frame, preamble(platform_name, measured))


def out_beside(table_path) -> Path:
    """The ``.out`` a bench job writes beside its results table (``<name>.csv`` ->
    ``<name>.out``)."""
    return Path(table_path).with_suffix(".out")


def is_rendered(text: str) -> bool:
    """Whether a ``.out`` text is a table geko rendered (its preamble line), not a tool's."""
    head, _, tail = _PREAMBLE.partition("{platform}")
    first = text.split("\n", 1)[0]
    return first.startswith(head) and tail.split("{what}")[0] in first
