"""results/raw_results.csv + libs/ -> full_libs/: every GEMM with its winner (the tuned kernel
where it was kept, the reference kernel elsewhere)."""
from geko_lib import phases

phases.run_script(snakemake, "full_libs")  # noqa: F821
