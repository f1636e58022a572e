"""Which library a kept kernel's index belongs to, and which consumer keys a kept GEMM answers.

The application that reads an export runs the stock hipBLASLt it loads, so an index in an export
means something only in one library build:

* a dense-search winner is a kernel of the stock library: its index is the one the search
  measured it under (``winners.csv``'s ``solution_index``), not the one it got in the library
  geko built from the winners for the comparison (0, 1, ... there);
* a tuned kernel exists only in geko's library (``tensile/library``): its index is that
  library's, and the export says so in ``exports/library_index.json`` (the exports' build stamp:
  which library directory and which build of it, the digest of its manifest).

aiter's tuned CSV keys a row by the application's call as logged (``bias``, ``scaleAB`` ...), a
finer key than a GEMM: :func:`workload_keys` gives, per GEMM, the keys of the workload rows it
came from.
"""

from __future__ import annotations

import pandas as pd

from ...gemm import GEMM_FIELDS, normalize_compute_type
from .winners import ExportError

STOCK, GEKO = "stock", "geko"  # the ``library`` column of a winners table


def _identity(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.rename(columns={"M": "m", "N": "n", "K": "k"})
    out = pd.DataFrame({c: frame[c] if c in frame else 0 for c in GEMM_FIELDS})
    out["d_type"] = out["d_type"].where(out["d_type"].notna(), out["c_type"])
    out["compute_type"] = out["compute_type"].map(normalize_compute_type)
    for column in ("batch_count", "m", "n", "k", "scaleA", "scaleB"):
        out[column] = out[column].astype(int)
    return out


def _keys(frame: pd.DataFrame) -> list[tuple]:
    return [tuple(r) for r in _identity(frame).itertuples(index=False)]


def with_stock_indices(winners: pd.DataFrame, searched: pd.DataFrame | None) -> pd.DataFrame:
    """``winners`` with a ``library`` column and, for the kernels the dense search measured in
    the stock library (``searched``: winners.csv; None in tune mode), the stock index."""
    out = winners.copy()
    out["library"] = GEKO
    if searched is None or out.empty:
        return out
    stock = {(key, str(name)): int(index) for key, name, index in
             zip(_keys(searched), searched["solution_name"], searched["solution_index"])}
    for pos, (key, name) in enumerate(zip(_keys(out), out["solution_name"])):
        index = stock.get((key, str(name)))
        if index is not None:
            out.iloc[pos, out.columns.get_loc("solution_index")] = index
            out.iloc[pos, out.columns.get_loc("library")] = STOCK
    return out


def of_library(winners: pd.DataFrame, library: str) -> pd.DataFrame:
    """The rows whose index is ``library``'s (a table without the column: all of them)."""
    if "library" not in winners:
        return winners
    return winners[winners["library"] == library]


def index_library(winners: pd.DataFrame) -> str:
    """The one library whose indices an export of ``winners`` holds: stock where any row is a
    stock kernel (rows of geko's library are left out of such an export), else geko."""
    if "library" not in winners or (winners["library"] == STOCK).any():
        return STOCK
    return GEKO


def workload_keys(workload: pd.DataFrame) -> dict[tuple, list[dict]]:
    """GEMM identity -> the distinct (bias, scaleAB) keys of the workload rows of that GEMM,
    first-seen order (aiter looks a row up by both; summary.csv sums them into one GEMM)."""
    if workload is None or workload.empty:
        return {}
    bias = workload["bias_vector"] if "bias_vector" in workload else pd.Series(False,
                                                                                 workload.index)
    out: dict[tuple, list[dict]] = {}
    for key, has_bias in zip(_keys(workload), bias.fillna(False).astype(bool)):
        entry = {"bias": bool(has_bias), "scaleAB": bool(key[-2] or key[-1])}
        if entry not in out.setdefault(key, []):
            out[key].append(entry)
    return out


def gemm_key(winners: pd.DataFrame) -> list[tuple]:
    """The identity keys of ``workload_keys`` for each winners row."""
    if not set(GEMM_FIELDS) - {"scaleA", "scaleB", "d_type"} <= set(winners.columns):
        raise ExportError("winners: missing GEMM identity columns")
    return _keys(winners)
