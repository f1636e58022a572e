"""benchmarks/<lib>_bench.yaml and _verify.yaml of one device's share of the libraries ->
per library <lib>_bench-reference.csv (the default library), <lib>_bench-tuned.csv (the created
one) and <lib>_verify-tuned.csv (its numerical error), each with its .out, stamped as it
finishes; and the share's tables in one (benchmarks/parts/<share>-*.csv), what the analysis
reads. The job itself is gpu_jobs.bench_libraries: a rerun redoes only the libraries whose
files have no current stamp, and a library that fails leaves its failure file
(<lib>_failed.log) and fails the job once the others are done."""
from pathlib import Path

import pandas as pd

from .. import files, gpu_jobs, jobs, platforms
from ..campaign import integrity, provenance, state as campaign_state
from ..errors import GekoError


def _libraries(job) -> list[gpu_jobs.LibraryBench]:
    verify = {gpu_jobs.lib_of(path, "verify"): Path(path) for path in job.input.get("verify") or []}
    return [gpu_jobs.LibraryBench(lib, Path(path), verify.get(lib), Path(job.input.library),
                                  job.config["compare_duration"])
            for lib, path in ((gpu_jobs.lib_of(p, "bench"), p) for p in job.input.bench)]


def run(job):
    provenance.check(job.input.library, job.config, platforms.get(job.config))
    campaign = campaign_state.identity(job.config)

    def expected(path):
        return integrity.expected_provenance(campaign, job.config["mode"], path)

    with jobs.on_device(job.config) as (platform, device):
        tables, failed = gpu_jobs.bench_libraries(_libraries(job), platform, device, expected)
    if failed:
        raise GekoError(f"{len(failed)} librar{'y' if len(failed) == 1 else 'ies'} of "
                        f"{job.wildcards.share} failed (" + "; ".join(
                            f"{e['gemm']}: {e['error']}" for e in failed) +
                        "); the others' results are kept: rerun to try again")
    for kind in gpu_jobs.BENCH_STEPS:  # verify only where the campaign checks
        if job.output.get(kind):
            files.write_csv(job.output.get(kind), pd.concat(tables[kind], ignore_index=True))
