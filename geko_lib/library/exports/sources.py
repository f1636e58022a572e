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


def _packed(identity: pd.DataFrame) -> dict[str, pd.Series]:
    """The leading dimensions of packed column-major operands (what a log without them means)."""
    a_n, b_n = identity["transA"] == "N", identity["transB"] == "N"
    return {"lda": identity["m"].where(a_n, identity["k"]),
            "ldb": identity["k"].where(b_n, identity["n"]), "ldc": identity["m"]}


CALL_KEY = ("bias", "scaleAB", "lda", "ldb", "ldc")  # what consumers look a call up by, beyond
# the GEMM: aiter its bias and scaleAB, TunableOp its leading dimensions and bias op


def call_table(workload: pd.DataFrame) -> pd.DataFrame:
    """One row per distinct call of the workload: the GEMM identity (GEMM_FIELDS), CALL_KEY
    (leading dimensions packed where the log has none) and the summed call_count, first-seen
    order. summary.csv sums these into one GEMM; a consumer's lookup tells them apart."""
    identity = _identity(workload)
    frame = workload.rename(columns={"M": "m", "N": "n", "K": "k"}).set_index(identity.index)
    bias = frame["bias_vector"] if "bias_vector" in frame else pd.Series(False, frame.index)
    table = identity.assign(bias=bias.fillna(False).astype(bool),
                            scaleAB=(identity["scaleA"] != 0) | (identity["scaleB"] != 0))
    for name, packed in _packed(identity).items():
        given = pd.to_numeric(frame[name], errors="coerce") if name in frame else packed
        table[name] = given.fillna(packed).astype(int)
    table["call_count"] = pd.to_numeric(frame["call_count"], errors="coerce").fillna(1) \
        if "call_count" in frame else 1
    keys = list(GEMM_FIELDS) + list(CALL_KEY)
    return table.groupby(keys, sort=False, as_index=False)["call_count"].sum()


def workload_keys(workload: pd.DataFrame) -> dict[tuple, list[dict]]:
    """GEMM identity -> the distinct call keys (CALL_KEY) of the workload rows of that GEMM."""
    if workload is None or workload.empty:
        return {}
    calls = call_table(workload)
    out: dict[tuple, list[dict]] = {}
    for key, record in zip(_keys(calls), calls[list(CALL_KEY)].to_dict("records")):
        out.setdefault(key, []).append({k: v.item() if hasattr(v, "item") else v
                                        for k, v in record.items()})
    return out


def distinct(entries: list[dict], fields: tuple[str, ...]) -> list[dict]:
    """The distinct values of ``fields`` among call keys, first-seen order."""
    out = []
    for entry in entries:
        picked = {f: entry[f] for f in fields}
        if picked not in out:
            out.append(picked)
    return out


def per_call(winners: pd.DataFrame, keys: dict | None) -> tuple[pd.DataFrame, list[str]]:
    """(one winners row per distinct leading dimensions of the calls each GEMM answers, the
    GEMM name of each bias call left out): TunableOp's key has the call's ``lda, ldb, ldc``,
    and its bias op (GemmAndBiasTunableOp) is a GEMM geko did not time with the epilogue."""
    from ...gemm import GemmProblem

    if not keys or winners.empty:
        return winners, []
    rows, bias = [], []
    for (_, row), identity in zip(winners.iterrows(), _keys(winners)):
        calls = keys.get(identity) or [{"bias": False}]
        if any(call["bias"] for call in calls):
            bias += [GemmProblem.from_row(row.to_dict()).name] * sum(c["bias"] for c in calls)
        plain = [call for call in calls if not call["bias"]]
        for lds in distinct(plain, ("lda", "ldb", "ldc")) if "lda" in calls[0] else [{}]:
            rows.append(row.to_dict() | lds)
    return pd.DataFrame(rows, columns=list(dict.fromkeys([*winners.columns, "lda", "ldb",
                                                          "ldc"]))), bias


def override_entries(winners: pd.DataFrame, keys: dict | None
                     ) -> tuple[pd.DataFrame, list[str], list[str]]:
    """(the winners rows a hipBLASLt override file may hold, the GEMM names of those left out
    as every workload call of them is a bias call, the GEMM names kept whose bias calls will use
    the entry too). The override's key has no bias field, so hipBLASLt serves a bias call with
    the entry of its GEMM: a kernel geko timed without the bias epilogue (and one perhaps without
    bias support) where the workload calls the GEMM with a bias only."""
    from ...gemm import GemmProblem

    if not keys or winners.empty:
        return winners, [], []
    keep, only_bias, mixed = [], [], []
    for (_, row), identity in zip(winners.iterrows(), _keys(winners)):
        calls = keys.get(identity) or [{"bias": False}]
        biased = [call["bias"] for call in calls]
        keep.append(not all(biased))
        if any(biased):
            (mixed if keep[-1] else only_bias).append(GemmProblem.from_row(row.to_dict()).name)
    return winners[keep], only_bias, mixed


def gemm_key(winners: pd.DataFrame) -> list[tuple]:
    """The identity keys of ``workload_keys`` for each winners row."""
    if not set(GEMM_FIELDS) - {"scaleA", "scaleB", "d_type"} <= set(winners.columns):
        raise ExportError("winners: missing GEMM identity columns")
    return _keys(winners)
