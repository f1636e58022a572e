"""final_libs/ + the combine_with campaigns' final_libs/ -> combined_libs/ and
results/combined_results.csv: per GEMM the fastest verified kernel, raced side by side."""
import logging
from pathlib import Path

from geko_lib.campaign import state as campaign_state, combine, integrity, layout, provenance
from geko_lib import files, jobs, library, platforms, progress
from geko_lib.gemm import GemmProblem

log = logging.getLogger("geko")


def sources(smk) -> list[combine.Source]:
    others = [Path(p).parent for p in smk.input.others if Path(p).name == layout.FINAL_LIBS]
    if not others:
        raise combine.CombineError("target combine: config key combine_with names no other "
                                   "campaign's workdir (e.g. combine_with: [runs/tune])")
    campaign = campaign_state.identity(smk.config)
    gemms = combine.workload_gemms(smk.input.workload)
    out = [combine.source("this", smk.input.final)]
    seen: set = set()
    for workdir in others:
        combine.check_not_this(workdir, Path.cwd(), seen)  # the job runs in this workdir
        name = combine.label(workdir, {s.name for s in out})
        out.append(combine.check_source(workdir, campaign, name, gemms))
        log.info("combine: %s is %s", name, workdir)
    return out


def main(smk):
    if not platforms.capabilities(smk.config).combine:
        raise combine.CombineError(f"target combine: the {smk.config['platform']} platform "
                                   "cannot race kernels of several campaigns side by side")
    provenance.check(smk.input.final, smk.config)
    provenance.check(smk.input.workload, smk.config)
    racing = sources(smk)
    entrants_by_gemm = combine.candidates(racing)
    rows = []
    with jobs.on_device(smk.config) as (platform, device):
        with progress.Progress(len(entrants_by_gemm), "combine", unit="GEMM") as bar:
            for (gemm_type, size), entrants in sorted(entrants_by_gemm.items()):
                problem = GemmProblem(gemm_type, *size)
                raced = platform.race(problem, [None] + [c.solution for c in entrants], device)
                rows.append(combine.choose(problem, entrants, raced, smk.params.up_thr,
                                           smk.params.err_thr))
                bar.update(1)
            bar.finish()
    libs = combine.build_libraries(rows, racing)
    results = combine.results_frame(rows)
    with files.staged_dir(smk.output.libs) as staging:
        for name, lib in libs.items():
            library.dump(lib, staging / name, header=platform.note or None)
        integrity.verify_shipped(staging, results[results["kept"]],
                                 combine.workload_gemms(smk.input.workload))
        provenance.write(staging, smk.config, platform)
    files.write_csv(smk.output.results, results)
    log.info("combined library: %s; in: '%s'", combine.summary(results),
             Path(smk.output.libs).resolve())


jobs.run(main, snakemake)  # noqa: F821
