"""aiter's GEMM CSVs as a workload source: what vLLM and SGLang on ROCm run.

aiter (ROCm's kernel library behind vLLM/SGLang) records every GEMM shape a run meets when
``AITER_TUNE_GEMM=1`` is set, into an *untuned* CSV (``aiter/configs/bf16_untuned_gemm.csv``)::

    M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle
    1,2048,6144,False,torch.bfloat16,torch.bfloat16,False,False

Its *tuned* CSV (``gfx,cu_num,M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,libtype,solidx,...``;
older files lack ``gfx``) is read the same way, its extra columns ignored.

aiter's convention is PyTorch's ``F.linear``: ``x`` is ``[M, K]`` (M = tokens), ``weight``
``[N, K]``, out ``[M, N]``, i.e. ``x @ W^T``. In hipBLASLt's column-major terms (as PyTorch logs
the same call) that is transA = T, transB = N, m = N (out features), n = M (tokens), k = K,
batch 1, so a row becomes the hipBLASLt GEMM ``T N, M = N_aiter, N = M_aiter, K``. ``dtype`` is
the input type (A and B), ``outdtype`` the output (C and D), accumulation in f32; ``bias`` True
reads as ``bias_vector: true``, ``scaleAB`` True as scalar scales (``scaleA = scaleB = 1``).
Weights pre-shuffled for aiter's own kernels (``bpreshuffle`` True) have no hipBLASLt GEMM geko
can search and are refused, as are the quantized families' bare ``M,N,K`` files (they name no
data type). Every row counts once (aiter writes each distinct shape once) unless a ``count``
(or ``call_count``) column says otherwise. Every rejected value names file, line and column.
"""

from __future__ import annotations

import contextlib
import csv
from pathlib import Path

from ..gemm import DTYPES
from .linear import linear_fields

UNTUNED_COLUMNS = ("M", "N", "K", "bias", "dtype", "outdtype", "scaleAB", "bpreshuffle")
# aiter's dtype spelling (str(torch.dtype)) <-> hipBLASLt's type names
TORCH_NAMES = {f"torch.{d.torch}": d.hipblaslt for d in DTYPES
               if d.torch and d.hipblaslt != "xf32_r"}
HIPBLASLT_TO_TORCH = {v: k for k, v in TORCH_NAMES.items()}
COUNT_COLUMNS = ("count", "call_count")
# hipBLASLt's field -> the aiter column it comes from (M and N swap: aiter's M is the tokens)
COLUMN_OF = {"M": "N", "N": "M", "K": "K", "a_type": "dtype", "b_type": "dtype",
             "c_type": "outdtype", "d_type": "outdtype", "scaleA": "scaleAB",
             "scaleB": "scaleAB", "bias_vector": "bias"}
_BOOLS = {"true": True, "false": False, "1": True, "0": False}


def _error(path, line, field: str, message: str):
    from .errors import WorkloadError

    return WorkloadError(path, line, field, message)


def _header(path) -> tuple[int, list[str]] | None:
    """(line, column names) of the first non-blank line, None where unreadable."""
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                text = line.strip().lstrip("\ufeff")
                if text and not text.startswith("#"):
                    return number, [c.strip() for c in next(csv.reader([text]))]
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    return None


def is_aiter_file(path) -> bool:
    """A CSV whose header is aiter's: M, N, K and aiter's own columns (``dtype``/``outdtype``,
    ``bpreshuffle``, ``cu_num``), or bare ``M,N,K``; geko's own CSVs have ``transA``."""
    found = _header(path)
    if found is None:
        return False
    names = set(found[1])
    if not {"M", "N", "K"} <= names or "transA" in names:
        return False
    return names == {"M", "N", "K"} or bool(names & {"dtype", "outdtype", "bpreshuffle",
                                                      "cu_num"})


def _flag(value: str, path, line: int, field: str) -> bool:
    try:
        return _BOOLS[value.strip().lower()]
    except KeyError:
        raise _error(path, line, field, f"expected True or False, got {value!r}") from None


def _size(value: str, path, line: int, field: str) -> int:
    try:
        number = int(value.strip())
    except ValueError:
        raise _error(path, line, field, f"expected a positive integer, got {value!r}") from None
    if number < 1:
        raise _error(path, line, field, f"expected a positive integer, got {value!r}")
    return number


def _type(value: str, path, line: int, field: str) -> str:
    name = value.strip()
    if name not in TORCH_NAMES:
        raise _error(path, line, field, f"{name!r} is not a torch dtype geko knows "
                                        f"({', '.join(sorted(TORCH_NAMES))})")
    return TORCH_NAMES[name]


def gemm_row(record: dict, path, line: int) -> dict:
    """One aiter row (column -> text) as mask-64 log fields, in hipBLASLt's column-major terms
    (without ``call_count``)."""
    tokens, out_features, k = (_size(record[c], path, line, c) for c in ("M", "N", "K"))
    if _flag(record.get("bpreshuffle", "False"), path, line, "bpreshuffle"):
        raise _error(path, line, "bpreshuffle", "pre-shuffled weights run aiter's own kernels: "
                                                "no hipBLASLt GEMM for geko to search")
    a_type = _type(record["dtype"], path, line, "dtype")
    d_type = _type(record.get("outdtype") or record["dtype"], path, line, "outdtype")
    scaled = _flag(record.get("scaleAB", "False"), path, line, "scaleAB")
    return linear_fields(out_features, tokens, k, a_type, d_type, scaled=scaled,
                         bias=_flag(record.get("bias", "False"), path, line, "bias"))


@contextlib.contextmanager
def in_file_terms():
    """A workload error raised in the block (the checks every source's rows get, in
    hipBLASLt's terms) names the aiter file's column instead of hipBLASLt's field."""
    from .errors import WorkloadError

    try:
        yield
    except WorkloadError as exc:
        if exc.field not in COLUMN_OF:
            raise
        raise WorkloadError(exc.path, exc.line, COLUMN_OF[exc.field], exc.message) from None


def workload_rows(path, rows_class):
    """Every GEMM of an aiter CSV, in a ``rows_class(path, line_of)`` collection (the workload
    reader's); identical rows are summed by the reader as every source's are."""
    path = Path(path)
    header_line, names = _header(path)
    if set(names) == {"M", "N", "K"}:
        raise _error(path, header_line, "dtype", "a bare M,N,K file (aiter's quantized "
                                                 "families) names no data type; add dtype and "
                                                 "outdtype columns")
    if "dtype" not in names:
        raise _error(path, header_line, "dtype", "aiter's header has no dtype column")
    counts = [c for c in COUNT_COLUMNS if c in names]
    if len(counts) > 1:  # which one holds the calls is not for geko to guess
        raise _error(path, header_line, counts[1], f"the header has both {' and '.join(counts)}"
                     ": keep the one that counts the calls")
    count_column = counts[0] if counts else None
    parsed, lines = [], []
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        for record in reader:
            line = reader.line_num
            if line <= header_line or not any(f.strip() for f in record):
                continue
            if len(record) != len(names):
                raise _error(path, line, "row", f"{len(record)} fields, the header (line "
                                                f"{header_line}) has {len(names)}")
            fields = dict(zip(names, record))
            row = gemm_row(fields, path, line)
            count = _size(fields[count_column], path, line, count_column) if count_column else 1
            parsed.append(row | {"call_count": count})
            lines.append(line)
    if not parsed:
        raise _error(path, None, "rows", "empty workload: no aiter GEMM rows found")
    rows = rows_class(path, lambda i: lines[i])
    for row in parsed:
        rows.add(tuple(row), list(row.values()))
    return rows
