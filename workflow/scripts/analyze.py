"""reference, tuned and verify results -> results/raw_results.csv, final_results.csv, metrics.json."""
from geko_lib import phases

phases.run_script(snakemake, "analyze")  # noqa: F821
