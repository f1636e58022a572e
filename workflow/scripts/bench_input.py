"""libs/<lib>.yaml -> benchmarks/<lib>_bench.yaml and _verify.yaml (hipblaslt-bench rows), by the
original's Library.create_bench_input."""
from geko_lib import phases

phases.run_script(snakemake, "bench_input")  # noqa: F821
