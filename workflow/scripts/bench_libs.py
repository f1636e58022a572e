"""One device's share of the libraries: each timed with the default and the created library and
checked, each library's files stamped as it finishes."""
from geko_lib import phases

phases.run_script(snakemake, "bench_libs")  # noqa: F821
