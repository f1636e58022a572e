"""reference, tuned and verify results -> results/raw_results.csv, final_results.csv, metrics.json."""
from pathlib import Path

import pandas as pd

from ..campaign import analysis
from .. import jobs, optim, original_columns, platforms


def concat(paths):
    """The tables of ``paths`` in one, without the original's column copies (a join would take
    them for columns both sides share; they are added back, suffixed, to what is written)."""
    if not paths:
        return None
    return pd.concat([original_columns.without(jobs.read_table(p)) for p in paths],
                     ignore_index=True)


def run(job):
    summary = jobs.read_table(job.input.summary)
    reference = concat(job.input.reference)
    # every GEMM's share of the whole workload's time: the baseline's (keep_thr > 0), else the
    # reference benchmarks' and, for the GEMMs whose job failed, bench_uncompared's
    weights = analysis.workload_weights(summary, reference,
                                        concat(job.input.get("uncompared") or []))
    raw = analysis.compare(reference, concat(job.input.tuned), concat(job.input.verify),
                           job.params.up_thr, job.params.err_thr, weights=weights)
    # the same writer as geko_lib.optim.analyze: raw_results, final_results, metrics, log lines;
    # the summary's GEMMs without a result failed, and count as not kept
    optim.write_results(raw, Path(job.output.raw).parent, job.params.up_thr, job.params.err_thr,
                        platforms.get(job.config), job.config, n_workload=len(summary),
                        weights=weights)
