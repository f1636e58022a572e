"""Exports of tuning winners into the files applications load without rebuilding a library,
each with a matching reader: hipBLASLt's user offline-tuning file (``override``,
``HIPBLASLT_TUNING_OVERRIDE_FILE``), PyTorch TunableOp's results file (``tunableop``,
``PYTORCH_TUNABLEOP_FILENAME``) and aiter's tuned-GEMM CSV (``aiter``, ``AITER_CONFIG_GEMM_BF16``:
vLLM and SGLang on ROCm), all written from a winners table (``winners``): one row per
GEMM with the GEMM identity (hipBLASLt type names, ``compute_type`` with the ``c_`` prefix, BLAS
column-major M/N/K as hipBLASLt logs them), ``solution_index`` (int), ``solution_name`` (str)
and optionally ``us``; ``scaleA, scaleB, lda, ldb, ldc, ldd, stride_a..stride_d, bias_type,
rotating, platform`` are used when present. Only platforms whose capabilities list the formats
export them (``require_exportable``).
"""

from .override import OVERRIDE_COLUMNS, read_tuning_override, write_tuning_override  # noqa: F401
from .tunableop import (STYLES, TUNABLEOP_TYPES, default_validators, read_tunableop,
                        tunableop_style, tunableop_supported, write_tunableop)
from .winners import IDENTITY, ExportError, require_exportable, winners_from_results  # noqa: F401
from .aiter import AITER_TUNED_COLUMNS, read_aiter_tuned, write_aiter_tuned  # noqa: F401

__all__ = ["ExportError", "IDENTITY", "OVERRIDE_COLUMNS", "TUNABLEOP_TYPES",
           "write_tuning_override", "read_tuning_override", "write_tunableop", "read_tunableop",
           "default_validators", "tunableop_style", "STYLES", "require_exportable",
           "winners_from_results", "tunableop_supported", "AITER_TUNED_COLUMNS",
           "write_aiter_tuned", "read_aiter_tuned"]
