"""libs/<lib>.yaml -> benchmarks/<lib>_bench.yaml and _verify.yaml (hipblaslt-bench rows), by the
original's Library.create_bench_input."""
from pathlib import Path

from .. import jobs, library


def run(job):
    lib = library.load(job.input[0])
    # writes <lib>_bench.yaml and <lib>_verify.yaml: the rule's outputs
    lib.create_bench_input(Path(job.output.bench).parent, verify=True,
                           duration=job.params.duration, rotating=job.params.rotating_mb)
