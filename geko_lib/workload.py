"""Workload readers: every workload source -> one canonical pandas table.

Sources
-------
* hipBLASLt ``HIPBLASLT_LOG_MASK=64`` logs: a YAML list of flow mappings, one GEMM call signature
  per line (``- {function: matmul, M: 16032, ..., call_count: 1}``); blank and ``#`` lines allowed.
* hipBLASLt ``HIPBLASLT_LOG_MASK=32`` logs: ``hipblaslt-bench ...`` command lines, one per call.
* CSV files (``.csv`` suffix) with the same fields (lowercase ``m, n, k`` accepted), or PyTorch
  TunableOp's ``tunableop_untuned<device>.csv`` / results files (:mod:`geko_lib.tunableop`).
* the generator ``--list`` YAML (:func:`read_list`) and the ``--inline`` spec (:func:`read_inline`).

The canonical table has the columns of :data:`geko_lib.gemm.LOG_FIELDS` that the source provides
(in that order), never a null, one row per distinct call signature with ``call_count`` summed over
duplicates. Every rejection raises :class:`WorkloadError` naming file, line and field. This module
never writes anything except in :func:`write`.

Fast path
---------
Real mask-64 logs have millions of lines and few distinct rows. :func:`read` therefore counts
identical raw lines first (``collections.Counter`` over the binary file, C speed), then parses each
*distinct* line once with a hand-written flow-mapping parser and multiplies its ``call_count`` by the
line's repeat count. The parser splits the body of ``- {...}`` on ``", "`` into ``"key: value"``
parts and converts each distinct part once, through a cache: ``"M: 16384" -> ("M", 16384)``,
``"alpha: 1.000000" -> 1.0``, ``"flush: false" -> False`` (YAML 1.1 / ``safe_load`` rules for plain
scalars; forms it does not know, like ``1.0e+5`` or ``0x10``, are resolved by PyYAML and cached).
A line whose parts were all seen before costs one ``split`` and two ``map`` calls. The mangled
``: , : ,`` pairs get the original tool's cleanup; lines the parser cannot read (quotes, nested
collections, a comment after the row...) go to PyYAML one line at a time. The cyclic garbage
collector is paused while parsing (it would rescan the row lists over and over).
Rows are then built column-wise from the distinct rows only.

``fast=False`` parses the whole file with PyYAML (retrying after the cleanup on a parse error, as the
original): the reference the fast path is tested against. One documented difference: the original
cleans the *whole* file once any line fails, the fast path cleans only lines that fail; they differ
only for a file that mixes mangled lines with valid ``key: ,`` (null) values.

Line numbers of the fast path are found lazily: a second scan of the file maps each distinct raw line
to its first line number, only when an error or warning needs one. The fast path expects one row per
line (as hipBLASLt writes them): a ``- {`` line without its ``}`` is rejected as truncated; a file
in another YAML layout (block style) is read by PyYAML as a whole.
"""

from __future__ import annotations

import csv
import gc
import json
import logging
import math
import os
import re
from collections import Counter
from itertools import chain
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd
import yaml

from . import files, gemm, grid_sizes, type_support
from .errors import GekoError

log = logging.getLogger(__name__)

__all__ = [
    "WorkloadError", "read", "read_bench_commands", "read_list", "read_inline", "write", "problems",
    "cleanup_mangled_pairs",
]

class _DuplicateKey(Exception):
    """A mapping names ``key`` twice (``line`` is 1-based within the parsed text)."""

    def __init__(self, key: str, line: int):
        super().__init__(key)
        self.key, self.line = key, line


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """PyYAML's safe loader, refusing a mapping that repeats a key: YAML silently keeps the last
    value, so a row naming M twice would be tuned for one of the two sizes unnoticed."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                if key_node.value in seen:
                    raise _DuplicateKey(key_node.value, key_node.start_mark.line + 1)
                seen.add(key_node.value)
        return super().construct_mapping(node, deep)


def _duplicate_key_error(path, line: int | None, dup: _DuplicateKey) -> "WorkloadError":
    return WorkloadError(path, line, dup.key, f"key {dup.key!r} appears twice in one row; "
                                              "which value is meant?")

INLINE_PATH = "--inline"
INLINE_TOKENS = ("M", "N", "batch", "K", "DataType", "DestDataType", "ComputeDataType",
                 "transA", "transB")


# --------------------------------------------------------------------------------------------
# errors


class WorkloadError(GekoError, ValueError):
    """A rejected workload: ``"<path>:<line>: <field>: <what is wrong>"``.

    ``line`` is 1-based, or None for whole-file problems (then the message reads
    ``"<path>: <field>: <what is wrong>"``).
    """

    def __init__(self, path, line: int | None, field: str, message: str):
        self.path = str(path)
        self.line = line
        self.field = field
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.field}: {self.message}"

    def __reduce__(self):
        return (type(self), (self.path, self.line, self.field, self.message))


class _Bad(Exception):
    """Internal: row ``index`` of a column is invalid."""

    def __init__(self, index: int, message: str):
        super().__init__(message)
        self.index = index
        self.message = message


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
_FIELD_ORDER = {f: i for i, f in enumerate(gemm.LOG_FIELDS)}


# --------------------------------------------------------------------------------------------
# scalars: the YAML 1.1 (PyYAML safe_load) reading of the plain scalars found in these logs

_FALLBACK = object()  # "the fast parser cannot read this"
_INT_RE = re.compile(r"-?(?:0|[1-9][0-9]*)\Z")
_FLOAT_RE = re.compile(r"-?[0-9]+\.[0-9]*\Z")
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_WORDS = {
    **{w: True for w in ("yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON")},
    **{w: False for w in ("no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF")},
    **{w: None for w in ("null", "Null", "NULL", "~")},
}
# characters that make a plain flow scalar unusual (structure, quotes, anchors, tags, comments)
_UNUSUAL_CHARS = frozenset(",:{}[]\"'#&*!|>%@`\t\r\n\\")


def _scalar(token: str):
    """Value of a plain flow scalar as PyYAML's safe loader would read it, or ``_FALLBACK``."""
    t = token.strip(" ")
    if _INT_RE.match(t):
        return int(t)
    if _FLOAT_RE.match(t):
        return float(t)
    word = _WORDS.get(t, _FALLBACK)
    if word is not _FALLBACK:
        return word
    if _IDENT_RE.match(t):
        return t
    # rare forms (1.0e+5, 0x10, 1_000, .inf, a-b.c ...): let YAML's resolver decide
    if not t or not _UNUSUAL_CHARS.isdisjoint(t) or t[0] in "-?" and (len(t) == 1 or t[1] == " "):
        return _FALLBACK
    try:
        value = yaml.load("{k: " + t + "}", Loader=_Loader)
    except yaml.YAMLError:
        return _FALLBACK
    if not isinstance(value, dict) or list(value) != ["k"]:
        return _FALLBACK
    return value["k"]


def _key(token: str):
    t = token.strip(" ")
    if _IDENT_RE.match(t) and t not in _WORDS:
        return t
    return _FALLBACK


def cleanup_mangled_pairs(text: str) -> str:
    """The original tool's repair of the ``: , : ,`` empty pairs some hipBLASLt builds log.

    Removes ``": ,"`` then collapses ``",  ,"`` and ``", ,"`` to ``","``; the original applies it
    after a YAML parse error.
    """
    return text.replace(": ,", "").replace(",  ,", ",").replace(", ,", ",")


# --------------------------------------------------------------------------------------------
# the fast flow-mapping line parser

_NOT_FLOW = "not-flow"  # not a "- {...}" line
_TRUNCATED = "truncated"  # "- {" that never closes
_LINE_YAML = "line-yaml"  # a flow row the fast parser cannot read: ask PyYAML


class _FlowParser:
    """Parses ``- {k: v, ...}`` lines into (keys, values).

    The line body is split on ``", "`` into ``"key: value"`` parts; each distinct part is checked
    and converted once (exactly one ``": "``, an identifier key, a plain scalar value without
    ``,``/``:``) and cached, so a line whose parts were all seen before costs one ``split`` and two
    ``map`` calls. A part that fails the check sends the line to PyYAML.
    """

    def __init__(self):
        self.values: dict[str, object] = {}  # part -> converted value
        self.keys: dict[str, str] = {}  # part -> key
        self.bad: set[str] = set()  # parts the fast parser cannot read
        self.key_tuples: dict[tuple, tuple] = {}  # one shared tuple object per key sequence

    def parse(self, s: str):
        """``s`` is a stripped line. Returns (keys, values) or one of the status strings."""
        if s[:3] == "- {" and s[-1] == "}":  # the usual layout
            inner = s[3:-1]
        else:
            if s[:1] != "-":
                return _NOT_FLOW
            body = s[1:].lstrip()
            if body[:1] != "{":
                return _NOT_FLOW
            if body[-1:] != "}":
                return _TRUNCATED if "}" not in body else _LINE_YAML
            inner = body[1:-1]
        parts = inner.split(", ")
        try:
            values = list(map(self.values.__getitem__, parts))
        except KeyError:
            if not self._learn(parts):
                return _LINE_YAML
            values = list(map(self.values.__getitem__, parts))
        keys = tuple(map(self.keys.__getitem__, parts))
        shared = self.key_tuples.get(keys)
        if shared is None:
            if len(set(keys)) != len(keys):
                return _LINE_YAML  # a repeated key: refused there, naming it
            shared = self.key_tuples[keys] = keys
        return shared, values

    def _learn(self, parts) -> bool:
        """Check and convert the parts not seen before; False if one needs PyYAML."""
        new = set(parts).difference(self.values)
        if not new.isdisjoint(self.bad):
            return False
        ok = True
        for part in new:
            key, sep, token = part.partition(": ")
            key = _key(key) if sep else _FALLBACK
            value = _scalar(token) if key is not _FALLBACK else _FALLBACK
            if value is _FALLBACK:
                self.bad.add(part)
                ok = False
            else:
                self.values[part] = value
                self.keys[part] = key
        return ok


def _yaml_error_line(exc: yaml.YAMLError) -> int | None:
    mark = getattr(exc, "problem_mark", None)
    context = getattr(exc, "context", None) or ""
    if "flow" in context and getattr(exc, "context_mark", None) is not None:
        mark = exc.context_mark  # an unclosed flow collection: report where it starts
    if mark is None:
        mark = getattr(exc, "context_mark", None)
    return None if mark is None else mark.line + 1


def _yaml_problem(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context = getattr(exc, "context", None)
    return f"{context}: {problem}" if context else problem


def _parse_line_yaml(s: str, path, line: int):
    """One ``- {...}`` line through PyYAML (raw, then after the mangled-pairs cleanup)."""
    try:
        data = yaml.load(s, Loader=_Loader)
    except _DuplicateKey as dup:
        raise _duplicate_key_error(path, line, dup) from None
    except yaml.YAMLError as exc:
        cleaned = cleanup_mangled_pairs(s)
        try:
            if cleaned == s:
                raise
            data = yaml.load(cleaned, Loader=_Loader)
        except _DuplicateKey as dup:
            raise _duplicate_key_error(path, line, dup) from None
        except yaml.YAMLError:
            raise WorkloadError(path, line, "syntax", f"cannot parse row: {_yaml_problem(exc)}") from None
    if not (isinstance(data, list) and len(data) == 1 and isinstance(data[0], dict)):
        raise WorkloadError(path, line, "syntax",
                            "expected exactly one mapping '- {key: value, ...}' per line")
    row = data[0]
    return tuple(row), list(row.values())


# --------------------------------------------------------------------------------------------
# file access


def _missing_file(path) -> WorkloadError | None:
    p = Path(path)
    if not p.exists():
        return WorkloadError(path, None, "file", "no such file")
    if not p.is_file():
        return WorkloadError(path, None, "file", "not a regular file")
    return None


class _FirstLines:
    """Lazily maps each distinct raw line (bytes, with its newline) to its first line number."""

    def __init__(self, path):
        self.path = path
        self._index: dict[bytes, int] | None = None

    def __getitem__(self, raw: bytes) -> int | None:
        if self._index is None:
            index: dict[bytes, int] = {}
            with open(self.path, "rb") as f:
                for number, line in enumerate(f, 1):
                    index.setdefault(line, number)
            self._index = index
        return self._index.get(raw)


def _count_lines(path) -> Counter:
    try:
        with open(path, "rb") as f:
            return Counter(f)
    except OSError as exc:
        raise WorkloadError(path, None, "file", f"cannot read: {exc.strerror or exc}") from None


def _decode(raw: bytes, path, line_of: Callable[[], int | None]) -> str:
    if b"\0" in raw:
        raise WorkloadError(path, line_of(), "encoding", "binary data (NUL byte); not a text workload log")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WorkloadError(path, line_of(), "encoding",
                            f"not UTF-8 text (byte 0x{raw[exc.start]:02x}); binary file?") from None


def _read_text(path) -> str:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise WorkloadError(path, None, "file", f"cannot read: {exc.strerror or exc}") from None
    nul = data.find(b"\0")
    try:
        text = data.decode("utf-8")
        bad = None
    except UnicodeDecodeError as exc:
        bad = exc.start
    if bad is not None and (nul < 0 or bad < nul):
        raise WorkloadError(path, data.count(b"\n", 0, bad) + 1, "encoding",
                            f"not UTF-8 text (byte 0x{data[bad]:02x}); binary file?")
    if nul >= 0:
        raise WorkloadError(path, data.count(b"\n", 0, nul) + 1, "encoding",
                            "binary data (NUL byte); not a text workload log")
    return text[1:] if text.startswith("\ufeff") else text


def _meaningful(s: str) -> bool:
    return bool(s) and s[0] != "#"


_TRACE_RE = re.compile(r"\[[^\]]*\]\s*\[(?:HIPBLASLT|hipblaslt|rocblaslt|ROCBLASLT)\]")


def _check_not_trace(s: str, path, line):
    """Reject a HIPBLASLT_LOG_LEVEL trace line; ``line``: its number or a callable giving it."""
    if s.startswith("[") and (_TRACE_RE.match(s) or "[Trace]" in s or "[Info]" in s):
        raise WorkloadError(
            path, line() if callable(line) else line, "format",
            "this is a HIPBLASLT_LOG_LEVEL trace log, not a workload; capture the workload with "
            "HIPBLASLT_LOG_MASK=64 (YAML rows) or HIPBLASLT_LOG_MASK=32 (hipblaslt-bench lines)")


def _is_bench_line(s: str) -> bool:
    first = s.split(None, 1)[0] if s else ""
    return first == "hipblaslt-bench" or first.endswith("/hipblaslt-bench")


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
            flat = list(chain.from_iterable(self.values))  # faster than zip(*values)
            width = len(keys)
            return {k: flat[j::width] for j, k in enumerate(keys)}
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


def _normalize(rows: _Rows, platform: str | None = None) -> pd.DataFrame:
    path, line_of = rows.path, rows.line_of
    n = len(rows)
    if n == 0:
        raise WorkloadError(path, None, "rows", "empty workload: no GEMM rows found")
    cols = rows.columns()
    # lowercase m/n/k (hipblaslt-bench output, CSV) -> M/N/K
    for low, up in (("m", "M"), ("n", "N"), ("k", "K")):
        if low in cols and up not in cols:
            cols[up] = cols.pop(low)
    cols = {k: v for k, v in cols.items() if k in _LOG_FIELD_SET}  # other columns: dropped silently

    errors: list[tuple[int, int, str, str]] = []  # (row, field order, field, message)

    for field in gemm.GEMM_LOG_FIELDS:
        if field not in cols:
            raise WorkloadError(path, line_of(0), field, "missing required field")
        missing = _nulls(cols[field])
        if missing:
            errors.append((missing[0], _FIELD_ORDER[field], field, "missing required field (null)"))
    if errors:
        row, _, field, message = min(errors)
        raise WorkloadError(path, line_of(row), field, message)

    # per-row defaults (the original adds these only as whole columns; filling per row is a superset)
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

    # validate and convert; the error reported is the one on the earliest line
    out: dict[str, object] = {}
    for field, values in cols.items():
        if field == "call_count" or field == "scale_type":
            continue
        if field not in gemm.GEMM_LOG_FIELDS and field not in ("function", "scaleA", "scaleB"):
            missing = _nulls(values)
            if missing:
                log.warning("%s:%s: %s: column has null values; dropped", path, line_of(missing[0]), field)
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
    if errors:
        row, _, field, message = min(errors)
        raise WorkloadError(path, line_of(row), field, message)
    _refuse_unsupported_types(out, path, line_of, platform)

    given = cols.get("scale_type")
    if given is None or None in given:  # default: the compute type without c_ and x (c_xf32_r -> f32_r)
        given = given or [None] * n
        defaults: dict[str, str] = {}
        given = [g if g is not None else defaults.setdefault(c, gemm.scale_type_for(c))
                 for g, c in zip(given, out["compute_type"])]
    out["scale_type"] = _str_column(given)
    calls = out.get("call_count")
    if calls is None:
        calls = np.ones(n, dtype=np.int64)
    if rows.repeats is not None:
        calls = calls * np.asarray(rows.repeats, dtype=np.int64)
    out["call_count"] = calls

    data = {}
    for field in gemm.LOG_FIELDS:
        if field not in out:
            continue
        values = out[field]
        if isinstance(values, np.ndarray):
            data[field] = values
        else:
            data[field] = pd.Series(list(values), dtype="str")
    df = pd.DataFrame(data)
    return _aggregate(df, path)


def _refuse_unsupported_types(out: dict, path, line_of, platform: str | None) -> None:
    """The first row whose (a, b, c, d, compute) types the platform's library cannot run (any
    library, when no platform is given) is refused, naming its line and the offending field."""
    seen = set()
    for i, combo in enumerate(zip(*(out[f] for f in _DTYPE_FIELDS))):
        if combo in seen:
            continue
        seen.add(combo)
        problem = type_support.unsupported(combo, platform)
        if problem:
            raise WorkloadError(path, line_of(i), *problem)


def _aggregate(df: pd.DataFrame, path) -> pd.DataFrame:
    """Sum call_count over rows equal in every other column; first-appearance order."""
    keys = [c for c in df.columns if c != "call_count"]
    if len(df) > 1 and keys:
        dup = df.duplicated(subset=keys)
        if dup.any():
            group = df.groupby(keys, sort=False, dropna=False).ngroup().to_numpy()
            sums = np.zeros(int(group.max()) + 1, dtype=np.int64)
            np.add.at(sums, group, df["call_count"].to_numpy(dtype=np.int64))
            log.debug("%s: %d duplicate rows aggregated (call_count summed)", path, int(dup.sum()))
            df = df.loc[~dup.to_numpy()].copy()
            df["call_count"] = sums
    return df.reset_index(drop=True)


# --------------------------------------------------------------------------------------------
# mask-64 YAML logs


def _read_yaml_fast(path, counts: Counter) -> _Rows | None:
    """Distinct lines through the flow parser; None where the file is not one-row-per-line YAML."""
    first = _FirstLines(path)
    raws: list[bytes] = []  # the raw line of each row, for its line number
    rows = _Rows(path, lambda i: first[raws[i]])
    rows.repeats = []  # call_count is multiplied by these after validation, in _normalize
    parse = _FlowParser().parse
    add_keys, add_values, add_repeat, add_raw = rows.keys.append, rows.values.append, \
        rows.repeats.append, raws.append
    first_raw = next(iter(counts), b"")
    started = False  # a row was seen (a '---' document start is allowed only before)
    for raw, repeat in counts.items():
        try:
            s = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            _decode(raw, path, lambda: first[raw])  # raises with the line number
        if "\0" in s:
            _decode(raw, path, lambda: first[raw])  # raises (NUL byte)
        if raw is first_raw and s[:1] == "\ufeff":  # byte-order mark
            s = s[1:].strip()
        if not s or s[0] == "#":
            continue
        if s == "---" and not started and repeat == 1:
            continue
        started = True
        result = parse(s)
        if result.__class__ is not tuple:
            if result == _NOT_FLOW:
                _check_not_trace(s, path, lambda: first[raw])
                return None  # block-style YAML or another layout: PyYAML reads the whole file
            if result == _TRUNCATED:
                raise WorkloadError(path, first[raw], "syntax",
                                    "truncated row: '{' is never closed (was the log cut off?)")
            # mangled ': , : ,' pairs: the original's cleanup, then the fast parser again;
            # anything else unusual: PyYAML for this line (raw, then cleaned)
            cleaned = cleanup_mangled_pairs(s)
            result = parse(cleaned) if cleaned != s else _LINE_YAML
            if result.__class__ is not tuple:
                result = _parse_line_yaml(s, path, first[raw])
        add_keys(result[0])
        add_values(result[1])
        add_repeat(repeat)
        add_raw(raw)
    return rows


def _read_yaml_reference(path, text: str) -> _Rows:
    """The whole file through PyYAML (retrying after the mangled-pairs cleanup, as the original)."""
    def load(source: str):
        loader = _Loader(source)
        try:
            node = loader.get_single_node()
            data = None if node is None else loader.construct_document(node)
        finally:
            loader.dispose()
        return node, data

    try:
        node, data = load(text)
    except _DuplicateKey as dup:
        raise _duplicate_key_error(path, dup.line, dup) from None
    except yaml.YAMLError as exc:
        try:
            node, data = load(cleanup_mangled_pairs(text))
        except _DuplicateKey as dup:
            raise _duplicate_key_error(path, dup.line, dup) from None
        except yaml.YAMLError:
            line = _yaml_error_line(exc)
            if line is not None:
                lines = text.split("\n")
                if line <= len(lines):
                    _check_not_trace(lines[line - 1].strip(), path, line)
            raise WorkloadError(path, line, "syntax", f"cannot parse YAML: {_yaml_problem(exc)}") from None
    if data is None or data == []:
        raise WorkloadError(path, None, "rows", "empty workload: no GEMM rows found")
    if not isinstance(data, list):
        raise WorkloadError(
            path, node.start_mark.line + 1, "format",
            "not a workload: expected a HIPBLASLT_LOG_MASK=64 log (a YAML list of mappings, "
            "'- {function: matmul, M: ..., ...}' one per line), hipblaslt-bench command lines "
            "(HIPBLASLT_LOG_MASK=32) or a .csv file")
    item_lines = [item.start_mark.line + 1 for item in node.value]
    rows = _Rows(path, lambda i: item_lines[i])
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise WorkloadError(path, item_lines[i], "format",
                                f"each row must be a mapping of fields, got {type(item).__name__}")
        rows.add(tuple(item), list(item.values()))
    return rows


# --------------------------------------------------------------------------------------------
# mask-32 hipblaslt-bench command lines

_BENCH_SHORT = {"m": "M", "n": "N", "k": "K"}
_PRECISION_FLAGS = ("precision", "r")  # hipblaslt-bench's one-type shorthand for a/b/c/d types
_PRECISION_TYPES = ("a_type", "b_type", "c_type", "d_type")


def _is_flag(token: str) -> bool:
    return len(token) > 1 and token[0] == "-" and not (token[1].isdigit() or token[1] == ".")


def _parse_bench_line(s: str, path, line_of: Callable[[], int | None]) -> dict:
    tokens = s.split()
    if not tokens or not _is_bench_line(s):
        _check_not_trace(s, path, line_of)
        raise WorkloadError(path, line_of(), "format",
                            "expected a 'hipblaslt-bench ...' command line (HIPBLASLT_LOG_MASK=32 log)")
    row: dict = {}
    precision = None
    i, n = 1, len(tokens)
    while i < n:
        token = tokens[i]
        if not _is_flag(token):
            i += 1  # stray value (of a flag we do not know): ignored
            continue
        name = token.lstrip("-")
        value: object = True  # a flag without a value (--any_stride) is a boolean switch
        if "=" in name:
            name, _, text = name.partition("=")
            value = _bench_value(text)
            i += 1
        elif i + 1 < n and not _is_flag(tokens[i + 1]):
            value = _bench_value(tokens[i + 1])
            i += 2
        else:
            i += 1
        field = _BENCH_SHORT.get(name, name) if token[1] != "-" else name
        if field in _LOG_FIELD_SET:
            row[field] = value
        elif field in _PRECISION_FLAGS:
            precision = value
        # unknown flags (--api_method, --algo_method, --lde, --stride_e, ...) are ignored
    if precision is not None:  # --precision / -r X: every type X unless named one by one
        for field in _PRECISION_TYPES:
            row.setdefault(field, precision)
    return row


def _bench_value(text: str):
    value = _scalar(text)
    return text if value is _FALLBACK else value


def _bench_rows(path, counts: Counter) -> _Rows:
    first = _FirstLines(path)
    raws: list[bytes] = []
    rows = _Rows(path, lambda i: first[raws[i]])
    rows.repeats = []
    for raw, repeat in counts.items():
        s = _decode(raw, path, lambda: first[raw]).lstrip("\ufeff").strip()
        if not _meaningful(s):
            continue
        row = _parse_bench_line(s, path, lambda: first[raw])
        row.pop("call_count", None)
        rows.add(tuple(row), list(row.values()), repeat)
        raws.append(raw)
    return rows


def read_bench_commands(path, *, platform: str | None = None) -> pd.DataFrame:
    """A HIPBLASLT_LOG_MASK=32 log: one ``hipblaslt-bench ...`` command line per GEMM call.

    Flags named like a log field (``-m/-n/-k`` -> ``M/N/K``, ``--lda``, ``--transA``, ``--a_type``,
    ``--compute_type``, ``--scaleA``, ``--alpha``, ``--rotating``, ...) become columns, a flag
    without a value is ``true``, other flags are ignored; identical lines are counted into
    ``call_count``.
    """
    problem = _missing_file(path)
    if problem:
        raise problem
    return _normalize(_bench_rows(path, _count_lines(path)), platform)


# --------------------------------------------------------------------------------------------
# CSV


def _csv_record_lines(path) -> tuple[int, list[str], list[int]] | None:
    """(header line, header names, first line of each data record) as pandas reads the file:
    blank lines skipped, a quoted field may span lines. None where the text cannot be read."""
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle)
            records, end = [], 0
            for record in reader:
                start, end = end + 1, reader.line_num
                if any(field.strip() for field in record):
                    records.append((start, record))
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    if not records:
        return None
    (header_line, header), data = records[0], records[1:]
    return header_line, [name.strip() for name in header], [line for line, _ in data]


def _refuse_duplicate_columns(path, layout) -> None:
    if layout is None:
        return
    header_line, names, _ = layout
    seen = set()
    for name in names:
        if name in seen:
            raise WorkloadError(path, header_line, name, f"column {name!r} appears twice in the "
                                                        "header; which one is meant?")
        seen.add(name)


def _read_csv(path, platform: str | None = None) -> pd.DataFrame:
    layout = _csv_record_lines(path)
    _refuse_duplicate_columns(path, layout)
    try:
        frame = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise WorkloadError(path, None, "rows", "empty workload: no GEMM rows found") from None
    except UnicodeDecodeError:
        raise WorkloadError(path, None, "encoding", "not UTF-8 text; binary file?") from None
    except pd.errors.ParserError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise WorkloadError(path, int(m.group(1)) if m else None, "syntax",
                            f"cannot parse CSV: {str(exc).strip()}") from None
    except OSError as exc:
        raise WorkloadError(path, None, "file", f"cannot read: {exc.strerror or exc}") from None
    # pandas skips blank lines, so row i is the i-th non-blank record after the header
    lines = layout[2] if layout is not None and len(layout[2]) == len(frame) else None
    rows = _Rows(path, (lambda i: lines[i]) if lines else (lambda i: i + 2))
    cols = {}
    for name in frame.columns:
        series = frame[name]
        values = series.astype(object).where(series.notna(), None).tolist()
        cols[str(name).strip()] = values
    keys = tuple(cols)
    for values in zip(*cols.values()):
        rows.add(keys, list(values))
    if not keys:
        raise WorkloadError(path, None, "rows", "empty workload: no GEMM rows found")
    return _normalize(rows, platform)


# --------------------------------------------------------------------------------------------
# public readers


def _read_fast(path, platform: str | None = None) -> pd.DataFrame | None:
    """The fast path of :func:`read`; None where PyYAML must read the whole file."""
    counts = _count_lines(path)
    first = _FirstLines(path)
    for raw in counts:  # the first meaningful line decides the format
        s = _decode(raw, path, lambda: first[raw]).lstrip("\ufeff").strip()
        if _meaningful(s):
            if _is_bench_line(s):
                return _normalize(_bench_rows(path, counts), platform)
            _check_not_trace(s, path, lambda: first[raw])
            break
    else:
        raise WorkloadError(path, None, "rows", "empty workload: no GEMM rows found")
    rows = _read_yaml_fast(path, counts)
    del counts
    return None if rows is None else _normalize(rows, platform)


def read(source, *, fast: bool = True, platform: str | None = None) -> pd.DataFrame:
    """Read a workload file into the canonical table (see the module docstring).

    ``.csv`` -> CSV; a file whose first non-blank, non-comment line starts with ``hipblaslt-bench``
    -> mask-32 command lines; anything else -> a mask-64 YAML log. ``fast=False`` parses YAML logs
    with PyYAML as a whole (the reference); the result is the same table. Data-type combinations
    ``platform``'s library does not support (any library's, without one) are refused
    (:mod:`geko_lib.type_support`).
    """
    path = source
    problem = _missing_file(path)
    if problem:
        raise problem
    if Path(path).suffix.lower() == ".csv":
        from . import tunableop  # PyTorch TunableOp's untuned/results files (no header row)

        if tunableop.is_tunableop_file(path):
            return _normalize(tunableop.workload_rows(path, _Rows), platform)
        return _read_csv(path, platform)
    if fast:
        # The fast path builds hundreds of thousands of small lists and no reference cycles; the
        # cyclic garbage collector would repeatedly rescan them all (about a third of the time).
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            table = _read_fast(path, platform)
        finally:
            if gc_was_enabled:
                gc.enable()
        if table is not None:
            return table
    text = _read_text(path)
    for number, line in enumerate(text.split("\n"), 1):
        s = line.strip()
        if _meaningful(s):
            if _is_bench_line(s):
                return _normalize(_bench_rows(path, _count_lines(path)), platform)
            _check_not_trace(s, path, number)
            break
    return _normalize(_read_yaml_reference(path, text), platform)


# ---- generator --list YAML ------------------------------------------------------------------

def _list_int(value, path, line, key, minimum=1, maximum=None) -> int:
    if type(value) is not int or value < minimum or (maximum is not None and value > maximum):
        rng = f"an integer in {minimum}..{maximum}" if maximum is not None else \
            ("a positive integer" if minimum == 1 else f"an integer >= {minimum}")
        raise WorkloadError(path, line, key, f"must be {rng}, got {_describe(value)}")
    return value


def _gemm_type_from_codes(values: dict, path, line_of_key: Callable[[str], int | None]) -> gemm.GemmType:
    """Tensile codes -> GemmType, with errors naming the offending key."""
    for key in ("TRANSA", "TRANSB", "DataType", "DestDataType", "ComputeDataType"):
        if key not in values or values[key] is None:
            raise WorkloadError(path, line_of_key(key), key, "missing required key")
    for key in ("TRANSA", "TRANSB"):
        try:
            _convert_transpose(values[key])
        except _Bad as bad:
            raise WorkloadError(path, line_of_key(key), key, bad.message) from None
    for key, single in (("DataType", False), ("DestDataType", True), ("ComputeDataType", True)):
        code = values[key]
        if not isinstance(code, str):
            raise WorkloadError(path, line_of_key(key), key,
                                f"must be a Tensile type code, got {_describe(code)}")
        try:
            parts = gemm.split_codes(code)
        except gemm.GemmError as exc:
            raise WorkloadError(path, line_of_key(key), key, str(exc)) from None
        if (single and len(parts) != 1) or not 1 <= len(parts) <= 2:
            raise WorkloadError(path, line_of_key(key), key,
                                f"{code!r} must be {'one' if single else 'one or two'} Tensile type code(s)")
    try:
        return gemm.GemmType.from_tensile(values["TRANSA"], values["TRANSB"], values["DataType"],
                                          values["DestDataType"], values["ComputeDataType"])
    except gemm.GemmError as exc:
        raise WorkloadError(path, line_of_key("DataType"), "DataType", str(exc)) from None


def rows_of(gemm_type: gemm.GemmType, sizes: Sequence[tuple[int, int, int, int]]) -> pd.DataFrame:
    """Canonical workload rows, one call each, for one GEMM type's sizes [M, N, batch, K]."""
    return _synthetic_rows("<sizes>", gemm_type, sizes, [])


def _synthetic_rows(path, gemm_type: gemm.GemmType, sizes: Sequence[tuple[int, int, int, int]],
                    lines: Sequence[int | None], platform: str | None = None) -> pd.DataFrame:
    rows = _Rows(path, lambda i: lines[i] if i < len(lines) else None)
    type_fields = gemm_type.log_fields()
    keys = ("function", "M", "N", "K", "transA", "transB", "batch_count", "a_type", "b_type",
            "c_type", "d_type", "compute_type", "call_count")
    for m, n, b, k in sizes:
        rows.add(keys, ["matmul", m, n, k, type_fields["transA"], type_fields["transB"], b,
                        type_fields["a_type"], type_fields["b_type"], type_fields["c_type"],
                        type_fields["d_type"], type_fields["compute_type"], 1])
    return _normalize(rows, platform)


def read_list(path, *, platform: str | None = None, arch: str | None = None) -> pd.DataFrame:
    """The generator ``--list`` YAML -> canonical rows (call_count 1, no ld/strides).

    ``TRANSA``, ``TRANSB``, ``DataType``, ``DestDataType``, ``ComputeDataType`` (Tensile codes);
    generator options are ignored here. ``SIZE_OPTION: 0`` (default): ``Sizes: [[M, N, B, K],
    ...]`` (duplicates dropped, order kept); ``1``: the original's grid for the compute units of
    ``arch`` (the campaign's; else the file's ``ARCH``), ``GRID_DENSITY`` 1..5, default 4
    (:mod:`geko_lib.grid_sizes`); ``2``: ``GEMM_LOG_PATH``, a workload file read with
    :func:`read`, relative to the list file.
    """
    problem = _missing_file(path)
    if problem:
        raise problem
    text = _read_text(path)
    try:
        node = yaml.compose(text, Loader=_Loader)
        data = yaml.load(text, Loader=_Loader)
    except _DuplicateKey as dup:
        raise WorkloadError(path, dup.line, dup.key, f"key {dup.key!r} is given twice") from None
    except yaml.YAMLError as exc:
        raise WorkloadError(path, _yaml_error_line(exc), "syntax",
                            f"cannot parse YAML: {_yaml_problem(exc)}") from None
    if data is None:
        raise WorkloadError(path, None, "file", "empty list file")
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
        raise WorkloadError(path, None, "file",
                            "a --list file must be a YAML mapping (TRANSA, TRANSB, DataType, ...)")
    key_nodes = {k.value: (k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode)}

    def line_of_key(key):
        return key_nodes[key][0].start_mark.line + 1 if key in key_nodes else None

    option = data.get("SIZE_OPTION", 0)
    option = 0 if option is None else option
    if type(option) is not int or option not in (0, 1, 2):
        raise WorkloadError(path, line_of_key("SIZE_OPTION"), "SIZE_OPTION",
                            f"must be 0 (Sizes), 1 (grid) or 2 (GEMM_LOG_PATH), got {_describe(option)}")
    if option == 2:
        log_path = data.get("GEMM_LOG_PATH")
        if not isinstance(log_path, str) or not log_path.strip():
            raise WorkloadError(path, line_of_key("GEMM_LOG_PATH"), "GEMM_LOG_PATH",
                                "SIZE_OPTION 2 needs GEMM_LOG_PATH, the path of a workload log")
        target = Path(os.path.expanduser(log_path.strip()))
        if not target.is_absolute():
            target = Path(path).parent / target
        if not target.exists():
            raise WorkloadError(path, line_of_key("GEMM_LOG_PATH"), "GEMM_LOG_PATH",
                                f"workload log {str(target)!r} does not exist")
        return read(target, platform=platform)

    gemm_type = _gemm_type_from_codes(data, path, line_of_key)
    if option == 0:
        sizes_value = data.get("Sizes")
        if not isinstance(sizes_value, list) or not sizes_value:
            raise WorkloadError(path, line_of_key("Sizes"), "Sizes",
                                "SIZE_OPTION 0 needs Sizes: a non-empty list of [M, N, B, K]")
        item_nodes = key_nodes["Sizes"][1].value
        sizes: dict[tuple, int | None] = {}
        for item, item_node in zip(sizes_value, item_nodes):
            line = item_node.start_mark.line + 1
            if not isinstance(item, list) or len(item) != 4:
                raise WorkloadError(path, line, "Sizes", f"each size must be [M, N, B, K], got {item!r}")
            for name, value in zip(("M", "N", "B", "K"), item):
                if type(value) is not int or value < 1:
                    raise WorkloadError(path, line, "Sizes",
                                        f"{name} must be a positive integer, got {_describe(value)}")
            sizes.setdefault(tuple(item), line)
        return _synthetic_rows(path, gemm_type, list(sizes), list(sizes.values()), platform)

    density = _list_int(data.get("GRID_DENSITY", grid_sizes.DEFAULT_DENSITY), path,
                        line_of_key("GRID_DENSITY"), "GRID_DENSITY", 1, 5)
    target = arch or data.get("ARCH")
    try:
        sizes_grid = grid_sizes.grid(grid_sizes.compute_units(target), density)
    except ValueError as exc:
        raise WorkloadError(path, line_of_key("ARCH"), "ARCH",
                            f"SIZE_OPTION 1 sizes the grid by the GPU's compute units: {exc}") \
            from None
    line = line_of_key("SIZE_OPTION")
    return _synthetic_rows(path, gemm_type, sizes_grid, [line] * len(sizes_grid), platform)


# ---- --inline -------------------------------------------------------------------------------

def read_inline(tokens, *, platform: str | None = None) -> pd.DataFrame:
    """``M N batch K DataType DestDataType ComputeDataType transA transB`` -> one canonical row.

    ``tokens``: 9 strings or one space-separated string, e.g. ``"1024 1024 1 1024 B B S N T"``.
    """
    path = INLINE_PATH
    if isinstance(tokens, str):
        tokens = tokens.split()
    tokens = [str(t).strip() for t in tokens]
    if len(tokens) != len(INLINE_TOKENS):
        raise WorkloadError(path, None, "tokens",
                            f"expected {len(INLINE_TOKENS)} tokens ({' '.join(INLINE_TOKENS)}), got "
                            f"{len(tokens)}: {' '.join(tokens)!r}")
    sizes = []
    for position, (name, token) in enumerate(zip(INLINE_TOKENS[:4], tokens[:4]), 1):
        if not re.fullmatch(r"[0-9]+", token) or int(token) < 1:
            raise WorkloadError(path, None, name,
                                f"token {position} must be a positive integer, got {token!r}")
        sizes.append(int(token))
    values = dict(zip(("DataType", "DestDataType", "ComputeDataType", "TRANSA", "TRANSB"), tokens[4:]))
    rename = {"TRANSA": "transA", "TRANSB": "transB"}
    try:
        gemm_type = _gemm_type_from_codes(values, path, lambda key: None)
    except WorkloadError as exc:
        field = rename.get(exc.field, exc.field)
        position = INLINE_TOKENS.index(field) + 1
        raise WorkloadError(path, None, field, f"token {position}: {exc.message}") from None
    m, n, b, k = sizes
    return _synthetic_rows(path, gemm_type, [(m, n, b, k)], [None], platform)


# --------------------------------------------------------------------------------------------
# writing


def _format_float(v: float) -> str:
    if math.isnan(v):
        return ".nan"
    if math.isinf(v):
        return ".inf" if v > 0 else "-.inf"
    text = repr(v)
    if "e" in text and "." not in text:  # YAML 1.1 floats need a dot: 1e-05 -> 1.0e-05
        mantissa, _, exponent = text.partition("e")
        text = f"{mantissa}.0e{exponent}"
    return text


def _format_value(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return _format_float(float(v))
    text = str(v)
    if _scalar(text) == text and type(_scalar(text)) is str:
        return text
    return json.dumps(text)  # a JSON string is a valid YAML double-quoted scalar


def write(df: pd.DataFrame, path) -> Path:
    """Write a canonical table as a mask-64 style log (one flow mapping per row, key order = columns).

    Atomic (a temporary name, then a rename). Returns ``Path(path)``.
    """
    path = Path(path)
    columns = [str(c) for c in df.columns]
    formatted = []
    for name, col in zip(columns, (df[c].tolist() for c in df.columns)):
        cache: dict = {}
        prefix = name + ": "
        strings = []
        for v in col:
            key = (type(v), v)
            try:
                strings.append(cache[key])
            except KeyError:
                cache[key] = s = prefix + _format_value(v)
                strings.append(s)
            except TypeError:
                strings.append(prefix + _format_value(v))
        formatted.append(strings)
    text = "".join("- {" + ", ".join(parts) + "}\n" for parts in zip(*formatted))
    files.write_text(path, text)
    return path


# --------------------------------------------------------------------------------------------
# problems


def problems(df: pd.DataFrame) -> list[gemm.GemmProblem]:
    """The distinct GEMM problems (type + M, N, batch, K) of a canonical table, in row order."""
    fields = list(gemm.GEMM_LOG_FIELDS)
    seen: dict[gemm.GemmProblem, None] = {}
    cache: dict[tuple, gemm.GemmType] = {}
    for values in df[fields].itertuples(index=False, name=None):
        row = dict(zip(fields, values))
        type_key = tuple(row[f] for f in ("transA", "transB", "a_type", "b_type", "c_type", "d_type",
                                          "compute_type"))
        gemm_type = cache.get(type_key)
        if gemm_type is None:
            gemm_type = cache[type_key] = gemm.GemmType(*type_key)
        problem = gemm.GemmProblem(gemm_type, int(row["M"]), int(row["N"]), int(row["batch_count"]),
                                   int(row["K"]))
        seen.setdefault(problem, None)
    return list(seen)
