"""workload.yaml -> baseline/workload.csv: what the application gets today, per GEMM."""
from pathlib import Path

from geko_lib import files, jobs, workload


def main(smk):
    problems = workload.problems(workload.read(smk.input[0]))
    with jobs.on_device(smk.config) as (platform, device):
        results = platform.bench(problems, Path(smk.output[0]).parent, device,
                                 duration=smk.config["bench_duration"])
    files.write_csv(smk.output[0], results)


jobs.run(main, snakemake)  # noqa: F821
