"""summary.csv and libs/ -> benchmarks/uncompared-reference.csv: the default kernel's time of
the GEMMs no library holds (their search or tuning job failed), where no baseline timed the
workload (keep_thr 0); the analysis weighs every GEMM by its share of the whole workload's time
with it. The workflow has this job only where there is such a GEMM (Layout.uncompared).

Each timing runs supervised, as a tuning job does: the GEMM whose job failed may be the one that
hangs the tool, and a hung timing here would hold the campaign at its last step. A timing whose
log stops growing for stall_timeout seconds is killed, a failure bench.time_uncompared handles
as any other (the GEMMs one by one, one that hangs alone left out by name)."""
from pathlib import Path

from .. import files, jobs, library, platforms
from ..bench import bench
from ..campaign import analysis, integrity


def run(job):
    problems = analysis.uncompared_problems(jobs.read_table(job.input.summary),
                                            library.load_dir(job.input.libs))
    table = Path(job.output.table)
    results = bench.time_uncompared(problems, lambda group: _supervised(job, group, table),
                                    platforms.get(job.config).lib_source)
    files.write_csv(table, results)


def _supervised(job, problems, table: Path):
    """The platform's bench of ``problems`` in a supervised child (which leases the device
    itself, as a tuning job's does), through a part file beside ``table``."""
    part = table.with_name(f"{table.stem}.part.csv")

    def work():
        with jobs.on_device(job.config) as (platform, device):
            files.write_csv(part, platform.bench(problems, table.parent, device,
                                                 duration=job.config["compare_duration"]))

    try:
        jobs.supervise(work, job.log[0], job.config["stall_timeout"])
        return integrity.read_table(part)
    finally:
        part.unlink(missing_ok=True)
