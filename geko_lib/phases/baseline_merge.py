"""baseline/parts/*.csv -> baseline/workload.csv: the parts' rows back in workload order; and the
original's updated benchmark log <log>.yaml with its results <log>.out in the workdir (the
tool's own output where the platform ran one: bench_out_text)."""
from ..bench import log as bench_log, benchmark_log
from ..bench_formats import text as bench_text, summary
from .. import files, jobs, platforms, workload


def run(job):
    table = workload.read(job.input.workload, support=platforms.gemm_support(None))
    n_problems = len(workload.problems(table))
    parts = [jobs.read_table(path) for path in job.input.parts]
    merged = summary.merge_parts(parts, n_problems)
    files.write_csv(job.output.table, merged)
    rows = benchmark_log.updated_rows(bench_log.records(table), merged, job.params.duration,
                                      job.params.rotating_mb)
    files.write_text(job.output.bench_log, workload.rows_text(rows))
    files.write_text(job.output.bench_out, bench_out_text(job, merged))


def bench_out_text(job, merged) -> str:
    """<log>.out: the parts' outputs one after another where each is the tool's own (rocm:
    hipblaslt-bench's as it printed them; one part per device), else the merged table in
    hipblaslt-bench's layout."""
    outs = [bench_text.out_beside(p).read_text() for p in job.input.parts]
    if outs and not any(bench_text.is_rendered(text) for text in outs):
        return "".join(outs)
    caps = platforms.capabilities(job.config)
    return bench_text.format_results(
        merged, bench_text.preamble(job.config["platform"], caps.measured))
