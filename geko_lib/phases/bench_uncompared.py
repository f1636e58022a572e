"""summary.csv and libs/ -> benchmarks/uncompared-reference.csv: the default kernel's time of
the GEMMs no library holds (their search or tuning job failed), where no baseline timed the
workload (keep_thr 0); the analysis weighs every GEMM by its share of the whole workload's time
with it. The workflow has this job only where there is such a GEMM (Layout.uncompared)."""
from pathlib import Path

from .. import files, jobs, library
from ..bench import bench
from ..campaign import analysis


def run(job):
    problems = analysis.uncompared_problems(jobs.read_table(job.input.summary),
                                            library.load_dir(job.input.libs))
    with jobs.on_device(job.config) as (platform, device):
        results = bench.time_uncompared(platform, problems, Path(job.output.table).parent,
                                        device, job.config["compare_duration"])
    files.write_csv(job.output.table, results)
