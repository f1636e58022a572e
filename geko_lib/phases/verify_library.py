"""benchmarks/<lib>_verify.yaml -> <lib>_verify-tuned.csv: numerical error of each tuned kernel."""
from pathlib import Path

from ..bench.utils import format_benchmark_output
from .. import files, jobs, original_columns, progress


def run(job):
    problems = jobs.problems_in_rows(job.input.rows)
    with jobs.on_device(job.config) as (platform, device):
        results = progress.run_with_progress(
            platform.verify, problems, f"verify {job.wildcards.lib}",
            Path(job.output[0]).parent, device, library=job.input.library)
    results["lib"] = f"{job.wildcards.lib}.yaml"
    files.write_text(job.output.out, format_benchmark_output(results, platform))
    files.write_csv(job.output[0], original_columns.add(results))
