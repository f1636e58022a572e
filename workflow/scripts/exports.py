"""results/final_results.csv -> exports/: hipBLASLt tuning override file, TunableOp results."""
from geko_lib import phases

phases.run(snakemake, "exports")  # noqa: F821
