"""results/final_results.csv + libs/ -> final_libs/: only the kept kernels, ready to load."""
from geko_lib import phases

phases.run_script(snakemake, "final_libs")  # noqa: F821
