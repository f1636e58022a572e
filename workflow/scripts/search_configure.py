"""gemms.csv -> search/chunks/gemms_<first>-<last>.yaml (dense-search rows, one file per job).
Positions are in the search order, where GEMMs are dealt to chunks by baseline cost."""
from pathlib import Path

from geko_lib import jobs, library, search


def main(smk):
    gemms, summary = jobs.read_table(smk.input.gemms), jobs.read_table(smk.input.summary)
    rows = search.search_rows(gemms, summary, smk.params.duration, smk.params.rotating_mb)
    out = Path(smk.output[0])
    out.mkdir(parents=True, exist_ok=True)
    # the device count only shapes the chunks, so it is read here, not a rule param (no reruns)
    bounds = search.chunk_bounds(len(rows), smk.params.chunk_size, len(smk.config["devices"]))
    rows = search.deal_by_cost(rows, search.baseline_latencies(gemms, summary), bounds)
    for first, last in bounds:
        library.dump_rows(rows[first:last + 1], out / f"{search.chunk_name(first, last)}.yaml")


jobs.run(main, snakemake)  # noqa: F821
