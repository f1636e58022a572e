"""Exports of tuning winners into the two files applications load, each with a matching reader.

Input of both exporters is a winners table (``winners.csv``): one row per GEMM with the GEMM
identity (``transA, transB, batch_count, m, n, k, a_type, b_type, c_type, d_type, compute_type``;
hipBLASLt type names, ``compute_type`` with the ``c_`` prefix, BLAS column-major M/N/K as hipBLASLt
logs them), ``solution_index`` (int), ``solution_name`` (str) and optionally ``us``. Optional
columns used when present: ``scaleA, scaleB, lda, ldb, ldc, ldd, stride_a, stride_b, stride_c,
stride_d, bias_type, rotating, platform``.

1. hipBLASLt user offline-tuning file (``HIPBLASLT_TUNING_OVERRIDE_FILE``)
==========================================================================

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

2. PyTorch TunableOp results file (``PYTORCH_TUNABLEOP_FILENAME``)
=================================================================

Format (pytorch/pytorch ``aten/src/ATen/cuda/tunable/Tunable.cpp``, ``TuningContext::ReadFile`` /
``WriteFile``; the fixtures): ``Validator,<KEY>,<VALUE>`` lines, then one line per tuned call
``<op_signature>,<params_signature>,<solution>[,<time in ms>]`` (the time is optional; with
``PYTORCH_TUNABLEOP_BLAS_LOG=1`` a ``,BLAS_PARAMS: ...`` suffix follows).

Validators: TunableOp registers PT_VERSION (``TORCH_VERSION``, e.g. ``2.4.0``) and on ROCm
ROCM_VERSION, HIPBLASLT_VERSION, GCN_ARCH_NAME (full ``gcnArchName`` such as
``gfx942:sramecc+:xnack-``) and, when rocBLAS is enabled, ROCBLAS_VERSION (newer builds more,
e.g. HIP_VERSION). ``ValidateAll`` requires the file's key set to equal the registered set
*exactly* and every value to equal the running process's value; otherwise the whole file is
ignored ("results validator check failed"). The reliable source of the values is the target
process itself: ``dict(torch.cuda.tunable.get_validators())``.

Operators (``TunableGemm.h``): ``GemmTunableOp_<T>_<L>`` (``at::cuda::blas::gemm``: mm/addmm,
batch 1), ``GemmStridedBatchedTunableOp_<T>_<L>`` (``bgemm``: bmm/baddbmm, batch > 1),
``GemmAndBiasTunableOp_<T>_<L>`` (addmm/linear with a fused bias epilogue) and
``ScaledGemmTunableOp_<A>_<B>_<C>_<L>`` (``_scaled_mm``, fp8). ``<T>`` is ``TypeName<T>``:
``float`` (``tf32`` when TF32 is allowed, PyTorch >= 2.7/2.8, pytorch/pytorch#149088),
``double``, ``BFloat16``, ``Half``, ``Float8_e4m3fn``, ``Float8_e5m2``, ``Float8_e4m3fnuz``,
``Float8_e5m2fnuz``, ``c10::complex<float|double>``. ``<L>`` is two letters N/T.

Params signature (``GemmCommon.h`` ``*Params::Signature``): ``<l>_<m>_<n>_<k>``; strided batched
adds ``_B_<batch>``; since pytorch/pytorch#146358 (Feb 2025, PyTorch 2.7) ``_ld_<lda>_<ldb>_<ldc>``
follows; scaled GEMM adds ``_rw_<0|1>_bias_<dtype|None>``. ``<l>`` are the lowercase transpose
characters ATen passes (``tn``).

Solutions: ``Default``; ``Gemm_Rocblas_<index>``; hipBLASLt ``Gemm_Hipblaslt_<TA><TB>_<index>``
up to PyTorch 2.6 and ``Gemm_Hipblaslt_<index>`` since pytorch/pytorch#147900 (Feb 2025, 2.7);
``Gemm_Cublaslt_<TA><TB>_<rank>`` on CUDA (a heuristic rank, not an id); the README's oldest
example has bare numbers (``1219``), other copies of the same lines read ``Gemm_Hipblaslt_1219`` /
``Gemm_Rocblas_1216``, so a bare number's library is unknown. The solution must be registered by
the running PyTorch under exactly that name, so the name style must match the PyTorch version.

Layout / order mapping: op letters and params ``m, n, k`` are BLAS column-major and are exactly
hipBLASLt's ``transA, transB, M, N, K`` -- no swap. Evidence: ``GemmHipblaslt.h`` calls
hipBLASLt with ``opa = params->transa``, ``opb = params->transb`` and A as ``m x k`` (N) or
``k x m`` (T), C as ``m x n``; ``GemmParams::BLASSignature`` prints a hipBLASLt log line
``{ function: matmul, M: m, N: n, K: k, ..., transA: transa, transB: transb }``; the offline tuner
(``torch/cuda/tunable.py``) reads the params as ``[n, m, k]`` *in PyTorch row-major terms* and
takes ``transB`` from the first layout letter -- the usual C^T = B^T A^T swap between torch.mm
and column-major BLAS. The fixture ``GemmTunableOp_BFloat16_TN,tn_8192_2_3584`` is a decode-time
linear layer (2 tokens, 3584 -> 8192 features): transA=T, transB=N, M = out_features = 8192,
N = tokens = 2, K = in_features = 3584, the convention of ``geko_lib.gemm``.

Export covers hipBLASLt winners only (rocBLAS and cuBLASLt candidates are not geko's search
space), as ``GemmTunableOp`` (batch 1) or ``GemmStridedBatchedTunableOp`` (batch > 1), for
a = b = c = d with: ``float`` (f32_r, c_f32_r), ``Half`` (f16_r, c_f32_r), ``BFloat16``
(bf16_r, c_f32_r) -- PyTorch queries hipBLASLt with COMPUTE_32F for these -- and, in the
``current`` style only, ``tf32`` (f32_r, c_xf32_r) and ``double`` (f64_r, c_f64_r), which
PyTorch main queries with COMPUTE_32F_FAST_TF32 / COMPUTE_64F. Everything else (fp8: only via
ScaledGemmTunableOp, which keys on scaling mode and bias geko does not record; int8; complex,
for which PyTorch registers no hipBLASLt solutions; mixed types) is refused. Not expressible
from a hipBLASLt log either: GemmAndBiasTunableOp (linear with bias) and a bmm of batch 1, which
may reach TunableOp as GemmStridedBatchedTunableOp ``_B_1``; geko writes GemmTunableOp for batch 1.
"""

from __future__ import annotations

import math
import re
import warnings
from pathlib import Path

import pandas as pd

from .. import files
from ..errors import GekoError
from ..gemm import (BY_NAME, GemmError, GemmProblem, GemmType, normalize_compute_type,
                    normalize_transpose, strip_compute_prefix)

__all__ = ["ExportError", "IDENTITY", "OVERRIDE_COLUMNS", "TUNABLEOP_TYPES",
           "write_tuning_override", "read_tuning_override", "write_tunableop", "read_tunableop",
           "default_validators", "tunableop_style", "STYLES"]


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
        platforms = set(winners["platform"].dropna().astype(str))
        if "cuda" in platforms:
            raise ExportError("winners: platform 'cuda' rows are cuBLASLt results; only hipBLASLt "
                              "solution indices can be exported")
        if "sim" in platforms:
            warnings.warn("winners come from the sim platform: their solution indices are "
                          "simulated and name no real hipBLASLt solution", stacklevel=3)
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


# ------------------------------------------------------------------------------------------------
# hipBLASLt tuning override file

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


def _check_token(value: str, what: str) -> str:
    value = str(value).strip()
    if "," in value or "\n" in value or "\r" in value:
        raise ExportError(f"{what}: must not contain commas or line breaks: {value!r}")
    return value


def require_exportable(capabilities, platform_name: str) -> None:
    """Both export formats name hipBLASLt kernels: refused on a platform that has none."""
    if not capabilities.exports:
        raise ExportError(f"platform {platform_name} has no valid hipBLASLt tuning override or "
                          "TunableOp export (their entries name hipBLASLt solutions); ship "
                          "final_libs instead")


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
    columns: dict[str, int] = {}
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
            names = fields
            dup = sorted({n for n in names if names.count(n) > 1})
            if dup:
                raise r.error("header", f"duplicate column(s) {', '.join(dup)}")
            missing = [c for c in _OVERRIDE_REQUIRED if c not in names]
            if not any(c in names for c in _INDEX_COLUMNS):
                missing.append("solution_index")
            if missing:
                raise r.error("header", f"missing column(s) {', '.join(missing)}")
            header, header_line = names, r.line
            columns = {name: i for i, name in enumerate(names)}
            continue
        if header is None:
            raise r.error("header", "expected a 'Git Version:' line or a CSV header starting "
                          f"with transA before the first entry, got {line[:60]!r}")
        if len(fields) != len(header):
            raise r.error("fields", f"{len(fields)} comma-separated fields, but the header on "
                          f"line {header_line} has {len(header)}")
        get = {name: fields[i] for name, i in columns.items()}
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
        if "us" in get:
            rec["us"] = r.float(get["us"], "us")
        records.append(rec)
    order = list(IDENTITY)
    extra = ["scaleA", "scaleB", "solution_index", "solution_name", "us"]
    present = {key for rec in records for key in rec} if records else {"solution_index"}
    order += [c for c in extra if c in present]
    frame = pd.DataFrame.from_records(records, columns=order)
    for field in ("batch_count", "m", "n", "k", "solution_index", "scaleA", "scaleB"):
        if field in frame.columns:
            frame[field] = frame[field].astype("int64")
    if "us" in frame.columns:
        frame["us"] = frame["us"].astype("float64")
    frame.attrs["version"] = version
    return frame


# ------------------------------------------------------------------------------------------------
# PyTorch TunableOp results file

# TunableOp TypeName -> (hipBLASLt data type, compute type), for reading.
TUNABLEOP_TYPES = {
    "float": ("f32_r", "c_f32_r"),
    "tf32": ("f32_r", "c_xf32_r"),
    "double": ("f64_r", "c_f64_r"),
    "BFloat16": ("bf16_r", "c_f32_r"),
    "Half": ("f16_r", "c_f32_r"),
    "Float8_e4m3fn": ("f8_r", "c_f32_r"),
    "Float8_e5m2": ("bf8_r", "c_f32_r"),
    "Float8_e4m3fnuz": ("f8_fnuz_r", "c_f32_r"),
    "Float8_e5m2fnuz": ("bf8_fnuz_r", "c_f32_r"),
    "c10::complex<float>": ("f32_c", "c_f32_c"),
    "c10::complex<double>": ("f64_c", "c_f64_c"),
}
_TYPE_NAMES_LONGEST_FIRST = sorted(TUNABLEOP_TYPES, key=len, reverse=True)

# (data type, compute type) -> TypeName, for writing; per style.
_EXPORT_TYPES = {
    ("f32_r", "c_f32_r"): "float",
    ("f16_r", "c_f32_r"): "Half",
    ("bf16_r", "c_f32_r"): "BFloat16",
}
_EXPORT_TYPES_CURRENT = {
    **_EXPORT_TYPES,
    ("f32_r", "c_xf32_r"): "tf32",
    ("f64_r", "c_f64_r"): "double",
}
STYLES = ("legacy", "current")

_OPS = ("GemmTunableOp", "GemmAndBiasTunableOp", "GemmStridedBatchedTunableOp",
        "ScaledGemmTunableOp")
_OP_RE = re.compile(r"^(?P<op>[A-Za-z]+TunableOp)_(?P<types>.+)_(?P<layout>[NT][NT])$")
_PARAMS_RE = re.compile(
    r"^(?P<layout>[nNtTcC]{2})_(?P<m>\d+)_(?P<n>\d+)_(?P<k>\d+)(?:_B_(?P<batch>\d+))?"
    r"(?:_ld_(?P<lda>\d+)_(?P<ldb>\d+)_(?P<ldc>\d+))?(?:_rw_(?P<rw>[01]))?"
    r"(?:_bias_(?P<bias>[A-Za-z0-9_:<>]+))?$")
_SOLUTIONS = (
    ("hipblaslt", re.compile(r"^Gemm_Hipblaslt_(?:(?P<layout>[NT]{2})_)?(?P<index>\d+)$")),
    ("hipblaslt", re.compile(r"^Gemm_Hipblaslt_(?P<layout>[NT]{2})_\d+_algo_(?P<index>\d+)$")),
    ("rocblas", re.compile(r"^Gemm_Rocblas_(?P<index>-?\d+)$")),
    ("cublaslt", re.compile(r"^Gemm_Cublaslt_(?:(?P<layout>[NT]{2})_)?(?P<index>\d+)$")),
    ("unknown", re.compile(r"^(?P<index>-?\d+)$")),
)


def tunableop_style(pt_version: str) -> str:
    """``current`` (PyTorch >= 2.7: ``_ld_`` params, ``Gemm_Hipblaslt_<index>``) or ``legacy``
    (PyTorch 2.2-2.6: ``<l>_<m>_<n>_<k>``, ``Gemm_Hipblaslt_<TA><TB>_<index>``)."""
    match = re.match(r"^\s*(\d+)\.(\d+)", str(pt_version))
    if not match:
        raise ExportError(f"PT_VERSION {pt_version!r} is not a version number; pass style= "
                          f"({' or '.join(STYLES)})")
    return "current" if (int(match[1]), int(match[2])) >= (2, 7) else "legacy"


def default_validators(arch: str, hipblaslt_version: str | None = None,
                       torch_version: str | None = None, rocm_version: str | None = None, *,
                       rocblas_version: str | None = None,
                       extra: dict | None = None) -> dict[str, str]:
    """Validator lines for a ROCm TunableOp file: PT_VERSION, ROCM_VERSION, HIPBLASLT_VERSION,
    GCN_ARCH_NAME (+ ROCBLAS_VERSION, + ``extra``), in the order of the PyTorch 2.4 fixtures.

    ``torch_version`` None: the installed torch's release (``X.Y.Z``, as ``TORCH_VERSION``),
    ExportError when torch is not installed. Other None values are left out. TunableOp rejects
    the whole file unless its key set equals the running process's and every value matches
    (``arch`` must be the full gcnArchName, e.g. ``gfx942:sramecc+:xnack-``; ROCBLAS_VERSION is
    expected whenever rocBLAS is enabled, the default). The safest source is the target process:
    ``dict(torch.cuda.tunable.get_validators())``."""
    if torch_version is None:
        from importlib import metadata

        try:
            installed = metadata.version("torch")
        except metadata.PackageNotFoundError:
            raise ExportError("torch_version is needed: torch is not installed here") from None
        match = re.match(r"^\d+\.\d+\.\d+", installed)
        torch_version = match[0] if match else installed
    arch = str(arch).strip()
    if not arch:
        raise ExportError("arch: empty")
    if ":" not in arch and arch.startswith("gfx9"):
        warnings.warn(f"GCN_ARCH_NAME {arch!r} has no feature suffix; PyTorch compares the full "
                      "gcnArchName (e.g. 'gfx942:sramecc+:xnack-')", stacklevel=2)
    out = {"PT_VERSION": torch_version}
    if rocm_version is not None:
        out["ROCM_VERSION"] = rocm_version
    if hipblaslt_version is not None:
        out["HIPBLASLT_VERSION"] = hipblaslt_version
    out["GCN_ARCH_NAME"] = arch
    if rocblas_version is not None:
        out["ROCBLAS_VERSION"] = rocblas_version
    out.update(extra or {})
    return {str(k): str(v) for k, v in out.items()}


def _check_validators(validators) -> dict[str, str]:
    if not isinstance(validators, dict) or not validators:
        raise ExportError("validators: a non-empty dict of Validator lines is needed "
                          "(see default_validators)")
    out = {}
    for key, value in validators.items():
        key = _check_token(key, "validator key")
        value = _check_token(value, f"validator {key}")
        if not key or not value:
            raise ExportError(f"validator {key!r}: empty key or value")
        out[key] = value
    if "PT_VERSION" not in out:
        raise ExportError("validators: PT_VERSION is mandatory (TunableOp rejects a file "
                          "without it)")
    return out


def _export_type_name(row: dict, style: str) -> str:
    t = row["problem"].type
    data = {t.a_type, t.b_type, t.c_type, t.d_type}
    table = _EXPORT_TYPES_CURRENT if style == "current" else _EXPORT_TYPES
    name = table.get((t.a_type, t.compute_type)) if len(data) == 1 else None
    if name is None:
        known = ", ".join(f"{d}/{c}" for d, c in table)
        raise ExportError(
            f"{row['where']}: TunableOp has no GEMM op for a/b/c/d = "
            f"{t.a_type}/{t.b_type}/{t.c_type}/{t.d_type} with compute {t.compute_type} "
            f"({style} style exports {known}; fp8 goes through ScaledGemmTunableOp, "
            "which is not exported)")
    return name


def winners_from_results(kept: pd.DataFrame) -> pd.DataFrame:
    """The tuned side of kept results rows (results/final_results.csv) as a winners table."""
    identity = [c for c in (*IDENTITY, "scaleA", "scaleB") if c in kept]
    winners = kept[identity].copy()
    winners["solution_index"] = kept["solution_index_tuned"].astype(int)
    winners["solution_name"] = kept["solution_name_tuned"]
    winners["us"] = kept["us_tuned"]
    return winners.reset_index(drop=True)


def tunableop_supported(gemm_type, style: str = "current") -> bool:
    """Whether TunableOp has a GEMM op for this type (bf16/f16/f32 and, current style, tf32/f64;
    one type for A, B, C and D)."""
    table = _EXPORT_TYPES_CURRENT if style == "current" else _EXPORT_TYPES
    t = gemm_type
    return len({t.a_type, t.b_type, t.c_type, t.d_type}) == 1 and \
        (t.a_type, t.compute_type) in table


def write_tunableop(winners: pd.DataFrame, path, *, validators: dict,
                    style: str | None = None) -> Path:
    """Write ``winners`` as a PyTorch TunableOp results file (module docstring, section 2).

    ``validators``: the Validator lines (dict, PT_VERSION mandatory; see default_validators).
    ``style``: ``current`` or ``legacy``; by default from PT_VERSION (tunableop_style). The
    solution is ``Gemm_Hipblaslt_<solution_index>`` (legacy: with the layout), the time is
    ``us`` / 1000 (ms), left out when the winners have no time. Atomic write."""
    validators = _check_validators(validators)
    style = tunableop_style(validators["PT_VERSION"]) if style is None else style
    if style not in STYLES:
        raise ExportError(f"style must be one of {', '.join(STYLES)}, got {style!r}")
    rows = _rows(winners, need_name=False)
    lines = [f"Validator,{key},{value}" for key, value in validators.items()]
    seen: dict[tuple, str] = {}
    for row in rows:
        p = row["problem"]
        t = p.type
        type_name = _export_type_name(row, style)
        layout = t.transA + t.transB
        op = "GemmTunableOp" if p.batch == 1 else "GemmStridedBatchedTunableOp"
        params = f"{layout.lower()}_{p.m}_{p.n}_{p.k}"
        if p.batch > 1:
            params += f"_B_{p.batch}"
        if style == "current":
            lda, ldb, ldc, _ = _packed_lds(row)
            params += f"_ld_{lda}_{ldb}_{ldc}"
            solution = f"Gemm_Hipblaslt_{row['index']}"
        else:
            solution = f"Gemm_Hipblaslt_{layout}_{row['index']}"
        op_sig = f"{op}_{type_name}_{layout}"
        key = (op_sig, params)
        if key in seen:
            raise ExportError(f"{row['where']}: duplicate TunableOp key {op_sig},{params} "
                              f"(also {seen[key]})")
        seen[key] = row["where"]
        line = f"{op_sig},{params},{solution}"
        if row["us"] is not None:
            line += f",{_num(row['us'] / 1e3)}"
        lines.append(line)
    return files.write_text(path, "\n".join(lines) + "\n")


def _split_type_names(r: _Reader, text: str, count: int) -> list[str]:
    names, rest = [], text
    while rest:
        for name in _TYPE_NAMES_LONGEST_FIRST:
            if rest == name or rest.startswith(name + "_"):
                names.append(name)
                rest = rest[len(name) + 1:]
                break
        else:
            raise r.error("op", f"unknown dtype {rest.split('_')[0]!r} in {text!r} (known: "
                          f"{', '.join(TUNABLEOP_TYPES)})")
    if len(names) != count:
        raise r.error("op", f"expected {count} dtype name(s), got {text!r}")
    return names


_TUNABLEOP_COLUMNS = ("op_signature", "params_signature", "op", *IDENTITY, "lda", "ldb", "ldc",
                      "solution", "backend", "solution_index", "backend_index", "time_ms", "us")


def read_tunableop(path) -> pd.DataFrame:
    """Read a PyTorch TunableOp results file: one row per result with ``op_signature`` and
    ``params_signature`` (as written), ``op`` (GemmTunableOp, ...),
    the GEMM identity in hipBLASLt terms (``IDENTITY``), ``lda, ldb, ldc`` (NA in the legacy
    format), ``solution`` (as written), ``backend`` (hipblaslt, rocblas, cublaslt, default,
    unknown), ``solution_index`` (the hipBLASLt index; NA for Default and other libraries),
    ``backend_index`` (the number in the solution name, any library), ``time_ms`` and ``us``
    (NaN without a time); ``rowwise``/``bias`` for ScaledGemm rows and ``blas_params`` when
    present. ``df.attrs["validators"]``: the Validator lines as a dict, in file order. Any
    malformed line raises ExportError naming file, line and field."""
    r = _Reader(path)
    validators: dict[str, str] = {}
    records = []
    for r.line, raw in enumerate(r.text.splitlines(), start=1):
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        parts = line.split(",")
        if parts[0] == "Validator":
            if len(parts) != 3:
                raise r.error("Validator", f"expected 'Validator,<KEY>,<VALUE>' (3 fields), "
                              f"got {len(parts)}")
            key, value = parts[1].strip(), parts[2].strip()
            if not key:
                raise r.error("Validator", "empty key")
            if key in validators:
                raise r.error("Validator", f"duplicate key {key!r}")
            validators[key] = value
            continue
        blas = None
        if len(parts) > 4:
            if not parts[4].lstrip().startswith("BLAS_PARAMS"):
                raise r.error("fields", f"expected 3 or 4 comma-separated fields (op, params, "
                              f"solution, time), got {len(parts)}")
            blas = ",".join(parts[4:]).strip()
            parts = parts[:4]
        if len(parts) < 3:
            raise r.error("fields", f"expected 3 or 4 comma-separated fields (op, params, "
                          f"solution, time), got {len(parts)}")
        op_sig, params_sig, solution = (p.strip() for p in parts[:3])
        match = _OP_RE.match(op_sig)
        if not match:
            raise r.error("op", f"not a TunableOp signature: {op_sig!r}")
        op, layout = match["op"], match["layout"]
        if op not in _OPS:
            raise r.error("op", f"unknown TunableOp {op!r} (known: {', '.join(_OPS)})")
        scaled = op == "ScaledGemmTunableOp"
        names = _split_type_names(r, match["types"], 3 if scaled else 1)
        if scaled:
            (a, _), (b, _), (c, _) = (TUNABLEOP_TYPES[n] for n in names)
            compute = "c_f32_r"
        else:
            a, compute = TUNABLEOP_TYPES[names[0]]
            b = c = a
        pm = _PARAMS_RE.match(params_sig)
        if not pm:
            raise r.error("params", f"not a TunableOp GEMM params signature: {params_sig!r}")
        if pm["layout"].upper() != layout:
            raise r.error("params", f"layout {pm['layout']!r} differs from the op's {layout!r}")
        if (pm["batch"] is not None) != (op == "GemmStridedBatchedTunableOp"):
            raise r.error("params", f"{op} {'needs' if pm['batch'] is None else 'has no'} "
                          f"_B_<batch> field: {params_sig!r}")
        if (pm["rw"] is not None or pm["bias"] is not None) and not scaled:
            raise r.error("params", f"_rw_/_bias_ fields belong to ScaledGemmTunableOp only: "
                          f"{params_sig!r}")
        rec = {"op_signature": op_sig, "params_signature": params_sig, "op": op,
               "transA": layout[0], "transB": layout[1],
               "batch_count": r.int(pm["batch"], "params", 1) if pm["batch"] else 1,
               "m": r.int(pm["m"], "params", 1), "n": r.int(pm["n"], "params", 1),
               "k": r.int(pm["k"], "params", 1),
               "a_type": a, "b_type": b, "c_type": c, "d_type": c, "compute_type": compute}
        r.gemm_type(rec)
        for field in ("lda", "ldb", "ldc"):
            rec[field] = int(pm[field]) if pm[field] is not None else pd.NA
        for backend, pattern in _SOLUTIONS:
            sm = pattern.match(solution)
            if sm:
                break
        else:
            if solution != "Default":
                raise r.error("solution", f"not a solution name (Default, Gemm_Hipblaslt_<index>, "
                              f"Gemm_Rocblas_<index>, ...): {solution!r}")
            backend, sm = "default", None
        if sm is not None and sm.groupdict().get("layout") and sm["layout"] != layout:
            raise r.error("solution", f"layout {sm['layout']!r} differs from the op's {layout!r}")
        number = r.int(sm["index"], "solution") if sm is not None else None
        rec.update(solution=solution, backend=backend,
                   solution_index=number if backend == "hipblaslt" else pd.NA,
                   backend_index=pd.NA if number is None else number)
        rec["time_ms"] = r.float(parts[3], "time") if len(parts) > 3 else math.nan
        rec["us"] = rec["time_ms"] * 1e3
        if scaled:
            rec["rowwise"] = None if pm["rw"] is None else pm["rw"] == "1"
            rec["bias"] = pm["bias"]
        if blas is not None:
            rec["blas_params"] = blas
        records.append(rec)
    present = {key for rec in records for key in rec}
    order = list(_TUNABLEOP_COLUMNS) + [c for c in ("rowwise", "bias", "blas_params")
                                         if c in present]
    frame = pd.DataFrame.from_records(records, columns=order)
    for field in ("batch_count", "m", "n", "k"):
        frame[field] = frame[field].astype("int64")
    for field in ("lda", "ldb", "ldc", "solution_index", "backend_index"):
        frame[field] = frame[field].astype("Int64")
    for field in ("time_ms", "us"):
        frame[field] = frame[field].astype("float64")
    frame.attrs["validators"] = validators
    return frame
