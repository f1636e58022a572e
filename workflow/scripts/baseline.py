"""workload.yaml -> baseline/parts/part_<i>_of_<n>.csv: what the application gets today, for
every n-th GEMM starting at i (one part per device, as many as there are GEMMs at most, so the
baseline fans out too and no part is without work)."""
from geko_lib import phases

phases.run_script(snakemake, "baseline")  # noqa: F821
