"""reference, tuned and verify results -> results/raw_results.csv, final_results.csv, metrics.json."""
import logging

import pandas as pd

from geko_lib import analysis, files, jobs, platforms


def concat(paths):
    return pd.concat([jobs.read_table(p) for p in paths], ignore_index=True) if paths else None


def main(smk):
    platform = platforms.get(smk.config)
    ceilings = platforms.ceilings(smk.config)  # None: the platform does not know its roofline
    raw = analysis.compare(concat(smk.input.reference), concat(smk.input.tuned),
                           concat(smk.input.verify), smk.params.up_thr, smk.params.err_thr,
                           weights=jobs.read_table(smk.input.summary))
    raw = analysis.enrich(raw, ceilings)
    metrics = analysis.metrics(raw, smk.params.up_thr, smk.params.err_thr,
                               platforms.describe(platform, smk.config), ceilings=ceilings)
    files.write_csv(smk.output.raw, raw)
    files.write_csv(smk.output.final, raw[raw["kept"]])
    files.write_json(smk.output.metrics, metrics)
    for line in analysis.summary_lines(metrics):
        logging.getLogger("geko").info("%s", line)


jobs.run(main, snakemake)  # noqa: F821
