"""baseline/parts/*.csv -> baseline/workload.csv: the parts' rows back in workload order; and the
original's updated benchmark log <log>.yaml with its results <log>.out in the workdir."""
from ..bench import log as bench_log, text as bench_text, benchmark_log, summary
from .. import files, jobs, platforms, workload


def run(job):
    table = workload.read(job.input.workload)
    n_problems = len(workload.problems(table))
    parts = [jobs.read_table(path) for path in job.input.parts]
    merged = summary.merge_parts(parts, n_problems)
    files.write_csv(job.output.table, merged)
    rows = benchmark_log.updated_rows(bench_log.records(table), merged, job.params.duration,
                                      job.params.rotating_mb)
    files.write_text(job.output.bench_log, workload.rows_text(rows))
    caps = platforms.capabilities(job.config)
    files.write_text(job.output.bench_out, bench_text.format_results(
        merged, bench_text.preamble(job.config["platform"], caps.measured)))
