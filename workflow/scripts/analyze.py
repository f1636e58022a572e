"""reference, tuned and verify results -> results/raw_results.csv, final_results.csv, metrics.json."""
from pathlib import Path

import pandas as pd

from geko_lib.optim import analysis
from geko_lib import jobs, optim, original_columns, platforms


def concat(paths):
    """The tables of ``paths`` in one, without the original's column copies (a join would take
    them for columns both sides share; they are added back, suffixed, to what is written)."""
    if not paths:
        return None
    return pd.concat([original_columns.without(jobs.read_table(p)) for p in paths],
                     ignore_index=True)


def main(smk):
    raw = analysis.compare(concat(smk.input.reference), concat(smk.input.tuned),
                           concat(smk.input.verify), smk.params.up_thr, smk.params.err_thr,
                           weights=jobs.read_table(smk.input.summary))
    # the same writer as geko_lib.optim.analyze: raw_results, final_results, metrics, log lines
    optim.write_results(raw, Path(smk.output.raw).parent, smk.params.up_thr, smk.params.err_thr,
                        platforms.get(smk.config), smk.config)


jobs.run(main, snakemake)  # noqa: F821
