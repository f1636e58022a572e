"""search/data/*.csv -> winners.csv: the fastest candidate of every GEMM; the GEMMs whose
search failed (search/data/*.failed.yaml) -> search/failed_jobs.log, skipped."""
from geko_lib import phases

phases.run_script(snakemake, "winners")  # noqa: F821
