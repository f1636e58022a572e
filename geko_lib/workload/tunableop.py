"""PyTorch TunableOp's GEMM files as a workload source (every platform).

PyTorch records the GEMMs an application runs when ``PYTORCH_TUNABLEOP_ENABLED=1`` and
``PYTORCH_TUNABLEOP_RECORD_UNTUNED=1`` are set: ``tunableop_untuned<device>.csv`` in the working
directory, one GEMM per line, no header::

    GemmTunableOp_BFloat16_TN,tn_4096_16_4096_ld_4096_4096_4096

The first field is the op signature ``<Op>_<dtype>_<layout>``; the second the parameter signature
``<layout>_<m>_<n>_<k>_ld_<lda>_<ldb>_<ldc>`` in BLAS (column-major) terms: ``layout`` is transA
then transB, so a linear layer ``y = x W^T`` is ``TN`` with M = out features, N = tokens, K = in
features (the same orientation as a hipBLASLt mask-64 log). Op kinds:

- ``GemmTunableOp``: one GEMM;
- ``GemmStridedBatchedTunableOp``: ``<layout>_<m>_<n>_<k>_B_<batch>_ld_<lda>_<ldb>_<ldc>...``;
- ``GemmAndBiasTunableOp``: a GEMM with a bias epilogue (read as the plain GEMM plus
  ``bias_vector: true``);
- ``ScaledGemmTunableOp_<A dtype>_<B dtype>_<D dtype>_<layout>`` (fp8 ``torch._scaled_mm``),
  parameters as ``GemmTunableOp``'s followed by ``_rw_<0|1>_bias_<dtype|None>`` (scaling is not
  carried over).

A tuned results file (``tunableop_results<device>.csv``: ``Validator,...`` lines, then rows with a
solution and a time after the two signatures) is read the same way: its ``Validator`` lines are
skipped and the extra fields ignored. TunableOp writes each distinct GEMM once, so ``call_count``
is the number of identical lines (1 in files PyTorch wrote). Every rejected line names file,
line and field (:class:`geko_lib.workload.WorkloadError`).
"""

from __future__ import annotations

import re
from pathlib import Path

OPS = ("GemmTunableOp", "GemmStridedBatchedTunableOp", "GemmAndBiasTunableOp",
       "ScaledGemmTunableOp")
# TunableOp's dtype names -> hipBLASLt type names; compute type of each class
DTYPES = {"float": "f32_r", "tf32": "f32_r", "double": "f64_r", "BFloat16": "bf16_r",
          "Half": "f16_r", "Float8_e4m3fn": "f8_r", "Float8_e5m2": "bf8_r",
          "Float8_e4m3fnuz": "f8_fnuz_r", "Float8_e5m2fnuz": "bf8_fnuz_r"}
_OP_LINE = re.compile(r"^(" + "|".join(OPS) + r")_")
_FP8_PAIR = ("Float8_e4m3fn", "Float8_e5m2", "Float8_e4m3fnuz", "Float8_e5m2fnuz")


def is_tunableop_file(path) -> bool:
    """Whether the first meaningful line of ``path`` is a TunableOp row or ``Validator`` line."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                text = line.strip().lstrip("\ufeff")
                if text and not text.startswith("#"):
                    return bool(_OP_LINE.match(text)) or text.startswith("Validator,")
    except OSError:
        return False
    return False


def _error(path, line: int, field: str, message: str):
    from .errors import WorkloadError

    return WorkloadError(path, line, field, message)


def _dtype(name: str, path, line: int, field: str) -> str:
    if name not in DTYPES:
        raise _error(path, line, field, f"data type {name!r} is not one geko tunes "
                                        f"(known: {', '.join(DTYPES)})")
    return DTYPES[name]


def _split_op(op_sig: str, path, line: int) -> tuple[str, list[str], str]:
    """(op, [A, B, D] hipBLASLt types, layout) of ``<Op>_<dtype...>_<layout>``."""
    match = _OP_LINE.match(op_sig)
    if not match:
        raise _error(path, line, "op", f"{op_sig!r} is not a TunableOp GEMM ({', '.join(OPS)})")
    op = match.group(1)
    rest = op_sig[match.end():]
    types_text, _, layout = rest.rpartition("_")
    if not re.fullmatch(r"[NT]{2}", layout) or not types_text:
        raise _error(path, line, "layout", f"{op_sig!r}: expected <Op>_<dtype>_<NN|NT|TN|TT>")
    if op != "ScaledGemmTunableOp":
        one = _dtype(types_text, path, line, "dtype")
        return op, [one, one, one], layout
    names, text = [], types_text
    for _ in range(2):  # A and B are fp8 (their names hold one underscore), D may be any type
        found = next((n for n in _FP8_PAIR if text == n or text.startswith(n + "_")), None)
        if found is None:
            raise _error(path, line, "dtype", f"{op_sig!r}: expected two fp8 types first")
        names.append(found)
        text = text[len(found) + 1:]
    names.append(text)
    return op, [_dtype(n, path, line, "dtype") for n in names], layout


def _ints(parts: list[str], path, line: int, field: str) -> list[int]:
    try:
        values = [int(p) for p in parts]
    except ValueError:
        raise _error(path, line, field, f"expected integers, got {'_'.join(parts)!r}") from None
    if any(v < 1 for v in values):
        raise _error(path, line, field, f"sizes must be positive, got {'_'.join(parts)!r}")
    return values


def _params(op: str, params: str, layout: str, path, line: int) -> dict:
    """M, N, K, batch and leading dimensions of a parameter signature."""
    parts = params.split("_")
    if parts[0].upper() != layout:
        raise _error(path, line, "params", f"{params!r} starts with {parts[0]!r}, the op's "
                                           f"layout is {layout}")
    m, n, k = _ints(parts[1:4], path, line, "M/N/K")
    batch, at = 1, 4
    if op == "GemmStridedBatchedTunableOp":
        if parts[4:5] != ["B"]:
            raise _error(path, line, "batch_count", f"{params!r}: expected _B_<batch> after K")
        (batch,) = _ints(parts[5:6], path, line, "batch_count")
        at = 6
    if parts[at:at + 1] != ["ld"] or len(parts) < at + 4:
        raise _error(path, line, "ld", f"{params!r}: expected _ld_<lda>_<ldb>_<ldc> after the "
                                       "sizes")
    lda, ldb, ldc = _ints(parts[at + 1:at + 4], path, line, "ld")
    return {"M": m, "N": n, "K": k, "batch_count": batch, "lda": lda, "ldb": ldb, "ldc": ldc,
            "ldd": ldc}


def parse_line(text: str, path, line: int) -> dict:
    """One TunableOp row as mask-64 log fields (without ``call_count``)."""
    fields = [f.strip() for f in text.split(",")]
    if len(fields) < 2 or not fields[1]:
        raise _error(path, line, "params", "expected <op signature>,<params signature>")
    op, (a_type, b_type, d_type), layout = _split_op(fields[0], path, line)
    row = {"function": "matmul", **_params(op, fields[1], layout, path, line),
           "transA": layout[0], "transB": layout[1], "a_type": a_type, "b_type": b_type,
           "c_type": d_type, "d_type": d_type}
    tf32 = fields[0].split("_")[1] == "tf32"
    row["compute_type"] = "c_xf32_r" if tf32 else ("c_f64_r" if a_type == "f64_r"
                                                    else "c_f32_r")
    row["bias_vector"] = op == "GemmAndBiasTunableOp"
    return row


def workload_rows(path, rows_class):
    """Every GEMM row of a TunableOp file, in a ``rows_class(path, line_of)`` collection (the
    workload reader's), one entry per distinct line with identical lines counted."""
    path = Path(path)
    counts: dict[str, int] = {}
    first: dict[str, int] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise _error(path, None, "encoding", "not UTF-8 text; binary file?") from None
    for number, raw in enumerate(text.splitlines(), 1):
        s = raw.strip().lstrip("\ufeff")
        if not s or s.startswith("#") or s.startswith("Validator,"):
            continue
        counts[s] = counts.get(s, 0) + 1
        first.setdefault(s, number)
    if not counts:
        raise _error(path, None, "rows", "empty workload: no TunableOp GEMM rows found")
    lines = list(first.values())
    rows = rows_class(path, lambda i: lines[i])
    for s, count in counts.items():
        row = parse_line(s, path, first[s]) | {"call_count": count}
        rows.add(tuple(row), list(row.values()))
    return rows
