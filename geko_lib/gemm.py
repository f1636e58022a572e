"""GEMM identity: data types, GEMM types and problems.

Conventions follow BLAS / hipBLASLt (column-major): D[M, N] = A[M, K] @ B[K, N] per batch, with
``transA``/``transB`` in {"N", "T"}. For a PyTorch ``nn.Linear`` (y = x W^T, x: tokens x in,
W: out x in) hipBLASLt sees ``transA=T, transB=N, M=out_features, N=tokens, K=in_features``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
from .errors import GekoError

# --------------------------------------------------------------------------------------------
# data types


@dataclass(frozen=True)
class DType:
    hipblaslt: str  # "bf16_r"
    tensile: str  # "B"
    enum: int  # Tensile DataType enum in library logic ProblemType
    bytes: float  # storage size of one element
    torch: str | None  # torch dtype attribute name
    mantissa_bits: int | None  # explicit fraction bits, used to emulate rounding


DTYPES: tuple[DType, ...] = (
    DType("f32_r", "S", 0, 4, "float32", 23),
    DType("f64_r", "D", 1, 8, "float64", 52),
    DType("f32_c", "C", 2, 8, "complex64", 23),
    DType("f64_c", "Z", 3, 16, "complex128", 52),
    DType("f16_r", "H", 4, 2, "float16", 10),
    DType("i8_r", "I8", 8, 1, "int8", None),
    DType("i32_r", "I", 6, 4, "int32", None),
    DType("bf16_r", "B", 7, 2, "bfloat16", 7),
    DType("xf32_r", "X", 10, 4, "float32", 10),
    # Tensile's enum: 11/12 are the FNUZ fp8 formats (gfx942), 15/16 the OCP ones (gfx950). The
    # original tool maps all four to f8_r/bf8_r; hipBLASLt names FNUZ types f8_fnuz_r/bf8_fnuz_r.
    DType("f8_fnuz_r", "F8N", 11, 1, "float8_e4m3fnuz", 3),
    DType("bf8_fnuz_r", "B8N", 12, 1, "float8_e5m2fnuz", 2),
    DType("f8_r", "F8", 15, 1, "float8_e4m3fn", 3),
    DType("bf8_r", "B8", 16, 1, "float8_e5m2", 2),
    DType("f4_r", "F4", 21, 0.5, None, 1),  # packed two per byte (the original counts 1 byte)
)

BY_NAME = {d.hipblaslt: d for d in DTYPES}
BY_CODE = {d.tensile: d for d in DTYPES}
BY_ENUM = {d.enum: d for d in DTYPES} | {5: BY_NAME["i8_r"]}  # 5: Tensile's legacy Int8x4
_CODES_LONGEST_FIRST = sorted(BY_CODE, key=len, reverse=True)

TRANSPOSES = ("N", "T")


class GemmError(GekoError, ValueError):
    """An invalid data type, transpose or size."""


def dtype(name: str) -> DType:
    """Look up a hipBLASLt type name (``bf16_r``) or a compute type (``c_f32_r``)."""
    try:
        return BY_NAME[strip_compute_prefix(name)]
    except KeyError:
        raise GemmError(f"unknown data type {name!r} (known: {', '.join(BY_NAME)})") from None


def normalize_compute_type(name: str) -> str:
    """hipBLASLt compute types carry a ``c_`` prefix for 32/64-bit accumulators: f32_r -> c_f32_r;
    others have none (c_f16_r -> f16_r, as library logic reads back), so that one compute type has
    one spelling and a GEMM keeps its identity (and its call_count) through the library."""
    bare = strip_compute_prefix(str(name))
    return "c_" + bare if ("32" in bare or "64" in bare) else bare


def strip_compute_prefix(name: str) -> str:
    return name[2:] if name.startswith("c_") else name


def scale_type_for(compute_type: str) -> str:
    """Default alpha/beta type: the compute type without ``c_`` and without the TF32 ``x``."""
    return strip_compute_prefix(compute_type).lstrip("x")


def split_codes(codes: str) -> list[DType]:
    """Split a concatenation of Tensile codes ("BH", "F8B8", "F8N") into data types."""
    out, rest = [], codes
    while rest:
        for code in _CODES_LONGEST_FIRST:
            if rest.startswith(code):
                out.append(BY_CODE[code])
                rest = rest[len(code) :]
                break
        else:
            raise GemmError(f"unknown Tensile data type code {codes!r}")
    return out


# --------------------------------------------------------------------------------------------
# GEMM type and problem


def normalize_transpose(value) -> str:
    if isinstance(value, bool):
        return "T" if value else "N"
    text = str(value).strip().upper()
    if text not in TRANSPOSES:
        raise GemmError(f"transpose must be N or T, got {value!r}")
    return text


@dataclass(frozen=True, order=True)
class GemmType:
    """What makes GEMMs interchangeable for one kernel: layout and data types."""

    transA: str
    transB: str
    a_type: str
    b_type: str
    c_type: str
    d_type: str | None = None  # None: the original's default, d_type = c_type
    # as the original holds it: without hipBLASLt's c_ prefix (f32_r); log_compute_type is the
    # logged form (c_f32_r), which rows, CSVs and hipblaslt-bench input carry
    compute_type: str | None = None

    def __post_init__(self):
        if self.compute_type is None:
            # the original's six fields (transA, transB, a_type, b_type, c_type, compute_type):
            # given positionally, the sixth value is the compute type
            if self.d_type is None:
                raise GemmError("GemmType needs a compute_type")
            object.__setattr__(self, "compute_type", self.d_type)
            object.__setattr__(self, "d_type", None)
        if self.d_type is None:
            object.__setattr__(self, "d_type", self.c_type)
        for field in ("a_type", "b_type", "c_type", "d_type"):
            dtype(getattr(self, field))
        dtype(self.compute_type)
        object.__setattr__(self, "compute_type", strip_compute_prefix(self.compute_type))
        object.__setattr__(self, "transA", normalize_transpose(self.transA))
        object.__setattr__(self, "transB", normalize_transpose(self.transB))
        data = {self.a_type, self.b_type, self.c_type, self.d_type}
        if self.is_tf32 and data != {"f32_r"}:
            raise GemmError(f"xf32 (TF32) compute needs f32 data, got {sorted(data)}")

    @property
    def log_compute_type(self) -> str:
        """The compute type as hipBLASLt logs it (``c_f32_r``; ``f16_r`` has no prefix)."""
        return normalize_compute_type(self.compute_type)

    # Tensile naming --------------------------------------------------------------------------
    @property
    def is_tf32(self) -> bool:
        return strip_compute_prefix(self.compute_type) == "xf32_r"

    @property
    def data_type(self) -> str:
        if self.is_tf32:
            return "X"
        a, b = BY_NAME[self.a_type].tensile, BY_NAME[self.b_type].tensile
        return a if a == b else a + b

    @property
    def dest_data_type(self) -> str:
        return BY_NAME[self.c_type].tensile

    @property
    def compute_data_type(self) -> str:
        return "S" if self.is_tf32 else dtype(self.compute_type).tensile

    @property
    def types_code(self) -> str:
        """``BBS``: DataType, DestDataType (C), ComputeDataType; then ``O`` and D's code where D's
        type differs from C's (``HHSOS``: f16 C, f32 D), so that two GEMM types never share a
        name, a tuning file or a library file. Tensile itself has one type for C and D."""
        codes = f"{self.data_type}{self.dest_data_type}{self.compute_data_type}"
        if self.d_type != self.c_type:
            codes += "O" + BY_NAME[self.d_type].tensile
        return codes

    @property
    def name(self) -> str:
        """``BBS_TN``: :attr:`types_code`, then transA, transB."""
        return f"{self.types_code}_{self.transA}{self.transB}"

    @property
    def tensile_problem_name(self) -> str:
        """Tensile's problem-type name, e.g. ``Cijk_Alik_Bljk_BBS_BH`` (Batched, HPA)."""
        a = "Alik" if self.transA == "T" else "Ailk"
        b = "Bjlk" if self.transB == "T" else "Bljk"
        types = self.types_code
        if self.data_type == self.dest_data_type == self.compute_data_type and self.d_type == self.c_type:
            types = self.data_type  # Tensile writes SGEMM as S, not SSS
        hpa = "H" if self.high_precision_accumulate else ""
        return f"Cijk_{a}_{b}_{types}_B{hpa}"

    @property
    def high_precision_accumulate(self) -> bool:
        return self.data_type != self.compute_data_type and not self.is_tf32

    @property
    def input_bytes(self) -> float:
        return BY_NAME[self.a_type].bytes

    @property
    def b_bytes(self) -> float:
        return BY_NAME[self.b_type].bytes

    @property
    def output_bytes(self) -> float:
        return BY_NAME[self.d_type].bytes

    @property
    def gemm_name(self) -> str:
        """The original's name for the type (``BBS_TN``)."""
        return self.name

    @classmethod
    def from_hipblaslt(cls, transA: str, transB: str, a_type: str, b_type: str, c_type: str,
                       compute_type: str) -> "GemmType":
        """From hipBLASLt names, as the original's factory: d_type = c_type."""
        return cls(transA, transB, a_type, b_type, c_type, c_type, compute_type)

    @classmethod
    def from_tensile(cls, transA: str, transB: str, data_type: str, dest_data_type: str,
                     compute_data_type: str) -> "GemmType":
        """From Tensile codes, as the original's factory: ``("N", "T", "B", "B", "S")`` -> bf16
        inputs and output, f32 compute; ``DataType`` may name two inputs (``BH``)."""
        inputs = split_codes(data_type)
        if len(inputs) == 1:
            inputs = inputs * 2
        if len(inputs) != 2:
            raise GemmError(f"DataType {data_type!r} names {len(inputs)} types; expected 1 or 2")
        (dest,) = _one(dest_data_type, "DestDataType")
        (comp,) = _one(compute_data_type, "ComputeDataType")
        a, b = (d.hipblaslt for d in inputs)
        if data_type == "X":  # TF32: f32 storage, xf32 compute
            if dest.tensile != "S" or comp.tensile != "S":
                raise GemmError("TF32 (X) needs DestDataType S and ComputeDataType S")
            a = b = "f32_r"
            compute = "c_xf32_r"
        else:
            compute = normalize_compute_type(comp.hipblaslt)
        return cls(transA, transB, a, b, dest.hipblaslt, dest.hipblaslt, compute)

    def log_fields(self) -> dict:
        return {
            "transA": self.transA, "transB": self.transB,
            "a_type": self.a_type, "b_type": self.b_type, "c_type": self.c_type,
            "d_type": self.d_type, "compute_type": self.log_compute_type,
        }


def _one(codes: str, field: str) -> list[DType]:
    parts = split_codes(codes)
    if len(parts) != 1:
        raise GemmError(f"{field} {codes!r} must be a single type code")
    return parts


def _positive_int(field: str, value) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise GemmError(f"{field} must be a positive integer, got {value!r}")
    if not math.isfinite(value) or int(value) != value or value < 1:
        raise GemmError(f"{field} must be a positive integer, got {value!r}")
    return int(value)


# the leading dimensions and batch strides of a logged call (hipBLASLt's names)
LAYOUT_FIELDS = ("lda", "ldb", "ldc", "ldd", "stride_a", "stride_b", "stride_c", "stride_d")


# hipBLASLt's matrices are column-major: a leading dimension smaller than the rows its matrix is
# stored with overlaps the columns, and hipBLASLt refuses the problem (an invalid size).
# field -> (matrix, the transpose field deciding its rows or None, rows when N, rows when T)
STORED_ROWS = {"lda": ("A", "transA", "M", "K"), "ldb": ("B", "transB", "K", "N"),
               "ldc": ("C", None, "M", "M"), "ldd": ("D", None, "M", "M")}


def short_leading_dimension(columns: dict) -> tuple[int, str, str] | None:
    """(row, field, message) of the first row whose lda/ldb/ldc/ldd is below its matrix's stored
    rows (``STORED_ROWS``), or None. ``columns``: M, N, K and the leading dimensions given as
    integer arrays, transA/transB as sequences of N/T."""
    found = []
    for field, (matrix, trans, rows_n, rows_t) in STORED_ROWS.items():
        if field not in columns:
            continue
        given = np.asarray(columns[field], dtype=np.int64)
        transposed = _is_t(columns[trans]) if trans else np.zeros(len(given), bool)
        rows = np.where(transposed, np.asarray(columns[rows_t], dtype=np.int64),
                        np.asarray(columns[rows_n], dtype=np.int64))
        short = np.flatnonzero(given < rows)
        if short.size:
            i = int(short[0])
            name = rows_t if transposed[i] else rows_n
            when = f" when {trans} is {'T' if transposed[i] else 'N'}" if trans else ""
            found.append((i, field, f"must be at least {int(rows[i])} ({name}: {matrix} is stored "
                                    f"with {name} rows{when}), got {int(given[i])}; hipBLASLt "
                                    "refuses a leading dimension below its matrix's rows "
                                    "(invalid size)"))
    return min(found) if found else None


def _is_t(column) -> np.ndarray:
    """True where a column of normalized N/T values says T (one joined buffer: a list of a
    million one-letter strings compares about 20 times faster this way than through numpy)."""
    if isinstance(column, np.ndarray) and column.dtype.kind == "U":
        return column == "T"
    return np.frombuffer("".join(column).encode("ascii"), dtype=np.uint8) == ord("T")


def layout_of(row) -> tuple[tuple[str, int], ...]:
    """The LAYOUT_FIELDS a row records (absent, empty or NaN ones left out)."""
    out = []
    for name in LAYOUT_FIELDS:
        value = row.get(name)
        if isinstance(value, (int, float, np.integer, np.floating)) and \
                not isinstance(value, (bool, np.bool_)) and math.isfinite(value) and value >= 0:
            out.append((name, int(value)))
    return tuple(out)


@dataclass(frozen=True, order=True)
class GemmProblem:
    """One GEMM size of one type. Sizes are written [M, N, batch, K], as Tensile does.

    ``layout`` holds the application's leading dimensions and strides where its log recorded
    them (``LAYOUT_FIELDS``), so a platform that can benchmark them does (rocm's hipblaslt-bench
    rows). It is not part of the GEMM's identity: a kernel tuned for the size serves them all,
    as in the original, whose tuning identity ignores them."""

    type: GemmType
    m: int
    n: int
    batch: int
    k: int
    layout: tuple[tuple[str, int], ...] = dataclasses.field(default=(), compare=False,
                                                            repr=False)

    def __post_init__(self):
        for field in ("m", "n", "batch", "k"):
            object.__setattr__(self, field, _positive_int(field, getattr(self, field)))

    @property
    def size(self) -> tuple[int, int, int, int]:
        return (self.m, self.n, self.batch, self.k)

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k * self.batch

    @property
    def min_bytes(self) -> float:
        """Bytes that must move at least once: read A and B, write D."""
        t = self.type
        return self.batch * (t.input_bytes * self.m * self.k + t.b_bytes * self.k * self.n
                             + t.output_bytes * self.m * self.n)

    @property
    def name(self) -> str:
        return f"{self.type.name}_M{self.m}_N{self.n}_B{self.batch}_K{self.k}"

    def gemm_fields(self) -> dict:
        """The identity columns of hipblaslt-bench output (lowercase m, n, k)."""
        t = self.type
        return {"transA": t.transA, "transB": t.transB, "batch_count": self.batch,
                "m": self.m, "n": self.n, "k": self.k, "a_type": t.a_type, "b_type": t.b_type,
                "c_type": t.c_type, "d_type": t.d_type, "compute_type": t.log_compute_type}

    @classmethod
    def from_row(cls, row) -> "GemmProblem":
        """From a mapping with hipBLASLt keys (M/N/K or m/n/k)."""
        get = row.get
        gemm_type = GemmType(get("transA"), get("transB"), get("a_type"), get("b_type"),
                             get("c_type"), get("d_type", get("c_type")), get("compute_type"))
        m = get("M", get("m"))
        n = get("N", get("n"))
        k = get("K", get("k"))
        return cls(gemm_type, m, n, get("batch_count", 1), k, layout_of(row))


# --------------------------------------------------------------------------------------------
# column sets shared by the workload, summary and results tables (the original tool's names)

GEMM_LOG_FIELDS = ("transA", "transB", "batch_count", "M", "N", "K",
                   "a_type", "b_type", "c_type", "d_type", "compute_type")
GEMM_FIELDS = ("transA", "transB", "batch_count", "m", "n", "k",
               "a_type", "b_type", "c_type", "d_type", "compute_type", "scaleA", "scaleB")
GEMM_TYPE_FIELDS = ("transA", "transB", "a_type", "b_type", "c_type", "compute_type")
LOG_FIELDS = (
    "function", "M", "N", "K", "lda", "ldb", "ldc", "ldd", "stride_a", "stride_b", "stride_c",
    "stride_d", "alpha", "beta", "transA", "transB", "batch_count", "scaleA", "scaleB", "scaleC",
    "scaleD", "swizzleA", "swizzleB", "scaleAlpha_vector", "gradient", "use_e", "bias_vector",
    "bias_source", "a_type", "b_type", "c_type", "d_type", "scale_type", "bias_type", "aux_type",
    "compute_type", "activation_type", "flush", "any_stride", "rotating", "cold_iters", "iters",
    "solution_index", "solution_Name", "kernel_name", "call_count",
)
# Keys hipBLASLt itself writes into mask-64 logs and bench files (the original's update() sets
# them too) that the LOG_FIELDS whitelist drops on purpose: dropped without a warning, unlike
# any other key, which may be a misspelt field (``call_cout``).
HIPBLASLT_DROPPED_FIELDS = ("initialization", "use_gpu_timer", "print_kernel_info", "algo_method",
                            "requested_solution_num")
