"""summary.csv and libs/ -> benchmarks/uncompared-reference.csv: the default kernel's time of
the GEMMs no library holds (their search or tuning job failed), where no baseline timed the
workload (keep_thr 0); the analysis weighs every GEMM by its share of the whole workload's time
with it. The workflow has this job only where there is such a GEMM (Layout.uncompared).

The timing runs supervised, as a tuning job does: the GEMM whose job failed may be the one that
hangs the tool, and a hung timing here would hold the campaign at its last step. A timing whose
log stops growing for stall_timeout seconds is killed; the GEMMs are then timed one by one, and
one that hangs alone is left out by name (its share of the time stays unknown, as when the tool
fails on it: analysis.n_untimed)."""
import logging
from pathlib import Path

import pandas as pd

from .. import files, jobs, library
from ..bench import bench
from ..campaign import analysis, integrity
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)


def run(job):
    problems = analysis.uncompared_problems(jobs.read_table(job.input.summary),
                                            library.load_dir(job.input.libs))
    table = Path(job.output.table)
    try:
        results = _timed(job, problems, table)
    except jobs.StallError as exc:
        log.warning("timing the %d uncompared GEMM(s) together stalled (%s): one at a time",
                    len(problems), exc)
        results = pd.concat([_timed_alone(job, problem, table) for problem in problems],
                            ignore_index=True)
    files.write_csv(table, results)


def _timed(job, problems, table: Path) -> pd.DataFrame:
    """``bench.time_uncompared`` of ``problems`` in a supervised child (which leases the
    device itself, as a tuning job's does), through a part file beside ``table``."""
    part = table.with_name(f"{table.stem}.part.csv")

    def work():
        with jobs.on_device(job.config) as (platform, device):
            files.write_csv(part, bench.time_uncompared(platform, problems, table.parent,
                                                        device, job.config["compare_duration"]))

    try:
        jobs.supervise(work, job.log[0], job.config["stall_timeout"])
        return integrity.read_table(part)
    finally:
        part.unlink(missing_ok=True)


def _timed_alone(job, problem, table: Path) -> pd.DataFrame:
    try:
        return _timed(job, [problem], table)
    except jobs.StallError as exc:
        log.warning("%s: no reference timing (%s); its share of the workload's GEMM time stays "
                    "unknown", problem.name, exc)
        return pd.DataFrame(columns=[*analysis.KEYS, "us"])
