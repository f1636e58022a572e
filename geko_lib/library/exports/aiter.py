"""aiter's tuned-GEMM CSV (``AITER_CONFIG_GEMM_BF16``; aiter/configs/bf16_tuned_gemm.csv)
=====================================================================================

What vLLM and SGLang on ROCm read: ``aiter.tuned_gemm`` looks a call ``x[M, K] @ W[N, K]^T`` up by
``(cu_num, M, N, K, bias, dtype, outdtype, scaleAB, bpreshuffle)`` (exact M first) and dispatches
to the row's backend ``libtype`` with ``solidx``. Header::

    gfx,cu_num,M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,libtype,solidx,splitK,us,
    kernelName,err_ratio,tflops,bw

geko writes one row per kept GEMM that is an ``F.linear`` call in hipBLASLt's column-major terms
(transA = T, transB = N, batch 1, f32 accumulation; see geko_lib.workload.aiter for the mapping):
``M`` = the GEMM's n (tokens), ``N`` = its m (out features), ``K``; dtypes as ``torch.bfloat16``;
``bias`` and ``scaleAB`` those of the workload rows the GEMM came from (one row per key);
``libtype`` ``hipblaslt``, ``solidx`` the stock library's index of a dense-search winner (what
the application's hipBLASLt numbers it), ``splitK`` 0 (the solution carries its own), ``us`` the tuned time, ``kernelName`` the solution name, ``err_ratio`` geko's
verified error (a norm error per element, not aiter's fraction of elements out of tolerance),
``tflops``/``bw`` from ``us`` (bw counts A, B read and D written once). ``gfx`` and ``cu_num`` are
the arch and compute-unit count the campaign ran on: a row whose ``cu_num`` differs from what
the GPU reports never matches (the most-reported failure of these tables: 80 vs 304). Other
GEMMs (another layout, batched, other accumulation), calls with a bias (geko times GEMMs
without the bias epilogue) and kernels only geko's library has (no field of the table can name
that library) are left out and counted (``LEFT_OUT``).

The reader (``read_aiter_tuned``) gives the ``libtype == hipblaslt`` rows without pre-shuffled
weights (calls geko's workloads never have: their GEMMs are refused) back as a winners table
(geko's identity columns, ``bias``, ``scaleAB``, ``solution_index``, ``solution_name``, ``us``,
``gfx``, ``cu_num``).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd

from ... import files
from ...gemm import GemmProblem, GemmType
from ...workload.aiter import HIPBLASLT_TO_TORCH, TORCH_NAMES
from .sources import STOCK, distinct, gemm_key
from .winners import ExportError, _rows

AITER_TUNED_COLUMNS = ("gfx", "cu_num", "M", "N", "K", "bias", "dtype", "outdtype", "scaleAB",
                       "bpreshuffle", "libtype", "solidx", "splitK", "us", "kernelName",
                       "err_ratio", "tflops", "bw")
LIBTYPE = "hipblaslt"


def _linear(problem: GemmProblem) -> bool:
    """Whether a GEMM is a ``F.linear`` call aiter's lookup can key (x @ W^T, f32 accumulation,
    both inputs of one torch dtype)."""
    t = problem.type
    return (t.transA == "T" and t.transB == "N" and problem.batch == 1
            and t.compute_type == "f32_r" and t.a_type == t.b_type and t.c_type == t.d_type
            and t.a_type in HIPBLASLT_TO_TORCH and t.d_type in HIPBLASLT_TO_TORCH)


# why a kept GEMM (or one of its workload keys) has no row: reason -> words of the log line
LEFT_OUT = {
    "linear": "no F.linear call (aiter keys T N, batch 1, f32 accumulation only)",
    "bias": "a bias call: geko timed the GEMM without its bias epilogue",
    "geko": "a kernel of geko's library only: the table has no field naming that library",
}


class LeftOut(dict):
    """{reason: count} of what was left out (reasons in LEFT_OUT); ``names``: {reason: the
    names of those GEMMs}, so the line saying so can name them."""

    def __init__(self):
        super().__init__()
        self.names: dict[str, list[str]] = {}

    def add(self, reason: str, name: str) -> None:
        self[reason] = self.get(reason, 0) + 1
        self.names.setdefault(reason, []).append(name)


def aiter_rows(winners: pd.DataFrame, *, gfx: str, cu_num: int,
               keys: dict | None = None) -> tuple[list[dict], LeftOut]:
    """(rows of the tuned CSV, LeftOut: {reason: count} of what was left out, and the names).
    ``keys``: sources.workload_keys of the campaign's workload, so each row carries the
    ``bias`` and ``scaleAB`` of the call it answers; without it a GEMM's own scales."""
    if not gfx or int(cu_num) < 1:
        raise ExportError(f"aiter tuned CSV: gfx {gfx!r} and cu_num {cu_num!r} are the lookup "
                          "key of every row: both are required")
    errors = winners["error"].tolist() if "error" in winners else [None] * len(winners)
    libraries = winners["library"].tolist() if "library" in winners else [STOCK] * len(winners)
    identities = gemm_key(winners)
    out, left_out = [], LeftOut()
    for row, error, library, identity in zip(_rows(winners, need_name=True), errors, libraries,
                                             identities):
        p = row["problem"]
        if not _linear(p):
            left_out.add("linear", p.name)
            continue
        if library != STOCK:
            left_out.add("geko", p.name)
            continue
        us = row["us"]
        if us is None:
            raise ExportError(f"{row['where']}: us: aiter's table needs the tuned time")
        scaled = bool(row.get("scaleA", 0) or row.get("scaleB", 0))
        calls = (keys or {}).get(identity) or [{"bias": False, "scaleAB": scaled}]
        for key in distinct(calls, ("bias", "scaleAB")):
            if key["bias"]:
                left_out.add("bias", p.name)
                continue
            out.append({"gfx": gfx, "cu_num": int(cu_num), "M": p.n, "N": p.m, "K": p.k,
                        "bias": key["bias"], "dtype": HIPBLASLT_TO_TORCH[p.type.a_type],
                        "outdtype": HIPBLASLT_TO_TORCH[p.type.d_type],
                        "scaleAB": key["scaleAB"], "bpreshuffle": False, "libtype": LIBTYPE,
                        "solidx": row["index"], "splitK": 0, "us": round(us, 4),
                        "kernelName": row["name"],
                        "err_ratio": 0.0 if error is None or pd.isna(error) else float(error),
                        "tflops": round(p.flops / us / 1e6, 4),
                        "bw": round(p.min_bytes / us / 1e3, 4)})
    return out, left_out


def write_aiter_tuned(winners: pd.DataFrame, path, *, gfx: str, cu_num: int,
                      keys: dict | None = None) -> LeftOut:
    """Write the tuned CSV; returns what was left out (aiter_rows: counts, and names)."""
    rows, left_out = aiter_rows(winners, gfx=gfx, cu_num=cu_num, keys=keys)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=AITER_TUNED_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    files.write_text(path, buffer.getvalue())
    return left_out


def _number(kind, text, path, line: int, column: str):
    try:
        return kind(str(text).strip())
    except ValueError:
        expected = "an integer" if kind is int else "a number"
        raise ExportError(f"{path}:{line}: {column}: expected {expected}, got {text!r}") from None


def read_aiter_tuned(path) -> pd.DataFrame:
    """The hipBLASLt rows of an aiter tuned CSV as a winners table (geko's identity columns)."""
    from ...workload.aiter import _flag, gemm_row

    path = Path(path)
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in ("M", "N", "K", "dtype", "libtype", "solidx")
                   if c not in (reader.fieldnames or [])]
        if missing:
            raise ExportError(f"{path}:1: header lacks column(s) {', '.join(missing)}")
        out = []
        for record in reader:
            short = [c for c in reader.fieldnames if record.get(c) is None]
            if short:
                raise ExportError(f"{path}:{reader.line_num}: {short[0]}: the row has fewer "
                                  "fields than the header")
            if record["libtype"].strip() != LIBTYPE:
                continue
            if _flag(record.get("bpreshuffle") or "False", path, reader.line_num,
                     "bpreshuffle"):
                continue  # answers calls with pre-shuffled weights, which no workload has
            fields = gemm_row(record, path, reader.line_num)
            t = GemmType(fields["transA"], fields["transB"], fields["a_type"], fields["b_type"],
                         fields["c_type"], fields["d_type"], fields["compute_type"])
            problem = GemmProblem(t, fields["M"], fields["N"], 1, fields["K"])
            line = reader.line_num
            out.append(problem.gemm_fields() | {
                # aiter's own key of the row, beside the GEMM's
                "bias": fields["bias_vector"], "scaleAB": bool(fields["scaleA"]),
                "solution_index": _number(int, record["solidx"], path, line, "solidx"),
                "solution_name": record.get("kernelName", ""),
                "us": _number(float, record.get("us") or "nan", path, line, "us"),
                "gfx": record.get("gfx", ""),
                "cu_num": _number(int, record.get("cu_num") or "0", path, line, "cu_num")})
    return pd.DataFrame(out)


__all__ = ["AITER_TUNED_COLUMNS", "TORCH_NAMES", "aiter_rows", "write_aiter_tuned",
           "read_aiter_tuned"]
