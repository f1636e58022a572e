"""libs/<lib>.yaml -> benchmarks/<lib>_bench.yaml and _verify.yaml (hipblaslt-bench rows), by the
original's Library.create_bench_input."""
from pathlib import Path

from geko_lib import jobs, library


def main(smk):
    lib = library.load(smk.input[0])
    # writes <lib>_bench.yaml and <lib>_verify.yaml: the rule's outputs
    lib.create_bench_input(Path(smk.output.bench).parent, verify=True,
                           duration=smk.params.duration, rotating=smk.params.rotating_mb)


jobs.run(main, snakemake)  # noqa: F821
