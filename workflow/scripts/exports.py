"""results/final_results.csv -> exports/: hipBLASLt tuning override file, TunableOp results."""
from geko_lib import phases

phases.run_script(snakemake, "exports")  # noqa: F821
