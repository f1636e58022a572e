"""results/raw_results.csv + libs/ -> full_libs/: every GEMM with its winner (the tuned kernel
where it was kept, the reference kernel elsewhere)."""
from .. import files, gemm, jobs, library, platforms
from ..campaign import provenance


def run(job):
    results = jobs.read_table(job.input.raw)
    platform = platforms.get(job.config)

    def reference(row):
        problem = gemm.GemmProblem.from_row(row)
        return platform.reference_solution(problem, int(row["solution_index_reference"]))

    provenance.check(job.input.libs, job.config, platform)
    with files.staged_dir(job.output[0]) as staging:
        libs = library.full_libs(results, job.input.libs, reference)
        library.write_collection(libs, staging, header=platform.note or None)
        provenance.write(staging, job.config, platform)
