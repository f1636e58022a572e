"""workload.yaml -> baseline/parts/part_<i>_of_<n>.csv: what the application gets today, for
every n-th GEMM starting at i (one part per device, so the baseline fans out too)."""
from pathlib import Path

from geko_lib import files, jobs, original_columns, workload
from geko_lib.bench import rows as bench_rows, summary


def main(smk):
    index, count = summary.part_of(smk.wildcards.part)
    problems = workload.problems(workload.read(smk.input[0]))[index::count]
    with jobs.on_device(smk.config) as (platform, device):
        results = platform.bench(problems, Path(smk.output[0]).parent, device,
                                 duration=bench_rows.baseline_duration(smk.config))
    files.write_csv(smk.output[0], original_columns.add(results, platform.lib_source))


jobs.run(main, snakemake)  # noqa: F821
