"""workload.yaml -> baseline/parts/part_<i>_of_<n>.csv: what the application gets today, for
every n-th GEMM starting at i (one part per device, as many as there are GEMMs at most, so the
baseline fans out too and no part is without work)."""
from pathlib import Path

from geko_lib import files, jobs, original_columns, workload
from geko_lib.bench import rows as bench_rows, summary


def main(smk):
    problems = summary.part_problems(workload.problems(workload.read(smk.input[0])),
                                     smk.wildcards.part)
    with jobs.on_device(smk.config) as (platform, device):
        results = platform.bench(problems, Path(smk.output[0]).parent, device,
                                 duration=bench_rows.baseline_duration(smk.config))
    files.write_csv(smk.output[0], original_columns.add(results, platform.lib_source))


jobs.run(main, snakemake)  # noqa: F821
