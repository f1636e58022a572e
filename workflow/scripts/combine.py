"""final_libs/ + the combine_with campaigns' final_libs/ -> combined_libs/ and
results/combined_results.csv: per GEMM the fastest verified kernel, raced side by side."""
from geko_lib import phases

phases.run_script(snakemake, "combine")  # noqa: F821
