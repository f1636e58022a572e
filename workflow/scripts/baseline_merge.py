"""baseline/parts/*.csv -> baseline/workload.csv: the parts' rows back in workload order."""
from geko_lib import files, jobs, summary, workload


def main(smk):
    n_problems = len(workload.problems(workload.read(smk.input.workload)))
    parts = [jobs.read_table(path) for path in smk.input.parts]
    files.write_csv(smk.output[0], summary.merge_parts(parts, n_problems))


jobs.run(main, snakemake)  # noqa: F821
