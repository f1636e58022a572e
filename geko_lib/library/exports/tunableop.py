"""PyTorch TunableOp results file (``PYTORCH_TUNABLEOP_FILENAME``)
==============================================================

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

from ... import files
from .winners import IDENTITY, ExportError, _check_token, _num, _packed_lds, _Reader, _rows


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
    name = table.get((t.a_type, t.log_compute_type)) if len(data) == 1 else None
    if name is None:
        known = ", ".join(f"{d}/{c}" for d, c in table)
        raise ExportError(
            f"{row['where']}: TunableOp has no GEMM op for a/b/c/d = "
            f"{t.a_type}/{t.b_type}/{t.c_type}/{t.d_type} with compute {t.compute_type} "
            f"({style} style exports {known}; fp8 goes through ScaledGemmTunableOp, "
            "which is not exported)")
    return name


def tunableop_supported(gemm_type, style: str = "current") -> bool:
    """Whether TunableOp has a GEMM op for this type (bf16/f16/f32 and, current style, tf32/f64;
    one type for A, B, C and D)."""
    table = _EXPORT_TYPES_CURRENT if style == "current" else _EXPORT_TYPES
    t = gemm_type
    return len({t.a_type, t.b_type, t.c_type, t.d_type}) == 1 and \
        (t.a_type, t.log_compute_type) in table


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
            key, value = _validator(r, parts, validators)
            validators[key] = value
            continue
        records.append(_result_line(r, parts))
    frame = _results_frame(records)
    frame.attrs["validators"] = validators
    return frame


def _validator(r: _Reader, parts: list[str], seen: dict) -> tuple[str, str]:
    """A ``Validator,<KEY>,<VALUE>`` line's key and value (a key seen before is refused)."""
    if len(parts) != 3:
        raise r.error("Validator", f"expected 'Validator,<KEY>,<VALUE>' (3 fields), "
                      f"got {len(parts)}")
    key, value = parts[1].strip(), parts[2].strip()
    if not key:
        raise r.error("Validator", "empty key")
    if key in seen:
        raise r.error("Validator", f"duplicate key {key!r}")
    return key, value


def _result_line(r: _Reader, parts: list[str]) -> dict:
    """One result line (op, params, solution[, time][, BLAS_PARAMS...]) as a record."""
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
    op, layout, scaled, (a, b, c, compute) = _op_of(r, op_sig)
    pm = _params_of(r, params_sig, op, layout, scaled)
    rec = {"op_signature": op_sig, "params_signature": params_sig, "op": op,
           "transA": layout[0], "transB": layout[1],
           "batch_count": r.int(pm["batch"], "params", 1) if pm["batch"] else 1,
           "m": r.int(pm["m"], "params", 1), "n": r.int(pm["n"], "params", 1),
           "k": r.int(pm["k"], "params", 1),
           "a_type": a, "b_type": b, "c_type": c, "d_type": c, "compute_type": compute}
    r.gemm_type(rec)
    for field in ("lda", "ldb", "ldc"):
        rec[field] = int(pm[field]) if pm[field] is not None else pd.NA
    rec.update(_solution_of(r, solution, layout))
    rec["time_ms"] = r.float(parts[3], "time") if len(parts) > 3 else math.nan
    rec["us"] = rec["time_ms"] * 1e3
    if scaled:
        rec["rowwise"] = None if pm["rw"] is None else pm["rw"] == "1"
        rec["bias"] = pm["bias"]
    if blas is not None:
        rec["blas_params"] = blas
    return rec


def _op_of(r: _Reader, op_sig: str):
    """(op, layout, scaled, (a, b, c, compute types)) of an op signature."""
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
        return op, layout, scaled, (a, b, c, "c_f32_r")
    a, compute = TUNABLEOP_TYPES[names[0]]
    return op, layout, scaled, (a, a, a, compute)


def _params_of(r: _Reader, params_sig: str, op: str, layout: str, scaled: bool):
    """The params signature's match, checked against its op."""
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
    return pm


def _solution_of(r: _Reader, solution: str, layout: str) -> dict:
    """The solution name's backend and numbers."""
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
    return {"solution": solution, "backend": backend,
            "solution_index": number if backend == "hipblaslt" else pd.NA,
            "backend_index": pd.NA if number is None else number}


def _results_frame(records: list[dict]) -> pd.DataFrame:
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
    return frame
