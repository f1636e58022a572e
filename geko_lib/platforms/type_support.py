"""Which (a, b, c, d, compute) data-type combinations each platform's GEMM library can run.

A GEMM type no library supports must be refused where it enters (the workload), naming the file,
line and field: otherwise it is "searched", "verified" by a model and shipped in a library nobody
can load. The workload readers are handed a platform's table by
``geko_lib.platforms.gemm_support`` and apply it (:class:`geko_lib.workload.support.GemmSupport`).
The tables name types as hipBLASLt does (``bf16_r``; compute types with the ``c_``
prefix where hipBLASLt prints one, see :func:`geko_lib.gemm.normalize_compute_type`).

Sources, per platform:

- **rocm** (hipBLASLt): the "Supported data types" table of hipBLASLt's data-type-support page
  (docs/reference/data-type-support.rst; its float8/bfloat8 rows hold for the OCP types on gfx950
  and gfx12 and the FNUZ types on gfx94x), the compute modes listed on that page (32F_FAST_TF32,
  16F), float4 (E2M1) as an input-only type (the page's newer revisions), and combinations that
  real hipBLASLt logs and outputs recorded in tests/fixtures show running (each row says which).
- **cuda** (cuBLASLt): the cublasLtMatmul() table of supported computeType / scaleType /
  Atype/Btype / Ctype (regular types) and its FP8 table (E4M3/E5M2 inputs, not E5M2 x E5M2; C of
  bf16, f16 or f32; D equal to C, or an FP8 type when C is 16-bit) in the cuBLAS documentation.
  Block-scaled FP4 needs sm_100 and is left out.
- **sim** models any GEMM the others can run: the union.

On top of a platform's table, the campaign's architecture (``--arch``) may rule out data types
its hardware has no instructions for (``ARCH_LIMITS``, keyed by the device model an arch name
runs as): gfx950 runs the OCP fp8 types, not the FNUZ ones; gfx942 has no float4. gfx942 takes
the OCP fp8 spellings (``f8_r``, ``bf8_r``) as well as the FNUZ ones: TensileLite's F8 is FNUZ
there, and the original's gfx942 MFMA allow-list lists F8 and F8N alike (see
:func:`geko_lib.tuning.mi_designer.mi_family`). An arch without an entry has no such limits.
"""

from __future__ import annotations

from itertools import product

# the shapes of these tables are the workload's, which applies them (GemmSupport)
from ..workload.support import ArchLimit, Combo

F32 = "c_f32_r"  # the 32-bit float accumulator, as the workload readers normalize it

# ---- rocm: hipBLASLt ------------------------------------------------------------------------

_OCP_FP8 = ("f8_r", "bf8_r")
_FNUZ_FP8 = ("f8_fnuz_r", "bf8_fnuz_r")


def _fp8_rows(fp8: tuple[str, str], inputs, computes) -> list[Combo]:
    """FP8 inputs with C = D in the documented output types (f32, f16, bf16 or either FP8 type)."""
    outputs = ("f32_r", "f16_r", "bf16_r", *fp8)
    return [Combo(a, b, out, out, compute) for (a, b), out, compute in product(inputs, outputs, computes)]


def _hipblaslt_fp8(fp8: tuple[str, str]) -> list[Combo]:
    f8, bf8 = fp8
    same = [(f8, f8), (bf8, bf8)]  # the documentation table
    mixed = [(f8, bf8), (bf8, f8)]  # F8B8 / B8F8 (Tensile types 13/14, 17/18); DeepSeekV3 log
    # compute f16: hipBLASLt falls back from f16 to f32 compute (PR #1263; its gfx1201 bench output)
    return _fp8_rows(fp8, same + mixed, (F32, "f16_r"))


ROCM: frozenset[Combo] = frozenset([
    Combo("f32_r", "f32_r", "f32_r", "f32_r", F32),
    Combo("f32_r", "f32_r", "f32_r", "f32_r", "c_xf32_r"),  # compute mode 32F_FAST_TF32 (XSS)
    Combo("f16_r", "f16_r", "f16_r", "f16_r", F32),
    Combo("f16_r", "f16_r", "f16_r", "f32_r", F32),
    Combo("f16_r", "f16_r", "f32_r", "f32_r", F32),  # HSS: the mask-32 log example (fixtures)
    Combo("f16_r", "f16_r", "f16_r", "f16_r", "f16_r"),  # compute mode 16F
    Combo("bf16_r", "bf16_r", "bf16_r", "bf16_r", F32),
    Combo("bf16_r", "bf16_r", "f32_r", "f32_r", F32),  # BSS library logic ships with hipBLASLt
    Combo("i8_r", "i8_r", "i8_r", "i8_r", "c_i32_r"),
    Combo("i8_r", "i8_r", "i32_r", "i32_r", "c_i32_r"),  # I8II
    Combo("i8_r", "i8_r", "i32_r", "bf16_r", "c_i32_r"),  # the recorded gfx938 tuning file
    *_hipblaslt_fp8(_OCP_FP8),
    *_hipblaslt_fp8(_FNUZ_FP8),
    # float4 (E2M1): input only (gfx950 MX kernels)
    *(Combo("f4_r", "f4_r", out, out, F32) for out in ("f32_r", "f16_r", "bf16_r")),
])

# ---- cuda: cuBLASLt -------------------------------------------------------------------------


def _cublaslt_fp8() -> list[Combo]:
    f8, bf8 = _OCP_FP8  # E4M3, E5M2
    rows = []
    for a, b in ((f8, f8), (f8, bf8), (bf8, f8)):
        fp8_outputs = (f8,) if (a, b) == (f8, f8) else (f8, bf8)
        for c in ("bf16_r", "f16_r"):
            rows += [Combo(a, b, c, d, F32) for d in (c, *fp8_outputs)]
        rows.append(Combo(a, b, "f32_r", "f32_r", F32))
    return rows


CUDA: frozenset[Combo] = frozenset([
    Combo("f16_r", "f16_r", "f16_r", "f16_r", "f16_r"),  # COMPUTE_16F
    Combo("i8_r", "i8_r", "i32_r", "i32_r", "c_i32_r"),  # COMPUTE_32I, scale 32I
    Combo("i8_r", "i8_r", "i8_r", "i8_r", "c_i32_r"),  # COMPUTE_32I, scale 32F
    Combo("bf16_r", "bf16_r", "bf16_r", "bf16_r", F32),  # COMPUTE_32F ...
    Combo("f16_r", "f16_r", "f16_r", "f16_r", F32),
    Combo("i8_r", "i8_r", "f32_r", "f32_r", F32),
    Combo("bf16_r", "bf16_r", "f32_r", "f32_r", F32),
    Combo("f16_r", "f16_r", "f32_r", "f32_r", F32),
    Combo("f32_r", "f32_r", "f32_r", "f32_r", F32),
    Combo("f32_c", "f32_c", "f32_c", "f32_c", F32),
    Combo("f32_r", "f32_r", "f32_r", "f32_r", "c_xf32_r"),  # COMPUTE_32F_FAST_TF32
    Combo("f64_r", "f64_r", "f64_r", "f64_r", "c_f64_r"),  # COMPUTE_64F
    Combo("f64_c", "f64_c", "f64_c", "f64_c", "c_f64_r"),
    *_cublaslt_fp8(),
])

# ---- per architecture: data types its hardware cannot run ------------------------------------


ARCH_LIMITS: dict[str, ArchLimit] = {
    "gfx950": ArchLimit(frozenset(_FNUZ_FP8),
                        "gfx950's fp8 types are the OCP ones (f8_r, bf8_r); the FNUZ types "
                        "are gfx942's"),
    "gfx942": ArchLimit(frozenset({"f4_r"}), "gfx942 has no float4 (E2M1) instructions; "
                                             "gfx950 has"),
    # H200 (sm_90): OCP fp8 (E4M3, E5M2) only; block-scaled float4 needs sm_100
    "h200": ArchLimit(frozenset({*_FNUZ_FP8, "f4_r"}),
                      "h200's fp8 types are the OCP ones (f8_r, bf8_r) and it has no float4"),
}


def arch_limit(arch: str | None) -> ArchLimit | None:
    """The types ``arch`` (an ``--arch`` name, e.g. gfx942_80cu, or a device model) cannot
    run; None for no arch, or one without limits."""
    from ..archs import ARCHS

    if not isinstance(arch, str) or not arch:
        return None
    model = ARCHS[arch].model if arch in ARCHS else arch
    return ARCH_LIMITS.get(model)


def runs_on(combo, arch: str | None) -> bool:
    """Whether ``arch``'s hardware takes every data type of ``combo``."""
    limit = arch_limit(arch)
    return limit is None or not limit.types.intersection(Combo(*combo)[:4])


TABLES: dict[str, frozenset[Combo]] = {"rocm": ROCM, "cuda": CUDA, "sim": ROCM | CUDA}
LIBRARY = {"rocm": "hipBLASLt", "cuda": "cuBLASLt", "sim": "hipBLASLt or cuBLASLt (sim models either)"}


def table(platform: str | None, arch: str | None = None) -> frozenset[Combo]:
    """The combinations ``platform`` supports (on ``arch``, when given); every platform's (the
    union) when it is None or not one of the tables (a platform added without a table is
    checked against the union)."""
    rows = TABLES.get(platform or "sim", TABLES["sim"])
    return rows if arch_limit(arch) is None else frozenset(r for r in rows if runs_on(r, arch))


def library_name(platform: str | None) -> str:
    """The GEMM library whose results a platform's rows are."""
    return LIBRARY.get(platform or "sim", LIBRARY["sim"])
