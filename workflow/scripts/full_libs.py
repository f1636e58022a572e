"""results/raw_results.csv + libs/ -> full_libs/: every GEMM with its winner (the tuned kernel
where it was kept, the reference kernel elsewhere)."""
from geko_lib import files, gemm, jobs, library, platforms
from geko_lib.campaign import provenance


def main(smk):
    results = jobs.read_table(smk.input.raw)
    platform = platforms.get(smk.config)

    def reference(row):
        problem = gemm.GemmProblem.from_row(row)
        return platform.reference_solution(problem, int(row["solution_index_reference"]))

    provenance.check(smk.input.libs, smk.config, platform)
    with files.staged_dir(smk.output[0]) as staging:
        libs = library.full_libs(results, smk.input.libs, reference)
        library.write_collection(libs, staging, header=platform.note or None)
        provenance.write(staging, smk.config, platform)


jobs.run(main, snakemake)  # noqa: F821
