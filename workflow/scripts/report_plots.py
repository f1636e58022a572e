"""results/ (+ tuning logs) -> report/: the campaign's figures and tables (geko_lib.report)."""
from geko_lib import phases

phases.run_script(snakemake, "report_plots")  # noqa: F821
