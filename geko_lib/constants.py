"""The original's constants (``geko.constants``): the field sets of workload logs and
hipblaslt-bench output, and the hipBLASLt -> Tensile data-type codes. Each is declared once, in
``geko_lib.gemm``; this module names them where a GEKO user imports them from."""

from .gemm import BY_ENUM, DTYPES, GEMM_FIELDS, GEMM_LOG_FIELDS, GEMM_TYPE_FIELDS, LOG_FIELDS

# hipBLASLt data-type name -> Tensile code (bf16_r -> B)
DTYPE = {d.hipblaslt: d.tensile for d in DTYPES}
# bytes of one element by hipBLASLt name
DTYPE_BYTES = {d.hipblaslt: d.bytes for d in DTYPES}
# the timing columns every hipblaslt-bench result row carries
PERF_FIELDS = ("hipblaslt-Gflops", "hipblaslt-GB/s", "us")
# Tensile's numeric DataType enum (library-logic ProblemType) -> hipBLASLt name, as the
# original's INDEX_TYPE_MAP: geko's data types by their enum, and the enums geko has no type for
# (mixed fp8 pairs, i64, fp6). Where geko names a type as hipBLASLt does, it differs from the
# original's table: 10 is xf32_r (the original: xf32), 11/12 are the FNUZ types f8_fnuz_r /
# bf8_fnuz_r (the original maps them to f8_r / bf8_r like 15/16).
INDEX_TYPE_MAP = dict(sorted({9: "i64_r", 13: "f8b8", 14: "b8f8", 17: "f8b8", 18: "b8f8",
                              19: "f6_r", 20: "bf6_r",
                              **{e: d.hipblaslt for e, d in BY_ENUM.items()}}.items()))
