"""hipBLASLt user offline-tuning file (``HIPBLASLT_TUNING_OVERRIDE_FILE``)
=======================================================================

What hipBLASLt writes (evidence: the real file in ``fixtures/tuning_override``, and hipblaslt-bench
``ArgumentModel::log_args`` in ROCm/rocm-libraries ``projects/hipblaslt/clients/common/include/
argument_model.hpp``): a first line ``Git Version: <HIPBLASLT_VERSION_TWEAK>`` (e.g.
``a6254b89-dirty``), then for every tuned GEMM two lines, each indented by four spaces: the CSV
header of hipblaslt-bench's result line plus ``,gcnArchName,CUs``, and the value line plus the
architecture and CU count. The columns between ``k`` and ``us`` vary with the bench version (the
real Hygon/DTK file has 36 columns and no ``hipblaslt-GB/s``; the ROCm doc's "Winner" block has
``hipblaslt-GB/s`` and spells the last column ``soulution_index``).

What hipBLASLt reads: two generations of parser (``UserDrivenTuningParser.cpp``):

* positional (ROCm/hipBLASLt, 2024): a line is an entry only if it has exactly 37 comma-separated
  fields (after stripping leading blanks); batch_count, m, n, k are fields 3-6, a/b/c/d types
  17-20, compute type 21, solution index 34 (i.e. the doc layout with ``hipblaslt-GB/s``, then
  two more fields). Header lines fail the integer parse and are skipped, as is the ``Git Version``
  line.
* header-driven (ROCm/rocm-libraries, 2025): every line containing ``transA`` is a header and the
  *next* line its values; it picks, in this order, ``transA, transB, batch_count, m, n, k,
  a_type, b_type, c_type, compute_type, solution_index`` and optionally ``solution_name`` (any
  other columns are skipped). ``solution_name`` lets hipBLASLt check a stale index against the
  name and heal it after a library rebuild; newer builds ignore unnamed rows whose file
  ``Git Version`` differs from the running build.

Both parse ``compute_type`` with ``string_to_hipblas_computetype``, which knows ``f32_r, xf32_r,
f64_r, i32_r, f32_f16_r, f32_bf16_r`` only: the ``c_`` prefix of hipBLASLt's logs must be dropped
in this file, or the entry is silently ignored. Both ignore entries with solution index <= 0.
``std::getline`` drops a trailing empty field, so the last column must never be empty.

What geko writes, chosen so that both parser generations accept every entry: an optional
``Git Version: <version>`` line, then per GEMM a 4-space-indented header and value line with 37
columns -- the doc/bench layout up to ``us``, then ``solution_index`` (field 34),
``gcnArchName`` (may be empty) and ``solution_name`` (required, never empty)::

    transA,transB,grouped_gemm,batch_count,m,n,k,alpha,lda,stride_a,beta,ldb,stride_b,ldc,
    stride_c,ldd,stride_d,a_type,b_type,c_type,d_type,compute_type,scaleA,scaleB,scaleC,scaleD,
    amaxD,activation_type,bias_vector,bias_type,rotating_buffer,hipblaslt-Gflops,hipblaslt-GB/s,
    us,solution_index,gcnArchName,solution_name

Leading dimensions and strides are the packed ones unless the winners carry them (lda = M for
transA=N else K, ldb = K for transB=N else N, ldc = ldd = M; stride = ld x the other dimension),
exactly as in the real file. ``hipblaslt-Gflops``/``hipblaslt-GB/s``/``us`` come from ``us``
(GB/s counts A, B read and D written once, as geko's results tables do) and are empty without it.

The reader accepts any column layout of this family: a header (optionally prefixed ``[i]:``) must
precede the value lines it describes; one header may serve several value lines. Required columns:
``transA, transB, batch_count, m, n, k, a_type, b_type, c_type, compute_type`` and
``solution_index`` (or the misspelt ``soulution_index``); ``d_type`` defaults to ``c_type``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from ... import files
from ...gemm import strip_compute_prefix
from .winners import IDENTITY, ExportError, _check_token, _num, _packed_lds, _Reader, _rows


OVERRIDE_COLUMNS = (
    "transA", "transB", "grouped_gemm", "batch_count", "m", "n", "k", "alpha", "lda", "stride_a",
    "beta", "ldb", "stride_b", "ldc", "stride_c", "ldd", "stride_d", "a_type", "b_type", "c_type",
    "d_type", "compute_type", "scaleA", "scaleB", "scaleC", "scaleD", "amaxD", "activation_type",
    "bias_vector", "bias_type", "rotating_buffer", "hipblaslt-Gflops", "hipblaslt-GB/s", "us",
    "solution_index", "gcnArchName", "solution_name",
)
_INDENT = "    "
_VERSION_PREFIX = "Git Version:"
_OVERRIDE_REQUIRED = ("transA", "transB", "batch_count", "m", "n", "k", "a_type", "b_type",
                      "c_type", "compute_type")
_INDEX_COLUMNS = ("solution_index", "soulution_index")  # the second: hipBLASLt's own spelling


def write_tuning_override(winners: pd.DataFrame, path, *, version: str | None = None,
                          arch: str | None = None) -> Path:
    """Write ``winners`` as a hipBLASLt tuning override file (module docstring, section 1).

    ``version``: hipBLASLt's git version (``HIPBLASLT_VERSION_TWEAK``, what hipblaslt-bench
    prints as "hipBLASLt git version"); written as the ``Git Version:`` first line, omitted when
    None (hipBLASLt then treats the file as from another build and relies on ``solution_name``).
    ``arch``: written to ``gcnArchName`` (informational). Atomic write."""
    rows = _rows(winners, need_name=True)
    lines = []
    if version is not None:
        version = _check_token(version, "version")
        if not version:
            raise ExportError("version: empty")
        lines.append(f"{_VERSION_PREFIX} {version}")
    arch = "" if arch is None else _check_token(arch, "arch")
    header = _INDENT + ",".join(OVERRIDE_COLUMNS)
    seen: dict[tuple, str] = {}
    for row in rows:
        p = row["problem"]
        t = p.type
        key = (t, p.m, p.n, p.batch, p.k)
        if key in seen:
            raise ExportError(f"{row['where']}: duplicate GEMM (also {seen[key]})")
        seen[key] = row["where"]
        lda, ldb, ldc, ldd = _packed_lds(row)
        stride_a = row.get("stride_a", lda * (p.k if t.transA == "N" else p.m))
        stride_b = row.get("stride_b", ldb * (p.n if t.transB == "N" else p.k))
        stride_c = row.get("stride_c", ldc * p.n)
        stride_d = row.get("stride_d", ldd * p.n)
        us = row["us"]
        perf = (["", "", ""] if us is None else
                [_num(p.flops / us / 1e3), _num(p.min_bytes / us / 1e3), _num(us)])
        values = [t.transA, t.transB, 0, p.batch, p.m, p.n, p.k, 1, lda, stride_a, 0, ldb,
                  stride_b, ldc, stride_c, ldd, stride_d, t.a_type, t.b_type, t.c_type, t.d_type,
                  strip_compute_prefix(t.compute_type), row.get("scaleA", 0),
                  row.get("scaleB", 0), 0, 0, 0, "none", 0, row.get("bias_type", "f32_r"),
                  row.get("rotating", 0), *perf, row["index"], arch, row["name"]]
        lines.append(header)
        lines.append(_INDENT + ",".join(str(v) for v in values))
    return files.write_text(path, "\n".join(lines) + "\n")


def read_tuning_override(path) -> pd.DataFrame:
    """Read a hipBLASLt tuning (override) file: one row per entry with the GEMM identity
    (``IDENTITY``, compute type with ``c_``), ``scaleA``/``scaleB`` when the file has them,
    ``solution_index``, ``solution_name`` (when the file has the column) and ``us`` (when it has
    it). ``df.attrs["version"]`` is the ``Git Version`` (None without one). Any malformed line
    raises ExportError naming file, line and field."""
    r = _Reader(path)
    version = None
    header: list[str] | None = None
    header_line = 0
    records = []
    seen_content = False
    for r.line, raw in enumerate(r.text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith(_VERSION_PREFIX):
            if seen_content:
                raise r.error("Git Version", "must be the first line of the file")
            version = line[len(_VERSION_PREFIX):].strip()
            if not version:
                raise r.error("Git Version", "empty version")
            seen_content = True
            continue
        seen_content = True
        line = re.sub(r"^\[\d+\]:", "", line)
        fields = [f.strip() for f in line.split(",")]
        if fields[0] == "transA":
            header, header_line = _override_header(r, fields), r.line
            continue
        if header is None:
            raise r.error("header", "expected a 'Git Version:' line or a CSV header starting "
                          f"with transA before the first entry, got {line[:60]!r}")
        if len(fields) != len(header):
            raise r.error("fields", f"{len(fields)} comma-separated fields, but the header on "
                          f"line {header_line} has {len(header)}")
        records.append(_override_entry(r, dict(zip(header, fields))))
    frame = _override_frame(records)
    frame.attrs["version"] = version
    return frame


def _override_header(r: _Reader, names: list[str]) -> list[str]:
    """The CSV header's column names, refused with a duplicate or a missing column."""
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise r.error("header", f"duplicate column(s) {', '.join(dup)}")
    missing = [c for c in _OVERRIDE_REQUIRED if c not in names]
    if not any(c in names for c in _INDEX_COLUMNS):
        missing.append("solution_index")
    if missing:
        raise r.error("header", f"missing column(s) {', '.join(missing)}")
    return names


def _override_entry(r: _Reader, get: dict[str, str]) -> dict:
    """One entry (column name -> its text) as a record, each field checked."""
    rec = {"transA": r.transpose(get["transA"], "transA"),
           "transB": r.transpose(get["transB"], "transB"),
           "batch_count": r.int(get["batch_count"], "batch_count", 1),
           "m": r.int(get["m"], "m", 1), "n": r.int(get["n"], "n", 1),
           "k": r.int(get["k"], "k", 1)}
    for field in ("a_type", "b_type", "c_type"):
        rec[field] = r.data_type(get[field], field)
    rec["d_type"] = r.data_type(get["d_type"], "d_type") if "d_type" in get else rec["c_type"]
    rec["compute_type"] = r.compute_type(get["compute_type"])
    r.gemm_type(rec)
    for field in ("scaleA", "scaleB"):
        if field in get:
            rec[field] = r.int(get[field], field, 0)
    index_column = next(c for c in _INDEX_COLUMNS if c in get)
    rec["solution_index"] = r.int(get[index_column], index_column)
    if "solution_name" in get:
        rec["solution_name"] = get["solution_name"] or None
    if "gcnArchName" in get:  # the arch it was measured on (exports.measured)
        rec["gcnArchName"] = get["gcnArchName"]
    if "us" in get:
        rec["us"] = r.float(get["us"], "us")
    return rec


def _override_frame(records: list[dict]) -> pd.DataFrame:
    """The entries as a table: the identity, then the optional columns the file had."""
    order = list(IDENTITY)
    extra = ["scaleA", "scaleB", "solution_index", "solution_name", "us", "gcnArchName"]
    present = {key for rec in records for key in rec} if records else {"solution_index"}
    order += [c for c in extra if c in present]
    frame = pd.DataFrame.from_records(records, columns=order)
    for field in ("batch_count", "m", "n", "k", "solution_index", "scaleA", "scaleB"):
        if field in frame.columns:
            frame[field] = frame[field].astype("int64")
    if "us" in frame.columns:
        frame["us"] = frame["us"].astype("float64")
    return frame
