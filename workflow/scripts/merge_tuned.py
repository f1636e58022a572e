"""optimizations/build_*/3_LibraryLogic -> libs/: tuned libraries merged by file name, trimmed,
with epilogues."""
from geko_lib import phases

phases.run_script(snakemake, "merge_tuned")  # noqa: F821
