"""winners.csv -> libs/*.yaml: library logic holding the winning solutions."""
from geko_lib import phases

phases.run(snakemake, "extract")  # noqa: F821
