"""summary.csv and libs/ -> benchmarks/uncompared-reference.csv (the default kernel's time of the
GEMMs no library holds, keep_thr 0)."""
from geko_lib import phases

phases.run_script(snakemake, "bench_uncompared")  # noqa: F821
