"""final_libs/ -> pruned_libs/ + results/prune_report.csv."""
from geko_lib import phases

phases.run_script(snakemake, "prune")  # noqa: F821
