"""libs/<lib>.yaml -> benchmarks/<lib>_bench.yaml and _verify.yaml (hipblaslt-bench rows)."""
from geko_lib import jobs, library


def main(smk):
    lib = library.load(smk.input[0])
    library.dump_rows(library.bench_rows(lib, smk.params.duration,
                                         rotating_mb=smk.params.rotating_mb), smk.output.bench)
    library.dump_rows(library.bench_rows(lib, smk.params.duration, verify=True),
                      smk.output.verify)


jobs.run(main, snakemake)  # noqa: F821
