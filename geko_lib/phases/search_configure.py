"""gemms.csv -> search/chunks/gemms_<first>-<last>.yaml (dense-search rows, one file per job).
Positions are in the search order, where GEMMs are dealt to chunks by baseline cost."""
from pathlib import Path

from .. import jobs, library, search


def run(job):
    gemms, summary = jobs.read_table(job.input.gemms), jobs.read_table(job.input.summary)
    rows = search.search_rows(gemms, summary, job.params.duration, job.params.rotating_mb)
    out = Path(job.output[0])
    out.mkdir(parents=True, exist_ok=True)
    # the device count only shapes the chunks, so it is read here, not a rule param (no reruns)
    bounds = search.chunk_bounds(len(rows), job.params.chunk_size, len(job.config["devices"]))
    rows = search.deal_by_cost(rows, search.baseline_latencies(gemms, summary), bounds)
    for first, last in bounds:
        library.dump_rows(rows[first:last + 1], out / f"{search.chunk_name(first, last)}.yaml")
