"""workload.yaml (+ baseline timings) -> summary.csv, gemms.csv."""
from geko_lib import files, jobs, workload
from geko_lib.bench import summary


def main(smk):
    baseline = jobs.read_table(smk.input.baseline[0]) if smk.input.baseline else None
    table, gemms = summary.summarize(workload.read(smk.input.workload), baseline,
                                     smk.params.keep_thr, refuse_empty=True)
    files.write_csv(smk.output.summary, table)
    files.write_csv(smk.output.gemms, gemms)


jobs.run(main, snakemake)  # noqa: F821
