"""final_libs/ + the combine_with campaigns' final_libs/ -> combined_libs/ and
results/combined_results.csv: per GEMM the fastest verified kernel, raced side by side."""
import logging
from pathlib import Path

from ..campaign import state as campaign_state, combine, integrity, layout, provenance
from .. import files, jobs, library, platforms, progress
from ..gemm import GemmProblem
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)


def sources(job) -> list[combine.Source]:
    others = [Path(p).parent for p in job.input.others if Path(p).name == layout.FINAL_LIBS]
    if not others:
        raise combine.CombineError("target combine: config key combine_with names no other "
                                   "campaign's workdir (e.g. combine_with: [runs/tune])")
    campaign = campaign_state.identity(job.config)
    gemms = combine.workload_gemms(job.input.workload)
    out = [combine.source("this", job.input.final)]
    seen: set = set()
    for workdir in others:
        combine.check_not_this(workdir, Path.cwd(), seen)  # the job runs in this workdir
        name = combine.label(workdir, {s.name for s in out})
        out.append(combine.check_source(workdir, campaign, name, gemms))
        log.info("combine: %s is %s", name, workdir)
    return out


def run(job):
    if not platforms.capabilities(job.config).combine:
        raise combine.CombineError(f"target combine: the {job.config['platform']} platform "
                                   "cannot race kernels of several campaigns side by side")
    provenance.check(job.input.final, job.config)
    provenance.check(job.input.workload, job.config)
    racing = sources(job)
    entrants_by_gemm = combine.candidates(racing)
    rows = []
    with jobs.on_device(job.config) as (platform, device):
        with progress.Progress(len(entrants_by_gemm), "combine", unit="GEMM") as bar:
            for (gemm_type, size), entrants in sorted(entrants_by_gemm.items()):
                problem = GemmProblem(gemm_type, *size)
                raced = platform.race(problem, [None] + [c.solution for c in entrants], device)
                rows.append(combine.choose(problem, entrants, raced, job.params.up_thr,
                                           job.params.err_thr))
                bar.update(1)
            bar.finish()
    libs = combine.build_libraries(rows, racing)
    results = combine.results_frame(rows)
    with files.staged_dir(job.output.libs) as staging:
        for name, lib in libs.items():
            library.dump(lib, staging / name, header=platform.note or None)
        integrity.verify_shipped(staging, results[results["kept"]],
                                 combine.workload_gemms(job.input.workload))
        provenance.write(staging, job.config, platform)
    files.write_csv(job.output.results, results)
    log.info("combined library: %s; in: '%s'", combine.summary(results),
             Path(job.output.libs).resolve())
