"""winners.csv -> libs/*.yaml: library logic holding the winning solutions."""
from geko_lib import phases

phases.run_script(snakemake, "extract")  # noqa: F821
