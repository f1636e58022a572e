"""workload.yaml (+ baseline timings) -> summary.csv, gemms.csv."""
from geko_lib import phases

phases.run_script(snakemake, "summarize")  # noqa: F821
