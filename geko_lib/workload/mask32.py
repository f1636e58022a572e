"""hipBLASLt ``HIPBLASLT_LOG_MASK=32`` logs: ``hipblaslt-bench ...`` command lines, one per call."""

from __future__ import annotations

import logging
from collections import Counter
from typing import Callable

import pandas as pd


from .errors import WorkloadError
from .parsing import (_FALLBACK, _FirstLines, _check_not_trace, _count_lines, _decode,
                      _is_bench_line, _meaningful, _missing_file, _scalar)
from .support import GemmSupport
from .table import _LOG_FIELD_SET, _Rows, _normalize, _text
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)


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
            if field in row and row[field] != value:  # the last would win silently
                raise WorkloadError(path, line_of(), field,
                                    f"{token} is given twice ({_text(row[field])} and "
                                    f"{_text(value)}); which value is meant?")
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


def read_bench_commands(path, *, support: GemmSupport, arch: str | None = None
                        ) -> pd.DataFrame:
    """A HIPBLASLT_LOG_MASK=32 log: one ``hipblaslt-bench ...`` command line per GEMM call.

    Flags named like a log field (``-m/-n/-k`` -> ``M/N/K``, ``--lda``, ``--transA``, ``--a_type``,
    ``--compute_type``, ``--scaleA``, ``--alpha``, ``--rotating``, ...) become columns, a flag
    without a value is ``true``, other flags are ignored; identical lines are counted into
    ``call_count``.
    """
    problem = _missing_file(path)
    if problem:
        raise problem
    return _normalize(_bench_rows(path, _count_lines(path)), support, arch)
