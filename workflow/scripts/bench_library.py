"""benchmarks/<lib>_bench.yaml -> <lib>_bench-reference.csv (default library) or
<lib>_bench-tuned.csv (with the created library)."""
from geko_lib import phases

phases.run_script(snakemake, "bench_library")  # noqa: F821
