"""workload.yaml (+ baseline timings) -> summary.csv, gemms.csv."""
from .. import files, jobs, platforms, workload
from ..bench_formats import summary


def run(job):
    baseline = jobs.read_table(job.input.baseline[0]) if job.input.baseline else None
    rows = workload.read(job.input.workload, support=platforms.gemm_support(None))
    table, gemms = summary.summarize(rows, baseline, job.params.keep_thr, refuse_empty=True)
    files.write_csv(job.output.summary, table)
    files.write_csv(job.output.gemms, gemms)
