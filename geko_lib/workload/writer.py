"""Writing the canonical table (``workload.yaml``) and the problems it holds."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import numpy as np
import pandas as pd

from .. import files, gemm

from .parsing import _scalar
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)


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


ROWS_A_CHUNK = 20_000  # rows formatted and written at a time: a 1M-row table's text is 0.5 GB


def write(df: pd.DataFrame, path) -> Path:
    """Write a canonical table as a mask-64 style log (one flow mapping per row, key order = columns).

    Atomic (a temporary name, then a rename), written a chunk of rows at a time. Returns
    ``Path(path)``.
    """
    path = Path(path)
    columns = [str(c) for c in df.columns]

    def chunks():
        for start in range(0, len(df), ROWS_A_CHUNK):
            part = df.iloc[start:start + ROWS_A_CHUNK]
            formatted = []
            for name, col in zip(columns, (part[c].tolist() for c in part.columns)):
                cache: dict = {}
                formatted.append([_cached_item(cache, name, v) for v in col])
            yield "".join("- {" + ", ".join(parts) + "}\n" for parts in zip(*formatted)).encode()

    files.write_chunks(path, chunks())
    return path


def _cached_item(cache: dict, key: str, value) -> str:
    """``key: value`` as a flow mapping holds it, formatted once per distinct (key, value)."""
    token = (key, type(value), value)
    try:
        return cache[token]
    except KeyError:
        cache[token] = text = f"{key}: {_format_value(value)}"
        return text
    except TypeError:  # an unhashable value
        return f"{key}: {_format_value(value)}"


def rows_text(rows: list[dict]) -> str:
    """Rows of scalars (each its own keys, in its own order) as a YAML list of flow mappings,
    one row per line, as :func:`write` formats them: what ``yaml.safe_load`` reads back as the
    same rows, in linear time (PyYAML's emitter takes milliseconds a row)."""
    cache: dict = {}
    lines = ["- {" + ", ".join(_cached_item(cache, str(k), v) for k, v in row.items()) + "}\n"
             for row in rows]
    return "".join(lines) or "[]\n"


# --------------------------------------------------------------------------------------------
# problems


def problems(df: pd.DataFrame) -> list[gemm.GemmProblem]:
    """The distinct GEMM problems (type + M, N, batch, K) of a canonical table, in row order,
    each with the leading dimensions and strides of its first row (``GemmProblem.layout``)."""
    fields = list(gemm.GEMM_LOG_FIELDS) + [f for f in gemm.LAYOUT_FIELDS if f in df.columns]
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
                                   int(row["K"]), gemm.layout_of(row))
        seen.setdefault(problem, None)
    return list(seen)
