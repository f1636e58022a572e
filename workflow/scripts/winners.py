"""search/data/*.csv -> winners.csv: the fastest candidate of every GEMM."""
import pandas as pd

from geko_lib import files, jobs, search


def main(smk):
    candidates = pd.concat([jobs.read_table(p) for p in smk.input], ignore_index=True)
    files.write_csv(smk.output[0], search.winners(candidates))


jobs.run(main, snakemake)  # noqa: F821
