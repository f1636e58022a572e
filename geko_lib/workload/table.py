"""The canonical workload table: field kinds, raw rows gathered column-wise, normalization and
validation (original_tool.md §1.5), duplicate aggregation."""

from __future__ import annotations

import difflib
import logging
import math
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from .. import gemm, newer_revisions

from .errors import WorkloadError, _Bad
from .support import UNCHECKED, GemmSupport, Unchecked, require
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)


# --------------------------------------------------------------------------------------------
# field kinds of the canonical table

_POSITIVE_INT = ("M", "N", "K", "batch_count", "call_count")
_NONNEG_INT = ("lda", "ldb", "ldc", "ldd", "stride_a", "stride_b", "stride_c", "stride_d",
               "scaleA", "scaleB", "rotating", "cold_iters", "iters")
_ANY_INT = ("solution_index",)
_FLOAT = ("alpha", "beta")
_BOOL = ("scaleAlpha_vector", "gradient", "use_e", "bias_vector", "flush", "any_stride")
_DTYPE_FIELDS = ("a_type", "b_type", "c_type", "d_type", "compute_type")
_TRANS_FIELDS = ("transA", "transB")
_STR = ("function", "bias_source", "scale_type", "bias_type", "aux_type", "activation_type",
        "solution_Name", "kernel_name")
# Not listed (scaleC, scaleD, swizzleA, swizzleB): their type is inferred from the values.

_LOG_FIELD_SET = frozenset(gemm.LOG_FIELDS)
_QUIETLY_DROPPED = frozenset(gemm.HIPBLASLT_DROPPED_FIELDS)
_FIELD_ORDER = {f: i for i, f in enumerate(gemm.LOG_FIELDS)}


# --------------------------------------------------------------------------------------------
# raw rows -> columns


class _Rows:
    """Parsed rows before normalization: (keys, values) pairs, repeat counts, line lookup."""

    def __init__(self, path, line_of: Callable[[int], int | None]):
        self.path = path
        self.line_of = line_of
        self.keys: list[tuple] = []
        self.values: list[list] = []
        self.repeats: list[int] | None = None
        self.missing_word = "null"  # what a missing value is in this source's words
        # warn once per key outside the whitelist (mask-64 rows, where a person may misspell one)
        self.warn_unknown_fields = False

    def add(self, keys: tuple, values: list, repeat: int = 1):
        self.keys.append(keys)
        self.values.append(values)
        if self.repeats is not None:
            self.repeats.append(repeat)

    def __len__(self):
        return len(self.values)

    def columns(self) -> dict[str, list]:
        """Columns (lists, None where a row lacks the key); later duplicate keys win, as in YAML."""
        n = len(self.values)
        if n and self.keys.count(self.keys[0]) == n:  # the usual case: one key sequence
            keys = self.keys[0]
            if not keys:
                return {}
            # one tuple per column (no flat list of every value beside them)
            return dict(zip(keys, zip(*self.values)))
        groups: dict[tuple, list[int]] = {}
        for i, keys in enumerate(self.keys):
            groups.setdefault(keys, []).append(i)
        names: dict[str, None] = {}
        for keys in groups:
            names.update(dict.fromkeys(keys))
        cols = {name: np.full(n, None, dtype=object) for name in names}
        for keys, rows in groups.items():
            idx = np.asarray(rows)
            block = [self.values[i] for i in rows]
            for name, col in zip(keys, zip(*block)):
                target = cols[name]
                arr = np.empty(len(col), dtype=object)
                arr[:] = col
                target[idx] = arr
        return {name: tuple(col.tolist()) for name, col in cols.items()}


# --------------------------------------------------------------------------------------------
# normalization (original_tool.md §1.5) and validation


def _describe(v) -> str:
    return repr(v) if not isinstance(v, bool) else ("true" if v else "false")


def _int_column(values: Sequence, minimum: int | None, what: str) -> np.ndarray:
    types = set(map(type, values))
    if types <= {int}:
        try:
            arr = np.array(values, dtype=np.int64)
        except OverflowError:
            arr = None
        if arr is not None:
            if minimum is not None:
                bad = np.flatnonzero(arr < minimum)
                if bad.size:
                    i = int(bad[0])
                    raise _Bad(i, f"must be {what}, got {values[i]!r}")
            return arr
    elif types <= {int, float}:
        arr = np.array(values, dtype=np.float64)
        ok = np.isfinite(arr) & (arr == np.round(arr)) & (np.abs(arr) < 2.0 ** 62)
        if minimum is not None:
            ok &= arr >= minimum
        bad = np.flatnonzero(~ok)
        if bad.size:
            i = int(bad[0])
            raise _Bad(i, f"must be {what}, got {values[i]!r}")
        return arr.astype(np.int64)
    for i, v in enumerate(values):  # find the first offender
        if type(v) is bool or not isinstance(v, (int, float)):
            raise _Bad(i, f"must be {what}, got {_describe(v)}")
        if isinstance(v, float) and not (math.isfinite(v) and v == int(v)):
            raise _Bad(i, f"must be {what}, got {v!r}")
        if minimum is not None and v < minimum:
            raise _Bad(i, f"must be {what}, got {v!r}")
        if abs(v) >= 2 ** 63:
            raise _Bad(i, f"out of the 64-bit integer range: {v!r}")
    raise AssertionError("unreachable")


def _float_column(values: Sequence) -> np.ndarray:
    if set(map(type, values)) <= {int, float}:
        return np.array(values, dtype=np.float64)
    for i, v in enumerate(values):
        if type(v) is bool or not isinstance(v, (int, float)):
            raise _Bad(i, f"must be a number, got {_describe(v)}")
    return np.array(values, dtype=np.float64)


def _bool_column(values: Sequence) -> np.ndarray:
    if set(map(type, values)) <= {bool}:
        return np.array(values, dtype=bool)
    out = []
    for i, v in enumerate(values):
        if type(v) is bool:
            out.append(v)
        elif type(v) is int and v in (0, 1):
            out.append(bool(v))
        else:
            raise _Bad(i, f"must be true or false, got {_describe(v)}")
    return np.array(out, dtype=bool)


def _text(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _str_column(values: Sequence) -> list:
    if set(map(type, values)) <= {str}:
        return values
    return [v if type(v) is str else _text(v) for v in values]


def _mapped_column(values: Sequence, convert: Callable) -> list:
    """Apply ``convert`` (raising ``_Bad(-1, msg)``) once per distinct value."""
    if set(map(type, values)) <= {str}:  # the usual case: convert each distinct string once
        mapping = {}
        for v in set(values):
            try:
                mapping[v] = convert(v)
            except _Bad as bad:
                raise _Bad(values.index(v), bad.message) from None
        return list(map(mapping.__getitem__, values))
    out = []
    for i, v in enumerate(values):
        try:
            out.append(convert(v))
        except _Bad as bad:
            raise _Bad(i, bad.message) from None
    return out


def _convert_transpose(v):
    if isinstance(v, bool):
        return "T" if v else "N"
    if not isinstance(v, str):
        raise _Bad(-1, f"must be N or T, got {_describe(v)}")
    try:
        return gemm.normalize_transpose(v)
    except gemm.GemmError:
        raise _Bad(-1, f"must be N or T, got {v!r}") from None


def _convert_dtype(v):
    if not isinstance(v, str):
        raise _Bad(-1, f"unknown data type {_describe(v)} (known: {', '.join(gemm.BY_NAME)})")
    try:
        gemm.dtype(v)
    except gemm.GemmError as exc:
        raise _Bad(-1, str(exc)) from None
    return v


def _convert_compute(v):
    return gemm.normalize_compute_type(_convert_dtype(v))


def _infer_column(values: Sequence):
    types = set(map(type, values))
    if types <= {bool}:
        return np.array(values, dtype=bool)
    if types <= {int}:
        try:
            return np.array(values, dtype=np.int64)
        except OverflowError:
            return _str_column(values)
    if types <= {int, float}:
        return np.array(values, dtype=np.float64)
    return _str_column(values)


def _converter(field: str) -> Callable[[list], object]:
    if field in _POSITIVE_INT:
        return lambda v: _int_column(v, 1, "a positive integer")
    if field in _NONNEG_INT:
        return lambda v: _int_column(v, 0, "a non-negative integer")
    if field in _ANY_INT:
        return lambda v: _int_column(v, None, "an integer")
    if field in _FLOAT:
        return _float_column
    if field in _BOOL:
        return _bool_column
    if field in _TRANS_FIELDS:
        return lambda v: _mapped_column(v, _convert_transpose)
    if field == "compute_type":
        return lambda v: _mapped_column(v, _convert_compute)
    if field in _DTYPE_FIELDS:
        return lambda v: _mapped_column(v, _convert_dtype)
    if field in _STR:
        return _str_column
    return _infer_column


def _nulls(values: Sequence) -> list[int]:
    if None not in values:
        return []
    return [i for i, v in enumerate(values) if v is None]


def _normalize(rows: _Rows, support: GemmSupport | Unchecked, arch: str | None = None
               ) -> pd.DataFrame:
    """The canonical table of ``rows``. A GEMM beyond ``support`` (one platform's limits, see
    :mod:`geko_lib.workload.support`), or of a type ``arch`` cannot run, is refused too; it is
    required, and only ``UNCHECKED``, by name, checks neither (None is a TypeError)."""
    support = require(support)
    n = len(rows)  # counted now: the rows' lists are let go of once they are columns
    if n == 0:
        raise WorkloadError(rows.path, None, "rows", "empty workload: no GEMM rows found")
    cols = _whitelisted_columns(rows)
    _require_gemm_fields(cols, rows)
    _fill_row_defaults(cols, n)
    out = _converted_columns(cols, rows)
    _refuse_what_cannot_run(out, rows, support, arch)
    out["scale_type"] = _scale_types(cols.get("scale_type"), out["compute_type"], n)
    out["call_count"] = _call_counts(out.get("call_count"), rows, n)
    return _aggregate(_frame(out), rows.path, rows.line_of)


def _first_error(errors: list[tuple[int, int, str, str]], rows: _Rows) -> None:
    """The error (row, field order, field, message) on the earliest line, raised; none: none."""
    if errors:
        row, _, field, message = min(errors)
        raise WorkloadError(rows.path, rows.line_of(row), field, message)


def _whitelisted_columns(rows: _Rows) -> dict:
    """The rows' columns under the original's field names, only the fields it keeps (a warning
    for any other); the per-row lists are let go of (memory)."""
    cols = rows.columns()
    # lowercase m/n/k (hipblaslt-bench output, CSV) -> M/N/K
    for low, up in (("m", "M"), ("n", "N"), ("k", "K")):
        if low in cols and up not in cols:
            cols[up] = cols.pop(low)
    if rows.warn_unknown_fields:
        unknown = [k for k in cols if k not in _LOG_FIELD_SET and k not in _QUIETLY_DROPPED]
        if unknown:  # rare: the per-row key lists are scanned only then
            _warn_unknown_fields(unknown, rows)
    rows.keys = rows.values = None  # the per-row lists: the columns hold their values now
    return {k: v for k, v in cols.items() if k in _LOG_FIELD_SET}  # the original's whitelist


def _require_gemm_fields(cols: dict, rows: _Rows) -> None:
    errors = []
    for field in gemm.GEMM_LOG_FIELDS:
        if field not in cols:
            raise WorkloadError(rows.path, rows.line_of(0), field, "missing required field")
        missing = _nulls(cols[field])
        if missing:
            errors.append((missing[0], _FIELD_ORDER[field], field,
                           f"missing required field ({rows.missing_word})"))
    _first_error(errors, rows)


def _fill_row_defaults(cols: dict, n: int) -> None:
    """Per-row defaults (the original adds these only as whole columns; filling per row is a
    superset)."""
    call_count = cols.get("call_count")
    if call_count is not None and None in call_count:
        cols["call_count"] = [1 if v is None else v for v in call_count]
    for field, default in (("function", "matmul"), ("scaleA", 0), ("scaleB", 0)):
        # scaleA/scaleB default to 0 (= no scaling), hipBLASLt's own default. The original tool is
        # inconsistent here: its log parser adds missing scale columns as 1, its bench writer as 0.
        if field not in cols:
            cols[field] = [default] * n
        elif None in cols[field]:
            cols[field] = [default if v is None else v for v in cols[field]]


def _converted_columns(cols: dict, rows: _Rows) -> dict:
    """Every column validated and converted (each raw one let go of once converted, memory);
    the error reported is the one on the earliest line. ``scale_type`` stays in ``cols``."""
    errors = []
    out: dict[str, object] = {}
    for field in [f for f in cols if f not in ("call_count", "scale_type")]:
        values = cols.pop(field)
        if field not in gemm.GEMM_LOG_FIELDS and field not in ("function", "scaleA", "scaleB"):
            missing = _nulls(values)
            if missing:
                log.warning("%s:%s: %s: column has null values; dropped", rows.path,
                            rows.line_of(missing[0]), field)
                continue
        try:
            out[field] = _converter(field)(values)
        except _Bad as bad:
            errors.append((bad.index, _FIELD_ORDER[field], field, bad.message))
    if "call_count" in cols:
        try:
            out["call_count"] = _converter("call_count")(cols["call_count"])
        except _Bad as bad:
            errors.append((bad.index, _FIELD_ORDER["call_count"], "call_count", bad.message))
    _first_error(errors, rows)
    return out


def _refuse_what_cannot_run(out: dict, rows: _Rows, support: GemmSupport | Unchecked,
                            arch: str | None) -> None:
    """Types the platform's library or ``arch`` cannot run, MX scaling, leading dimensions
    shorter than the matrix, sizes beyond what the platform can index or hold."""
    path, line_of = rows.path, rows.line_of
    if support is not UNCHECKED:
        _refuse_unsupported_types(out, path, line_of, support, arch)
    _refuse_mx(out, path, line_of)
    short = gemm.short_leading_dimension(out)
    if short:
        row, field, message = short
        raise WorkloadError(path, line_of(row), field, message)
    impossible = None if support is UNCHECKED else \
        support.oversized(out, {f: out[f] for f in _DTYPE_FIELDS[:4]})
    if impossible:
        row, field, message = impossible
        raise WorkloadError(path, line_of(row), field, message)


def _scale_types(given, compute_types, n: int):
    """The scale types given, else the compute type's without c_ and x (c_xf32_r -> f32_r)."""
    if given is None or None in given:
        given = given or [None] * n
        defaults: dict[str, str] = {}
        given = [g if g is not None else defaults.setdefault(c, gemm.scale_type_for(c))
                 for g, c in zip(given, compute_types)]
    return _str_column(given)


def _call_counts(calls, rows: _Rows, n: int) -> np.ndarray:
    """Each row's calls (1 where none is given) times its repeats (identical lines folded)."""
    if calls is None:
        calls = np.ones(n, dtype=np.int64)
    if rows.repeats is not None:
        repeats = np.asarray(rows.repeats, dtype=np.int64)
        _refuse_count_overflow(calls > _INT64_MAX // repeats, calls, repeats, rows.path,
                               rows.line_of)
        calls = calls * repeats
    return calls


def _frame(out: dict) -> pd.DataFrame:
    """The converted columns as one table in the log's field order (``out`` emptied)."""
    data = {}
    for field in gemm.LOG_FIELDS:
        if field not in out:
            continue
        values = out.pop(field)
        data[field] = values if isinstance(values, np.ndarray) else \
            pd.Series(list(values), dtype="str")
    return pd.DataFrame(data, copy=False)  # the columns as built, not copied into blocks


_KNOWN_BY_LOWER = {f.lower(): f for f in gemm.LOG_FIELDS}


def _warn_unknown_fields(unknown: list[str], rows: _Rows) -> None:
    """One warning per key outside the whitelist, on the first line it appears: the row is kept
    (as the original does), but a misspelt ``call_cout: 500`` would count as 1 call unnoticed."""
    first: dict[str, int] = {}
    pending = set(unknown)
    previous = None
    for i, keys in enumerate(rows.keys):
        if keys is previous:  # rows of one key sequence share its tuple
            continue
        previous = keys
        for key in pending.intersection(keys):
            first[key] = i
        pending.difference_update(first)
        if not pending:
            break
    for key in sorted(first, key=first.__getitem__):
        close = difflib.get_close_matches(key.lower(), _KNOWN_BY_LOWER, n=1)
        hint = f" (did you mean {_KNOWN_BY_LOWER[close[0]]!r}?)" if close else ""
        log.warning("%s:%s: %s: unknown field, ignored%s", rows.path, rows.line_of(first[key]),
                    key, hint)


def _refuse_unsupported_types(out: dict, path, line_of, support: GemmSupport,
                              arch: str | None = None) -> None:
    """The first row whose (a, b, c, d, compute) types the platform's library cannot run, or
    the campaign's arch cannot (no arch: no such limit), is refused, naming its line and the
    offending field."""
    seen = set()
    for i, combo in enumerate(zip(*(out[f] for f in _DTYPE_FIELDS))):
        if combo in seen:
            continue
        seen.add(combo)
        problem = support.unsupported(combo, arch)
        if problem:
            raise WorkloadError(path, line_of(i), *problem)


def _refuse_mx(out: dict, path, line_of) -> None:
    """The first row of a block-scaled (MX) GEMM, scaleA or scaleB >= 3, is refused naming its
    line and field (geko_lib.newer_revisions says why)."""
    found = []
    for field in ("scaleA", "scaleB"):
        rows = np.flatnonzero(np.asarray(out[field]) >= newer_revisions.MX_MIN_SCALE)
        if len(rows):
            i = int(rows[0])
            found.append((i, field, newer_revisions.mx_scale_message(out[field][i])))
    if found:
        i, field, message = min(found)
        raise WorkloadError(path, line_of(i), field, message)


_INT64_MAX = np.iinfo(np.int64).max


def _refuse_count_overflow(over: np.ndarray, calls, repeats, path, line_of) -> None:
    """A GEMM whose calls (a row's call_count times its repeats, or the sum over equal rows) do
    not fit a 64-bit count is refused on its first line: numpy would wrap it to a negative
    count silently, and every share of GEMM time would be wrong."""
    bad = np.flatnonzero(over)
    if bad.size:
        i = int(bad[0])
        raise WorkloadError(path, line_of(i), "call_count",
                            f"this GEMM's calls add up to {int(calls[i]) * int(repeats[i])} "
                            f"(over its rows), more than a 64-bit count holds ({_INT64_MAX})")


def _duplicated(df: pd.DataFrame, keys: list[str]) -> pd.Series:
    """``df.duplicated(subset=keys)``, decided exactly among the rows whose hash of ``keys``
    is shared: pandas' own, over every row of a 1M-row table, held codes for every column at
    once (0.3 GB); the hashes are 8 bytes a row."""
    hashed = np.zeros(len(df), dtype=np.uint64)
    for key in keys:  # a column at a time
        values = df[key].to_numpy()
        if values.dtype.kind == "f":  # equal as pandas compares them: -0.0 and 0.0, any NaN
            values = np.where(np.isnan(values), np.nan, values) + 0.0
        with np.errstate(over="ignore"):
            hashed = (hashed ^ pd.util.hash_array(values)) * np.uint64(0x100000001B3)
    shared = pd.Series(hashed).duplicated(keep=False).to_numpy()
    dup = np.zeros(len(df), dtype=bool)
    if shared.any():  # equal rows hash alike: every group of them is among these, in order
        dup[shared] = df.loc[shared].duplicated(subset=keys).to_numpy()
    return pd.Series(dup, index=df.index)


def _aggregate(df: pd.DataFrame, path, line_of) -> pd.DataFrame:
    """Sum call_count over rows equal in every other column; first-appearance order."""
    keys = [c for c in df.columns if c != "call_count"]
    if len(df) > 1 and keys:
        dup = _duplicated(df, keys)
        if dup.any():
            group = df.groupby(keys, sort=False, dropna=False).ngroup().to_numpy()
            calls = df["call_count"].to_numpy(dtype=np.int64)
            if int(calls.max()) * len(calls) > _INT64_MAX:  # a sum may overflow: add exactly
                exact = np.zeros(int(group.max()) + 1, dtype=object)
                np.add.at(exact, group, calls.astype(object))
                first = np.unique(group, return_index=True)[1]  # each group's first row
                _refuse_count_overflow(exact > _INT64_MAX, exact, np.ones(len(exact), dtype=object),
                                       path, lambda g: line_of(int(first[g])))
            sums = np.zeros(int(group.max()) + 1, dtype=np.int64)
            np.add.at(sums, group, calls)
            log.debug("%s: %d duplicate rows aggregated (call_count summed)", path, int(dup.sum()))
            df = df.loc[~dup.to_numpy()].copy()
            df["call_count"] = sums
    return df.reset_index(drop=True)
