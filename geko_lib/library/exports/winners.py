"""The winners table both exports are written from, its checks, and the line bookkeeping of
both readers (``file:line: field: problem``)."""

from __future__ import annotations

import math
import re
import warnings
from pathlib import Path

import pandas as pd

from ...errors import GekoError
from ...gemm import (BY_NAME, GemmError, GemmProblem, GemmType, normalize_compute_type,
                     normalize_transpose, strip_compute_prefix)


class ExportError(GekoError, ValueError):
    """A winners table that cannot be exported, or a malformed file (``file:line: field: ...``)."""


IDENTITY = ("transA", "transB", "batch_count", "m", "n", "k",
            "a_type", "b_type", "c_type", "d_type", "compute_type")

# ------------------------------------------------------------------------------------------------
# winners table


def _is_missing(value) -> bool:
    if value is None or value is pd.NA:
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _table_int(value, what: str, minimum: int | None = None) -> int:
    if isinstance(value, bool) or _is_missing(value):
        raise ExportError(f"{what}: must be an integer, got {value!r}")
    if isinstance(value, str):
        text = value.strip()
        if not re.fullmatch(r"[+-]?\d+", text):
            raise ExportError(f"{what}: must be an integer, got {value!r}")
        number = int(text)
    else:
        try:
            number = int(value)
            exact = float(value) == number
        except (TypeError, ValueError, OverflowError):
            raise ExportError(f"{what}: must be an integer, got {value!r}") from None
        if not exact:
            raise ExportError(f"{what}: must be an integer, got {value!r}")
    if minimum is not None and number < minimum:
        raise ExportError(f"{what}: must be >= {minimum}, got {number}")
    return number


def _table_float(value, what: str) -> float | None:
    if _is_missing(value):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ExportError(f"{what}: must be a number, got {value!r}") from None
    if not math.isfinite(number) or number <= 0:
        return None
    return number


def _check_platforms(names: set[str]) -> None:
    """Only rows of a platform whose results are hipBLASLt solutions can be exported; a model's
    rows can, with a warning (their indices name no real solution)."""
    from ... import platforms
    from ...platforms.type_support import library_name

    for name in sorted(names):
        caps = platforms.capabilities({"platform": name})
        if "hipblaslt_override" not in caps.exports:
            raise ExportError(f"winners: platform {name!r} rows are {library_name(name)} results; "
                              "only hipBLASLt solution indices can be exported")
        if not caps.measured:
            warnings.warn(f"winners come from the {name} platform: their solution indices are "
                          "simulated and name no real hipBLASLt solution", stacklevel=4)


def _rows(winners: pd.DataFrame, *, need_name: bool) -> list[dict]:
    """Validated winners rows: problem, index, name, us and the optional extras."""
    if not isinstance(winners, pd.DataFrame):
        raise ExportError(f"winners must be a pandas DataFrame, got {type(winners).__name__}")
    required = [c for c in IDENTITY if c != "d_type"] + ["solution_index"]
    if need_name:
        required.append("solution_name")
    missing = [c for c in required if c not in winners.columns]
    if missing:
        raise ExportError(f"winners: missing column(s) {', '.join(missing)}")
    if "platform" in winners.columns:
        _check_platforms(set(winners["platform"].dropna().astype(str)))
    out = []
    for pos, (_, row) in enumerate(winners.iterrows()):
        where = f"winners row {pos}"
        record = row.to_dict()
        if _is_missing(record.get("d_type")):
            record["d_type"] = record.get("c_type")
        for field in ("transA", "transB", "a_type", "b_type", "c_type", "d_type", "compute_type"):
            if _is_missing(record.get(field)):
                raise ExportError(f"{where}: {field}: missing")
        try:
            gemm_type = GemmType(record["transA"], record["transB"], str(record["a_type"]),
                                 str(record["b_type"]), str(record["c_type"]),
                                 str(record["d_type"]), str(record["compute_type"]))
        except GemmError as err:
            raise ExportError(f"{where}: {err}") from None
        sizes = {f: _table_int(record.get(f), f"{where}: {f}", 1)
                 for f in ("batch_count", "m", "n", "k")}
        problem = GemmProblem(gemm_type, sizes["m"], sizes["n"], sizes["batch_count"], sizes["k"])
        index = _table_int(record.get("solution_index"), f"{where}: solution_index", 0)
        name = record.get("solution_name")
        name = None if _is_missing(name) else str(name).strip()
        if need_name and not name:
            raise ExportError(f"{where}: solution_name: missing (hipBLASLt checks the index "
                              "against it)")
        if name and re.search(r"[,\s]", name):
            raise ExportError(f"{where}: solution_name: must not contain commas or blanks: "
                              f"{name!r}")
        extras = {}
        for field in ("scaleA", "scaleB", "lda", "ldb", "ldc", "ldd", "stride_a", "stride_b",
                      "stride_c", "stride_d", "rotating"):
            value = record.get(field)
            if not _is_missing(value):
                extras[field] = _table_int(value, f"{where}: {field}", 0)
        bias_type = record.get("bias_type")
        if not _is_missing(bias_type):
            extras["bias_type"] = str(bias_type)
        out.append({"where": where, "problem": problem, "index": index, "name": name,
                    "us": _table_float(record.get("us"), f"{where}: us"), **extras})
    return out


def _packed_lds(row: dict) -> tuple[int, int, int, int]:
    """(lda, ldb, ldc, ldd): the winners' own or the packed column-major ones."""
    p = row["problem"]
    t = p.type
    lda = row.get("lda", p.m if t.transA == "N" else p.k)
    ldb = row.get("ldb", p.k if t.transB == "N" else p.n)
    ldc = row.get("ldc", p.m)
    ldd = row.get("ldd", ldc)
    return lda, ldb, ldc, ldd


def _num(value: float) -> str:
    """A number as C++ iostreams print it by default (6 significant digits)."""
    return f"{value:.6g}"


class _Reader:
    """Line bookkeeping for error messages: ``file:line: field: problem``."""

    def __init__(self, path):
        self.path = Path(path)
        try:
            self.text = self.path.read_text()
        except UnicodeDecodeError as err:
            raise ExportError(f"{self.path}: not a text file ({err})") from None
        self.line = 0

    def error(self, field: str, problem: str) -> ExportError:
        return ExportError(f"{self.path}:{self.line}: {field}: {problem}")

    def int(self, text: str, field: str, minimum: int | None = None) -> int:
        text = text.strip()
        if not re.fullmatch(r"[+-]?\d+", text):
            raise self.error(field, f"not an integer: {text!r}")
        value = int(text)
        if minimum is not None and value < minimum:
            raise self.error(field, f"must be >= {minimum}, got {value}")
        return value

    def float(self, text: str, field: str) -> float:
        text = text.strip()
        if not text:
            return math.nan
        try:
            return float(text)
        except ValueError:
            raise self.error(field, f"not a number: {text!r}") from None

    def transpose(self, text: str, field: str) -> str:
        if text.strip().upper() not in ("N", "T"):
            raise self.error(field, f"must be N or T, got {text!r}")
        return normalize_transpose(text)

    def data_type(self, text: str, field: str) -> str:
        name = text.strip()
        if name not in BY_NAME:
            raise self.error(field, f"unknown data type {name!r}")
        return name

    def compute_type(self, text: str, field: str = "compute_type") -> str:
        name = normalize_compute_type(text.strip())
        if strip_compute_prefix(name) not in BY_NAME:
            raise self.error(field, f"unknown compute type {text.strip()!r}")
        return name

    def gemm_type(self, fields: dict) -> GemmType:
        try:
            return GemmType(fields["transA"], fields["transB"], fields["a_type"], fields["b_type"],
                            fields["c_type"], fields["d_type"], fields["compute_type"])
        except GemmError as err:
            raise self.error("compute_type", str(err)) from None


def winners_from_results(kept: pd.DataFrame) -> pd.DataFrame:
    """The tuned side of kept results rows (results/final_results.csv) as a winners table."""
    identity = [c for c in (*IDENTITY, "scaleA", "scaleB") if c in kept]
    winners = kept[identity].copy()
    winners["solution_index"] = kept["solution_index_tuned"].astype(int)
    winners["solution_name"] = kept["solution_name_tuned"]
    winners["us"] = kept["us_tuned"]
    if "error_tuned" in kept:
        winners["error"] = kept["error_tuned"]  # the verified error (aiter's err_ratio column)
    return winners.reset_index(drop=True)


def require_exportable(capabilities, platform_name: str) -> None:
    """Both export formats name hipBLASLt kernels: refused on a platform that has none."""
    if not capabilities.exports:
        raise ExportError(f"platform {platform_name} has no valid hipBLASLt tuning override or "
                          "TunableOp export (their entries name hipBLASLt solutions); ship "
                          "final_libs instead")


def _check_token(value: str, what: str) -> str:
    value = str(value).strip()
    if "," in value or "\n" in value or "\r" in value:
        raise ExportError(f"{what}: must not contain commas or line breaks: {value!r}")
    return value
