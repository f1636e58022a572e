"""baseline/parts/*.csv -> baseline/workload.csv: the parts' rows back in workload order; and the
original's updated benchmark log <log>.yaml with its results <log>.out in the workdir."""
from geko_lib.bench import log as bench_log, text as bench_text, benchmark_log, summary
from geko_lib import files, jobs, platforms, workload


def main(smk):
    table = workload.read(smk.input.workload)
    n_problems = len(workload.problems(table))
    parts = [jobs.read_table(path) for path in smk.input.parts]
    merged = summary.merge_parts(parts, n_problems)
    files.write_csv(smk.output.table, merged)
    rows = benchmark_log.updated_rows(bench_log.records(table), merged, smk.params.duration,
                                      smk.params.rotating_mb)
    files.write_text(smk.output.bench_log, workload.rows_text(rows))
    caps = platforms.capabilities(smk.config)
    files.write_text(smk.output.bench_out, bench_text.format_results(
        merged, bench_text.preamble(smk.config["platform"], caps.measured)))


jobs.run(main, snakemake)  # noqa: F821
