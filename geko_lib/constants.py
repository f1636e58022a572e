"""The original's constants (``geko.constants``): the field sets of workload logs and
hipblaslt-bench output, and the hipBLASLt -> Tensile data-type codes. Each is declared once, in
``geko_lib.gemm``; this module names them where a GEKO user imports them from."""

from .gemm import DTYPES, GEMM_FIELDS, GEMM_LOG_FIELDS, GEMM_TYPE_FIELDS, LOG_FIELDS

# hipBLASLt data-type name -> Tensile code (bf16_r -> B)
DTYPE = {d.hipblaslt: d.tensile for d in DTYPES}
# bytes of one element by hipBLASLt name
DTYPE_BYTES = {d.hipblaslt: d.bytes for d in DTYPES}
# the timing columns every hipblaslt-bench result row carries
PERF_FIELDS = ("hipblaslt-Gflops", "hipblaslt-GB/s", "us")
