"""gemms.csv -> optimizations/<GEMM>_<i>.yaml (TensileLite tuning YAMLs, one set per GEMM
type), their <GEMM>_<i>.sh (runs one job by hand), Config_<GEMM>.log, and the checkpoint's
manifest optimizations/tuning_configs.txt (written last: the configs the tune phase fans out
over)."""
from geko_lib import phases

phases.run_script(snakemake, "configure")  # noqa: F821
