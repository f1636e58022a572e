"""benchmarks/<lib>_bench.yaml -> <lib>_bench-reference.csv (default library) or
<lib>_bench-tuned.csv (with the created library)."""
from pathlib import Path

from ..bench.utils import format_benchmark_output
from .. import files, jobs, original_columns, platforms
from ..campaign import provenance


def run(job):
    problems = jobs.problems_in_rows(job.input.rows)
    library = job.input.get("library")
    if library:
        provenance.check(library, job.config, platforms.get(job.config))
    with jobs.on_device(job.config) as (platform, device):
        results = platform.bench(problems, Path(job.output[0]).parent, device, library=library,
                                 duration=job.config["compare_duration"])
    results["lib"] = f"{job.wildcards.lib}.yaml"
    # the tool's output as it printed it (rocm), else the table in its layout
    files.write_text(job.output.out, format_benchmark_output(results, platform))
    # the vendor's own solutions (the reference run) are found in its MatchTable
    files.write_csv(job.output[0], original_columns.add(
        results, None if library else platform.lib_source))
